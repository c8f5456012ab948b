"""Collectives hold SMs: a compute block that runs beside one gets the rest of the GPU.

NCCL runs each channel of a collective as one thread block that takes an SM to itself for the
collective's whole length: "NCCL CTAs won't share an SM with compute kernels", and NCCL "uses the
minimal number of SMs to achieve the performance of the platform ... If you are on DGX with 8 NICs
and a top speed of 190 GB/s, then it would use 16 SMs" (NCCL's maintainer, NVIDIA/nccl issue #689).
A compute block overlapped with a collective (FSDP's prefetched all-gathers and its reduce-scatters,
a bucket's all-reduce during the backward pass) therefore runs on ``SMs - NCCL_SMS`` of its SMs
until the collective ends, and at full width after.
"""

from __future__ import annotations

NCCL_SMS = 16
"""SMs a collective holds on an 8-GPU DGX node (NVIDIA/nccl issue #689): fitted once for NCCL."""


def beside_collective_s(compute_s: float, overlap_s: float, sms: int, nccl_sms: int = NCCL_SMS) -> float:
    """Seconds a block of ``compute_s`` (on all ``sms`` SMs) takes when a collective holding
    ``nccl_sms`` of them runs for the block's first ``overlap_s`` seconds.

    The block progresses at ``(sms - nccl_sms) / sms`` of its rate while the collective runs:
    if it ends first it takes ``compute_s / rate``; otherwise the collective's ``overlap_s`` cost it
    ``overlap_s x nccl_sms / sms``.
    """
    if overlap_s <= 0 or compute_s <= 0 or nccl_sms <= 0:
        return compute_s
    rate = max(sms - nccl_sms, 1) / sms
    if overlap_s * rate >= compute_s:
        return compute_s / rate
    return compute_s + overlap_s * (1.0 - rate)
