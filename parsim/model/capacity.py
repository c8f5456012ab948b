"""Does the data fit? A workload whose footprint exceeds a processor's memory is refused, not predicted.

Real programs fail with an out-of-memory error there, so a prediction would be a fiction. The
executing processor holds the footprint (a framework process on a GPU also holds its runtime: the
CUDA context and the libraries' workspaces): ``footprint.breakdown`` is that rule, part by part.
The host holds one buffer per copy that crosses the link, never the GPU's own data: ``host_too_big``.
Messages name the need and what the processor has, in GiB. Footprints may be one number or an
array of them (a vectorised sweep).
"""

from __future__ import annotations

from typing import Any

from parsim.base.dtypes import Number
from parsim.base.units import gib
from parsim.hardware.specs import ProcessorSpec, SystemSpec
from parsim.stack import library_for


def runtime_B(system: SystemSpec, in_framework: bool) -> float:
    """Device memory a framework process holds before any tensor (0 on a CPU, or for raw kernels)."""
    if not in_framework:
        return 0.0
    return library_for(system.device.kind if system.device is not None else "cpu").runtime_B


def host_too_big(system: SystemSpec, host_buffer_B: Number) -> Any:
    """The host cannot hold the buffers that cross the link (False on a CPU: nothing crosses);
    an array of answers for an array of buffers."""
    if system.device is None:
        return host_buffer_B != host_buffer_B  # False, shaped like the buffers
    return host_buffer_B > system.host.memory.capacity_B


def host_message(name: str, system: SystemSpec, host_buffer_B: float) -> str:
    """``offload needs 102.7 GiB of host memory, xeon-e5-2630v3 has 64.0 GiB``."""
    return too_big_message(name, host_buffer_B, system.host, "of host memory")


def too_big_message(name: str, need_B: float, spec: ProcessorSpec, what: str = "") -> str:
    """``vector_add needs 134.1 GiB, h100-pcie has 80.0 GiB`` (``what``: e.g. ``of host memory``)."""
    need = f"{gib(need_B)} {what}".rstrip()
    return f"{name} needs {need}, {spec.id} has {gib(spec.memory.capacity_B)}"
