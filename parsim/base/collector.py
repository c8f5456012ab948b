"""Pause Python's cyclic garbage collector around a burst of short-lived allocations.

A simulation run or the build of a long pipeline program allocates hundreds of thousands of small
objects (events, ops, trace records) that reference counting frees on its own; the cyclic
collector, triggered every few hundred allocations, walks every live object each time and finds
nothing to free (a third of a 1,024-GPU step, issue 28). ``paused`` turns it off for the burst and
restores the state it found, whatever happens inside.
"""

from __future__ import annotations

import gc
from types import TracebackType


class paused:  # used as ``with paused():``, named as the function it replaced
    """Run the ``with`` body with the cyclic collector off; turn it back on after if it was on.

    A class rather than a ``contextlib.contextmanager`` generator: every simulation enters it, and
    a single-kernel prediction runs two in a third of a millisecond.
    """

    __slots__ = ("_collecting",)

    def __enter__(self) -> None:
        self._collecting = gc.isenabled()
        gc.disable()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._collecting:
            gc.enable()
