"""Link specifications: one PCIe, NVLink, Infinity Fabric or ICI connection.

A ``LinkSpec`` is the data sheet of a link: the effective pinned-memory bandwidth per direction
beside the theoretical one, the pageable rate (staged by the driver through a pinned buffer, or
as calibration measured it per direction: ``PageableCopy``), the fixed cost per transfer, and
for PCIe the packet sizes that set the device-to-host rate (``model.transfer``). Peer links
(NVLink, Infinity Fabric, ICI) join accelerators and carry collectives, never host copies.
Frozen and validated on construction like every spec (``hardware.specs``).
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from parsim.base.checks import BANDWIDTH, SECONDS, boolean, one_of, within
from parsim.base.errors import field_error


@attrs.frozen(cache_hash=True)
class PageableCopy:
    """Pageable copies in one direction, as calibration measured them (``measure.linkfit``): the
    driver stages them with a CPU memcpy, so they run at the host's speed (7-10 GB/s on the H100
    host of issue 30, presets say 24), faster for the first ``cached_B`` bytes of a buffer copied
    again and again (they stay in the host's caches) than for the rest, read from DRAM.

    Attributes:
        latency_s: fixed cost per copy besides the host's call (which the GPU's dispatch charges).
        bandwidth_Bps: rate of the bytes the host memcpy moves from or to DRAM.
        cached_bandwidth_Bps: rate of the bytes it finds in the host's caches (>= bandwidth_Bps).
        cached_B: bytes of a repeatedly copied buffer the host finds in its caches (0: none).
    """

    latency_s: float = attrs.field(validator=SECONDS)
    bandwidth_Bps: float = attrs.field(validator=BANDWIDTH)
    cached_bandwidth_Bps: float = attrs.field(validator=BANDWIDTH)
    cached_B: float = attrs.field(default=0.0, validator=within(0.0, 1e16, "B"))

    def __attrs_post_init__(self) -> None:
        if self.cached_bandwidth_Bps < self.bandwidth_Bps * 0.9999:
            raise field_error(
                "cached_bandwidth_Bps",
                f">= bandwidth_Bps ({self.bandwidth_Bps:g})",
                self.cached_bandwidth_Bps,
            )


LINK_FAMILIES = {"pcie": "PCIe", "nvlink": "NVLink", "xgmi": "Infinity Fabric", "ici": "ICI"}
PEER_KINDS = ("nvlink", "xgmi", "ici")
"""Links that join accelerators directly (NVLink, AMD's Infinity Fabric, a TPU's inter-chip
interconnect), not the host."""


def _pageable(instance: Any, attribute: Any, value: Any) -> None:
    if value is not None and not isinstance(value, PageableCopy):
        raise field_error(attribute.name, "a PageableCopy table or absent", value)


"""Link kinds and how timelines name them."""

PACKET_SIZES_B = (64, 128, 256, 512, 1024, 2048, 4096)
"""The payload sizes PCIe allows (max payload size and read completion sizes are powers of two)."""


def _optional_packet(instance: Any, attribute: Any, value: Any) -> None:
    if value is not None and (isinstance(value, bool) or value not in PACKET_SIZES_B):
        raise field_error(attribute.name, f"one of {', '.join(map(str, PACKET_SIZES_B))} bytes", value)


@attrs.frozen(cache_hash=True)
class LinkSpec:
    """A host<->device or device<->device link, e.g. PCIe 3.0 x16 or NVLink.

    Attributes:
        id: preset id (``"pcie3-x16"``).
        name: human-readable name.
        kind: ``pcie`` (host<->GPU, and GPU peer-to-peer through the host's PCIe), ``nvlink`` or
            ``xgmi`` (AMD's Infinity Fabric): GPU to GPU, given as ``--link`` they carry all-reduce
            traffic while copies to the host keep the GPU's PCIe link; or ``ici`` (a TPU's
            inter-chip interconnect: a peer link like NVLink, one torus link per direction).
        bandwidth_Bps: effective bandwidth per direction with pinned host memory.
        peak_bandwidth_Bps: theoretical bandwidth per direction.
        pageable_bandwidth_Bps: effective bandwidth from pageable memory (staged through a
            pinned bounce buffer by the driver).
        latency_s: fixed cost per transfer (driver + DMA setup + link round trip).
        duplex: both directions run at full speed at once.
        pageable_h2d: pageable host-to-device copies as calibration measured them on this host
            (a ``PageableCopy``); None: ``pageable_bandwidth_Bps`` after ``latency_s``.
        pageable_d2h: the same for device-to-host copies.
        write_payload_B: a PCIe link's max payload size (MPS): the data bytes of each memory-write
            packet the GPU sends up for a device-to-host copy. None with ``read_completion_B``:
            both directions stream at ``bandwidth_Bps``.
        read_completion_B: the data bytes of each completion packet the host's root complex sends
            down for a host-to-device copy (the GPU reads host memory): its read completion size.
            With ``write_payload_B`` it sets the device-to-host rate (``model.transfer``):
            ``bandwidth_Bps`` is then the host-to-device one.
    """

    id: str
    name: str
    bandwidth_Bps: float = attrs.field(validator=BANDWIDTH)
    peak_bandwidth_Bps: float = attrs.field(validator=BANDWIDTH)
    pageable_bandwidth_Bps: float = attrs.field(validator=BANDWIDTH)
    latency_s: float = attrs.field(validator=SECONDS)
    duplex: bool = attrs.field(default=True, validator=boolean)
    kind: Literal["pcie", "nvlink", "xgmi", "ici"] = attrs.field(
        default="pcie", validator=one_of(tuple(LINK_FAMILIES))
    )
    pageable_h2d: PageableCopy | None = attrs.field(default=None, validator=_pageable)
    pageable_d2h: PageableCopy | None = attrs.field(default=None, validator=_pageable)
    write_payload_B: int | None = attrs.field(default=None, validator=_optional_packet)
    read_completion_B: int | None = attrs.field(default=None, validator=_optional_packet)

    @property
    def is_peer(self) -> bool:
        """Joins accelerators directly (NVLink, Infinity Fabric, ICI): carries collectives, never
        host copies."""
        return self.kind in PEER_KINDS

    @property
    def family(self) -> str:
        """How timelines name the link's rows: ``PCIe``, ``NVLink``, ``Infinity Fabric``, ``ICI``."""
        return LINK_FAMILIES[self.kind]

    def __attrs_post_init__(self) -> None:
        if self.bandwidth_Bps > self.peak_bandwidth_Bps * 1.0001:
            raise field_error(
                "bandwidth_Bps", f"<= peak_bandwidth_Bps ({self.peak_bandwidth_Bps:g})", self.bandwidth_Bps
            )
        if self.pageable_bandwidth_Bps > self.bandwidth_Bps * 1.0001:
            raise field_error(
                "pageable_bandwidth_Bps",
                f"<= bandwidth_Bps ({self.bandwidth_Bps:g})",
                self.pageable_bandwidth_Bps,
            )
        if (self.write_payload_B is None) != (self.read_completion_B is None):
            missing = "write_payload_B" if self.write_payload_B is None else "read_completion_B"
            raise field_error(missing, "given with the other PCIe packet size (or neither)", None)
        if self.write_payload_B is not None and self.kind != "pcie":
            raise field_error(
                "write_payload_B", "absent on a peer link (host copies are PCIe's)", self.write_payload_B
            )
        for name in ("pageable_h2d", "pageable_d2h"):  # staged through the DMA: never faster than it
            copy = getattr(self, name)
            if copy is not None and copy.cached_bandwidth_Bps > self.bandwidth_Bps * 1.0001:
                raise field_error(
                    f"{name}.cached_bandwidth_Bps",
                    f"<= bandwidth_Bps ({self.bandwidth_Bps:g})",
                    copy.cached_bandwidth_Bps,
                )
