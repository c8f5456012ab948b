"""Where an op runs and what it holds: the host CPU's work, the host thread's waits, the copy engines.

The engine (``methods.engine``) and the analytic schedule (``methods.analytic``) place ops by these
rules and differ only in how they compose time (events and shared bandwidth, or a list schedule):

- **host work**: in a CPU-only system every kernel runs on the host, in the mode asked; beside
  GPUs a kernel placed on the host (``device = HOST``: a data loader's decode, an optimizer step
  on the CPU) runs in the host's default mode, the mode asked being the GPUs';
- **the host thread waits** for an op to end when it runs the op itself (and, beside GPUs, for
  the op's inputs first), or when the op is a pageable copy: the driver stages pageable memory
  through a pinned bounce buffer with the issuing thread;
- **copy engines**: a GPU with two or more DMA engines copies both ways at once, half of its
  engines each way; with one, a host-to-device and a device-to-host copy queue on the same engine
  (``ProcessorSpec.copy_engines``). A link that is not duplex carries one direction at a time
  (``LinkSpec.duplex``): both ways share its bandwidth.
"""

from __future__ import annotations

from parsim.hardware.specs import LinkSpec, ProcessorSpec, SystemSpec
from parsim.model.modes import default_mode
from parsim.workloads.base import HOST, Kernel, Op, Transfer

BOTH_WAYS = "both"
"""The lane of a copy engine or a link that serves both directions (one engine, a half-duplex link)."""


def on_host(system: SystemSpec, op: Op) -> bool:
    """Whether the host CPU runs ``op`` itself (a CPU-only system, or a kernel placed on the host)."""
    return system.device is None or (isinstance(op, Kernel) and op.device == HOST)


def host_mode(system: SystemSpec, mode: str) -> str:
    """The mode the host's kernels run in: the one asked on a CPU-only system, else the host's default."""
    return mode if system.device is None else default_mode(system.host)


def kernel_processor(system: SystemSpec, kernel: Kernel, mode: str) -> tuple[ProcessorSpec, str]:
    """The processor that runs ``kernel`` and the mode it runs in (``mode``: the one asked)."""
    if on_host(system, kernel):
        return system.host, host_mode(system, mode)
    return system.compute, mode


def blocks_host(system: SystemSpec, op: Op) -> bool:
    """Whether the thread that issues ``op`` waits for its end: the host runs it, or a pageable or
    synchronous (``Transfer.waits``) copy."""
    return on_host(system, op) or (isinstance(op, Transfer) and (not op.pinned or op.waits))


def engines_per_lane(gpu: ProcessorSpec) -> int:
    """Copies of one GPU that may run at once in one lane: half its engines, at least one."""
    return max(1, gpu.copy_engines // 2)


def engine_lane(gpu: ProcessorSpec, direction: str) -> str:
    """The copy-engine lane a copy in ``direction`` takes: its direction's, or the one engine's."""
    return direction if gpu.copy_engines >= 2 else BOTH_WAYS


def link_lane(link: LinkSpec, direction: str) -> str:
    """The direction of the link a copy streams through: its own on a duplex link, else the shared one."""
    return direction if link.duplex else BOTH_WAYS


def copy_lane(system: SystemSpec, direction: str) -> str:
    """Where a GPU's copies in ``direction`` queue when nothing is shared between GPUs: their own
    direction only where the GPU has an engine each way and the link is duplex."""
    gpu = system.gpu
    both = engine_lane(gpu, direction) == link_lane(system.host_link, direction) == direction
    return direction if both else BOTH_WAYS
