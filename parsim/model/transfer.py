"""Copies across links in closed form: latency + bytes / bandwidth, and the ring all-reduce.

A copy pays the link's fixed latency once, then streams at the pinned bandwidth, or at the
slower pageable one when the driver stages pageable host memory through a pinned bounce buffer.
A ring all-reduce (NCCL-style) cuts the buffer into G chunks and takes 2(G-1) steps (G-1 to
reduce-scatter, G-1 to all-gather), each GPU sending one chunk to its neighbour per step.

The engine uses the same bandwidth choice and step structure, but sends bytes through fluid
servers that share a switch uplink or a link between flows; here nothing is shared.
"""

from __future__ import annotations

from parsim.hardware.specs import LinkSpec
from parsim.model.numeric import Number


def copy_bandwidth_Bps(link: LinkSpec, pinned: bool) -> float:
    """The bandwidth a copy streams at: pinned, or pageable (staged through a bounce buffer)."""
    return link.bandwidth_Bps if pinned else link.pageable_bandwidth_Bps


def transfer_s(link: LinkSpec, nbytes: Number, pinned: bool = True) -> Number:
    """Uncontended time of one copy: latency + bytes / bandwidth."""
    return link.latency_s + nbytes / copy_bandwidth_Bps(link, pinned)


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
