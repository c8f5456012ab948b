"""Does it fit, and what fills the memory: the one rule every workload, figure, search and page uses.

A workload declares what one GPU holds part by part (``workloads.needs.MemoryNeeds``: weights,
gradients, optimizer state, activations, KV cache, workspace, or undivided data). A process that
runs in a framework on a GPU also holds the framework's runtime before any tensor (the CUDA
context, the libraries' handles and workspaces: ``LibrarySpec.runtime_B``), so what the processor
must hold is the needs plus that reserve, and the room a workload's own tensors have is the
capacity less it. ``breakdown`` answers both, once, for a device; ``MemoryBreakdown`` says it in
GiB for a person (the refusal, the CLI line) and in bytes for a program (``predict --json``).
Needs may carry NumPy arrays (a vectorised sweep): ``fits`` is then an array too.
"""

from __future__ import annotations

from typing import Any

import attrs

from parsim.base.dtypes import Number
from parsim.base.units import gib
from parsim.hardware.specs import SystemSpec
from parsim.model.capacity import runtime_B
from parsim.workloads.base import Workload
from parsim.workloads.needs import MemoryNeeds

GiB = 2**30


@attrs.frozen
class MemoryBreakdown:
    """What one executing processor (each GPU of a split) holds, against what it has.

    Attributes:
        needs: the workload's parts, in bytes.
        runtime_B: the framework's reserve on a GPU (0 on a CPU or for raw library calls).
        capacity_B: the processor's memory.
        processor: its id (``h100-sxm``).
        gpus: GPUs the work is split over (the figures are per GPU).
    """

    needs: MemoryNeeds
    runtime_B: float
    capacity_B: float
    processor: str
    gpus: int = 1

    @property
    def need_B(self) -> Number:
        """Every part plus the runtime reserve: what the processor must hold."""
        return self.needs.total_B + self.runtime_B

    @property
    def room_B(self) -> float:
        """What the workload's own tensors may take: the capacity less the runtime reserve."""
        return self.capacity_B - self.runtime_B

    @property
    def fits(self) -> Any:
        """The needs fit in the room (a bool, or an array of them for a sweep)."""
        return self.needs.total_B <= self.room_B

    def parts(self) -> tuple[tuple[str, float], ...]:
        """``(part, bytes)`` of the parts that hold anything, the runtime reserve last."""
        held = [(name, value) for name, value in self.needs.parts() if _any(value)]
        return tuple(held + ([("runtime", self.runtime_B)] if self.runtime_B else []))

    @property
    def itemised(self) -> bool:
        """The workload declared its parts (not only undivided data)."""
        return any(name not in ("data", "runtime") for name, _ in self.parts())

    def summary(self) -> str:
        """``weights 2.4, gradients 4.9, ..., runtime 1.0 GiB`` (an empty breakdown: ``nothing``)."""
        parts = ", ".join(f"{name.replace('_', ' ')} {value / GiB:.1f}" for name, value in self.parts())
        return f"{parts} GiB" if parts else "nothing"

    def line(self) -> str:
        """``37.2 GiB per GPU of 80.0 GiB: weights 2.4, ...``: the CLI's one-line breakdown."""
        per = " per GPU" if self.gpus > 1 else ""
        return f"{gib(self.need_B)}{per} of {gib(self.capacity_B)}: {self.summary()}"

    def refusal(self, name: str, what: str = "") -> str:
        """``network needs 92.1 GiB per GPU, h100-sxm has 80.0 GiB: weights 13.0, ...``;
        ``what`` names the split (``with tp=8 pp=1``). Undivided data gets no list of parts."""
        per = " per GPU" if self.gpus > 1 else ""
        text = f"{name} needs {gib(self.need_B)}{per}{' ' + what if what else ''}, "
        text += f"{self.processor} has {gib(self.capacity_B)}"
        return f"{text}: {self.summary()}" if self.itemised else text

    def to_dict(self) -> dict[str, Any]:
        """Bytes per part and per GPU, the capacity, the room and whether it fits (``predict --json``)."""
        return {
            **{f"{name}_B": float(value) for name, value in self.needs.parts()},
            "runtime_B": self.runtime_B,
            "total_B": float(self.need_B),
            "capacity_B": self.capacity_B,
            "room_B": self.room_B,
            "fits": bool(self.fits),
            "per_gpu": True,
            "gpus": self.gpus,
        }


def _any(value: Number) -> bool:
    return bool(value > 0) if isinstance(value, float | int) else bool((value > 0).any())


def breakdown(needs: MemoryNeeds, system: SystemSpec, in_framework: bool) -> MemoryBreakdown:
    """THE memory rule: ``needs`` on ``system``'s executing processor (each of its GPUs), with the
    runtime reserve a framework process holds there."""
    return MemoryBreakdown(
        needs,
        runtime_B(system, in_framework),
        system.compute.memory.capacity_B,
        system.compute.id,
        system.gpus,
    )


def of_workload(workload: Workload, system: SystemSpec) -> MemoryBreakdown:
    """``breakdown`` of a built workload: its declared needs, in its framework or not."""
    return breakdown(workload.needs, system, bool(workload.framework))
