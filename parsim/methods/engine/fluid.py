"""A fluid processor-sharing server: how DRAM channels and PCIe links divide their bandwidth.

Picture a pipe of fixed capacity with several taps open on it. Every active flow gets an equal
share of the capacity, except that a flow never takes more than its own ceiling (one core can
only keep so many bytes in flight); capacity a capped flow leaves unused is shared among the
others ("max-min fairness", computed by water-filling). Rates change only when a flow arrives
or leaves, so the server never polls: on each change it advances every flow by rate x elapsed
time, recomputes the rates and schedules a single wake-up at the next completion. A stale
wake-up (superseded by a later change) is recognised by a version number and ignored.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any

import simpy

Process = Generator[simpy.Event, Any, None]
"""A SimPy process: a generator that yields events and returns nothing."""


class _Flow:
    __slots__ = ("size", "remaining", "cap", "rate", "done")

    def __init__(self, size: float, cap: float, done: simpy.Event):
        self.size = size
        self.remaining = size
        self.cap = cap
        self.rate = 0.0
        self.done = done


class FluidServer:
    """Bandwidth ``capacity_Bps`` shared max-min fairly among the flows in progress.

    Args:
        env: the SimPy environment.
        name: label for traces and errors.
        capacity_Bps: total bandwidth.
    """

    def __init__(self, env: simpy.Environment, name: str, capacity_Bps: float):
        self.env = env
        self.name = name
        self.capacity_Bps = capacity_Bps
        self.bytes_served = 0.0
        self._flows: list[_Flow] = []
        self._last = env.now
        self._version = 0

    def transfer(self, nbytes: float, cap_Bps: float = math.inf) -> simpy.Event:
        """Move ``nbytes`` at no more than ``cap_Bps``; the returned event fires when done."""
        done = self.env.event()
        if nbytes <= 0:
            done.succeed()
            return done
        self._advance()
        self._flows.append(_Flow(float(nbytes), min(cap_Bps, self.capacity_Bps), done))
        self._reschedule()
        return done

    def _advance(self) -> None:
        elapsed = self.env.now - self._last
        if elapsed > 0:
            for flow in self._flows:
                moved = flow.rate * elapsed
                flow.remaining -= moved
                self.bytes_served += moved
        self._last = self.env.now

    def _allocate(self) -> None:
        # Water-filling: serve the most constrained flows first; what they cannot use is
        # split among the rest.
        capacity = self.capacity_Bps
        flows = sorted(self._flows, key=lambda f: f.cap)
        for left, flow in zip(range(len(flows), 0, -1), flows, strict=True):
            flow.rate = min(flow.cap, capacity / left)
            capacity -= flow.rate

    def _reschedule(self) -> None:
        self._allocate()
        self._version += 1
        if not self._flows:
            return
        wait = min(flow.remaining / flow.rate for flow in self._flows)
        version = self._version
        wake = self.env.timeout(max(wait, 0.0))
        wake.callbacks.append(lambda _event: self._on_wake(version))

    def _on_wake(self, version: int) -> None:
        if version != self._version:
            return  # a flow arrived or left since this wake-up was planned
        self._advance()
        # Finish every flow that is done up to rounding (relative to its size).
        finished = [f for f in self._flows if f.remaining <= 1e-9 * f.size + 1e-12]
        if not finished:  # guard against rounding leaving the leader a hair short
            finished = [min(self._flows, key=lambda f: f.remaining / f.rate)]
        for flow in finished:
            self.bytes_served += max(flow.remaining, 0.0)
            self._flows.remove(flow)
            flow.done.succeed()
        self._reschedule()
