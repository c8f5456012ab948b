"""A sweep's inputs checked before any point is computed, and the columns its rows will have.

A million rows that all say "'mode' must be one of ..." hide one typo in a file after minutes
of work. So everything that can be checked without predicting is checked here, in one line,
before the sweep starts: the words of ``method``, ``mode`` and ``overlap``, workload names,
the hardware named for ``device``, ``host`` and ``link`` (preset ids or hardware files), whole
numbers for ``gpus``, and the type of each workload parameter's values (a size given as text).
A valid value in a bad combination — a size that does not fit, a mode the device lacks, a
size above its bound — stays an error row: where a sweep crosses a limit is worth seeing.

The same knowledge lists the columns a sweep will produce, so ``--x``, ``--y`` and ``--hue``
and an existing output file are checked against them before the work, and maps each device to
its kind, so measuring picks the right backend even for a device given as a file.
"""

from __future__ import annotations

import numpy
from pydantic import ValidationError

from parsim.base.choices import METHODS, MODES, OVERLAPS
from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.hardware.specs import ProcessorSpec
from parsim.studies.sweeps.grid import Axis, Grid
from parsim.studies.sweeps.points import FIGURES, INPUTS, MEASURED, PER_SAMPLE, SCALING
from parsim.workloads.registry import WorkloadDef, lookup

WORDS = {"method": METHODS, "mode": MODES, "overlap": OVERLAPS}
SAMPLE = 1_000  # values of a long axis that are checked (spread over it: its ends and between)
# pydantic error types that are a value out of bounds, not a value of the wrong kind
BOUNDS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal", "multiple_of"}


def _values(cases: list[tuple[str, dict]], grid: Grid, field: str) -> list:
    """The distinct values ``field`` takes: in the cases' fixed inputs and on the grid (sampled)."""
    seen = [base.get(field) for _, base in cases]
    if field in grid.fields:
        seen += sample(grid.values[grid.fields.index(field)])
    return list({_key(v): v for v in seen if v is not None}.values())


def _key(value):
    return value.id if isinstance(value, ProcessorSpec) else repr(value)


def sample(values: Axis) -> list:
    """At most ``SAMPLE`` values of an axis, its first and last among them."""
    if len(values) <= SAMPLE:
        return list(values)
    return values.take(numpy.unique(numpy.linspace(0, len(values) - 1, SAMPLE).astype(numpy.int64)))


def workloads(cases: list[tuple[str, dict]], grid: Grid) -> dict[str, WorkloadDef]:
    """Every workload the sweep runs, by name (an unknown name refused with the closest names)."""
    names = _values(cases, grid, "workload")
    if not names:
        raise ParsimError("'workload' is not set: give it in the scenario, with --set or in the grid")
    return {str(name): lookup(str(name)) for name in names}


def check_inputs(cases: list[tuple[str, dict]], grid: Grid) -> dict[str, WorkloadDef]:
    """Refuse, in one line, what would make every affected row an error; return the workloads."""
    for field, words in WORDS.items():
        for value in _values(cases, grid, field):
            if value not in words:
                raise ParsimError(f"'{field}' must be one of {', '.join(words)}: {value!r}")
    for field in ("gpus", "gpus_per_switch"):
        for value in _values(cases, grid, field):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
                raise ParsimError(f"'{field}' must be a whole number: {value!r}")
    if not any(base.get("device") for _, base in cases) and "device" not in grid.fields:
        raise ParsimError("'device' is not set: give it in the scenario, with --set or in the grid")
    for field in ("device", "host"):
        for value in _values(cases, grid, field):
            registry.processor(value, field)  # an unknown id or a bad file: one line naming it
    for value in _values(cases, grid, "link"):
        registry.link(value, "link")
    found = workloads(cases, grid)
    fixed = {f"workload.{k}": v for _, base in cases for k, v in (base.get("params") or {}).items()}
    for field in [*fixed, *(f for f in grid.fields if f.startswith("workload."))]:
        _check_param(found, field, _values(cases, grid, field) if field in grid.fields else [fixed[field]])
    return found


def _check_param(found: dict[str, WorkloadDef], field: str, values: list) -> None:
    param = field.split(".", 1)[1]
    having = {name: d for name, d in found.items() if param in d.params.model_fields}
    if not having:
        known = sorted({p for d in found.values() for p in d.params.model_fields})
        raise ParsimError(
            f"unknown field {field!r}: {', '.join(found)} has no parameter {param!r} "
            f"(known: {', '.join(known)})"
        )
    for value in values:
        errors = [_wrong_kind(name, d, param, value) for name, d in having.items()]
        if all(errors):  # wrong for every workload that has the parameter
            raise ParsimError(errors[0])


def _wrong_kind(name: str, definition: WorkloadDef, param: str, value) -> str:
    """The one-line message when ``value`` is of the wrong kind for ``param``; "" when it may do."""
    annotation = definition.params.model_fields[param].annotation
    if isinstance(value, bool) and annotation in (int, float):
        return f"{name}: {param!r} must be a number, not {str(value).lower()}"
    try:
        definition.params.model_validate({param: value})
    except ValidationError as exc:
        for error in exc.errors():
            if error["loc"] == (param,) and error["type"] not in BOUNDS:
                message = error["msg"][0].lower() + error["msg"][1:]
                return f"{name}: {param!r} {message}: {value!r}"
    return ""


def columns(
    cases: list[tuple[str, dict]], grid: Grid, found: dict[str, WorkloadDef], measure: bool
) -> tuple[set[str], set[str]]:
    """``(every column, the numeric ones)`` the sweep's rows can have (``found``: its workloads)."""
    numeric = set(FIGURES)
    if any(d.samples is not None for d in found.values()):
        numeric |= set(PER_SAMPLE)
    if any(d.baseline is not None for d in found.values()):
        numeric |= set(SCALING)
    if measure:
        numeric |= set(MEASURED)
    text = set(INPUTS) | ({"measure_note"} if measure else set())
    for definition in found.values():
        for param, info in definition.params.model_fields.items():
            (numeric if info.annotation in (int, float) else text).add(f"workload.{param}")
    for field, values in zip(grid.fields, grid.values, strict=True):
        looks = sample(values)
        plain = all(isinstance(v, (int, float)) for v in looks)
        (numeric if plain else text).add(field)
        (text if plain else numeric).discard(field)
    return numeric | text, numeric


def device_kinds(cases: list[tuple[str, dict]], grid: Grid) -> dict[str, str]:
    """``{device id or source: "cpu" | "gpu"}`` for every device the sweep names (files included)."""
    kinds = {}
    for field in ("device", "host"):
        for value in _values(cases, grid, field):
            spec = registry.processor(value, field)
            kinds[spec.id] = spec.kind
            if not isinstance(value, ProcessorSpec):
                kinds[str(value)] = spec.kind  # a file's path as well as the id inside it
    return kinds
