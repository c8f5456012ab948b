"""Sweep grids: which fields vary, over which values, and how points combine.

A grid maps dotted field names to values. Fields are those of a scenario case or of a
``predict`` call: ``workload`` and ``workload.<param>``, ``device``, ``host``, ``link``,
``mode``, ``method``, ``overlap``, ``gpus``, ``gpus_per_switch``, and fields inside the hardware
itself such as ``device.memory.bandwidth_Bps`` or ``link.latency_s``. Values are lists or the
text forms of ``parsim.scenarios.parse_values`` (``a,b,c``, ``linspace:``, ``logspace:``,
``range:``). Points are the cartesian product of the values, or, with ``zip``, the i-th
value of every field together.
"""

from __future__ import annotations

import hashlib
import itertools
import json

import attrs

from parsim.errors import ParsimError
from parsim.hardware.specs import LinkSpec, ProcessorSpec
from parsim.scenarios import parse_values
from parsim.units import parse_value

CALL_FIELDS = ("workload", "device", "host", "link", "mode", "method", "overlap", "gpus", "gpus_per_switch")
SPEC_FIELDS = {"device": ProcessorSpec, "host": ProcessorSpec, "link": LinkSpec}


@attrs.frozen
class Grid:
    """Validated grid: field names, their values, the combination rule, and which are log-spaced."""

    fields: tuple[str, ...]
    values: tuple[tuple, ...]
    zipped: bool = False
    log_fields: frozenset = frozenset()

    def points(self) -> list[dict]:
        """Every grid point as ``{field: value}``."""
        if self.zipped:
            return [dict(zip(self.fields, combo, strict=True)) for combo in zip(*self.values, strict=True)]
        return [dict(zip(self.fields, combo, strict=True)) for combo in itertools.product(*self.values)]


def check_field(field: str) -> None:
    """Refuse a field name that no scenario or predict call has."""
    head, _, rest = field.partition(".")
    if head == "workload" and rest:
        return  # workload parameters are validated with the workload, point by point
    if head in SPEC_FIELDS and rest:
        cls = SPEC_FIELDS[head]
        for part in rest.split("."):
            if not attrs.has(cls):
                raise ParsimError(f"unknown field {field!r}: {part!r} is inside a plain value")
            names = {f.name: f for f in attrs.fields(cls)}
            if part not in names:
                raise ParsimError(
                    f"unknown field {field!r}: {cls.__name__} has no {part!r} (known: {', '.join(names)})"
                )
            cls = _nested_type(names[part])
        return
    if field not in CALL_FIELDS:
        raise ParsimError(
            f"unknown field {field!r}; sweep workload.<param>, {', '.join(CALL_FIELDS[1:])} "
            "or hardware fields such as device.memory.bandwidth_Bps"
        )


def _nested_type(field):
    from parsim.hardware.specs import MemorySpec

    return MemorySpec if field.name == "memory" else _Leaf


class _Leaf:
    """A plain value: nothing can be named inside it."""


def make_grid(grid: dict, zipped: bool = False) -> Grid:
    """Validate ``{field: values}`` (values as lists or text specs) into a ``Grid``."""
    if not grid:
        raise ParsimError(
            "the grid is empty: give at least one field, e.g. --grid workload.n=logspace:1e3:1e9:25"
        )
    fields, values, logs = [], [], set()
    for field, spec in grid.items():
        check_field(field)
        parsed = [parse_value(v) if isinstance(v, str) else v for v in parse_values(spec)]
        if not parsed:
            raise ParsimError(f"'{field}' has no values")
        if isinstance(spec, str) and spec.startswith("logspace:"):
            logs.add(field)
        fields.append(field)
        values.append(tuple(parsed))
    if zipped and len({len(v) for v in values}) > 1:
        sizes = ", ".join(f"{f}: {len(v)}" for f, v in zip(fields, values, strict=True))
        raise ParsimError(f"--zip pairs values one to one, so every field needs as many ({sizes})")
    return Grid(tuple(fields), tuple(values), zipped, frozenset(logs))


def parse_grid_options(options: list[str]) -> dict:
    """``["workload.n=logspace:1e3:1e9:25", "device=a,b"]`` -> ``{field: spec}``."""
    grid = {}
    for option in options:
        field, sep, spec = option.partition("=")
        if not sep or not field.strip() or not spec.strip():
            raise ParsimError(
                f"--grid takes FIELD=VALUES, e.g. workload.n=logspace:1e3:1e9:25; got {option!r}"
            )
        if field.strip() in grid:
            raise ParsimError(f"--grid field {field.strip()!r} given twice")
        grid[field.strip()] = spec.strip()
    return grid


def point_id(case: str, point: dict, base: dict | None = None) -> str:
    """A stable identifier of a point of one sweep (its case, base call and grid values).

    Resuming a sweep skips points whose identifier is already in the output; the base call is
    part of it, so rerunning with other fixed inputs into the same file recomputes everything.
    """
    fixed = json.dumps(base or {}, sort_keys=True, default=repr)
    text = json.dumps([case, fixed, sorted((k, repr(v)) for k, v in point.items())])
    return hashlib.sha1(text.encode()).hexdigest()[:16]
