"""A slice of a processor: some of its cores, and their share of everything the cores share.

CPU inference is often published in "throughput mode": N processes, each pinned to C cores of
one socket, each serving its own requests, and the figure is their combined rate (Intel's tables:
14 instances of 4 cores on a 56-core Xeon). Each instance runs on a smaller CPU: C cores with
their private caches, C/cores of the shared last-level cache, memory capacity and chip-wide
matrix rates. Memory bandwidth is not partitioned: instances run out of phase, so while one
streams a layer's weights the others compute, and it draws what its C cores can pull
(``per_core_bandwidth_Bps`` each) up to the socket's; the socket's bandwidth then caps the
instances' combined rate (``throughput_mode``).
"""

from __future__ import annotations

import attrs

from parsim.base.errors import field_error
from parsim.hardware.specs import CacheLevel, ProcessorSpec


def slice_of(spec: ProcessorSpec, cores: int) -> ProcessorSpec:
    """``cores`` of ``spec``'s cores with their share of its memory system and chip-wide rates.

    Raises:
        ParsimError: ``cores`` is not a whole number from 1 to the processor's core count.
    """
    if type(cores) is not int or not 1 <= cores <= spec.cores:
        raise field_error("cores", f"a whole number from 1 to {spec.cores}", cores)
    if cores == spec.cores:
        return spec
    share = cores / spec.cores
    memory = spec.memory
    caches = tuple(_cache_share(cache, share) for cache in memory.caches)
    curve = tuple(
        attrs.evolve(point, all_cores_Bps=min(point.all_cores_Bps, cores * point.one_core_Bps))
        for point in memory.curve
    )
    return attrs.evolve(
        spec,
        id=f"{spec.id}/{cores}c",
        name=f"{cores} of {spec.cores} cores of {spec.name}",
        cores=cores,
        matrix_flops_per_s=tuple((fmt, rate * share) for fmt, rate in spec.matrix_flops_per_s),
        memory=attrs.evolve(
            memory,
            bandwidth_Bps=min(memory.bandwidth_Bps, cores * memory.per_core_bandwidth_Bps),
            capacity_B=memory.capacity_B * share,
            caches=caches,
            curve=curve,
        ),
    )


def _cache_share(cache: CacheLevel, share: float) -> CacheLevel:
    """Private caches keep their size per core; every level's total bandwidth shrinks with the cores."""
    size = cache.size_B if cache.per_core else cache.size_B * share
    return attrs.evolve(cache, size_B=size, bandwidth_Bps=cache.bandwidth_Bps * share)


def throughput_mode(
    per_instance_per_s: float, instances: int, bytes_per_sample: float, socket_Bps: float
) -> float:
    """Combined samples/s of ``instances`` out-of-phase instances: their sum, capped by the memory
    traffic every sample needs at the socket's bandwidth (the throughput roofline)."""
    if bytes_per_sample <= 0:
        return instances * per_instance_per_s
    return min(instances * per_instance_per_s, socket_Bps / bytes_per_sample)
