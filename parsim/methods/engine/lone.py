"""The engine's throughput run of a program of one GPU kernel, without events.

``program.timing`` runs three back-to-back instances only to read when each ends. For a program
of one kernel on a GPU (a matmul, a vector add) the engine's rules leave nothing to schedule: the
host thread issues instance ``r`` one dispatch after instance ``r - 1``; the kernel starts when it
is issued and the instance before it on the stream has ended, and holds the GPU for its duration.
``instance_ends`` takes exactly the additions SimPy takes (``now + delay``; a kernel's timeout is
``end - now``), so its ends are the simulation's to the bit; anything else (host work, a
compiled step's dispatch, copies, several ops) gets None and is simulated. The engine stays the
oracle: ``tests/test_engine_lone.py`` compares the two on a grid of kernels, devices and frameworks.
"""

from __future__ import annotations

from parsim import stack
from parsim.hardware.specs import SystemSpec
from parsim.methods.engine.processor import kernel_s
from parsim.model.issue import issue_s, step_issue_s
from parsim.model.kernel import shape
from parsim.workloads.base import Kernel, Workload


def instance_ends(
    workload: Workload, system: SystemSpec, mode: str, overlap: str, repeats: int
) -> tuple[float, ...] | None:
    """``simulate(workload, system, mode, overlap, repeats, record=False).instance_ends_s`` for a
    program of one kernel on a GPU, or None where the program is anything else."""
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
    dispatch = issue_s(system, framework, False, kernel)  # ``_thread``: a GPU kernel's launch
    seconds = kernel_s(system.gpu, mode, overlap, shape(kernel))  # ``Processor._duration``
    if framework is not None:
        seconds = framework.floor(seconds, kernel.issue.multi_tensor)
    ends: list[float] = []
    issued = 0  # the host thread's clock (SimPy's starts at the integer 0)
    end = None
    for _ in range(repeats):
        issued = issued + dispatch  # ``yield env.timeout(dispatch_s)``
        # ``Machine.run`` waits for the instance before on the stream, then takes the free GPU
        start = issued if end is None or end <= issued else end
        clock = start + seconds  # ``Processor.run_chain``: max(now, issued) + duration
        end = start + (clock - start)  # ``yield env.timeout(clock - now)``
        ends.append(max(0.0, end))  # ``_Completion.finish``
    return tuple(ends)
