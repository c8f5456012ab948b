"""The host program: issue ops in order, honour streams and dependencies, wait for the end.

Each GPU is driven by its own host thread (as PyTorch's DistributedDataParallel runs one
process per GPU); thread 0 also runs the host's own work (averaging gradients, an optimiser
step on the CPU) and starts collectives. A thread walks its ops in program order and pays a
dispatch cost for each (a NumPy call, a CUDA kernel launch, a ``cudaMemcpyAsync``).

GPU launches are asynchronous: the thread moves on while the device works, so a chain of tiny
kernels becomes launch-bound. Three things make a thread wait: a copy from pageable memory
(the driver stages it through a pinned buffer), work the host CPU does itself (it needs its
inputs first, and then computes), and everything on a CPU-only system, where the host runs
each op to completion. Ops on one (device, stream) run in order; streams overlap; ``deps``
add edges across streams, devices and threads.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from typing import cast

import attrs
import simpy

from parsim import stack
from parsim.base import collector
from parsim.base.caching import cached
from parsim.hardware.specs import SystemSpec
from parsim.methods.engine.fluid import Process
from parsim.methods.engine.machine import Machine
from parsim.model import placement
from parsim.model.issue import issue_s, step_issue_s
from parsim.results import resources
from parsim.results.timeline import TraceEvent
from parsim.stack import FrameworkSpec
from parsim.workloads.base import HOST, Block, Kernel, Op, Workload, stream_predecessors, thread_of


@attrs.frozen
class SimResult:
    """Raw outcome of one simulation.

    Attributes:
        instance_ends_s: completion time of each back-to-back instance.
        trace: busy intervals of every resource.
        events: SimPy events processed.
        notes: remarks collected while simulating.
    """

    instance_ends_s: tuple[float, ...]
    trace: tuple[TraceEvent, ...]
    events: int
    notes: tuple[str, ...]


_event = functools.partial(tuple.__new__, TraceEvent)  # a TraceEvent from its nine fields in order


class _Discard(list[TraceEvent]):
    """A trace that keeps nothing: throughput runs only need the instance end times."""

    def append(self, item: TraceEvent) -> None:
        pass


def simulate(
    workload: Workload,
    system: SystemSpec,
    mode: str,
    overlap: str = "roofline",
    repeats: int = 1,
    record: bool = True,
) -> SimResult:
    """Run ``repeats`` back-to-back instances of ``workload`` on ``system``.

    Args:
        workload: ops in issue order.
        system: host, optional devices, link.
        mode: Flynn mode of the executing processor.
        overlap: ``roofline`` or ``serial`` combination of compute and memory time.
        repeats: instances issued one after another without synchronising in between.
        record: keep the trace (off for throughput runs, which only need the end times).

    Returns:
        The completion time of each instance, the trace, and the event count.
    """
    with collector.paused():  # events are freed as they go: the cyclic collector only costs time
        return _simulate(workload, system, mode, overlap, repeats, record)


def _simulate(
    workload: Workload, system: SystemSpec, mode: str, overlap: str, repeats: int, record: bool
) -> SimResult:
    env = simpy.Environment()
    trace: list[TraceEvent] = [] if record else _Discard()
    framework = stack.framework(workload.framework) if workload.framework else None
    machine = Machine(env, system, mode, overlap, trace, record, framework)
    per_instance = len(workload.ops)
    ops = list(workload.ops) * repeats
    program = _Program(ops, system, per_instance, framework)
    segments, needs = _segments_and_needs(workload, program.cpu_only, repeats)
    completion = _Completion(env, per_instance, repeats, {d for wanted in needs.values() for d in wanted})
    waits = {first: [completion.events[d] for d in wanted] for first, wanted in needs.items()}
    for thread in sorted(segments):
        env.process(_thread(env, machine, program, thread, segments[thread], waits, completion, trace))
    events = 0
    while env.peek() < math.inf:
        env.step()
        events += 1
    if completion.finished != len(ops):  # validated workloads cannot deadlock: this is a bug, say so
        raise RuntimeError(
            f"parsim engine: only {completion.finished} of {len(ops)} ops of {workload.name!r} ran; "
            "a latency would be meaningless"
        )
    return SimResult(tuple(completion.ends), tuple(trace), events, machine.notes.summary())


def _segments_and_needs(
    workload: Workload, cpu_only: bool, repeats: int
) -> tuple[dict[int, list[list[int]]], dict[int, list[int]]]:
    """Each host thread's chains over ``repeats`` instances (``_chains``), and what the first op of
    each chain waits for: its dependencies and its stream predecessor."""
    per_instance = len(workload.ops)
    one = _instance(workload, cpu_only)  # the latency and throughput runs share it
    # every instance repeats the first one's chains, ``per_instance`` ops further on (a chain
    # ends with its instance), and waits for the ops its first one waits for, shifted alike; an
    # op first on its stream in its instance follows the last one of the instance before
    shifts = range(0, repeats * per_instance, per_instance)
    segments = {
        thread: [[index + shift for index in chain] for shift in shifts for chain in chains]
        for thread, chains in one.segments
    }
    # Only ops that start a segment wait; only what they wait for needs an event.
    needs: dict[int, list[int]] = {}
    deps, previous, wrapped = workload.deps, one.previous, one.wrapped
    for chains in segments.values():
        for first, *_ in chains:
            shift, index = divmod(first, per_instance)
            shift *= per_instance
            before = previous[index]
            if before is not None:
                before += shift
            elif shift:
                # an op with no predecessor in its instance has a wrapped one: never None here
                before = cast(int, wrapped[index]) + shift - per_instance
            needs[first] = [*(d + shift for d in deps[index]), *([before] if before is not None else [])]
    return segments, needs


class _Completion:
    """Records when ops end: per-instance end times, and events for the ops others wait on."""

    def __init__(self, env: simpy.Environment, per_instance: int, repeats: int, awaited: set[int]):
        self.env = env
        self.per_instance = per_instance
        self.ends = [0.0] * repeats
        self.events = {index: env.event() for index in awaited}
        self.finished = 0

    def finisher(self, indices: list[int]) -> Callable[[], None]:
        """A callback that marks ``indices`` done at the current time."""

        # a segment lies in one instance (chains stop at an instance's end): its end is one time
        instances = sorted({index // self.per_instance for index in indices})
        awaited = [event for index in indices if (event := self.events.get(index)) is not None]

        def finish() -> None:
            self.finished += len(indices)
            now = self.env.now
            for instance in instances:
                self.ends[instance] = max(self.ends[instance], now)
            for event in awaited:  # in the segment's order
                event.succeed()

        return finish


class _Program:
    """The ops of a run (``repeats`` instances back to back) and what their host threads share."""

    def __init__(self, ops: list[Op], system: SystemSpec, per_instance: int, framework: FrameworkSpec | None):
        self.ops = ops
        self.framework = framework
        self.per_instance = per_instance
        self.system = system
        self.cpu_only = system.device is None
        self.issue_ends: dict[tuple[int, int], tuple[list[float], list[float]]] = {}
        """A chain's issue costs and ends (``_issue_ends``) by its first op's place in the instance
        and its length: the same in every instance."""

    def on_host(self, op: Op) -> bool:
        return placement.on_host(self.system, op)


@attrs.frozen(eq=False)
class _Instance:
    """One instance's chains and stream order, which every instance of a run repeats.

    Attributes:
        segments: each host thread's chains (``_chains``), by thread in order of first use.
        previous: each op's predecessor on its (device, stream) in the instance, or None.
        wrapped: for an op first on its stream, the last op on that stream (the op the same op
            of the next instance follows); None for the others.
    """

    segments: tuple[tuple[int, tuple[tuple[int, ...], ...]], ...]
    previous: tuple[int | None, ...]
    wrapped: tuple[int | None, ...]


@cached(maxsize=16)  # bounded: entries keep their programs; a prediction's two runs share one
def _instance(workload: Workload, cpu_only: bool) -> _Instance:
    ops, deps = workload.ops, workload.deps
    threads: dict[int, list[int]] = {}
    thread_of_device: dict[int, int] = {}  # ``thread_of`` asked once per device, not per op
    for index, op in enumerate(ops):
        thread = thread_of_device.get(op.device)
        if thread is None:
            thread = thread_of_device[op.device] = thread_of(op)
        threads.setdefault(thread, []).append(index)
    streams: dict[int, set[int]] = {}
    for op in ops:
        streams.setdefault(op.device, set()).add(op.stream)
    single_stream = {device for device, used in streams.items() if len(used) == 1}
    awaited = {d for op_deps in deps for d in op_deps}
    segments = tuple(
        (thread, tuple(map(tuple, _chains(ops, deps, awaited, single_stream, cpu_only, mine))))
        for thread, mine in threads.items()
    )
    previous = stream_predecessors(list(ops))
    last = {(op.device, op.stream): index for index, op in enumerate(ops)}
    wrapped = tuple(
        last[(op.device, op.stream)] if before is None else None
        for op, before in zip(ops, previous, strict=True)
    )
    return _Instance(segments, tuple(previous), wrapped)


def _chains(
    ops: tuple[Op, ...],
    deps: tuple[tuple[int, ...], ...],
    awaited: set[int],
    single_stream: set[int],
    cpu_only: bool,
    mine: list[int],
) -> list[list[int]]:
    """Split a thread's ops of one instance into chains (lists of several kernels) and single ops.

    An op may join the chain before it when both are kernels of a device's only stream (host
    work beside GPUs waits on its inputs: ``placement.on_host`` of a kernel), it directly follows
    the chain's last op on the same device, nothing awaits that op, and it waits for nothing
    itself (a chain fires its ops' events at its end). A chain never crosses into the next
    instance: each instance's chains are the first one's (``_simulate``).
    """
    segments: list[list[int]] = []
    current: list[int] = []
    last_chainable = False  # of the op before (``current[-1]``): each op is asked once
    for index in mine:
        op = ops[index]
        chainable = isinstance(op, Kernel) and (cpu_only or op.device != HOST) and op.device in single_stream
        if (
            chainable
            and last_chainable
            and ops[current[-1]].device == op.device
            and current[-1] == index - 1
            and current[-1] not in awaited
            and not deps[index]
        ):
            current.append(index)
        else:
            current = [index]
            segments.append(current)
        last_chainable = chainable
    return segments


def _issue_ends(
    system: SystemSpec, framework: FrameworkSpec | None, kernels: list[Kernel]
) -> tuple[list[float], list[float]]:
    """Each kernel's issue cost, and when the host has issued it, from the chain's start (a CuPy
    reduction costs more than an elementwise call)."""
    # a device kernel's issue cost depends on its kind of call, whether it is a primitive op and
    # whether a library call launched it (``issue.issue_s``): asked once per kind, not per kernel
    known: dict[tuple[bool, str, bool, bool, int], float] = {}
    costs = []
    for kernel in kernels:
        kind = (
            kernel.library.gemm_mn is None,
            kernel.work.op,
            kernel.issue.primitive,
            kernel.issue.in_library_call,
            kernel.issue.launches,
        )
        cost = known.get(kind)
        if cost is None:
            cost = known[kind] = issue_s(system, framework, False, kernel)
        costs.append(cost)
    if len(set(costs)) == 1:  # the common case, kept exact: k launches of one cost
        return costs, [(k + 1) * costs[0] for k in range(len(kernels))]
    return costs, list(itertools.accumulate(costs))


def _thread(
    env: simpy.Environment,
    machine: Machine,
    program: _Program,
    thread: int,
    segments: list[list[int]],
    waits: dict[int, list[simpy.Event]],
    completion: _Completion,
    trace: list[TraceEvent],
) -> Process:
    system = program.system
    record = not isinstance(trace, _Discard)
    row = resources.thread(thread)
    for segment in segments:
        first = segment[0]
        op = program.ops[first]
        on_host = program.on_host(op)
        dispatch_s = issue_s(system, program.framework, on_host, op)
        step_s = step_issue_s(system, program.framework, first, program.per_instance)
        if step_s:  # a compiled step is dispatched once, before its first op
            start = env.now
            yield env.timeout(step_s)
            trace.append(TraceEvent(row, "dispatch the compiled step", "overhead", start, env.now))
        finish = completion.finisher(segment)
        if isinstance(op, Kernel) and (len(segment) > 1 or program.cpu_only):
            kernels = [k for i in segment if isinstance(k := program.ops[i], Kernel)]  # a chain is kernels
            if program.cpu_only:  # the host runs each kernel itself, issuing the next when it ends
                yield env.process(machine.run_chain(kernels, [], waits[first], finish, dispatch_s, row))
                continue
            start = env.now
            # every instance repeats the same chains of the same kernels: their issue times once
            position = (first % program.per_instance, len(segment))
            known = program.issue_ends.get(position)
            if known is None:
                known = program.issue_ends[position] = _issue_ends(system, program.framework, kernels)
            costs, ends = known
            issued_at = [start + end for end in ends]
            env.process(machine.run_chain(kernels, issued_at, waits[first], finish))
            if record:  # a throughput run's trace keeps nothing: build no records for it
                append = trace.append
                for kernel, cost, end in zip(kernels, costs, issued_at, strict=True):
                    # TraceEvent's fields in order, as the tuple it is (its defaults spelt out)
                    label = f"issue {kernel.name}"
                    append(_event((row, label, "overhead", end - cost, end, False, "", 1.0, None)))
            yield env.timeout(ends[-1])
            continue
        if on_host:
            # the host needs the op's inputs before it can compute on them
            pending = [event for event in waits[first] if not event.processed]
            if pending:
                wait_start = env.now
                yield env.all_of(pending)
                trace.append(TraceEvent(row, f"wait for {op.name} inputs", "wait", wait_start, env.now))
        if isinstance(op, Block):  # its kernels' launches are inside its time (``model.blocks``)
            env.process(machine.run(op, waits[first], finish))
            continue
        start = env.now
        yield env.timeout(dispatch_s)
        trace.append(TraceEvent(row, f"issue {op.name}", "overhead", start, env.now))
        process = env.process(machine.run(op, waits[first], finish))
        if placement.blocks_host(system, op):
            wait_start = env.now
            yield process
            if not on_host:  # a pageable copy: the driver stages it with the issuing thread
                trace.append(TraceEvent(row, f"wait {op.name} (pageable)", "wait", wait_start, env.now))
