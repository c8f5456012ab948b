"""Does the data fit? A workload whose footprint exceeds a processor's memory is refused, not predicted.

Real programs fail with an out-of-memory error there, so a prediction would be a fiction. The
executing processor holds the footprint; when data crosses a link, the host holds its side of
every copy too. Messages name the need and what the processor has, in GiB. Footprints may be one
number or an array of them (a vectorised sweep).
"""

from __future__ import annotations

from parsim.hardware.specs import ProcessorSpec, SystemSpec
from parsim.units import gib


def memory_limits(system: SystemSpec, crosses_link: bool) -> list[tuple[ProcessorSpec, int, str]]:
    """``(processor, multiple of the footprint it holds, how the message names its memory)``."""
    limits = [(system.compute, 1, "")]
    if system.device is not None and crosses_link:
        limits.append((system.host, system.gpus, "of host memory"))
    return limits


def too_big_message(name: str, need_B: float, spec: ProcessorSpec, what: str = "") -> str:
    """``vector_add needs 134.1 GiB, h100-pcie has 80.0 GiB`` (``what``: e.g. ``of host memory``)."""
    need = f"{gib(need_B)} {what}".rstrip()
    return f"{name} needs {need}, {spec.id} has {gib(spec.memory.capacity_B)}"
