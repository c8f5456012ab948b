"""The engine's timeline of a pipelined step, without SimPy: a max-plus recurrence over its ops.

A 3D-parallel step (``workloads.parallel3d``) is a relay: each pass starts when its stage's stream
is free and its baton has arrived, ``start = max(issued, stream free, inputs sent)``, and ends a
fixed time later (a ``Block``'s kernels and tensor-parallel all-reduces, a collective's closed
form). That is a max-plus recurrence: walked in dependency order it gives every op's start and end
without an event queue. One thing is not max-plus: sends and the gradient reduction that cross
nodes share their GPU's NICs (the engine's fluid server, ``engine.fluid``), so a send that
overlaps another moves at half the rate. Only those flows go through a small time-ordered queue
(arrivals and completions per NIC, water-filled exactly as the engine's server does); everything
else resolves as soon as its inputs do.

The engine stays the oracle: ``evaluate`` follows its rules op for op (host threads pay the
dispatch cost of each op but a ``Block``, streams run in order, ``deps`` add edges, a copy takes
its engine and its switch's uplink) and agrees with ``engine.simulate`` to rounding
(``tests/test_recurrence.py``). ``covers`` says where it applies: programs of passes, collectives
and pinned copies that contend for no copy engine or uplink, one instance. Anything else (kernels
on their processors' waves, pageable copies, back-to-back instances) is the engine's.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import NamedTuple

from parsim import stack
from parsim.hardware.specs import SystemSpec
from parsim.model.collectives import SEND, group_of, op_timing, timing_key
from parsim.model.issue import issue_s, step_issue_s
from parsim.model.placement import blocks_host, link_lane
from parsim.model.transfer import copy_bandwidth_Bps, copy_latency_s, uplink_bandwidth_Bps
from parsim.results import resources
from parsim.results.timeline import TraceEvent
from parsim.workloads.base import (
    SYNC_STREAM,
    AllReduce,
    Block,
    Transfer,
    Workload,
    stream_predecessors,
    thread_of,
)

FINISHED_RTOL = 1e-9
"""A flow within this share of its size of done is done (``engine.fluid``'s rounding rule)."""


def covers(workload: Workload, system: SystemSpec, repeats: int = 1) -> bool:
    """Whether ``evaluate`` gives the engine's timeline of ``workload``: one instance of passes,
    collectives and pinned copies on a system with GPUs, no copy engine or uplink shared."""
    if repeats != 1 or system.device is None:
        return False
    lanes: set[tuple[object, ...]] = set()
    for op in workload.ops:
        if isinstance(op, Transfer):
            if blocks_host(system, op):
                return False
            engine = (op.device, op.direction)
            uplink = (op.device // system.gpus_per_switch, link_lane(system.host_link, op.direction))
            if engine in lanes or uplink in lanes:
                return False
            lanes.update((engine, uplink))
        elif not isinstance(op, (Block, AllReduce)):
            return False
        # a step's data-parallel collectives (``base.SYNC_STREAM``) follow the passes or run beside
        # them holding none of their SMs (``dp_overlap``, in the engine alike); a collective on any
        # other stream runs beside them (``ep_overlap``) and slows them by the SMs it holds, which
        # this recurrence does not model: such a step is the engine's
        elif isinstance(op, AllReduce) and op.kind != SEND and op.stream != SYNC_STREAM:
            return False  # a collective beside the passes holds SMs from them (``model.comm_sms``)
    return True


class _Nic:
    """A GPU's share of its node's NICs: flows share it equally (``engine.fluid.FluidServer``
    with every flow capped at the whole share)."""

    __slots__ = ("capacity", "flows", "last", "version")

    def __init__(self, capacity: float):
        self.capacity = capacity
        self.flows: list[list[float]] = []  # [size, remaining, unused, rate, op index]
        self.last = 0.0
        self.version = 0

    def advance(self, now: float) -> None:
        elapsed = now - self.last
        if elapsed > 0:
            for flow in self.flows:
                flow[1] -= flow[3] * elapsed
        self.last = now

    def next_wake(self) -> float | None:
        """Share the capacity; the seconds to the next completion (None: idle). Every flow may
        take the whole share, so water-filling gives each ``capacity / flows``."""
        self.version += 1
        if not self.flows:
            return None
        rate = self.capacity / len(self.flows)
        for flow in self.flows:
            flow[3] = rate
        return max(min(flow[1] for flow in self.flows) / rate, 0.0)

    def finished(self) -> list[int]:
        done = [f for f in self.flows if f[1] <= FINISHED_RTOL * f[0] + 1e-12]
        if not done:  # rounding left the leader a hair short
            done = [min(self.flows, key=lambda f: f[1] / f[3])]
        for flow in done:
            self.flows.remove(flow)
        return [int(flow[4]) for flow in done]


class Run(NamedTuple):
    """One instance timed by the recurrence.

    Attributes:
        end_s: when its last op ends.
        trace: the intervals the engine would record (empty unless asked for).
        steps: ops resolved plus NIC events handled (the engine counts its SimPy events).
        busy_s: seconds the GPUs' cores row, their ring rows inside passes (tensor parallel) and
            their ring rows outside passes (collectives but sends) are busy, summed over GPUs:
            what the trace's intervals add up to.
    """

    end_s: float
    trace: tuple[TraceEvent, ...]
    steps: int
    busy_s: tuple[float, float, float]


def evaluate(
    workload: Workload,
    system: SystemSpec,
    block_parts: Callable[[Block], tuple[float, float]],
    record: bool = True,
) -> Run:
    """One instance of ``workload`` (``covers`` it): its end, its trace as the engine writes it,
    and the busy seconds the trace adds up to.

    Args:
        workload: ops in issue order (``covers(workload, system)``).
        system: the system.
        block_parts: a ``Block``'s compute and communication seconds (the engine's, per shape).
        record: build the trace.
    """
    ops = workload.ops
    n = len(ops)
    framework = stack.framework(workload.framework) if workload.framework else None
    previous = stream_predecessors(list(ops))
    preds = [
        (*deps, before) if before is not None else deps
        for deps, before in zip(workload.deps, previous, strict=True)
    ]
    successors: list[list[int]] = [[] for _ in range(n)]
    for index, mine in enumerate(preds):
        for p in mine:
            successors[p].append(index)
    trace: list[TraceEvent] = []
    # host threads: each op's process starts when its thread has paid the dispatches before it
    issued = [0.0] * n
    clocks: dict[int, float] = {}
    dispatch_cost: dict[type, float] = {}  # a pass, a collective or a copy: its type says its cost
    for index, op in enumerate(ops):
        thread = thread_of(op)
        clock = clocks.get(thread, 0.0)
        step_s = step_issue_s(system, framework, index, n) if index == 0 else 0.0  # a step's first op
        if step_s:
            if record:
                label = "dispatch the compiled step"
                trace.append(TraceEvent(resources.thread(thread), label, "overhead", clock, clock + step_s))
            clock += step_s
        if not isinstance(op, Block):
            cost = dispatch_cost.get(type(op))
            if cost is None:
                cost = dispatch_cost[type(op)] = issue_s(system, framework, False, op)
            if record:
                row = resources.thread(thread)
                trace.append(TraceEvent(row, f"issue {op.name}", "overhead", clock, clock + cost))
            clock += cost
        issued[index] = clock
        clocks[thread] = clock
    # what each op costs: fixed seconds, or a latency and bytes through its GPU's NICs
    single = system.total_gpus == 1
    network = system.network
    share = network.gpu_share_Bps(system.gpus) if network is not None else 0.0
    fixed: list[float] = [0.0] * n
    nic_bytes: dict[int, float] = {}  # a flow through its GPU's NICs after the latency
    streamed: dict[int, float] = {}  # a copy's seconds on its uplink after the latency
    across_of: dict[int, bool] = {}
    parts: dict[tuple[int, int], tuple[float, float]] = {}  # per shape: the ops keep the tuples alive
    timings: dict[tuple[object, ...], tuple[float, float, float, bool]] = {}
    seen: dict[int, int] = {}  # an op that recurs (a stage's shape of pass, unnamed): its first index
    passes: dict[int, tuple[float, float]] = {}  # a pass's compute and tensor-parallel seconds
    collectives: list[int] = []  # the collectives but sends that the ring rows show
    compute_s = tensor_s = 0.0
    for index, op in enumerate(ops):
        first = seen.setdefault(id(op), index)
        if first != index:  # the same op again: the same costs
            if first in passes:
                compute_s += passes[first][0]
                tensor_s += passes[first][1]
            fixed[index] = fixed[first]
            if first in nic_bytes:
                nic_bytes[index] = nic_bytes[first]
            if first in across_of:
                across_of[index] = across_of[first]
                if ops[first].kind != SEND:  # type: ignore[union-attr]
                    collectives.append(index)
            if first in streamed:
                streamed[index] = streamed[first]
            continue
        if isinstance(op, Block):
            key = (id(op.kernels), id(op.collectives))
            found = parts.get(key)
            if found is None:
                found = parts[key] = block_parts(op)
            fixed[index] = found[0] + found[1]
            passes[index] = found
            compute_s += found[0]
            tensor_s += found[1]
        elif isinstance(op, AllReduce):
            if single:
                continue
            shape = timing_key(op)
            known = timings.get(shape)
            if known is None:
                timing = op_timing(system, op)
                across = group_of(system, op).nodes > 1 and not system.torus
                known = timings[shape] = (timing.seconds, timing.latency_s, timing.bandwidth_s, across)
            seconds, latency, bandwidth_s, across = known
            across_of[index] = across
            if op.kind != SEND:
                collectives.append(index)
            if across and network is not None:
                fixed[index] = latency
                if bandwidth_s * share > 0:  # the engine's server finishes an empty flow at once
                    nic_bytes[index] = bandwidth_s * share
            else:
                fixed[index] = seconds
        else:
            assert isinstance(op, Transfer)
            fixed[index] = copy_latency_s(system.host_link, op.pinned, op.direction)
            if op.nbytes > 0:
                rate = min(
                    copy_bandwidth_Bps(system.host_link, op.pinned, op.direction, op.nbytes),
                    uplink_bandwidth_Bps(system.host_link, op.direction),
                )
                streamed[index] = op.nbytes / rate  # alone on its uplink: one flow at its own rate
    starts = [0.0] * n
    ends = [0.0] * n
    ready = issued[:]
    waiting = [len(p) for p in preds]
    work = [index for index in range(n) if not waiting[index]]
    queue: list[tuple[float, int, int, int, int]] = []  # (time, order, kind, index or NIC, version)
    nics: dict[int, _Nic] = {}
    order = steps = 0
    push, pop = heapq.heappush, heapq.heappop

    def resolve(index: int, end: float) -> None:
        ends[index] = end
        for after in successors[index]:
            if end > ready[after]:
                ready[after] = end
            waiting[after] -= 1
            if not waiting[after]:
                work.append(after)

    def wake(device: int, nic: _Nic, now: float) -> None:
        nonlocal order
        wait = nic.next_wake()
        if wait is not None:
            order += 1
            push(queue, (now + wait, order, 1, device, nic.version))

    while True:
        while work:  # what resolves at once: the recurrence proper
            index = work.pop()
            steps += 1
            start = starts[index] = ready[index]
            if index in nic_bytes:  # its bytes wait for the NIC's queue, after the latency
                order += 1
                push(queue, (start + fixed[index], order, 0, index, 0))
                continue
            if index in streamed:  # a copy alone on its engine and uplink: latency, then its bytes
                end = ends[index] = start + fixed[index] + streamed[index]
            else:
                end = ends[index] = start + fixed[index]
            for after in successors[index]:
                if end > ready[after]:
                    ready[after] = end
                left = waiting[after] = waiting[after] - 1
                if not left:
                    work.append(after)
        if not queue:
            break
        now, _, kind, which, version = pop(queue)
        steps += 1
        if kind == 0:  # a flow reaches its NIC
            device = ops[which].device
            nic = nics.get(device)
            if nic is None:
                nic = nics[device] = _Nic(share)
                nic.last = now
            size = nic_bytes[which]
            if not nic.flows:  # an idle NIC: the whole share, done after size / share (most sends)
                nic.last = now
                nic.flows.append([size, size, 0.0, share, which])
                nic.version += 1
                order += 1
                push(queue, (now + size / share, order, 1, device, nic.version))
                continue
            nic.advance(now)
            nic.flows.append([size, size, 0.0, 0.0, which])
            wake(device, nic, now)
        else:
            nic = nics[which]
            if version != nic.version:
                continue  # a flow arrived or left since this wake-up was planned
            if len(nic.flows) == 1:  # alone, it is the one that ends now
                nic.version += 1
                nic.last = now
                resolve(int(nic.flows.pop()[4]), now)
                continue
            nic.advance(now)
            for done in nic.finished():
                resolve(done, now)
            wake(which, nic, now)
    if any(waiting):  # validated workloads cannot deadlock: this is a bug, say so
        raise RuntimeError(f"parsim recurrence: ops of {workload.name!r} wait on each other")
    if record:
        trace += _trace(workload, system, starts, ends, parts, across_of)
    data_s = 0.0
    for index in collectives:  # the gradients' reduction: every GPU's ring row when it names none
        data_s += (system.gpus if ops[index].device < 0 else 1) * (ends[index] - starts[index])
    busy = (compute_s, tensor_s, data_s)
    return Run(max(ends, default=0.0), tuple(trace), steps, busy)


def _trace(
    workload: Workload,
    system: SystemSpec,
    starts: list[float],
    ends: list[float],
    parts: dict[tuple[int, int], tuple[float, float]],
    across_of: dict[int, bool],
) -> list[TraceEvent]:
    """The intervals the engine records for each op (cores and ring rows, links, the network)."""
    trace: list[TraceEvent] = []
    devices = range(max(system.gpus, workload.devices))  # a pipeline's stages may outnumber a node's GPUs
    cores = {g: resources.cores(system, g, system.gpu.cores) for g in devices}
    rings = {g: resources.ring(system, g) for g in devices}
    network_row = resources.network(system) if system.nodes > 1 else None
    for index, op in enumerate(workload.ops):
        start, end = starts[index], ends[index]
        if isinstance(op, Block):
            compute, communication = parts[(id(op.kernels), id(op.collectives))]
            row = cores[op.device]
            trace.append(TraceEvent(row, op.name, "compute", start, start + compute, layer=op.layer, op=op))
            if communication > 0:
                row, label = rings[op.device], f"{op.name} tp"
                trace.append(TraceEvent(row, label, "transfer", start + compute, end, layer=op.layer, op=op))
        elif isinstance(op, AllReduce):
            if index not in across_of:
                continue  # one GPU: nothing to exchange, nothing drawn
            drawn = range(system.gpus) if op.device < 0 else range(op.device, op.device + 1)
            for g in drawn:
                trace.append(TraceEvent(rings[g], op.name, "transfer", start, end, layer=op.layer, op=op))
            if network_row is not None and across_of[index]:
                trace.append(TraceEvent(network_row, op.name, "transfer", start, end, layer=op.layer, op=op))
        else:
            assert isinstance(op, Transfer)
            link = resources.link(system, op.device, op.direction)
            trace.append(TraceEvent(link, op.name, "transfer", start, end, layer=op.layer, op=op))
    return trace
