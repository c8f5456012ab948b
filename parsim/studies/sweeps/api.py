"""Parameter sweeps: every combination of some fields, predicted (and optionally measured) into a table.

``parsim.sweep(source, grid=...)`` takes a scenario (file or object) or a dict of predict
arguments, expands the grid over every case, evaluates the points — serially, on a process
pool, on any map-like executor, or on a Dask cluster — and returns a tidy DataFrame: one row
per point, one column per grid field (named exactly as the field), the other inputs, every
prediction figure, and an ``error`` column for points that could not be predicted. With
``out`` the rows are saved as they finish and a rerun resumes; with ``method=analytic`` and
single-op workloads the grid is evaluated vectorised with NumPy.

A sweep runs in three steps, so that front ends can refuse mistakes before any work:
``plan`` checks everything that needs no prediction (fields, values, sizes, limits, columns),
``open_store`` opens the output (refusing another sweep's file, saying what it resumes), and
``execute_plan`` streams the points chunk by chunk — never the whole grid in memory — into it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import numpy
import pandas

from parsim.base import collector
from parsim.base.errors import ParsimError
from parsim.studies.scenarios import Scenario, load_scenario, resolve
from parsim.studies.sweeps.fast import fast_rows
from parsim.studies.sweeps.grid import Grid, among, check_size, id_numbers, make_grid, point_ids
from parsim.studies.sweeps.inputs import check_inputs, columns, device_kinds
from parsim.studies.sweeps.points import PER_SAMPLE, SCALING
from parsim.studies.sweeps.store import Shape, Store, check_output
from parsim.studies.sweeps.workers import dask_map, execute

__all__ = ["MAX_MEASURED", "Plan", "dask_map", "execute_plan", "open_store", "plan", "sweep"]

Progress = Callable[[int, int], None]
BATCH = 64  # points per task handed to a worker
MAX_MEASURED = 10_000
"""The most points a sweep may measure: each is timed for ~0.2 s, one at a time (over half an hour)."""

log = logging.getLogger("parsim.studies.sweeps")


@attrs.frozen
class Plan:
    """A checked sweep: its cases, grid, size, workloads and the columns its rows will have."""

    cases: list
    grid: Grid
    total: int
    measure: bool
    out: Path | None
    columns: frozenset[str]  # every column a row may have
    numeric: frozenset[str]  # those holding numbers (what can be plotted)
    shape: Shape
    templates: tuple[str, ...] = ()  # each case's label as written ("... ({device})"), filled per point


def plan(
    source: str | Path | Scenario | dict | None = None,
    grid: dict | None = None,
    *,
    zip: bool = False,
    measure: bool = False,
    out: str | Path | None = None,
    method: str | None = None,
) -> Plan:
    """Check a sweep without computing a point (arguments as for ``sweep``).

    Raises:
        ParsimError: unknown fields, malformed or invalid values, too many points, a bad output path.
    """
    path = check_output(out)
    cases = _cases(source, method)
    checked = make_grid(grid or {}, zip)
    total = check_size(checked, len(cases))
    if measure and total > MAX_MEASURED:
        raise ParsimError(
            f"measuring times each point for ~0.2 s, one at a time: {total:,} points is more than the "
            f"{MAX_MEASURED:,} a measured sweep may have"
        )
    found = check_inputs(cases, checked)
    every, numeric = columns(cases, checked, found, measure)
    # an earlier run of the same sweep may have measured, or produced metrics this one lacks
    allowed = columns(cases, checked, found, True)[0] | set(PER_SAMPLE) | set(SCALING)
    shape = Shape(checked.fields, frozenset(allowed), frozenset(found))
    templates = _templates(source, len(cases))
    return Plan(cases, checked, total, measure, path, frozenset(every), frozenset(numeric), shape, templates)


def open_store(checked: Plan, keep: bool = True) -> Store:
    """The plan's output, its earlier rows read (``keep``: rows held for ``Store.frame``)."""
    store = Store(checked.out, keep=keep or checked.measure, shape=checked.shape)
    if store.resumed:
        kept, failed = store.resumed, store.resumed_failed
        log.info("resumed %s: kept %d rows (%d with errors, retried)", checked.out, kept, failed)
    return store


def execute_plan(checked: Plan, store: Store, workers=None, progress: Progress | None = None) -> Store:
    """Compute the plan's missing points into ``store`` (closed at the end, even on Ctrl-C)."""
    finished = False
    try:
        skip, missing = _skipped(checked, store)
        if progress is not None:
            progress(0, missing)
        count = 0
        with collector.spaced():  # the points fill the caches: the collector need not walk them often
            for rows in execute(_work(checked, skip), workers):
                if isinstance(rows, pandas.DataFrame):
                    store.add_frame(rows)
                else:
                    store.add_rows(rows)
                count += len(rows)
                if progress is not None:
                    progress(count, missing)
        if checked.measure:
            _measure_rows(store, device_kinds(checked.cases, checked.grid))
        finished = True
    finally:
        store.close(finished)
    return store


def sweep(
    source: str | Path | Scenario | dict | None = None,
    grid: dict | None = None,
    *,
    zip: bool = False,
    workers: int | Callable | None = None,
    measure: bool = False,
    out: str | Path | None = None,
    progress: Progress | None = None,
    method: str | None = None,
) -> pandas.DataFrame:
    """Evaluate ``source`` at every point of ``grid``.

    Args:
        source: a scenario file or ``Scenario`` (every case is swept), a dict of predict arguments
            (``{"workload": "vector_add", "params": {...}, "device": "t4"}``), or None when the grid
            sets the workload and device itself.
        grid: ``{field: values}``; values as lists or ``"a,b"``, ``"logspace:1e3:1e9:25"``...
        zip: pair the i-th values of all fields instead of taking every combination.
        workers: None or 1 (serial), an int (a process pool of that size), or a map-like callable
            ``f(function, iterable)`` such as ``Client(...).get_executor().map``.
        measure: also measure each point on this machine (sequentially) and add measured columns.
        out: ``.csv``, ``.parquet`` or ``.jsonl`` written as rows finish; rerunning resumes (and logs
            ``resumed ...: kept N rows`` on the ``parsim.studies.sweeps`` logger).
        progress: called as ``progress(done, total)``.
        method: ``engine`` or ``analytic`` for every case (a grid field ``method`` overrides it).

    Returns:
        The tidy DataFrame of all points (resumed rows included); ``attrs`` holds ``grid``, ``log``
        and ``resumed`` (rows kept from an earlier run).

    Raises:
        ParsimError: unknown fields, an empty, malformed or too large grid (``MAX_POINTS``), an
            invalid value, a bad output path, or an output that another sweep wrote or is writing.
    """
    checked = plan(source, grid, zip=zip, measure=measure, out=out, method=method)
    store = execute_plan(checked, open_store(checked), workers, progress)
    failure = measure_failure(store)
    if failure:
        log.warning(failure)
    frame = store.frame()
    frame.attrs.update(
        {"grid": list(checked.grid.fields), "log": sorted(checked.grid.log_fields), "resumed": store.resumed}
    )
    return frame


def _cases(source, method: str | None) -> list[tuple[str, dict]]:
    if source is None:
        source = {}
    if isinstance(source, dict):
        return [("", {**source, **({"method": method} if method else {})})]
    scenario = source if isinstance(source, Scenario) else load_scenario(source)
    from parsim.studies.scenarios import case_labels

    cases = []
    for label, raw in zip(case_labels(scenario), scenario.cases, strict=True):
        base = resolve(scenario, raw).model_dump(exclude={"label"})
        if method:
            base["method"] = method
        cases.append((label, base))
    return cases


def _templates(source, count: int) -> tuple[str, ...]:
    """Each case's label as the scenario writes it (``"GPU: H2D + {op} + D2H ({device})"``), so that
    a point the grid moves to other hardware or parameters is labelled with what it ran on."""
    if source is None or isinstance(source, dict):
        return ("",) * count
    scenario = source if isinstance(source, Scenario) else load_scenario(source)
    return tuple(resolve(scenario, raw).label or "" for raw in scenario.cases)


def _skipped(checked: Plan, store: Store) -> tuple[list | None, int]:
    """Which points an earlier run finished (a mask per case and chunk) and how many are missing."""
    if not len(store.done):
        return None, checked.total
    skip, missing = [], 0
    for label, base in checked.cases:
        masks = []
        for points in checked.grid.chunks():
            masks.append(among(id_numbers(point_ids(label, points, base)), store.done))
            missing += int((~masks[-1]).sum())
        skip.append(masks)
    return skip, missing


def _work(checked: Plan, skip: list | None) -> Iterator[pandas.DataFrame | list]:
    """Chunk by chunk: the vectorised path's rows, or batches of points for the executor."""
    for index, (label, base) in enumerate(checked.cases):
        template = checked.templates[index] if checked.templates else ""
        for number, points in enumerate(checked.grid.chunks()):
            ids = point_ids(label, points, base)
            if skip is not None:
                todo = numpy.flatnonzero(~skip[index][number])
                points, ids = [points[i] for i in todo], [ids[i] for i in todo]
            if not points:
                continue
            frames = fast_rows(label, base, points, ids, template)
            if frames is not None:
                yield from frames
                continue
            for start in range(0, len(points), BATCH):
                yield [(label, point, base, template) for point in points[start : start + BATCH]]


def _measure_rows(store: Store, kinds: dict[str, str]) -> None:
    """Measure each predicted point here, one at a time, and add measured and error columns."""
    from parsim.hardware import registry
    from parsim.measure import measure as run_measure
    from parsim.measure.backends import available_backends

    present = available_backends()
    for row in store.frame().to_dict("records"):
        if _text(row.get("error")) or _text(row.get("measured_s")):
            continue  # not predicted, or measured by an earlier run
        params = {k.split(".", 1)[1]: v for k, v in row.items() if k.startswith("workload.") and v == v}
        store.measured.append(row)
        try:
            # the device that ran it, by the kind its source says (a file's id is no preset)
            kind = _text(row.get("device.kind")) or kinds.get(str(row.get("device_used")))
            kind = kind or registry.processor(row["device_used"]).kind
            if kind == "tpu":
                raise ParsimError("no TPU backend: parsim measures CPUs (NumPy) and GPUs (CuPy)")
            gpu = kind == "gpu"
            backend = "cupy" if gpu else "numpy"
            if backend not in present:
                raise ParsimError(f"no {backend} backend here")
            result = run_measure(
                row["workload"], params, backend=backend, mode=None if gpu else row["mode"], budget_s=0.2
            )
            row.update(
                {
                    "measured_s": result.median_s,
                    "measured_p25_s": result.p25_s,
                    "measured_p75_s": result.p75_s,
                    "relative_error": (row["latency_s"] - result.median_s) / result.median_s,
                    "measure_note": "",
                }
            )
        except ParsimError as exc:
            row["measure_note"] = str(exc)
        store.add(row)


def measure_failure(store: Store) -> str | None:
    """One line when every point this sweep tried to measure failed (None when any was measured)."""
    tried = store.measured
    if not tried or any(_text(row.get("measure_note")) == "" for row in tried):
        return None
    return f"none of the {len(tried)} points could be measured: {tried[0]['measure_note']}"


def _text(value) -> str:
    return "" if value is None or value != value else str(value)
