"""The host program: issue ops in order, honour streams, wait for the end.

The host thread walks the workload's ops in program order and pays a dispatch cost for each
(a NumPy call, a CUDA kernel launch, a ``cudaMemcpyAsync``). On a GPU system launches are
asynchronous: the host moves on while the device works, so a chain of tiny kernels becomes
launch-bound. A copy from pageable memory is the exception: the driver stages it through a
pinned buffer and the host waits. On a CPU-only system the host itself runs each op to
completion before issuing the next. Ops on one stream run in order; different streams overlap.
"""

from __future__ import annotations

import math

import attrs
import simpy

from parsim.engine.machine import Machine
from parsim.hardware.specs import SystemSpec
from parsim.timeline import TraceEvent
from parsim.workloads.base import Transfer, Workload


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
        system: host, optional device, link.
        mode: Flynn mode of the executing processor.
        overlap: ``roofline`` or ``serial`` combination of compute and memory time.
        repeats: instances issued one after another without synchronising in between.

    Returns:
        The completion time of each instance, the trace, and the event count.
    """
    env = simpy.Environment()
    trace: list[TraceEvent] = []
    machine = Machine(env, system, mode, overlap, trace)
    ends: list[float] = [0.0] * repeats
    env.process(_host(env, machine, workload, system, repeats, ends, trace))
    events = 0
    while env.peek() < math.inf:
        env.step()
        events += 1
    return SimResult(tuple(ends), tuple(trace), events, tuple(sorted(machine.notes)))


def _host(
    env: simpy.Environment,
    machine: Machine,
    workload: Workload,
    system: SystemSpec,
    repeats: int,
    ends: list[float],
    trace: list[TraceEvent],
):
    asynchronous = system.device is not None
    dispatch_s = system.compute.dispatch_s
    stream_tail: dict[int, simpy.Event] = {}
    instances = []
    for repeat in range(repeats):
        done: list[simpy.Event] = []
        for op, deps in zip(workload.ops, workload.deps, strict=True):
            start = env.now
            yield env.timeout(dispatch_s)
            trace.append(TraceEvent("host", f"issue {op.name}", "overhead", start, env.now))
            waits = [stream_tail.get(op.stream), *(done[d] for d in deps)]
            process = env.process(machine.run(op, waits))
            done.append(process)
            stream_tail[op.stream] = process
            blocking = not asynchronous or (isinstance(op, Transfer) and not op.pinned)
            if blocking:
                wait_start = env.now
                yield process
                if asynchronous:
                    trace.append(
                        TraceEvent("host", f"wait {op.name} (pageable)", "overhead", wait_start, env.now)
                    )
        instances.append(done)
        env.process(_mark_end(env, done, ends, repeat))
    yield env.all_of([event for done in instances for event in done])


def _mark_end(env: simpy.Environment, done: list[simpy.Event], ends: list[float], repeat: int):
    yield env.all_of(done)
    ends[repeat] = env.now
