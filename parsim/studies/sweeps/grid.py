"""Sweep grids: which fields vary, over which values, and how points combine — without building them.

A grid maps dotted field names to values. Fields are those of a scenario case or of a
``predict`` call: ``workload`` and ``workload.<param>``, ``device``, ``host``, ``link``,
``mode``, ``method``, ``overlap``, ``gpus``, ``gpus_per_switch``, and fields inside the hardware
itself such as ``device.memory.bandwidth_Bps`` or ``link.latency_s``. Values are lists or the
text forms of ``parsim.studies.scenarios.parse_values`` (``a,b,c``, ``linspace:``, ``logspace:``,
``range:``). Points are the cartesian product of the values, or, with ``zip``, the i-th
value of every field together.

A grid may be large (up to ``MAX_POINTS``), so nothing here is materialised: a ``range:`` stays
a ``range``, a ``linspace:``/``logspace:`` is one NumPy array, and points are made chunk by chunk
from their flat index (mixed-radix digits give each field's index), never as a list of every
combination. Sizes are counted, and refused above the limit, before anything is built.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator, Sequence

import attrs
import numpy

from parsim.base.errors import ParsimError
from parsim.base.units import parse_value
from parsim.hardware.specs import LinkSpec, ProcessorSpec
from parsim.studies.scenarios import parse_values

CALL_FIELDS = ("workload", "device", "host", "link", "mode", "method", "overlap", "gpus", "gpus_per_switch")
SPEC_FIELDS = {"device": ProcessorSpec, "host": ProcessorSpec, "link": LinkSpec}

MAX_POINTS = 10_000_000
"""The most points one sweep may hold (grid points times scenario cases), counted before any is made.

At ~2 million analytic points a minute that is several minutes of work and a journal of a few
GB; beyond it a typo (``range:1:1e15``) is far likelier than intent.
"""

CHUNK = 50_000  # points made at once: large enough for NumPy to pay off, small enough to stay light


class Axis(Sequence):
    """The values of one field: a tuple, a lazy ``range`` or a NumPy array, read as plain Python values."""

    def __init__(self, values):
        self._values = values

    def __len__(self) -> int:
        return len(self._values)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        value = self._values[index]
        return value.item() if isinstance(value, numpy.generic) else value

    def __iter__(self):
        for start in range(0, len(self), CHUNK):
            yield from self.take(numpy.arange(start, min(start + CHUNK, len(self))))

    def __eq__(self, other) -> bool:
        if not isinstance(other, (Axis, tuple, list, range)):
            return NotImplemented
        return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # compared by value, so not hashable

    def __repr__(self) -> str:
        return f"Axis({self._values!r})"

    def take(self, indices: numpy.ndarray) -> list:
        """The values at ``indices`` as Python scalars (ints stay ints, so point ids never change)."""
        if isinstance(self._values, numpy.ndarray):
            return self._values[indices].tolist()
        return [self._values[i] for i in indices.tolist()]


@attrs.frozen
class Grid:
    """Validated grid: field names, their values, the combination rule, and which are log-spaced."""

    fields: tuple[str, ...]
    values: tuple[Axis, ...]
    zipped: bool = False
    log_fields: frozenset = frozenset()

    @property
    def size(self) -> int:
        """Number of points (counted, not built)."""
        if self.zipped:
            return len(self.values[0])
        return math.prod(len(v) for v in self.values)

    def chunks(self, size: int | None = None) -> Iterator[list[dict]]:
        """The points as ``{field: value}``, ``size`` (``CHUNK``) at a time, in cartesian (or zip)
        order."""
        size = CHUNK if size is None else size
        shape = tuple(len(v) for v in self.values)
        for start in range(0, self.size, size):
            flat = numpy.arange(start, min(start + size, self.size), dtype=numpy.int64)
            # the first field varies slowest, as itertools.product orders it
            digits = [flat] * len(shape) if self.zipped else numpy.unravel_index(flat, shape)
            columns = [axis.take(index) for axis, index in zip(self.values, digits, strict=True)]
            yield [dict(zip(self.fields, combo, strict=True)) for combo in zip(*columns, strict=True)]

    def points(self) -> list[dict]:
        """Every grid point as ``{field: value}`` (a list: for small grids; sweeps use ``chunks``)."""
        return [point for chunk in self.chunks() for point in chunk]


def check_field(field: str) -> None:
    """Refuse a field name that no scenario or predict call has."""
    head, _, rest = field.partition(".")
    if head == "workload" and rest:
        return  # workload parameters are checked against the workloads (parsim.studies.sweeps.inputs)
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


KINDS = ("range", "linspace", "logspace")
_KIND = re.compile(r"[A-Za-z][A-Za-z_]+:")  # "foo:1:2" reads as a misspelt kind, not as a value


def axis(field: str, spec) -> Axis:
    """The values of one field, refused in one line when malformed, empty or above ``MAX_POINTS``."""
    if isinstance(spec, str):
        kind = spec.partition(":")[0]
        if kind in KINDS:
            values = _numeric(spec, kind)
            if values is None:
                parse_values(spec)  # malformed: it raises the one-line message every sweep shares
                raise ParsimError(f"malformed values {spec!r}")
        elif _KIND.match(spec) and "," not in spec:
            raise ParsimError(
                f"malformed values for {field!r}: {spec!r}; expected a,b,c, linspace:START:STOP:COUNT, "
                "logspace:START:STOP:COUNT or range:START:STOP[:STEP]"
            )
        else:
            values = tuple(parse_value(v) for v in parse_values(spec))
    elif isinstance(spec, (range, numpy.ndarray)):
        values = spec
        _check_count(f"{field} (an array)", len(values))
    elif isinstance(spec, (list, tuple, Axis)):
        values = tuple(_plain(v) for v in spec)
        _check_count(f"{field} (a list)", len(values))
    elif isinstance(spec, (int, float, bool)) or spec is None or attrs.has(type(spec)):
        values = (spec,)  # one value: the field is fixed at it
    else:
        raise ParsimError(
            f"values of {field!r} must be a list or text such as 'a,b' or 'range:1:9': {spec!r}"
        )
    if len(values) == 0:
        raise ParsimError(f"'{field}' has no values: {spec!r}")
    return Axis(values)


def _plain(value):
    """A list's value as a sweep holds it: text read as in ``--grid`` ("1e3" is a number), NumPy as Python."""
    if isinstance(value, str):
        return parse_value(value)
    return value.item() if isinstance(value, numpy.generic) else value


def _numeric(spec: str, kind: str):
    """A ``range`` or an array for ``range:``/``linspace:``/``logspace:``, counted before it is built.

    The values are exactly those of ``parse_values`` (whole-number ends give whole numbers, their
    duplicates dropped; a rounded monotonic sequence repeats only next to itself), but a range
    stays lazy and the rest is one array instead of a list of Python numbers.
    """
    parts = spec.split(":")[1:]
    try:
        if kind == "range":
            numbers = [int(float(p)) for p in parts]
            if len(numbers) not in (2, 3) or (len(numbers) == 3 and numbers[2] == 0):
                return None
            lazy = range(*numbers)
        else:
            lo, hi, count = float(parts[0]), float(parts[1]), int(float(parts[2]))
            if len(parts) != 3 or count < 1 or (lo <= 0 and kind == "logspace"):
                return None
            if not (math.isfinite(lo) and math.isfinite(hi)):  # numpy would warn and make NaNs
                return None
    except (ValueError, IndexError, OverflowError):
        return None
    if kind == "range":
        _check_count(spec, len(lazy))  # counted, never built
        return lazy
    _check_count(spec, count)
    values = numpy.linspace(lo, hi, count) if kind == "linspace" else numpy.geomspace(lo, hi, count)
    if not (lo.is_integer() and hi.is_integer()):
        return values
    if max(abs(lo), abs(hi)) >= 2**62:  # beyond int64: Python integers, as parse_values makes them
        return tuple(dict.fromkeys(int(round(v)) for v in values))
    values = numpy.rint(values).astype(numpy.int64)  # rint and round() both round half to even
    return values[numpy.concatenate(([True], values[1:] != values[:-1]))]


def _check_count(spec: str, count: int) -> None:
    if count > MAX_POINTS:
        raise ParsimError(
            f"values {spec!r} hold {count:,} points, more than a sweep's limit of {MAX_POINTS:,}; "
            "use fewer or coarser steps"
        )


def make_grid(grid: dict, zipped: bool = False) -> Grid:
    """Validate ``{field: values}`` (values as lists or text specs) into a ``Grid``."""
    if not grid:
        raise ParsimError(
            "the grid is empty: give at least one field, e.g. --grid workload.n=logspace:1e3:1e9:25"
        )
    fields, values, logs = [], [], set()
    for field, spec in grid.items():
        check_field(field)
        values.append(axis(field, spec))
        if isinstance(spec, str) and spec.startswith("logspace:"):
            logs.add(field)
        fields.append(field)
    if zipped and len({len(v) for v in values}) > 1:
        sizes = ", ".join(f"{f}: {len(v)}" for f, v in zip(fields, values, strict=True))
        raise ParsimError(f"--zip pairs values one to one, so every field needs as many ({sizes})")
    return Grid(tuple(fields), tuple(values), zipped, frozenset(logs))


def check_size(grid: Grid, cases: int) -> int:
    """The sweep's number of points (grid points times cases), refused above ``MAX_POINTS``."""
    total = grid.size * cases
    if total > MAX_POINTS:
        shape = " x ".join(f"{len(v):,}" for v in grid.values) if not grid.zipped else f"{grid.size:,}"
        per_case = f" for each of {cases} cases" if cases > 1 else ""
        raise ParsimError(
            f"the sweep has {total:,} points ({shape}{per_case}), more than the limit of {MAX_POINTS:,}: "
            "split it or use coarser steps"
        )
    return total


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
    return point_ids(case, [point], base)[0]


def point_ids(case: str, points: list[dict], base: dict | None = None) -> list[str]:
    """``point_id`` of many points of one case: the case and base are encoded once, not per point.

    The text hashed is exactly ``json.dumps([case, fixed, items])`` (a list's JSON is its items'
    JSON joined by ", "), so ids stay those of earlier versions and old outputs still resume.
    """
    fixed = json.dumps(base or {}, sort_keys=True, default=repr)
    head = "[" + json.dumps(case) + ", " + json.dumps(fixed) + ", "
    sha1, dumps = hashlib.sha1, json.dumps
    return [
        sha1((head + dumps(sorted((k, repr(v)) for k, v in p.items())) + "]").encode()).hexdigest()[:16]
        for p in points
    ]


def id_numbers(ids) -> numpy.ndarray:
    """Point ids (16 hex digits) as unsigned 64-bit numbers: 8 bytes each for sets of millions."""
    return numpy.array([int(i, 16) for i in ids], dtype=numpy.uint64)


def among(ids: numpy.ndarray, known: numpy.ndarray) -> numpy.ndarray:
    """Which of ``ids`` are in ``known`` (sorted): a binary search each, not a sort per call."""
    if not len(known):
        return numpy.zeros(len(ids), dtype=bool)
    where = numpy.minimum(numpy.searchsorted(known, ids), len(known) - 1)
    return known[where] == ids
