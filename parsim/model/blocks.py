"""A block's time: its kernels back to back, launch-bound where they are short, plus its collectives.

A pipeline stage's pass over one micro-batch is hundreds of kernels issued by one host thread,
with the tensor-parallel all-reduces between them. The GPU runs each kernel for its own time
(``kernel_seconds``: the engine's waves or the analytic closed form), but cannot start one before
the host has issued it, so a kernel shorter than the framework's cost to issue it takes that
cost; the collectives stop the stream (each layer needs the reduced activations), so their time
adds. The result is split into compute and communication so timelines and breakdowns can show
how much of a stage's time tensor parallelism costs.

A collective that names kernels ``beside`` it (``AllReduce.beside``: expert parallelism's
all-to-alls under Megatron-Core's combined 1F1B schedule) runs on a stream of its own while they
do: the pair takes the longer of the two, the kernels slowed by the SMs the collective holds
(``model.comm_sms``), so the block pays only what the collective outlasts them by, plus that
slowdown. Like a relay runner who may set off only when the baton of the other team's leg is
handed over: each exchange hides behind one leg, not behind the whole race.

A kernel whose result the host reads back and waits for (``Issue.host_waits``: Megatron-Core's
dropless token dispatcher copies the split sizes to the host and synchronises on them once per MoE
layer's forward) overlaps nothing of the host's: its issue, its run and the copy's trip over the
host link (``transfer.copy_latency_s``) add up. Everywhere else a kernel's slot already overlaps
at most one kernel's run with the next one's issue (each costs the longer of the two), so the host
never runs further ahead than that: a synchronisation only drains what it would have overlapped.
"""

from __future__ import annotations

from collections.abc import Callable

from parsim.hardware.specs import SystemSpec
from parsim.model.collectives import op_timing
from parsim.model.comm_sms import beside_collective_s
from parsim.model.issue import issue_s
from parsim.model.transfer import copy_latency_s
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
    it per block shape with their own ``kernel_seconds``); a collective run ``beside`` some of the
    kernels adds only its exposed part (``paired_s``)."""

    def gpu_s(kernel: Kernel) -> float:
        seconds = kernel_seconds(kernel)
        return framework.floor(seconds, kernel.issue.multi_tensor) if framework else seconds

    times = [_slot_s(system, framework, kernel, gpu_s(kernel)) for kernel in kernels]
    compute = sum(times)
    communication = sum(op_timing(system, op).seconds for op in collectives if not op.beside)
    paired = [op for op in collectives if op.beside]
    if paired:
        sms = 0 if system.torus else system.gpu.cores
        for op in paired:
            covered = sum(times[n] for n in op.beside)
            communication += paired_s(op_timing(system, op).seconds, covered, sms)
    return compute, communication


def _slot_s(system: SystemSpec, framework: FrameworkSpec | None, kernel: Kernel, gpu: float) -> float:
    """A kernel's share of its block: the longer of its run and its issue, or, where the host waits
    for it (``Issue.host_waits``), its issue, its run and the read-back's trip over the host link
    one after the other (pinned: PyTorch stages a non-blocking device-to-host copy in pinned memory)."""
    host = issue_s(system, framework, False, kernel)
    if kernel.issue.host_waits:
        return host + gpu + copy_latency_s(system.host_link, True, "d2h")
    return max(gpu, host)


def paired_s(collective_s: float, compute_s: float, sms: int) -> float:
    """What a collective of ``collective_s`` run beside kernels of ``compute_s`` adds to them: the
    pair lasts the longer of the two, the kernels slowed by the SMs the collective holds while it
    runs (``comm_sms.beside_collective_s``; ``sms`` 0: no SMs held)."""
    slowed = beside_collective_s(compute_s, collective_s, sms) if sms else compute_s
    return max(collective_s, slowed) - compute_s
