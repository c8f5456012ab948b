"""The engine's runs of a program of one GPU kernel, without stepping through events.

``program.timing`` runs three back-to-back instances only to read when each ends. For a program
of one kernel on a GPU (a matmul, a vector add) the engine's rules leave nothing to schedule: the
host thread issues instance ``r`` one dispatch after instance ``r - 1``; the kernel starts when it
is issued and the instance before it on the stream has ended, and holds the GPU for its duration.
``instance_ends`` takes exactly the additions SimPy takes (``now + delay``; a kernel's timeout is
``end - now``), so its ends are the simulation's to the bit; anything else (host work, a
compiled step's dispatch, copies, several ops) gets None and is simulated. ``latency_run`` is
the traced run of one instance the same way: the host's issue interval, then the kernel placed by
the engine's own ``Processor._place`` (its trace records and notes), the eight SimPy events such a
run always takes. The engine stays the oracle: ``tests/test_engine_lone.py`` compares the two on a
grid of kernels, devices and frameworks.
"""

from __future__ import annotations

import simpy

from parsim import stack
from parsim.hardware.specs import SystemSpec
from parsim.methods.engine.notes import Notes
from parsim.methods.engine.processor import KernelTimes, Processor, kernel_s
from parsim.model.issue import issue_s, step_issue_s
from parsim.model.kernel import shape
from parsim.results import resources
from parsim.results.timeline import TraceEvent
from parsim.stack import FrameworkSpec
from parsim.workloads.base import Kernel, Workload, thread_of

EVENTS = 8
"""SimPy events of the traced run of one GPU kernel: the host thread's start and its launch, the
kernel's process start, its request for the GPU, its time there, the release, the ends of the two
processes (``tests/test_engine_lone.py`` counts them in the engine)."""


def _lone_kernel(
    workload: Workload, system: SystemSpec, repeats: int
) -> tuple[Kernel, FrameworkSpec | None] | None:
    """The one GPU kernel of ``workload`` and its framework, where the closed forms apply."""
    if len(workload.ops) != 1 or workload.devices or system.device is None:
        return None
    kernel = workload.ops[0]
    if type(kernel) is not Kernel or not 0 <= kernel.device < system.gpus:
        return None
    if workload.deps and workload.deps[0]:  # one op waits on nothing but itself
        return None
    framework = stack.framework(workload.framework) if workload.framework else None
    if any(step_issue_s(system, framework, index, 1) for index in range(repeats)):
        return None  # a compiled step's dispatch: simulated
    return kernel, framework


def latency_run(
    workload: Workload, system: SystemSpec, mode: str, overlap: str
) -> tuple[tuple[float, ...], tuple[TraceEvent, ...], int, tuple[str, ...]] | None:
    """``simulate(workload, system, mode, overlap)``'s instance ends, trace, events and notes for a
    program of one kernel on a GPU, or None where the program is anything else."""
    lone = _lone_kernel(workload, system, 1)
    if lone is None:
        return None
    kernel, framework = lone
    notes: Notes = Notes()
    trace: list[TraceEvent] = []
    gpu = Processor(
        simpy.Environment(),
        system.gpu,
        mode,
        overlap,
        trace,
        system,
        kernel.device,
        notes,
        framework,
        KernelTimes(),
    )
    issued = 0 + issue_s(system, framework, False, kernel)  # ``_thread``: SimPy's clock starts at 0
    trace.append(
        TraceEvent(resources.thread(thread_of(kernel)), f"issue {kernel.name}", "overhead", 0, issued)
    )
    clock = gpu._place(kernel, issued)  # ``Processor.run_chain``: max(now, issued), the same here
    end = issued + (clock - issued)  # ``yield env.timeout(clock - now)``
    return (max(0.0, end),), tuple(trace), EVENTS, notes.summary()


def instance_ends(
    workload: Workload, system: SystemSpec, mode: str, overlap: str, repeats: int
) -> tuple[float, ...] | None:
    """``simulate(workload, system, mode, overlap, repeats, record=False).instance_ends_s`` for a
    program of one kernel on a GPU, or None where the program is anything else."""
    lone = _lone_kernel(workload, system, repeats)
    if lone is None:
        return None
    kernel, framework = lone
    dispatch = issue_s(system, framework, False, kernel)  # ``_thread``: a GPU kernel's launch
    seconds = kernel_s(system.gpu, mode, overlap, shape(kernel))  # ``Processor._duration``
    if framework is not None:
        seconds = framework.floor(seconds, kernel.issue.multi_tensor)
    ends: list[float] = []
    issued: float = 0  # the host thread's clock (SimPy's starts at the integer 0)
    end = None
    for _ in range(repeats):
        issued = issued + dispatch  # ``yield env.timeout(dispatch_s)``
        # ``Machine.run`` waits for the instance before on the stream, then takes the free GPU
        start = issued if end is None or end <= issued else end
        clock = start + seconds  # ``Processor.run_chain``: max(now, issued) + duration
        end = start + (clock - start)  # ``yield env.timeout(clock - now)``
        ends.append(max(0.0, end))  # ``_Completion.finish``
    return tuple(ends)
