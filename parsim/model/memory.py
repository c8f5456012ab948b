"""Which memory level serves a working set, and how fast a group of cores can draw from it.

A cache-aware roofline: the smallest level holding the working set serves it (data warm, as in a
repeated measurement). The working set is the kernel's own bytes, or what the program touches
between two uses of them where that is more (``Access.reuse_B``, a loop's bytes per iteration): a
least-recently-used cache keeps data only while what comes after it fits. Cache bandwidth grows
with the cores using it (each core brings its own L1/L2 ports and L3 slice), so a mode with fewer
cores gets what that many cores draw (the level's measured per-core figure, or an equal share).
Main memory is a socket-wide ceiling, and one core is limited by its own bytes in flight (Little's
law): ``min(level bandwidth, active cores x per-core ceiling)``. A GPU's per-SM L1 never counts,
because it is invalidated at every kernel launch. A calibrated machine carries a measured bandwidth
curve instead, interpolated log-log at the working set.

A GPU hides memory latency with threads, not caches, and Little's law caps that too: a kernel
whose threads each load ``thread_loads_B`` for one element and wait for them before the next
(CuPy's elementwise kernels: one load per input, one element per thread per loop iteration) keeps
at most ``resident threads x thread_loads_B`` in flight, so it streams from main memory at most at
that over the latency under load: all of its elements when main memory serves it, the cold share
of them when a cache does. An H100 needs ~2 MB in flight at 2.9 TB/s; one 4-byte load on
each of its 132 x 2048 resident threads is 1.1 MB, so a one-input kernel such as ReLU runs at half
the copy bandwidth, as long as a two-input add (Little's law per element, not per byte). Library
kernels (cuBLAS, cuDNN, CUB's reductions, PyTorch's vectorised loops) keep enough in flight: their
``thread_loads_B`` is 0 and the level's bandwidth holds.

Working sets may be one number or a NumPy array of them: the same rule serves both.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy

from parsim.base.caching import cached
from parsim.hardware.specs import BandwidthPoint, ProcessorSpec
from parsim.model.numeric import Number, maximum, minimum, where

MAIN_MEMORY = ("DRAM", "device memory")
"""Names of main memory on a CPU and on a GPU."""


def main_memory_name(spec: ProcessorSpec) -> str:
    return "device memory" if spec.is_accelerator else "DRAM"


class Level(NamedTuple):
    """The memory level serving a kernel and the bandwidths it offers (numbers or arrays).

    Attributes:
        name: ``"DRAM"``, ``"device memory"`` or a cache name (None for arrays of working sets).
        bandwidth_Bps: bandwidth of the level with every core busy.
        core_bandwidth_Bps: what one busy core draws from it.
        main_bandwidth_Bps: main-memory bandwidth (for the kernel's cold bytes).
        main_core_bandwidth_Bps: what one busy core draws from main memory.
        main: main memory serves the warm bytes (a bool, or an array of them).
    """

    name: str | None
    bandwidth_Bps: Number
    core_bandwidth_Bps: Number
    main_bandwidth_Bps: float
    main_core_bandwidth_Bps: float
    main: Number = True

    def reachable_Bps(self, active_cores: Number) -> Number:
        """Bandwidth ``active_cores`` busy cores reach at this level (the per-core ceiling included)."""
        return minimum(self.bandwidth_Bps, active_cores * self.core_bandwidth_Bps)

    def transfer_s(self, nbytes: Number, cold_fraction: Number, active_cores: Number) -> Number:
        """Time to move ``nbytes``: the warm part from this level, the cold part from main memory."""
        cold = nbytes * cold_fraction
        main = minimum(self.main_bandwidth_Bps, active_cores * self.main_core_bandwidth_Bps)
        return (nbytes - cold) / self.reachable_Bps(active_cores) + cold / main

    def stream_s(
        self,
        spec: ProcessorSpec,
        nbytes: Number,
        cold_fraction: Number,
        active_cores: Number,
        items: Number,
        thread_loads_B: Number,
        share: Number = 1.0,
        core_in_flight_B: Number = 0.0,
    ) -> Number:
        """Time to move ``nbytes`` (``transfer_s``) at ``share`` of the level's bandwidth (a serving
        engine's decode kernels: ``Access.bandwidth_share``), or longer where the kernel's threads
        keep too few bytes in flight to reach main memory's bandwidth (``latency_bound_s``): for all
        of its elements when main memory serves it, else for the share of them whose bytes are cold;
        or where each core keeps only ``core_in_flight_B`` in flight (``in_flight_bound_s``)."""
        if not (
            isinstance(nbytes, _ARRAY)
            or isinstance(cold_fraction, _ARRAY)
            or isinstance(active_cores, _ARRAY)
            or isinstance(items, _ARRAY)
            or isinstance(thread_loads_B, _ARRAY)
            or isinstance(share, _ARRAY)
            or isinstance(core_in_flight_B, _ARRAY)
        ):  # one kernel's numbers, not a vectorised sweep's arrays
            return self._scalar_stream_s(
                spec, nbytes, cold_fraction, active_cores, items, thread_loads_B, share, core_in_flight_B
            )
        moved = self.transfer_s(nbytes, cold_fraction, active_cores) / share
        bound = latency_bound_s(spec, items, thread_loads_B, active_cores)
        cores_bound = in_flight_bound_s(spec, nbytes * cold_fraction, core_in_flight_B)
        return maximum(maximum(moved, bound * where(self.main, 1.0, cold_fraction)), cores_bound)

    def _scalar_stream_s(
        self,
        spec: ProcessorSpec,
        nbytes: float,
        cold_fraction: float,
        active_cores: float,
        items: float,
        thread_loads_B: float,
        share: float,
        core_in_flight_B: float,
    ) -> float:
        """``stream_s`` of numbers (one kernel's phase: a training step asks ~400 times), its helpers
        inlined: the same operations in the same order as ``transfer_s``, ``latency_bound_s`` and
        ``in_flight_bound_s`` (``tests/test_speed_caches.py`` compares the two on a grid)."""
        # transfer_s
        cold = nbytes * cold_fraction
        main = active_cores * self.main_core_bandwidth_Bps
        if self.main_bandwidth_Bps <= main:  # ``minimum``: the first where they tie
            main = self.main_bandwidth_Bps
        reachable = active_cores * self.core_bandwidth_Bps  # ``reachable_Bps``
        if self.bandwidth_Bps <= reachable:
            reachable = self.bandwidth_Bps
        moved = ((nbytes - cold) / reachable + cold / main) / share
        # latency_bound_s
        latency = spec.memory.loaded_latency_s
        if not spec.is_accelerator or latency is None:
            bound = 0.0 * thread_loads_B
        else:
            in_flight_B = active_cores * spec.tiles_per_core * spec.tile_items * thread_loads_B
            bound = items * thread_loads_B / (in_flight_B / latency) if in_flight_B > 0 else 0.0
        # in_flight_bound_s
        if core_in_flight_B > 0:
            cores_bound = cold / (spec.cores * core_in_flight_B / spec.memory.latency_s)
        else:
            cores_bound = 0.0
        weighted = bound * (1.0 if self.main else cold_fraction)
        longest = moved if moved >= weighted else weighted  # ``maximum``: the first where they tie
        return longest if longest >= cores_bound else cores_bound


_ARRAY = numpy.ndarray


def in_flight_bound_s(spec: ProcessorSpec, cold_B: Number, core_in_flight_B: Number) -> Number:
    """Little's law for a kernel whose cores each keep only ``core_in_flight_B`` bytes of loads in
    flight (a serving engine's GEMV: ``Access.core_in_flight_B``, one block per output row, so its
    grid covers every core): main memory then delivers ``cores x core_in_flight_B`` bytes per memory
    latency, whatever its bandwidth. A GPU with high bandwidth and few SMs (HBM: A100, H100) needs
    more bytes in flight per SM to reach its bandwidth than a GDDR card does, so the same kernel
    reaches a smaller share of it there. 0 for a kernel that keeps enough in flight."""
    delivered_Bps = spec.cores * where(core_in_flight_B > 0, core_in_flight_B, 1.0) / spec.memory.latency_s
    return where(core_in_flight_B > 0, cold_B / delivered_Bps, 0.0)


def latency_bound_s(
    spec: ProcessorSpec, items: Number, thread_loads_B: Number, active_cores: Number
) -> Number:
    """Little's law (see the module docstring): ``items`` elements, each thread loading
    ``thread_loads_B`` per element and waiting for them, on ``active_cores`` SMs full of threads
    (``tiles_per_core x tile_items``: the SM's resident threads), at the latency under load.
    0 for a kernel that keeps enough in flight (``thread_loads_B`` 0), on a GPU without a known
    latency under load (``MemorySpec.loaded_latency_s``) and on a CPU (its cores' own ceiling,
    ``per_core_bandwidth_Bps``, is the Little's law of a CPU)."""
    latency = spec.memory.loaded_latency_s
    if not spec.is_accelerator or latency is None:
        return 0.0 * thread_loads_B
    threads = active_cores * spec.tiles_per_core * spec.tile_items
    in_flight_B = threads * thread_loads_B
    bandwidth = in_flight_B / latency
    return where(in_flight_B > 0, items * thread_loads_B / where(in_flight_B > 0, bandwidth, 1.0), 0.0)


@cached(maxsize=4096)
def _caches(spec: ProcessorSpec, cores: int) -> tuple[tuple[float, float, float], ...]:
    """``(capacity, bandwidth, per-core bandwidth)`` of the cache levels ``cores`` busy cores use."""
    return tuple(
        (
            cache.size_B * (cores if cache.per_core else 1),
            cache.bandwidth_Bps,
            cache.per_core_bandwidth_Bps or cache.bandwidth_Bps / spec.cores,
        )
        for cache in spec.memory.caches
        if not (spec.is_accelerator and cache.per_core)  # a GPU's L1 is invalidated at every launch
    )


@cached(maxsize=256)
def _cache_names(spec: ProcessorSpec) -> tuple[str, ...]:
    """The names of the cache levels ``_caches`` lists, in its order."""
    return tuple(cache.name for cache in spec.memory.caches if not (spec.is_accelerator and cache.per_core))


def level(spec: ProcessorSpec, cores: int, working_set_B: Number) -> Level:
    """The level serving ``working_set_B`` with ``cores`` cores busy (see the module docstring)."""
    memory = spec.memory
    caches = _caches(spec, cores)
    if not isinstance(working_set_B, _ARRAY) and not memory.curve:  # one kernel's working set
        # the loop below with plain conditionals (``where`` of a number is one): the same level
        found = -1
        for position in range(len(caches) - 1, -1, -1):
            if working_set_B <= caches[position][0]:
                found = position
        if found < 0:
            found_name, found_Bps, found_core_Bps = (
                main_memory_name(spec),
                memory.bandwidth_Bps,
                memory.per_core_bandwidth_Bps,
            )
        else:
            found_name, (_, found_Bps, found_core_Bps) = _cache_names(spec)[found], caches[found]
        return Level(
            found_name,
            found_Bps,
            found_core_Bps,
            memory.bandwidth_Bps,
            memory.per_core_bandwidth_Bps,
            found < 0,
        )
    index: Number = -1
    bandwidth: Number = memory.bandwidth_Bps
    core_bandwidth: Number = memory.per_core_bandwidth_Bps
    # Walk from the largest level down: the smallest level that holds the working set is written last.
    for position in range(len(caches) - 1, -1, -1):
        capacity, level_bandwidth, level_core_bandwidth = caches[position]
        fits = working_set_B <= capacity
        index = where(fits, position, index)
        bandwidth = where(fits, level_bandwidth, bandwidth)
        core_bandwidth = where(fits, level_core_bandwidth, core_bandwidth)
    if memory.curve:
        bandwidth, core_bandwidth = interpolate(memory.curve, working_set_B)
    name = None
    if not isinstance(index, numpy.ndarray):
        usable = [cache for cache in memory.caches if not (spec.is_accelerator and cache.per_core)]
        name = usable[index].name if index >= 0 else main_memory_name(spec)
    main = index < 0
    return Level(name, bandwidth, core_bandwidth, memory.bandwidth_Bps, memory.per_core_bandwidth_Bps, main)


def interpolate(curve: tuple[BandwidthPoint, ...], working_set_B: Number) -> tuple[Number, Number]:
    """(all cores, one core) bandwidth at ``working_set_B``, log-log between the measured points.

    Outside the measured range the nearest end point holds, exactly.
    """
    first, last = curve[0], curve[-1]
    sizes = numpy.log([point.working_set_B for point in curve])
    # An op that touches no memory (working set 0) sits below the curve's first point, where the
    # first point holds anyway: the log is taken of the clamped size so that log(0) never warns.
    at = numpy.log(numpy.maximum(working_set_B, first.working_set_B))
    results = []
    for values in ([p.all_cores_Bps for p in curve], [p.one_core_Bps for p in curve]):
        inside = numpy.exp(numpy.interp(at, sizes, numpy.log(values)))
        if not isinstance(at, numpy.ndarray):
            inside = float(inside)
        clamped = where(working_set_B <= first.working_set_B, values[0], inside)
        results.append(where(working_set_B >= last.working_set_B, values[-1], clamped))
    return results[0], results[1]
