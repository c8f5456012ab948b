"""Copies across links in closed form: latency + bytes / bandwidth, and the ring all-reduce.

A copy pays the link's fixed latency once, then streams at the pinned bandwidth, or at the
slower pageable one when the driver stages pageable host memory through a pinned bounce buffer.
A pageable copy runs at the host's memcpy speed, which depends on the host: where calibration
measured it (``LinkSpec.pageable_h2d``/``pageable_d2h``), each direction has its own latency and
streams the bytes the host finds in its caches faster than those it reads from DRAM; elsewhere
the preset's one pageable figure stands in, and the prediction says so (``notes``).

The two directions of a PCIe link do not carry data equally well. A device-to-host copy is the GPU
*writing* host memory: posted write packets of ``write_payload_B`` bytes (the max payload size,
256 B on servers) behind 26 bytes of header, sequence number, LCRC and framing. A host-to-device
copy is the GPU *reading* host memory: the root complex answers each read request with completion
packets of ``read_completion_B`` bytes (64 or 128 B) behind 22 bytes. Smaller packets waste more
of the lanes, so where a link gives both sizes the device-to-host rate is the host-to-device one
(``bandwidth_Bps``) times the ratio of the two packet efficiencies (1.064 for 256 B writes and
128 B completions: 25 -> 26.6 GB/s on PCIe 4.0, as the RTX 4090 and A100 hosts measure).
A ring all-reduce (NCCL-style) cuts the buffer into G chunks and takes 2(G-1) steps (G-1 to
reduce-scatter, G-1 to all-gather), each GPU sending one chunk to its neighbour per step.

The engine uses the same bandwidth choice and step structure, but sends bytes through fluid
servers that share a switch uplink or a link between flows; here nothing is shared.
"""

from __future__ import annotations

from parsim.hardware.specs import LinkSpec, PageableCopy
from parsim.model.numeric import Number, minimum
from parsim.workloads.base import Transfer, Workload


def pageable_copy(link: LinkSpec, direction: str) -> PageableCopy | None:
    """What calibration measured of pageable copies in ``direction`` on this link, if anything."""
    return link.pageable_h2d if direction == "h2d" else link.pageable_d2h


WRITE_OVERHEAD_B = 26
"""Bytes around a memory-write packet's payload on PCIe 3.0 and later: a 4-DW header (64-bit
address, 16 B), the 2-B sequence number, the 4-B LCRC and the 4-B STP framing token (PCI Express
Base Specification 3.0, sections 2.2.1 and 4.2.2.3; Neugebauer et al., "Understanding PCIe
performance for end host networking", SIGCOMM 2018, section 3)."""
COMPLETION_OVERHEAD_B = 22
"""Bytes around a completion packet's payload: a 3-DW header (12 B) plus the same 10 B."""


def packet_efficiency(payload_B: float, overhead_B: float) -> float:
    """The share of a link's bytes that are data when every packet carries ``payload_B``."""
    return payload_B / (payload_B + overhead_B)


def pinned_bandwidth_Bps(link: LinkSpec, direction: str) -> float:
    """The rate a pinned copy streams at in ``direction``: ``bandwidth_Bps`` host-to-device, and
    device-to-host the same scaled by the packet efficiencies of writes over read completions
    (never above the link's peak). Links without packet sizes are symmetric."""
    if direction != "d2h" or link.write_payload_B is None or link.read_completion_B is None:
        return link.bandwidth_Bps
    ratio = packet_efficiency(link.write_payload_B, WRITE_OVERHEAD_B) / packet_efficiency(
        link.read_completion_B, COMPLETION_OVERHEAD_B
    )
    return min(link.bandwidth_Bps * ratio, link.peak_bandwidth_Bps)


def uplink_bandwidth_Bps(link: LinkSpec, direction: str) -> float:
    """What a PCIe switch's uplink carries in ``direction``: its own direction's packets on a duplex
    link, the slower (host-to-device) rate on a link both directions share."""
    return pinned_bandwidth_Bps(link, direction if link.duplex else "h2d")


def copy_latency_s(link: LinkSpec, pinned: bool, direction: str = "h2d") -> float:
    """The fixed cost of one copy: the link's, or the measured pageable one in ``direction``."""
    measured = None if pinned else pageable_copy(link, direction)
    return link.latency_s if measured is None else measured.latency_s


def stream_s(link: LinkSpec, nbytes: Number, pinned: bool, direction: str = "h2d") -> Number:
    """The time the bytes of one copy stream (after its latency): at the pinned bandwidth, the
    preset's pageable one, or the measured pageable rates (cached bytes first, then DRAM)."""
    measured = None if pinned else pageable_copy(link, direction)
    if measured is None:
        return nbytes / (pinned_bandwidth_Bps(link, direction) if pinned else link.pageable_bandwidth_Bps)
    cached = minimum(nbytes, measured.cached_B)
    return cached / measured.cached_bandwidth_Bps + (nbytes - cached) / measured.bandwidth_Bps


def copy_bandwidth_Bps(link: LinkSpec, pinned: bool, direction: str = "h2d", nbytes: float = 0.0) -> float:
    """The rate a copy of ``nbytes`` streams at on average (what the engine's link server is
    asked for): pinned, or pageable (staged through a bounce buffer)."""
    seconds = stream_s(link, nbytes, pinned, direction)
    if nbytes > 0 and seconds > 0:
        return float(nbytes / seconds)
    measured = None if pinned else pageable_copy(link, direction)
    if measured is not None:
        return measured.cached_bandwidth_Bps if measured.cached_B > 0 else measured.bandwidth_Bps
    return pinned_bandwidth_Bps(link, direction) if pinned else link.pageable_bandwidth_Bps


def transfer_s(link: LinkSpec, nbytes: Number, pinned: bool = True, direction: str = "h2d") -> Number:
    """Uncontended time of one copy: latency + bytes / bandwidth."""
    return copy_latency_s(link, pinned, direction) + stream_s(link, nbytes, pinned, direction)


def pageable_notes(workload: Workload, link: LinkSpec | None) -> tuple[str, ...]:
    """A line when a pageable copy is predicted from a preset's figure rather than measured."""
    directions = sorted({op.direction for op in workload.ops if isinstance(op, Transfer) and not op.pinned})
    if link is None:
        return ()
    guessed = [d for d in directions if pageable_copy(link, d) is None]
    if not guessed:
        return ()
    return (
        f"pageable copies ({', '.join(guessed)}) run at the host's memcpy speed, which depends on the "
        f"host: {link.id} assumes {link.pageable_bandwidth_Bps / 1e9:.3g} GB/s (an H100 host measured "
        "7-10 GB/s); `parsim calibrate` measures them on this machine",
    )


def ring_steps(gpus: int) -> int:
    """Steps of a ring all-reduce over ``gpus`` GPUs: 2(G-1)."""
    return 2 * (gpus - 1)


def ring_chunk_B(nbytes: Number, gpus: int) -> Number:
    """Bytes each GPU sends per ring step."""
    return nbytes / gpus


def ring_all_reduce_s(link: LinkSpec, nbytes: Number, gpus: int) -> Number:
    """Ring all-reduce: 2(G-1) steps of (latency + nbytes/G / bandwidth); nothing to do on one GPU."""
    if gpus == 1:
        return 0.0
    return ring_steps(gpus) * (link.latency_s + ring_chunk_B(nbytes, gpus) / link.bandwidth_Bps)
