"""Reading numbers the way people type them and printing them the way people read them.

``parse_value("1e8")`` gives ``1e8`` (a float; integer fields accept whole floats),
``"true"`` gives ``True``; anything else stays a string. The formatters pick an SI prefix so a
latency reads ``357 us`` rather than ``0.000357``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from parsim.base.errors import ParsimError

SI_PREFIXES = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]
TIME_UNITS = [(1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")]


def parse_value(text: str) -> int | float | bool | str:
    """``"1e8"`` -> 1e8, ``"4096"`` -> 4096, ``"true"`` -> True; other text unchanged."""
    lowered = text.strip().lower()
    if not lowered.isascii():  # int() and float() read other scripts' digits ("١٠٠٠"): a number is ASCII
        return text.strip()
    if lowered in ("true", "yes", "on"):
        return True
    if lowered in ("false", "no", "off"):
        return False
    try:
        return int(lowered)
    except ValueError:
        pass
    try:
        value = float(lowered)
    except ValueError:
        return text.strip()
    return value


def assignments(params: Mapping[str, object]) -> str:
    """Parameters as people type them: ``n=1000000 dtype=float32`` (``parse_assignments`` reads it)."""
    return " ".join(f"{k}={v}" for k, v in params.items())


def parse_assignments(items: list[str]) -> dict[str, int | float | bool | str]:
    """Turn ``["n=1e8", "dtype=float16"]`` into ``{"n": 1e8, "dtype": "float16"}``."""
    params = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ParsimError(f"parameters are key=value; got {item!r}")
        if key.strip() in params:
            raise ParsimError(f"parameter {key.strip()!r} given twice")
        params[key.strip()] = parse_value(value)
    return params


def si(value: float, unit: str = "", digits: int = 3) -> str:
    """``si(3.35e12, "B/s")`` -> ``"3.35 TB/s"``."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g} {unit}".strip()
    for scale, prefix in SI_PREFIXES:
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g} {prefix}{unit}".strip()
    return f"{value:.{digits}g} {unit}".strip()


def seconds(value: float, digits: int = 3) -> str:
    """``seconds(3.57e-4)`` -> ``"357 us"``."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g} s"
    for scale, unit in TIME_UNITS:
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g} {unit}"
    return f"{value / 1e-9:.{digits}g} ns"


def gib(nbytes: float) -> str:
    """Bytes as GiB with one decimal."""
    return f"{nbytes / 2**30:.1f} GiB"
