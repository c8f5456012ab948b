"""Resources as values: what a timeline row is, not a string to be parsed back.

A trace says which resource was busy: a host thread issuing work, a group of a processor's cores,
the memory level a kernel streams from, one direction of a link, a GPU's port on the all-reduce
ring. ``Resource`` records that as fields (kind, device, unit, which cores, direction), so the
breakdown, the utilisation, the report and the figures group and order rows by asking, never by
matching text. Text appears only at the edge: ``label`` gives the row name a person reads
(``"GPU3 SM 0-131"``, ``"host #2"``, ``"PCIe h2d"``).

The constructors below take the system, so the naming rules (a GPU is named only when there are
several; the host CPU is named when a GPU is beside it) are written once for the engine and the
analytic schedule alike.
"""

from __future__ import annotations

from typing import NamedTuple

from parsim.hardware.specs import SystemSpec
from parsim.workloads.base import HOST

NETWORK_ROW = "network"
"""``Resource.kind`` of the node's NICs (a collective between nodes)."""


class Resource(NamedTuple):
    """One timeline row (a named tuple: a traced training step creates tens of thousands of events).

    Attributes:
        kind: ``thread`` (a host thread), ``cores``, ``memory``, ``link``, ``ring`` or ``network``.
        device: the GPU's index, or ``HOST`` (-1) for the host CPU.
        unit: ``SM`` or ``core`` (cores), the level's name (memory: ``L2``, ``device memory``), the
            link family (``PCIe``, ``NVLink``).
        first: the first busy core (cores), or the thread's index (thread).
        busy: how many cores are busy; 0 names the processor as a whole (its utilisation row).
        direction: ``h2d`` or ``d2h`` (links).
        tagged: the label names the device (several GPUs, or the host CPU beside a GPU).
    """

    kind: str
    device: int = HOST
    unit: str = ""
    first: int = 0
    busy: int = 0
    direction: str = ""
    tagged: bool = False

    @property
    def label(self) -> str:
        """The row name a person reads."""
        return self.label_for(str(self.first if self.kind == "thread" else self.device))

    def label_for(self, number: str) -> str:
        """The label with ``number`` in place of the GPU (or thread) index, e.g. ``"0-7"`` for a group."""
        if self.kind == "thread":
            return "host" if number == "0" else f"host #{number}"
        device = number
        prefix = ("host " if self.device == HOST else f"GPU{device} ") if self.tagged else ""
        if self.kind == "cores":
            if self.busy == 0:
                return f"{prefix}{self.unit}"
            cores = f"{self.first}" if self.busy == 1 else f"{self.first}-{self.first + self.busy - 1}"
            return f"{prefix}{self.unit} {cores}"
        if self.kind == "memory":
            return f"{prefix}memory ({self.unit})"
        if self.kind == "ring":
            return f"GPU{device} {self.unit} ring"
        if self.kind == "network":
            return f"network ({self.unit})"
        return f"{prefix}{self.unit} {self.direction}"

    @property
    def group(self) -> Resource:
        """The processor a core-group row belongs to (the row utilisation is reported for)."""
        return self._replace(first=0, busy=0) if self.kind == "cores" else self

    @property
    def on_gpu(self) -> bool:
        return self.device != HOST


def _processor(system: SystemSpec, device: int) -> tuple[int, str, bool]:
    """(device index, core unit, tagged) of the processor running work placed on ``device``."""
    if system.device is None or device == HOST:  # a CPU-only system runs everything on the host
        return HOST, "core", system.device is not None
    return device, system.gpu.core_unit, system.gpus > 1


def cores(system: SystemSpec, device: int, busy: int, first: int = 0) -> Resource:
    """``busy`` cores of the processor that runs work placed on ``device``."""
    index, unit, tagged = _processor(system, device)
    return Resource("cores", index, unit, first, busy, tagged=tagged)


def memory(system: SystemSpec, device: int, level: str) -> Resource:
    """The memory level a kernel on ``device`` streams from."""
    index, _, tagged = _processor(system, device)
    return Resource("memory", index, level, tagged=tagged)


def link(system: SystemSpec, device: int, direction: str) -> Resource:
    """One direction of GPU ``device``'s link to the host (the system has a GPU, so a link)."""
    family = system.host_link.family
    return Resource("link", device, family, direction=direction, tagged=system.gpus > 1)


def ring(system: SystemSpec, device: int) -> Resource:
    """GPU ``device``'s port on the all-reduce ring."""
    family = system.ring_link.family
    return Resource("ring", device, family, tagged=True)


def network(system: SystemSpec) -> Resource:
    """The node's NICs, which carry collectives between nodes (a cluster's representative node)."""
    unit = system.network.nic.id if system.network is not None else "none"
    return Resource(NETWORK_ROW, 0, unit, tagged=True)


def thread(index: int) -> Resource:
    """Host thread ``index`` (0 is the main thread; each GPU of a data-parallel step has its own)."""
    return Resource("thread", HOST, first=index)
