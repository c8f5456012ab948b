"""The model core: every rule that turns hardware and work into seconds, written once.

Think of it as the physics shared by two simulators. The SimPy engine composes time from events
(tiles, waves, links shared between flows); the analytic method places closed forms on a list
schedule; the vectorised sweep evaluates the closed forms over arrays of sizes. All three ask
this package, and only this package, how fast a core computes in a Flynn mode (``modes``,
``rates``), which memory level serves a working set and at what bandwidth (``memory``), how long
a kernel or a copy takes in closed form (``kernel``, ``transfer``), and how a single op's
latency, period, breakdown and bottleneck follow (``outcome``), and whether data fits
(``capacity``).

The closed forms use only arithmetic and the primitives of ``numeric``, so the same code takes
Python floats (one prediction) or NumPy arrays (a sweep of thousands of sizes).
"""
