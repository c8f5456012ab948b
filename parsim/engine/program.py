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

import math

import attrs
import simpy

from parsim.engine.machine import Machine
from parsim.hardware.specs import SystemSpec
from parsim.timeline import TraceEvent
from parsim.workloads.base import HOST, Kernel, Op, Transfer, Workload, stream_predecessors, thread_of


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


def simulate(
    workload: Workload, system: SystemSpec, mode: str, overlap: str = "roofline", repeats: int = 1
) -> SimResult:
    """Run ``repeats`` back-to-back instances of ``workload`` on ``system``.

    Args:
        workload: ops in issue order.
        system: host, optional devices, link.
        mode: Flynn mode of the executing processor.
        overlap: ``roofline`` or ``serial`` combination of compute and memory time.
        repeats: instances issued one after another without synchronising in between.

    Returns:
        The completion time of each instance, the trace, and the event count.
    """
    env = simpy.Environment()
    trace: list[TraceEvent] = []
    machine = Machine(env, system, mode, overlap, trace)
    per_instance = len(workload.ops)
    ops = list(workload.ops) * repeats
    deps = [tuple(d + r * per_instance for d in op_deps) for r in range(repeats) for op_deps in workload.deps]
    done = [env.event() for _ in ops]
    previous = stream_predecessors(ops)
    waits = [
        [done[d] for d in deps[i]] + ([done[previous[i]]] if previous[i] is not None else [])
        for i in range(len(ops))
    ]
    threads = sorted({thread_of(op) for op in ops})
    for thread in threads:
        mine = [i for i, op in enumerate(ops) if thread_of(op) == thread]
        env.process(_thread(env, machine, system, thread, ops, mine, waits, done, trace))
    ends = [0.0] * repeats
    for repeat in range(repeats):
        env.process(_mark_end(env, done[repeat * per_instance : (repeat + 1) * per_instance], ends, repeat))
    events = 0
    while env.peek() < math.inf:
        env.step()
        events += 1
    return SimResult(tuple(ends), tuple(trace), events, tuple(sorted(machine.notes)))


def _thread(
    env: simpy.Environment,
    machine: Machine,
    system: SystemSpec,
    thread: int,
    ops: list[Op],
    mine: list[int],
    waits: list[list[simpy.Event]],
    done: list[simpy.Event],
    trace: list[TraceEvent],
):
    cpu_only = system.device is None
    row = "host" if thread == 0 else f"host thread {thread}"
    for index in mine:
        op = ops[index]
        on_host = cpu_only or (isinstance(op, Kernel) and op.device == HOST)
        if on_host and not cpu_only:
            # the host needs the op's inputs before it can compute on them
            pending = [event for event in waits[index] if not event.processed]
            if pending:
                wait_start = env.now
                yield env.all_of(pending)
                trace.append(TraceEvent(row, f"wait for {op.name} inputs", "overhead", wait_start, env.now))
        dispatch_s = system.host.dispatch_s if on_host else system.device.dispatch_s
        start = env.now
        yield env.timeout(dispatch_s)
        trace.append(TraceEvent(row, f"issue {op.name}", "overhead", start, env.now))
        process = env.process(machine.run(op, waits[index], done[index]))
        if on_host:
            yield process
        elif isinstance(op, Transfer) and not op.pinned:
            wait_start = env.now
            yield process
            trace.append(TraceEvent(row, f"wait {op.name} (pageable)", "overhead", wait_start, env.now))


def _mark_end(env: simpy.Environment, done: list[simpy.Event], ends: list[float], repeat: int):
    yield env.all_of(done)
    ends[repeat] = env.now
