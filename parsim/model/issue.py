"""Issuing an op: the host time spent before an op can start.

A raw call costs the host what its library costs: a NumPy call on a CPU; on a GPU a CuPy call
(``stack.array_library.CUPY``: Python and CuPy's own work per kind of call, then the CUDA launch,
``dispatch_s`` of the device), since CuPy is how parsim runs raw work on a GPU. Inside a
deep-learning framework every operator first pays the framework (Python, dispatcher, autograd,
allocator): ``op_cycles`` of the host CPU, so a faster host issues faster; a captured CUDA graph
pays only a share of each launch (a whole framework run as one, or a node of a graph captured
inside an eager step: ``Issue.graph_node``). A *primitive* op inside an operator's forward (the eight tensor
ops of a Hugging Face RMSNorm) pays the framework's ``primitive_cycles`` instead: the dispatcher and
the launch, not a module call; a kernel the library launches inside an op's call (cuDNN's layout
transposes) pays its launch alone. On a GPU the host then moves on while the device works, so when
this host time exceeds the kernel's, the GPU idles behind the host: the timeline shows the gaps.
A compiled framework (XLA's jitted step) pays instead once per step, before the step's first op;
a raw call on a TPU is itself one jitted call (JAX), and pays that.
"""

from __future__ import annotations

from parsim.hardware.specs import SystemSpec
from parsim.stack import DEVICE_FRAMEWORKS, FrameworkSpec
from parsim.stack import framework as framework_spec
from parsim.stack.array_library import CUPY
from parsim.stack.presets import CUDA_GRAPH_LAUNCH_SHARE
from parsim.workloads.base import Kernel, Op, Transfer
from parsim.workloads.serving import ENGINE_STEP


def call_kind(op: Op) -> str | None:
    """The kind of CuPy call ``op`` is (``CALLS``), or None for what CuPy does not issue (collectives,
    blocks of a pipeline)."""
    if isinstance(op, Transfer):
        return "copy"
    if not isinstance(op, Kernel):
        return None
    if op.library.gemm_mn is not None:
        return "tensordot" if op.work.op == "tensordot" else "gemm"
    return "reduction" if op.work.op == "sum" else "elementwise"


def issue_s(
    system: SystemSpec, framework: FrameworkSpec | None, on_host: bool, op: Op | None = None
) -> float:
    """Host seconds to issue one op of a program run through ``framework`` (None: raw calls).

    Args:
        system: the host, and the GPU when there is one.
        framework: the framework the program runs in, or None for raw library calls.
        on_host: the host CPU runs the op itself (a CPU-only system, or host work beside GPUs).
        op: the op issued; a raw call of a kind CuPy issues pays CuPy's cost (None: a bare launch);
            a primitive op inside an operator (``Issue.primitive``) pays ``primitive_cycles``.
    """
    host = system.host
    if on_host:
        framework_s = (
            framework.op_host_s(host.framework_clock_Hz) if framework and system.device is None else 0.0
        )
        if framework and isinstance(op, Kernel) and op.part == ENGINE_STEP:  # a serving engine's loop
            framework_s += framework.serve_step_s(host.framework_clock_Hz, op.work.work_items)
        return framework_s + host.dispatch_s
    launch = system.gpu.dispatch_s
    if framework is None and system.gpu.kind in DEVICE_FRAMEWORKS:  # a TPU's raw call: one jitted call
        return (
            framework_spec(DEVICE_FRAMEWORKS[system.gpu.kind]).step_host_s(host.framework_clock_Hz) + launch
        )
    if framework is None:
        kind = call_kind(op) if op is not None else None
        return launch if kind is None else CUPY.call_s(kind, launch)
    if isinstance(op, Kernel):  # a library call may launch several kernels for it (``Issue.launches``)
        launch *= op.issue.launches
    if isinstance(op, Kernel) and op.issue.graph_node:  # replayed by the driver from a captured graph
        return CUDA_GRAPH_LAUNCH_SHARE * launch
    if isinstance(op, Kernel) and op.issue.in_library_call:  # the op whose call launched it paid the rest
        return framework.launch_share * launch
    primitive = isinstance(op, Kernel) and op.issue.primitive
    return framework.op_host_s(host.framework_clock_Hz, primitive) + framework.launch_share * launch


def step_issue_s(system: SystemSpec, framework: FrameworkSpec | None, index: int, per_instance: int) -> float:
    """Host seconds to dispatch a compiled step, charged to op ``index`` when it opens a step (an
    instance of ``per_instance`` ops); 0 for every other op and for frameworks that issue per op."""
    if framework is None or not framework.step_cycles or index % per_instance:
        return 0.0
    return framework.step_host_s(system.host.framework_clock_Hz)
