"""Pause Python's cyclic garbage collector around a burst of short-lived allocations.

A simulation run or the build of a long pipeline program allocates hundreds of thousands of small
objects (events, ops, trace records) that reference counting frees on its own; the cyclic
collector, triggered every few hundred allocations, walks every live object each time and finds
nothing to free (a third of a 1,024-GPU step, issue 28). ``paused`` turns it off for the burst and
restores the state it found, whatever happens inside. ``spaced`` keeps it on but collects the
youngest generation less often, for a batch of predictions whose caches fill with long-lived objects.
"""

from __future__ import annotations

import gc
import threading
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


YOUNG_EVERY = 10_000
"""Net new objects between two collections of the youngest generation while a batch of predictions
runs (``spaced``); Python's default is 700."""

_lock = threading.Lock()


class _Spacing:
    """How many ``spaced`` bodies are open, and the thresholds the first of them found."""

    depth = 0
    found: tuple[int, int, int] = gc.get_threshold()


class spaced:  # used as ``with spaced():``
    """Run the ``with`` body with the youngest generation collected every ``YOUNG_EVERY`` net new
    objects, then restore the thresholds found.

    A sweep keeps what each point's prediction leaves in the caches (kernel plans, layouts, built
    programs: tens of thousands of objects, none of them garbage); at the default threshold the
    collector walks them again and again, and every tenth pass of the middle generation has it
    walk every object of the process (a fifth of a ResNet-50 sweep, issue 28). Spacing the
    young collections still collects any garbage the body makes, ~10,000 objects at a time: the
    memory stays bounded. Nested or concurrent uses share one spacing; the last to leave restores
    the thresholds the first found.
    """

    __slots__ = ()

    def __enter__(self) -> None:
        with _lock:
            if not _Spacing.depth:
                found = _Spacing.found = gc.get_threshold()
                gc.set_threshold(max(found[0], YOUNG_EVERY), *found[1:])
            _Spacing.depth += 1

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        with _lock:
            _Spacing.depth -= 1
            if not _Spacing.depth:
                gc.set_threshold(*_Spacing.found)
