"""Tick labels people read: one helper per kind of quantity, used by every figure.

A time axis reads ``0  0.5  1  1.5`` with ``time (ms)`` under it, never ``0.0000 0.0005`` with
``time (s)`` or an offset text (``1e-3``) in the corner; a bandwidth axis reads GB/s or TB/s the
same way; a count on a log axis reads ``1k 1M 1G``. The data stay in SI base units (seconds,
bytes/s); only the tick labels are scaled, so the figures share axes and annotations without
converting anything twice. The unit is chosen from the axis's visible range, so each helper is
called after the data are drawn and the limits set: the largest value on a linear axis, the
middle decade on a log axis (0.01 .. 100 ms rather than 0.00001 .. 1 s); a log axis spanning
more decades than one unit reads well carries a unit per tick (``10 us  1 ms  100 ms``). The unit
tables are ``parsim.base.units``'s, the same that print ``357 us`` in the CLI and the app.
"""

from __future__ import annotations

import math

import numpy
from matplotlib.ticker import Formatter, LogLocator, NullFormatter

from parsim.base.units import SI_PREFIXES, TIME_UNITS, si


def plain(value: float) -> str:
    """A tick number without exponent or offset, at most 4 significant digits: ``0.0005``, ``1500``."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}".replace("-0", "0")
    return numpy.format_float_positional(value, precision=4, unique=True, fractional=False, trim="-")


class _Scaled(Formatter):
    """Tick values divided by one unit's size and printed plainly (the unit is in the axis label)."""

    def __init__(self, scale: float) -> None:
        self.scale = scale

    def __call__(self, x, pos=None) -> str:
        return plain(x / self.scale)


def count(value: float) -> str:
    """A count with an SI suffix and no space: ``100``, ``316k``, ``1M``, ``1.5G``."""
    return plain(value) if abs(value) < 1000 else si(value).replace(" ", "")


class _Suffixed(Formatter):
    """Counts with an SI suffix on each tick."""

    def __call__(self, x, pos=None) -> str:
        return count(x)


class _Seconds(Formatter):
    """Each tick in its own unit (``10 us``, ``1 ms``, ``1 s``): for log axes spanning many decades,
    where one unit would print ``0.001`` next to ``1000000``."""

    def __call__(self, x, pos=None) -> str:
        scale, unit = _time_unit(abs(x))
        return f"{plain(x / scale)} {unit}"


def _time_unit(value: float) -> tuple[float, str]:
    return next(((s, u) for s, u in TIME_UNITS if value >= s), (1e-9, "ns"))


def _reference(axis) -> float:
    """The value a unit is chosen for: the largest on a linear axis, the middle on a log one."""
    lo, hi = sorted(abs(v) for v in axis.get_view_interval())
    if axis.get_scale() == "log" and lo > 0:
        return math.sqrt(lo * hi)
    return hi


def _ticks(axis) -> None:
    """Log axes: labels on decades (and 2, 5 when they span under two, every digit under one); no
    minor labels, which
    matplotlib would write as ``3x10^-4``. Linear axes: never an offset or scientific notation."""
    if axis.get_scale() == "log":
        lo, hi = sorted(v for v in axis.get_view_interval())
        ratio = hi / lo if lo > 0 else math.inf
        subs = tuple(range(1, 10)) if ratio < 10 else (1.0, 2.0, 5.0) if ratio < 100 else (1.0,)
        axis.set_major_locator(LogLocator(base=10, subs=subs))
        axis.set_minor_formatter(NullFormatter())


def time_axis(axis, name: str = "time") -> str:
    """Seconds on ``axis`` shown in s, ms, us or ns; the label reads ``name (unit)``. Returns the unit.

    A log axis spanning more than four decades carries the unit on each tick instead, and the
    label names the range of units: ``latency (us to s)``.
    """
    _ticks(axis)
    lo, hi = sorted(abs(v) for v in axis.get_view_interval())
    if axis.get_scale() == "log" and lo > 0 and hi / lo > 1e4:
        axis.set_major_formatter(_Seconds())
        shown = [t for t in axis.get_major_locator().tick_values(lo, hi) if lo <= t <= hi] or [lo, hi]
        units = f"{_time_unit(min(shown))[1]} to {_time_unit(max(shown))[1]}"
        axis.set_label_text(f"{name} ({units})")
        return units
    scale, unit = _time_unit(_reference(axis))
    axis.set_major_formatter(_Scaled(scale))
    axis.set_label_text(f"{name} ({unit})")
    return unit


class _Prefixed(Formatter):
    """Each tick with its own SI prefix and unit (``10 MB/s``, ``1 GB/s``, ``100 GB/s``): for log axes
    spanning many decades, where one prefix would print ``0.001`` next to ``100000``."""

    def __init__(self, unit: str) -> None:
        self.unit = unit

    def __call__(self, x, pos=None) -> str:
        scale, prefix = _prefix(abs(x))
        return f"{plain(x / scale)} {prefix}{self.unit}"


def _prefix(value: float) -> tuple[float, str]:
    return next(((s, p) for s, p in SI_PREFIXES if value >= s), (1.0, ""))


def rate_axis(axis, name: str, unit: str = "B/s") -> str:
    """A rate (bandwidth: bytes/s) with one SI prefix for the whole axis: ``bandwidth (TB/s)``.

    A log axis spanning more than three decades (an all-reduce from 1 kB to 8 GB: MB/s to GB/s)
    carries the unit on each tick instead, as a time axis does, and the label names the range.
    """
    _ticks(axis)
    lo, hi = sorted(abs(v) for v in axis.get_view_interval())
    if axis.get_scale() == "log" and lo > 0 and hi / lo > 1e3:
        axis.set_major_formatter(_Prefixed(unit))
        shown = [t for t in axis.get_major_locator().tick_values(lo, hi) if lo <= t <= hi] or [lo, hi]
        units = f"{_prefix(min(shown))[1]}{unit} to {_prefix(max(shown))[1]}{unit}"
        axis.set_label_text(f"{name} ({units})")
        return units
    top = _reference(axis)
    scale, prefix = _prefix(top)
    axis.set_major_formatter(_Scaled(scale))
    axis.set_label_text(f"{name} ({prefix}{unit})")
    return prefix + unit


def count_axis(axis, name: str) -> None:
    """Counts (elements, samples/s, FLOP/s) with SI suffixes on the ticks: ``1k 1M 1G``."""
    _ticks(axis)
    axis.set_major_formatter(_Suffixed())
    axis.set_label_text(name)


def size_axis(axis, name: str, unit: str = "B") -> None:
    """Sizes (bytes) with a prefix and the unit on each tick: ``1 kB  1 MB  1 GB``."""
    _ticks(axis)
    axis.set_major_formatter(_Prefixed(unit))
    axis.set_label_text(name)


class _Percent(Formatter):
    def __call__(self, x, pos=None) -> str:
        return f"{plain(x * 100)}%"


def percent_axis(axis, name: str) -> None:
    """A share or an efficiency (0 .. 1) in percent: ``90%  95%  100%``."""
    _ticks(axis)
    axis.set_major_formatter(_Percent())
    axis.set_label_text(name)


def plain_axis(axis, name: str) -> None:
    """Ratios and small numbers (speed-up, GPUs): plain ticks, no offset."""
    _ticks(axis)
    axis.set_major_formatter(_Scaled(1.0))
    axis.set_label_text(name)


# Sweep columns by what they measure (``parsim.sweep`` names them ``<what>_s`` and ``<what>_per_s``).
_RATES = {"bytes_per_s": ("bandwidth", "B/s"), "flops_per_s": ("compute", "FLOP/s")}


def column_axis(axis, column: str) -> None:
    """An axis for a sweep column or an axis title: times, bandwidths, rates and counts by name.

    ``latency_s`` and ``latency (s)`` are times; ``bytes_per_s`` a bandwidth; ``flops_per_s``
    and other ``*_per_s`` rates carry SI suffixes; ``workload.n`` and other numbers are counts
    on a log axis, plain numbers on a linear one.
    """
    name = column.removeprefix("workload.")
    if name in _RATES:
        what, unit = _RATES[name]
        if unit == "B/s":
            rate_axis(axis, what, unit)
        else:
            count_axis(axis, f"{what} ({unit})")
    elif name == "bytes" or name.endswith("_bytes") or name.endswith("(bytes)"):
        size_axis(axis, name.removesuffix(" (bytes)").replace("_", " "))
    elif "efficiency" in name or name.endswith("share"):
        percent_axis(axis, name.replace("_", " "))
    elif name.endswith("_per_s"):
        count_axis(axis, f"{name.removesuffix('_per_s').replace('_', ' ')} (/s)")
    elif name.endswith("_s") or name.endswith("(s)"):
        time_axis(axis, name.removesuffix("_s").removesuffix("(s)").strip().replace("_", " "))
    elif axis.get_scale() == "log":
        count_axis(axis, column)
    else:
        plain_axis(axis, column)
