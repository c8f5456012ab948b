"""Two calibration figures a machine measures for itself: its interpreter's loop bodies and its
BLAS's threads.

A pure-Python loop's cost per element depends on its body as this interpreter runs it on this core:
a branch on a random sign, a generator built per output. The model counts each body's operations
in units of the add loop (``workloads.ops``), counted once on one core; here each body is timed in
the same pass as the add loop and kept as its cost over what its count predicts
(``interpreted_loop_scale``). A ratio within one pass survives a machine whose speed drifts.

A product one BLAS call spreads over several cores does not run ``cores`` times as fast: the
threads share the last-level cache and the memory their packed panels stream from, and are woken
and joined for every call. The same GEMM is timed on every core; less the fork/join measured for
NumPy's own threads, the share of one core's rate each core keeps is ``blas_thread_efficiency``.

Either figure, when no try is plausible, is dropped with a note: the counts, and perfect threading,
stand in.
"""

from __future__ import annotations

from collections.abc import Callable

from parsim.measure import cpu, plausible
from parsim.workloads.ops import python_loop_ops

SISD_LOOPS = (
    ("saxpy", {"n": 50000}),
    # signed data over more elements than a branch predictor learns when one list repeats
    ("relu", {"n": 50000}),
    ("sigmoid", {"n": 50000}),
    ("reduce_sum", {"n": 50000}),
    ("matmul", {"m": 24, "n": 24, "k": 24}),
)
LOOP_SCALE_BOUNDS = (0.2, 5.0)  # a loop body this far from its count is a disturbed timing
MIN_THREAD_SPEEDUP = 0.9  # threads that made one product slower than one core did were disturbed

Note = Callable[[str, str], None]


def loop_scales(timed: Callable, raw: dict, note: Note) -> None:
    """``raw["loop_<name>_scale"]`` for each loop of ``SISD_LOOPS``: its time over its counted
    operations at this pass's ``raw["interpreted_element_s"]``."""
    for loop, params in SISD_LOOPS:
        run = cpu.sisd_operation(loop, params)
        counted_s = python_loop_ops(loop, params) * raw["interpreted_element_s"]

        def attempt(run=run, counted_s=counted_s):
            scale = timed(run) / counted_s
            if not LOOP_SCALE_BOUNDS[0] <= scale <= LOOP_SCALE_BOUNDS[1]:
                return f"{scale:.3g} x its counted operations, outside {LOOP_SCALE_BOUNDS}"
            return scale

        outcome = plausible.measured(attempt)
        if isinstance(outcome, str):
            note(f"the {loop} loop's cost", outcome)
        else:
            raw[f"loop_{loop}_scale"] = outcome


def blas_share(backend, size: int, cores: int, timed: Callable, raw: dict, note: Note) -> None:
    """``raw["blas_thread_efficiency"]``: the float32 ``size``^3 GEMM as one BLAS call on ``cores``
    cores, less the threads' fork/join (``raw["parallel_dispatch_s"]``), as the share of one core's
    rate (``raw["gemm_float32_flops_per_s"]``) each core keeps; 1 at most (above is timing noise)."""
    operation, _ = cpu.cpu_operation(
        backend, "matmul", {"m": size, "n": size, "k": size, "dtype": "float32"}, "mimd+simd"
    )
    one_core_s = 2.0 * size**3 / raw["gemm_float32_flops_per_s"]

    def attempt():
        net = plausible.net_s(timed(operation), raw["parallel_dispatch_s"])
        if isinstance(net, str):
            return net
        share = one_core_s / (cores * net)
        if share < MIN_THREAD_SPEEDUP / cores:
            return f"{cores} threads ran it {cores * share:.2g}x as fast as one core"
        return min(1.0, share)

    outcome = plausible.measured(attempt)
    if isinstance(outcome, str):
        note(f"the GEMM on {cores} threads", outcome)
    else:
        raw["blas_thread_efficiency"] = outcome
