"""Issuing an op: the host time spent before an op can start.

A raw kernel costs the host one library call: a NumPy call on a CPU, a CUDA launch on a GPU
(``dispatch_s`` of the processor). Inside a deep-learning framework every operator first pays the
framework (Python, dispatcher, autograd, allocator): ``op_cycles`` of the host CPU, so a faster
host issues faster; a captured CUDA graph pays only a share of each launch. A *primitive* op inside
an operator's forward (the eight tensor ops of a Hugging Face RMSNorm) pays the framework's
``primitive_cycles`` instead: the dispatcher and the launch, not a module call. On a GPU the host then
moves on while the device works, so when this host time exceeds the kernel's, the GPU idles
behind the host: the timeline shows the gaps.
"""

from __future__ import annotations

from parsim.hardware.specs import SystemSpec
from parsim.stack import FrameworkSpec


def issue_s(
    system: SystemSpec, framework: FrameworkSpec | None, on_host: bool, primitive: bool = False
) -> float:
    """Host seconds to issue one op of a program run through ``framework`` (None: raw calls).

    Args:
        system: the host, and the GPU when there is one.
        framework: the framework the program runs in, or None for raw library calls.
        on_host: the host CPU runs the op itself (a CPU-only system, or host work beside GPUs).
        primitive: the op is a primitive tensor op inside an operator (``Kernel.primitive``).
    """
    host = system.host
    if on_host:
        framework_s = framework.op_host_s(host.clock_Hz) if framework and system.device is None else 0.0
        return framework_s + host.dispatch_s
    launch = system.gpu.dispatch_s
    if framework is None:
        return launch
    return framework.op_host_s(host.clock_Hz, primitive) + framework.launch_share * launch
