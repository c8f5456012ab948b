"""Cached pure computations for the app, keyed by plain values so pages switch instantly.

Hardware arrives as a *source*: a preset id, or the text of a hardware TOML (an upload, the
editor, a calibration). Predictions and scenario runs are cached with ``st.cache_resource``: a
prediction is deeply immutable (frozen classes, frozen mappings, tuples), so every session can share
the one object, where ``st.cache_data`` would unpickle a copy on every hit — for a step with tens of
thousands of trace events that copy cost as much as predicting again. Figures are drawn from the
cached data and cached as PNG bytes (``widgets.cached_png``).
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from parsim.base.budget import APP
from parsim.hardware.presets import LINKS, PROCESSORS
from parsim.hardware.specs import LinkSpec, ProcessorSpec
from parsim.hardware.tomlio import loads_hardware
from parsim.methods.predict import predict
from parsim.studies import lessons
from parsim.studies.scenarios import ScenarioResult, load_scenario, retarget, run_scenario


def resolve(source: str | None) -> str | ProcessorSpec | LinkSpec | None:
    """A preset id stays an id; anything else is the text of a hardware file (an upload, the
    editor, a calibration) and becomes the spec it describes — never a name or a path to open."""
    if source is None or source in PROCESSORS or source in LINKS:
        return source
    return loads_hardware(source, source="hardware file")


@st.cache_resource(show_spinner=False, max_entries=512)
def cached_predict(
    workload: str,
    params: tuple,
    device: str,
    host: str | None,
    link: str | None,
    mode: str | None,
    method: str = "engine",
    gpus: int | None = None,
):
    return predict(
        workload,
        dict(params),
        device=resolve(device),
        host=resolve(host),
        link=resolve(link),
        mode=mode,
        method=method,
        gpus=gpus,
        budget=APP,
    )


@st.cache_resource(show_spinner=False, max_entries=128)
def cached_scenario(path: str, stamp: float = 0.0, changes: tuple = ()):
    """A scenario run, cached by path, modification time (``stamp``) and ``changes``.

    ``changes`` are ``retarget`` arguments as sorted ``(name, value)`` pairs (hardware as sources,
    mappings as sorted pairs, sequences as tuples), so that they hash.
    """
    scenario = load_scenario(path)
    if changes:
        options = dict(changes)
        for key in ("cpu", "gpu", "host"):
            if options.get(key) is not None:
                options[key] = resolve(options[key])
        for key in ("params", "workloads"):
            if key in options:
                options[key] = dict(options[key])
        if "values" in options:
            options["values"] = list(options["values"])
        scenario = retarget(scenario, **options)
    return run_scenario(scenario)


def scenario_in_pieces(path: str, changes: tuple, values: tuple, bar=None, parts: int = 5) -> ScenarioResult:
    """A swept scenario run in a few cached pieces of its ``values``, moving ``bar`` between them.

    Streamlit cannot replay a progress bar drawn inside a cached function, so the bar moves here
    and each piece is cached on its own; a second call (to draw the figure) only hits the cache.
    """
    stamp = Path(path).stat().st_mtime
    pieces = [list(values[i::parts]) for i in range(parts) if values[i::parts]]
    runs = []
    for index, piece in enumerate(pieces):
        runs.append(cached_scenario(path, stamp, as_changes({**dict(changes), "values": piece})))
        if bar is not None:
            bar.progress((index + 1) / len(pieces))
    order = {value: position for position, value in enumerate(values)}
    results = sorted(
        (r for run in runs for r in run.results),
        key=lambda r: (runs[0].labels.index(r.label), order[r.value]),
    )
    return ScenarioResult(runs[0].scenario, tuple(results))


def as_changes(options: dict) -> tuple:
    """``retarget`` arguments as hashable, sorted pairs (see ``cached_scenario``); idempotent."""
    frozen = []
    for key, value in sorted(options.items()):
        if isinstance(value, dict):
            value = tuple(sorted(value.items()))
        elif isinstance(value, list):
            value = tuple(value)
        frozen.append((key, value))
    return tuple(frozen)


def scenario_folder() -> Path:
    """The lessons: package data, or ``$PARSIM_LESSONS`` (``parsim.studies.lessons.folder``)."""
    return lessons.folder()


def scenario_path(stem: str) -> Path:
    """One lesson by its file name without ``.toml``."""
    return lessons.lesson_path(stem)


@st.cache_data(show_spinner=False, max_entries=64)
def cached_lessons_using(workload: str) -> list[tuple[str, str]]:
    """The lessons that run ``workload`` (``parsim.studies.lessons.using``), read once per workload."""
    return lessons.using(workload)


def published_again(bar=None) -> dict:
    """Every shipped published measurement predicted by the installed model, a class at a time
    (each cached on its own) with ``bar`` moving between classes, as one report
    (``parsim.studies.published.report``, cached too: its figure is drawn once)."""
    classes = _published_classes()
    for index, klass in enumerate(classes):
        _compared(klass)
        if bar is not None:
            done = index + 1
            bar.progress(done / len(classes), text=f"predicted {klass} ({done} of {len(classes)} classes)")
    return cached_published()


@st.cache_data(show_spinner=False, max_entries=2)
def cached_published() -> dict:
    """The report of every class's predictions (``published_again`` predicts them first)."""
    from parsim.studies import published

    by_id = {c.row.id: c for klass in _published_classes() for c in _compared(klass)}
    return published.report([by_id[row.id] for row in published.load_rows()])


def _published_classes() -> list[str]:
    from parsim.studies import published

    present = {row.klass for row in published.load_rows()}
    return [klass for klass in published.CLASSES if klass in present]


@st.cache_data(show_spinner=False, max_entries=64)
def _compared(klass: str) -> tuple:
    """One class's rows, each predicted (``parsim.studies.published.compare``)."""
    from parsim.studies import published

    return tuple(published.compare(published.rows_of((klass,))))


@st.cache_data(show_spinner=False, max_entries=2)
def cached_snapshot() -> dict | None:
    """The published comparison shipped with parsim (``studies.published_snapshot``), read once."""
    from parsim.studies import published_snapshot

    return published_snapshot.load_snapshot()
