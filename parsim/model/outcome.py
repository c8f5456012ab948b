"""From durations to what a user reads: a single op's latency and period, the breakdown, the bottleneck.

Time is explained in four categories: ``compute``, ``memory``, ``transfer`` (device-side work)
and ``overhead`` (host dispatch and waiting). The bottleneck is the category holding the most
time, the earlier one in that order on a tie.

For a program of one op issued back to back, the list schedule has a closed form: the latency
is the dispatch plus the op; the period (time between instance ends) is the larger of the two
when the host moves on while the device works (an asynchronous launch, a pinned copy), and their
sum when the host waits for the op (a CPU running it itself, a pageable copy). The breakdown
is then the op's time in its own category and the dispatch as overhead. The vectorised sweep
uses these; the engine and the list schedule derive the same from their timelines.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy

from parsim.model.numeric import Number, maximum, where

CATEGORIES = ("compute", "memory", "transfer", "overhead")
WORK = ("compute", "memory", "transfer")
"""Device-side kinds; a trace may also hold ``overhead`` (dispatch) and ``wait`` (a blocked host thread)."""


def bottleneck(parts: Mapping[str, Number]) -> Number:
    """The category holding the most time (the earlier one in ``CATEGORIES`` on a tie): a str, or
    an array of them for arrays of seconds."""
    values = [parts[kind] for kind in CATEGORIES]
    if numpy.ndarray not in map(type, values):
        return max(CATEGORIES, key=parts.__getitem__)
    return numpy.asarray(CATEGORIES, dtype=object)[
        numpy.argmax(numpy.stack(numpy.broadcast_arrays(*values)), axis=0)
    ]


def single_op_latency(dispatch_s: Number, duration_s: Number) -> Number:
    """One instance: the host dispatches, then the op runs."""
    return dispatch_s + duration_s


def single_op_period(dispatch_s: Number, duration_s: Number, host_waits: bool) -> Number:
    """Time between back-to-back instances of one op (see the module docstring)."""
    return dispatch_s + duration_s if host_waits else maximum(dispatch_s, duration_s)


def single_op_breakdown(kind: Number, duration_s: Number, dispatch_s: Number) -> dict[str, Number]:
    """Seconds per category of one op of ``kind`` (``compute``, ``memory`` or ``transfer``)."""
    work = maximum(duration_s, 0.0)
    parts: dict[str, Number] = {category: where(kind == category, work, 0.0) for category in WORK}
    parts["overhead"] = dispatch_s + 0.0 * work
    return parts
