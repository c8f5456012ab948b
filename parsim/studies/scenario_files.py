"""Scenario files: the TOML a teacher writes, read and checked before anything runs.


A scenario is a small TOML file a teacher can read and edit::

    title = "Flynn's taxonomy on one vector add"
    lesson = '''Markdown shown in class ...'''
    plot = "bars"                     # bars | timeline | sweep | scaling | tradeoff

    [defaults]                        # shared by every case
    workload = "vector_add"
    params = { n = 1e6 }
    device = "laptop-4c-avx2"

    [[cases]]
    label = "SISD: one core, one lane"
    mode = "sisd"

    [sweep]                           # optional: every case at every value
    param = "n"                       # a workload parameter, or a list moved together
    values = "logspace:1e3:1e9:13"    # or a list

Each case is the defaults overridden by its own keys. Running a scenario predicts every case
(at every sweep value) and reports latency, throughput, bottleneck and speed-up against the
first case; for sweeps it finds where each case overtakes the first one (the crossover).

A label may name its case's fields in braces, filled in when the scenario runs: ``{device}``,
``{host}`` and ``{link}`` (the hardware's short name; ``{link}`` is the link the case really
uses), ``{workload}`` and any parameter (``{op}``, ``{n}``). ``retarget`` moves a lesson to
other hardware, sizes or operations (what the app's controls do), and such labels stay true.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from parsim.base import safefiles
from parsim.base.errors import ParsimError
from parsim.base.tomltext import MAX_SCENARIO_BRACKETS, MAX_SCENARIO_BYTES, parse_toml
from parsim.hardware.network import ClusterSpec
from parsim.hardware.specs import LinkSpec, ProcessorSpec
from parsim.studies import lessons
from parsim.studies.lessons import HARDWARE_FIELDS

MAX_FILE_BYTES = MAX_SCENARIO_BYTES
MAX_BRACKETS = MAX_SCENARIO_BRACKETS


def _printable(value: Any) -> Any:
    """Text that is printed to terminals carries no control characters (a lesson keeps its line breaks)."""
    if isinstance(value, str) and any(
        (ord(c) < 32 and c not in "\n\t") or 127 <= ord(c) < 160 for c in value
    ):
        raise ValueError(f"must not contain control characters: {value[:40]!r}")
    return value


class Case(BaseModel):
    """One configuration: which workload on which hardware, run how (hardware by id, path or spec)."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    _text = field_validator("label", "workload", "device", "cluster", "host", "link", "mode")(_printable)
    label: str | None = None
    workload: str | None = None
    params: dict = Field(default_factory=dict)
    device: str | ProcessorSpec | None = None
    cluster: str | ClusterSpec | None = None
    host: str | ProcessorSpec | None = None
    link: str | LinkSpec | None = None
    mode: str | None = None
    method: Literal["engine", "analytic"] | None = None
    overlap: Literal["roofline", "serial"] | None = None
    gpus: int | None = Field(default=None, ge=1)


class Sweep(BaseModel):
    """Every case at every value of a workload parameter (several parameters move together)."""

    model_config = ConfigDict(extra="forbid")
    param: str | list[str]
    values: list[float | int | str] | str

    @property
    def params(self) -> list[str]:
        return [self.param] if isinstance(self.param, str) else list(self.param)

    @property
    def label(self) -> str:
        return "=".join(self.params)


class Scenario(BaseModel):
    """A lesson and the cases it compares."""

    model_config = ConfigDict(extra="forbid")
    _text = field_validator("title", "lesson")(_printable)
    title: str
    lesson: str
    plot: Literal["bars", "timeline", "sweep", "scaling", "tradeoff"] = "bars"
    defaults: Case = Field(default_factory=Case)
    cases: list[Case] = Field(min_length=1)
    sweep: Sweep | None = None


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file, given by its path or, for a shipped lesson, its name
    (``flynn_vector_add``: ``parsim.studies.lessons``).

    Raises:
        ParsimError: unknown lesson, missing, huge or malformed file, unknown keys, or invalid values.
    """
    path = lessons.find(path)
    # read_text: the name itself, never through a link (a dangling one included); a regular file (a
    # FIFO is refused, not waited on); bounded; UTF-8 (a byte-order mark dropped)
    said = {
        "folder": f"{path}: is a folder, not a scenario file",
        "missing": f"{path}: no such scenario file",
        "too-big": f"{path}: scenario file is larger than {MAX_FILE_BYTES} bytes",
    }
    scenario = loads_scenario(safefiles.read_text(path, MAX_FILE_BYTES, said=said), source=str(path))
    return _beside(scenario, path.parent)


def _beside(scenario: Scenario, folder: Path) -> Scenario:
    """Hardware files a scenario names by a relative path are found beside the scenario, wherever
    parsim is run from."""

    def moved(case: Case) -> Case:
        changes = {
            name: str(folder / value)
            for name in HARDWARE_FIELDS
            if isinstance(value := getattr(case, name), str)
            and value.endswith(".toml")
            and not Path(value).is_absolute()
        }
        return case.model_copy(update=changes) if changes else case

    return scenario.model_copy(
        update={"defaults": moved(scenario.defaults), "cases": [moved(case) for case in scenario.cases]}
    )


def loads_scenario(text: str, source: str = "<scenario>") -> Scenario:
    """Parse scenario TOML text; ``source`` names it in errors."""
    data = parse_toml(text, source, "scenario", MAX_BRACKETS)
    try:
        scenario = Scenario(**data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise ParsimError(f"{source}: '{where}' {error['msg'].lower()}: {error.get('input')!r}") from None
    for index, case in enumerate(scenario.cases):
        merged = resolve(scenario, case)
        if merged.workload is None:
            raise ParsimError(f"{source}: 'cases.{index}.workload' is not set (and no default)")
        if merged.device is None and merged.cluster is None:
            raise ParsimError(f"{source}: 'cases.{index}.device' (or 'cluster') is not set (and no default)")
        if merged.device is not None and merged.cluster is not None:
            raise ParsimError(f"{source}: 'cases.{index}' names a device and a cluster: give one")
    if scenario.sweep is not None:
        try:
            values = parse_values(scenario.sweep.values)
        except ParsimError as exc:
            raise ParsimError(f"{source}: 'sweep.values': {exc}") from None
        if not values:
            raise ParsimError(f"{source}: 'sweep.values' is empty: give at least one value")
    return scenario


def resolve(scenario: Scenario, case: Case) -> Case:
    """The case with the scenario defaults filled in (params are merged key by key)."""
    base = scenario.defaults.model_dump()
    own = case.model_dump(exclude_unset=True)
    params = {**base.get("params", {}), **own.pop("params", {})}
    return Case(**{**base, **own, "params": params})


MAX_VALUES = 10_000_000
"""The most values one sweep axis may hold (a ``range:`` or ``linspace:`` is counted before it is built)."""


def _check_count(spec: str, count: int) -> None:
    if count > MAX_VALUES:
        raise ParsimError(f"values {spec!r} hold {count:,} points, more than the {MAX_VALUES:,} allowed")


def parse_values(spec: list | str) -> list:
    """Sweep values from a list, ``"a,b,c"``, ``linspace:a:b:n``, ``logspace:a:b:n`` or ``range:a:b[:step]``.

    With whole-number endpoints the ``linspace``/``logspace`` points are rounded to integers
    (duplicates dropped), since such sweeps are over sizes.
    """
    if isinstance(spec, list):
        return spec
    kind, _, rest = spec.partition(":")
    parts = rest.split(":") if rest else []
    try:
        if kind in ("linspace", "logspace"):
            lo, hi, count = float(parts[0]), float(parts[1]), int(float(parts[2]))
            if len(parts) != 3 or count < 1 or lo <= 0 and kind == "logspace":
                raise ValueError
            if not (math.isfinite(lo) and math.isfinite(hi)):  # numpy would warn and make NaNs
                raise ValueError
            _check_count(spec, count)
            values = np.linspace(lo, hi, count) if kind == "linspace" else np.geomspace(lo, hi, count)
            # Whole-number endpoints mean a count (sizes, batches): keep the points whole too.
            if lo.is_integer() and hi.is_integer():
                return list(dict.fromkeys(int(round(v)) for v in values))
            return [float(v) for v in values]
        if kind == "range":
            numbers = [int(float(p)) for p in parts]
            if len(numbers) not in (2, 3) or (len(numbers) == 3 and numbers[2] == 0):
                raise ValueError
            _check_count(spec, len(range(*numbers)))  # counted, not built
            return list(range(*numbers))
    except ParsimError:
        raise
    except (ValueError, IndexError, OverflowError):
        raise ParsimError(
            f"malformed values {spec!r}: expected {kind}:START:STOP:COUNT"
            if kind != "range"
            else f"malformed values {spec!r}: expected range:START:STOP[:STEP]"
        ) from None
    return [part.strip() for part in spec.split(",") if part.strip()]
