"""A block's time: its kernels back to back, launch-bound where they are short, plus its collectives.

A pipeline stage's pass over one micro-batch is hundreds of kernels issued by one host thread,
with the tensor-parallel all-reduces between them. The GPU runs each kernel for its own time
(``kernel_seconds``: the engine's waves or the analytic closed form), but cannot start one before
the host has issued it, so a kernel shorter than the framework's cost to issue it takes that
cost; the collectives stop the stream (each layer needs the reduced activations), so their time
adds. The result is split into compute and communication so timelines and breakdowns can show
how much of a stage's time tensor parallelism costs.
"""

from __future__ import annotations

from collections.abc import Callable

from parsim.hardware.specs import SystemSpec
from parsim.model.collectives import op_timing
from parsim.model.issue import issue_s
from parsim.stack import FrameworkSpec
from parsim.workloads.base import AllReduce, Kernel


def block_parts(
    system: SystemSpec,
    framework: FrameworkSpec | None,
    kernels: tuple[Kernel, ...],
    collectives: tuple[AllReduce, ...],
    kernel_seconds: Callable[[Kernel], float],
) -> tuple[float, float]:
    """``(compute_s, communication_s)`` of a block: its kernels, then its collectives (callers cache
    it per block shape with their own ``kernel_seconds``)."""

    def gpu_s(kernel: Kernel) -> float:
        seconds = kernel_seconds(kernel)
        return framework.floor(seconds, kernel.issue.multi_tensor) if framework else seconds

    compute = sum(max(gpu_s(kernel), issue_s(system, framework, False, kernel)) for kernel in kernels)
    communication = sum(op_timing(system, op).seconds for op in collectives)
    return compute, communication
