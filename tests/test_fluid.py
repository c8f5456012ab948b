"""The fluid processor-sharing server, checked against rates worked out by hand."""

import math

import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from parsim.methods.engine.fluid import FluidServer


def _run(capacity, flows):
    env = simpy.Environment()
    server = FluidServer(env, "mem", capacity)
    log = {}

    def flow(name, start, nbytes, cap):
        yield env.timeout(start)
        yield server.transfer(nbytes, cap)
        log[name] = env.now

    for name, start, nbytes, cap in flows:
        env.process(flow(name, start, nbytes, cap))
    env.run()
    return log, server


def test_single_flow_takes_bytes_over_capacity():
    log, _ = _run(10.0, [("a", 0, 50, math.inf)])
    assert log == {"a": 5.0}


def test_equal_sharing_then_speed_up():
    # Two 10-byte flows share 10 B/s: each gets 5 B/s and both end at 2 s.
    log, _ = _run(10.0, [("a", 0, 10, math.inf), ("b", 0, 10, math.inf)])
    assert log == {"a": 2.0, "b": 2.0}


def test_capped_flow_leaves_capacity_to_others():
    # 0-1 s: b capped at 2, a gets 8 (2 left). At 1 s c arrives: b 2, a 4, c 4.
    # a ends 1.5 s; then c has 3 left at 8 B/s -> 1.875 s; b has 6.25 left at 2 B/s -> 5.0 s.
    log, server = _run(10.0, [("a", 0, 10, 100), ("b", 0, 10, 2), ("c", 1, 5, 100)])
    assert log == {"a": 1.5, "c": 1.875, "b": 5.0}
    assert math.isclose(server.bytes_served, 25.0)


def test_zero_bytes_finish_at_once():
    log, _ = _run(10.0, [("a", 3, 0, math.inf)])
    assert log == {"a": 3.0}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 5), st.floats(1, 1e3), st.floats(0.5, 50)), min_size=1, max_size=6))
def test_work_conserving_and_never_faster_than_capacity(specs):
    capacity = 20.0
    flows = [(str(i), start, nbytes, cap) for i, (start, nbytes, cap) in enumerate(specs)]
    log, server = _run(capacity, flows)
    total = sum(nbytes for _, _, nbytes, _ in flows)
    assert math.isclose(server.bytes_served, total, rel_tol=1e-6)
    # No flow beats its own ceiling, and all bytes cannot move faster than the capacity.
    for name, start, nbytes, cap in flows:
        assert log[name] >= start + nbytes / min(cap, capacity) * (1 - 1e-9)
    first = min(start for _, start, _, _ in flows)
    assert max(log.values()) >= first + total / capacity * (1 - 1e-9)
