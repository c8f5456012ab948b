"""Memory specifications: a processor's main memory (DRAM or HBM) and its cache levels.

A ``MemorySpec`` is the memory half of a processor's data sheet: the effective bandwidth a
STREAM-like benchmark reaches beside the datasheet peak, the load-to-use latency, the capacity,
what one core can pull alone (Little's law: bytes in flight over latency), the cache levels
smallest first and, on calibrated machines, the measured bandwidth against working-set size
(``BandwidthPoint``) that replaces the step from one cache level to the next. Frozen and
validated on construction like every spec (``hardware.specs``).
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from parsim.base.checks import BANDWIDTH, BYTES, within
from parsim.base.errors import field_error


def _levels(value: Iterable[CacheLevel]) -> tuple[CacheLevel, ...]:
    return tuple(value)


def _curve(points: Iterable[BandwidthPoint]) -> tuple[BandwidthPoint, ...]:
    """Measured points, smallest working set first."""
    return tuple(sorted(points, key=lambda point: point.working_set_B))


@attrs.frozen(cache_hash=True)
class CacheLevel:
    """One level of the cache hierarchy as the roofline sees it.

    Attributes:
        name: ``"L1"``, ``"L2"``, ``"L3"``...
        size_B: capacity; per core when ``per_core`` is true, else shared by all cores.
        bandwidth_Bps: sustained read+write bandwidth of the whole level (all cores busy).
        per_core: private to each core (so the usable size grows with active cores).
        per_core_bandwidth_Bps: what one core alone draws from this level; None means an equal
            share of ``bandwidth_Bps`` (calibration measures it).
    """

    name: str
    size_B: float = attrs.field(validator=BYTES)
    bandwidth_Bps: float = attrs.field(validator=BANDWIDTH)
    per_core: bool = False
    per_core_bandwidth_Bps: float | None = attrs.field(
        default=None, validator=attrs.validators.optional(BANDWIDTH)
    )


@attrs.frozen(cache_hash=True)
class BandwidthPoint:
    """Streaming bandwidth measured at one working-set size (calibrated machines).

    Attributes:
        working_set_B: bytes the kernel touches.
        one_core_Bps: bandwidth one core reaches at that size.
        all_cores_Bps: bandwidth all cores reach together.
    """

    working_set_B: float = attrs.field(validator=BYTES)
    one_core_Bps: float = attrs.field(validator=BANDWIDTH)
    all_cores_Bps: float = attrs.field(validator=BANDWIDTH)


@attrs.frozen(cache_hash=True)
class MemorySpec:
    """Main memory (DRAM or HBM) of one processor.

    Attributes:
        bandwidth_Bps: effective sustained bandwidth (STREAM triad / device copy benchmark).
        peak_bandwidth_Bps: datasheet bandwidth, for the roofline ceiling.
        latency_s: load-to-use latency of a DRAM access.
        capacity_B: installed capacity.
        per_core_bandwidth_Bps: what one core (or SM) can pull alone; Little's law
            (bytes in flight / latency) is why one NumPy thread gets a fraction of the socket.
        caches: cache levels, smallest first.
        curve: measured bandwidth against working-set size (calibration); when present it
            replaces the step from one cache level to the next by interpolation between the
            measured points, which is what real caches do near their capacity.
        loaded_latency_s: latency of a load while memory streams at full load (queues in the
            memory controllers and the crossbar add to ``latency_s``): what Little's law needs to
            cap a GPU kernel that keeps few bytes in flight per thread; None where it is not
            known (no cap: with the unloaded latency it would not bind on the presets without one).
    """

    bandwidth_Bps: float = attrs.field(validator=BANDWIDTH)
    peak_bandwidth_Bps: float = attrs.field(validator=BANDWIDTH)
    latency_s: float = attrs.field(validator=within(1e-10, 1e-2, "s"))
    capacity_B: float = attrs.field(validator=BYTES)
    per_core_bandwidth_Bps: float = attrs.field(validator=BANDWIDTH)
    caches: tuple[CacheLevel, ...] = attrs.field(default=(), converter=_levels)
    curve: tuple[BandwidthPoint, ...] = attrs.field(default=(), converter=_curve)
    loaded_latency_s: float | None = attrs.field(
        default=None, validator=attrs.validators.optional(within(1e-10, 1e-2, "s"))
    )

    def __attrs_post_init__(self) -> None:
        if self.bandwidth_Bps > self.peak_bandwidth_Bps * 1.0001:
            raise field_error(
                "bandwidth_Bps", f"<= peak_bandwidth_Bps ({self.peak_bandwidth_Bps:g})", self.bandwidth_Bps
            )
