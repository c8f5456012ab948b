"""Pause Python's cyclic garbage collector around a burst of short-lived allocations.

A simulation run or the build of a long pipeline program allocates hundreds of thousands of small
objects (events, ops, trace records) that reference counting frees on its own; the cyclic
collector, triggered every few hundred allocations, walks every live object each time and finds
nothing to free (a third of a 1,024-GPU step, issue 28). ``paused`` turns it off for the burst and
restores the state it found, whatever happens inside.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """Run the ``with`` body with the cyclic collector off; turn it back on after if it was on."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
