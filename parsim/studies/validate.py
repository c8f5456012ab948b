"""Validation: predicted against measured, point by point, with error figures per workload class.

A grid of workloads x sizes x modes is measured on every backend present and predicted with
the calibrated spec of this machine. Each row keeps both times and the relative error; each
workload class gets its MAPE (over points whose measured time is at least 100 us), its largest
error, the share of small points within 5 us or 30 %, and the Spearman rank correlation of
predicted and measured times (does the model order the points right?). Reports are versioned
JSON that the app and ``parsim.plots`` can draw on another machine.

Validation compares this machine with the model of this machine, so its spec must be the file
``parsim calibrate`` wrote here (``calibrated_spec``): a preset, a GPU, or another machine's file
would be compared with NumPy on this CPU and yield a meaningless error, after minutes of
measuring. A report read back (``load_report``, ``check_report``) is checked field by field, so
a truncated, edited or foreign file is one line naming the file and the field, never a
traceback in the middle of drawing it.
"""

from __future__ import annotations

import datetime
import math
import platform
import random
import statistics
from collections.abc import Callable
from pathlib import Path

import attrs
import numpy
import pandas

from parsim.base import jsontext, safefiles
from parsim.base.errors import ParsimError
from parsim.hardware.specs import LinkSpec, ProcessorSpec
from parsim.measure import measure
from parsim.measure.backends import available_backends, cpu_model
from parsim.measure.jsonfiles import choice, field, finite, json_kind, number, read_json, short, text
from parsim.measure.run import SCHEMA as MEASUREMENT_SCHEMA
from parsim.methods.predict import predict

SCHEMA = "parsim.validation/1"
LARGE_S = 100e-6  # points at least this long count towards the MAPE target
SMALL_ABS_S, SMALL_REL = 5e-6, 0.30

ELEMENTWISE = ("vector_add", "saxpy", "relu", "sigmoid")


def grid(quick: bool = True, backends: list[str] | None = None) -> list[tuple[str, dict, str, str]]:
    """The points to validate: ``(workload, params, backend, mode)``."""
    backends = backends or available_backends()
    sizes = [1e3, 1e4, 1e5, 1e6, 1e7] if quick else [1e3, 3e3, 1e4, 3e4, 1e5, 3e5, 1e6, 3e6, 1e7, 3e7]
    edges = [64, 256, 1024] if quick else [32, 64, 128, 256, 512, 1024, 2048]
    points = []
    if "numpy" in backends:
        for mode in ("simd", "mimd+simd"):
            points += [(op, {"n": n}, "numpy", mode) for op in (*ELEMENTWISE, "reduce_sum") for n in sizes]
            points += [("matmul", {"m": e, "n": e, "k": e}, "numpy", mode) for e in edges]
        points += [
            (op, {"n": n}, "numpy", "sisd") for op in (*ELEMENTWISE, "reduce_sum") for n in (1e3, 1e4, 1e5)
        ]
        points += [("matmul", {"m": e, "n": e, "k": e}, "numpy", "sisd") for e in (8, 16, 32)]
    if "cupy" in backends:
        points += [
            (op, {"n": n}, "cupy", "simt") for op in (*ELEMENTWISE, "reduce_sum") for n in (*sizes, 1e8)
        ]
        points += [
            ("matmul", {"m": e, "n": e, "k": e, "dtype": d}, "cupy", "simt")
            for e in (256, 1024, 4096)
            for d in ("float32", "float16")
        ]
        points += [
            ("copy", {"n": n, "direction": d, "pinned": p}, "cupy", "simt")
            for n in (1e3, 1e5, 1e7)
            for d in ("h2d", "d2h")
            for p in (True, False)
        ]
        points += [("offload", {"op": "relu", "n": 1e7, "streams": s}, "cupy", "simt") for s in (1, 4)]
    return points


@attrs.frozen
class Point:
    """One validated point."""

    workload: str
    params: dict
    backend: str
    mode: str
    measured_s: float
    p25_s: float
    p75_s: float
    predicted_s: float

    @property
    def error(self) -> float:
        """Relative error of the prediction: (predicted - measured) / measured."""
        return (self.predicted_s - self.measured_s) / self.measured_s

    @property
    def workload_class(self) -> str:
        return f"{self.workload} ({self.backend}, {self.mode})"


def validate(
    cpu_spec: ProcessorSpec,
    gpu_specs: dict | None = None,
    quick: bool = True,
    backends: list[str] | None = None,
    budget_s: float = 0.1,
    progress: Callable[[int, int, str], None] | None = None,
    rounds: int = 3,
    lock_timeout_s: float = 600.0,
    on_wait: Callable[[str], None] | None = None,
) -> dict:
    """Measure and predict every grid point; return the report (see ``summarise``).

    The grid is measured in ``rounds`` passes, each in a different (seeded) order, and each point
    keeps the median of its passes: a machine whose speed drifts over seconds then spreads the
    drift over every workload class instead of shifting one class against another.

    Args:
        cpu_spec: calibrated spec of this machine's CPU (predicts the numpy points).
        gpu_specs: for the cupy points, ``{"device": ..., "host": ..., "link": ...}`` specs.
        quick: the small grid.
        backends: restrict to these backends (default: every one present).
        budget_s: measurement time per point.
        progress: ``progress(done, total, label)``.
        rounds: passes over the grid (``budget_s`` is shared among them).
        lock_timeout_s: how long each point waits for another measurement on this machine.
        on_wait: told in one line when it waits (see ``parsim.measure.measure``).
    """
    if not isinstance(cpu_spec, ProcessorSpec) or cpu_spec.kind != "cpu":
        shown = f"the {cpu_spec.kind} {cpu_spec.id!r}" if isinstance(cpu_spec, ProcessorSpec) else cpu_spec
        raise ParsimError(f"'cpu_spec' must be the calibrated spec of this machine's CPU: {shown}")
    points = grid(quick, backends)
    if any(b == "cupy" for _, _, b, _ in points) and not gpu_specs:
        raise ParsimError(
            "validating the GPU needs its calibrated specs (run parsim calibrate on this machine)"
        )
    samples: dict[int, list] = {index: [] for index in range(len(points))}
    order = list(range(len(points)))
    shuffler = random.Random(2026)
    total, done = len(points) * rounds, 0
    for _ in range(rounds):
        for index in order:
            workload, params, backend, mode = points[index]
            if progress is not None:
                shown = " ".join(
                    f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items()
                )
                progress(done, total, f"{workload} {shown} {mode}")
            samples[index].append(
                measure(
                    workload,
                    params,
                    backend=backend,
                    mode=mode,
                    budget_s=budget_s / rounds,
                    lock_timeout_s=lock_timeout_s,
                    on_wait=on_wait,
                )
            )
            done += 1
        shuffler.shuffle(order)
    rows = []
    for index, (workload, _params, backend, mode) in enumerate(points):
        runs = samples[index]
        measured = runs[0]
        median_s = statistics.median(run.median_s for run in runs)
        if backend == "numpy":
            predicted = predict(workload, measured.params, device=cpu_spec, mode=mode)
        else:
            predicted = predict(
                workload,
                measured.params,
                device=gpu_specs["device"],
                host=gpu_specs["host"],
                link=gpu_specs["link"],
            )
        rows.append(
            Point(
                workload,
                measured.params,
                backend,
                mode,
                median_s,
                min(r.p25_s for r in runs),
                max(r.p75_s for r in runs),
                predicted.latency_s,
            )
        )
    if progress is not None:
        progress(total, total, "done")
    return report(rows, cpu_spec)


def spearman(a: list[float], b: list[float]) -> float:
    """Spearman rank correlation: Pearson's on ranks, tied values sharing their average rank."""
    if len(a) < 2:
        return 1.0
    correlation = pandas.Series(a).rank().corr(pandas.Series(b).rank())
    if math.isnan(correlation):  # a constant series has no order: agreement only if both are constant
        return 1.0 if len(set(a)) == len(set(b)) == 1 else 0.0
    return float(correlation)


def summarise(points: list[Point]) -> dict:
    """MAPE (large points), max error, small-point hit rate and rank correlation of ``points``."""
    large = [abs(p.error) for p in points if p.measured_s >= LARGE_S]
    small = [p for p in points if p.measured_s < LARGE_S]
    hits = [abs(p.predicted_s - p.measured_s) <= SMALL_ABS_S or abs(p.error) <= SMALL_REL for p in small]
    return {
        "points": len(points),
        "mape_large": float(numpy.mean(large)) if large else None,
        "max_error": max(abs(p.error) for p in points) if points else None,
        "small_within": float(numpy.mean(hits)) if hits else None,
        "spearman": spearman([p.measured_s for p in points], [p.predicted_s for p in points]),
    }


def report(rows: list[Point], cpu_spec: ProcessorSpec) -> dict:
    """The versioned JSON report: every row, per-class summaries and an overall summary."""
    classes: dict[str, list[Point]] = {}
    for row in rows:
        classes.setdefault(row.workload_class, []).append(row)
    return {
        "schema": SCHEMA,
        "created_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "host": platform.node(),
        "device": cpu_spec.name,
        "targets": {
            "mape_large": 0.10,
            "large_s": LARGE_S,
            "small_abs_s": SMALL_ABS_S,
            "small_rel": SMALL_REL,
            "spearman": 0.95,
        },
        "rows": [{**attrs.asdict(row), "error": row.error, "class": row.workload_class} for row in rows],
        "classes": {name: summarise(points) for name, points in classes.items()},
        "overall": summarise(rows),
    }


def save_report(data: dict, path: str | Path) -> Path:
    path = Path(path)
    try:
        safefiles.write_text(path, jsontext.dumps(data), "--save")
    except OSError as exc:
        raise ParsimError(
            f"{path}: cannot write the report ({exc.strerror or exc.__class__.__name__})"
        ) from None
    return path


def load_report(path: str | Path) -> dict:
    """Read a validation report (from this or another machine), checked by ``check_report``."""
    return check_report(read_json(path, "validation report"), str(path))


SUMMARY_KEYS = ("points", "mape_large", "max_error", "small_within", "spearman")
TARGET_KEYS = ("mape_large", "large_s", "small_abs_s", "small_rel", "spearman")
ROW_KEYS = ("workload", "params", "backend", "mode", "class", "measured_s", "predicted_s", "error")


def check_report(data: object, source: str = "report") -> dict:
    """``data`` once it is a whole validation report: everything the text report, the app and
    ``parsim.plots`` read from it is there, of the right type and finite.

    Raises:
        ParsimError: ``<source>: not a parsim validation report (...)`` for another kind of
            document, ``<source>: not a valid parsim validation report: <field> ...`` for the first
            bad field.
    """
    if not isinstance(data, dict):
        raise ParsimError(
            f"{source}: not a parsim validation report (a JSON {json_kind(data)}, expected an object)"
        )
    if data.get("schema") != SCHEMA:
        found = data.get("schema")
        hint = "; it is a measurement: parsim measure wrote it" if found == MEASUREMENT_SCHEMA else ""
        shown = repr(found) if len(repr(found)) <= 40 else repr(found)[:37] + "..."
        raise ParsimError(
            f"{source}: not a parsim validation report (schema {shown}, expected {SCHEMA!r}){hint}"
        )
    try:
        rows = field(data, "rows", list)
        for index, row in enumerate(rows):
            _check_row(row, f"rows[{index}]")
        classes = field(data, "classes", dict)
        for name, summary in classes.items():
            _check_summary(summary, f"classes[{name[:40]!r}]")
        _check_summary(field(data, "overall", dict), "overall")
        targets = field(data, "targets", dict)
        for key in TARGET_KEYS:
            number(targets, key, "targets")
        for key in ("device", "host", "created_at"):
            text(data, key, empty=True)
    except ParsimError as exc:
        raise ParsimError(f"{source}: not a valid parsim validation report: {exc}") from None
    return data


def _check_row(row: object, where: str) -> None:
    if not isinstance(row, dict):
        raise ParsimError(f"'{where}' must be an object: a JSON {json_kind(row)}")
    for key in ("workload", "class"):
        text(row, key, where)
    choice(row, "backend", ("numpy", "cupy"), where)
    text(row, "mode", where)
    params = field(row, "params", dict, where)
    sizes = size_keys(row["workload"])
    for key, value in params.items():
        if key in sizes:  # a count (elements, edges, images): what the text report prints as the size
            number(params, key, f"{where}.params", positive=True)
        elif not (value is None or isinstance(value, str | bool) or finite(value)):
            shown = f"'{where}.params.{key}'"
            raise ParsimError(f"{shown} must be a number, text, true/false or null: {short(value)}")
    number(row, "measured_s", where, positive=True)
    number(row, "predicted_s", where, positive=True)
    number(row, "error", where, low=-1.0)
    for key in ("p25_s", "p75_s"):
        if key in row:
            number(row, key, where)


def size_keys(workload: str) -> tuple[str, ...]:
    """The parameters of ``workload`` that are counts (elements, matrix edges, images, channels): the
    ones its definition declares as numbers. A workload this parsim does not know has none (a report
    from a newer parsim still loads; its rows are then refused one by one when predicted)."""
    from parsim.workloads.registry import WORKLOADS

    definition = WORKLOADS.get(workload)
    if definition is None:
        return ()
    fields = definition.params.model_fields
    return tuple(name for name, info in fields.items() if info.annotation in (int, float))


def _check_summary(summary: object, where: str) -> None:
    if not isinstance(summary, dict):
        raise ParsimError(f"'{where}' must be an object: a JSON {json_kind(summary)}")
    points = field(summary, "points", int, where)
    if points < 0:
        raise ParsimError(f"'{where}.points' must be >= 0: {points}")
    for key in ("mape_large", "max_error"):
        number(summary, key, where, optional=True)
    number(summary, "small_within", where, high=1.0, optional=True)
    number(summary, "spearman", where, low=-1.0, high=1.0)


# --- the spec validated against: this machine's calibrated files ------------------------------


def calibrated_spec(
    path: str | Path, kind: str = "cpu", option: str = "--device"
) -> ProcessorSpec | LinkSpec:
    """The spec in ``path`` once it is a file ``parsim calibrate`` wrote on this machine.

    ``kind`` is ``cpu`` (the CPU file), ``gpu`` (``*-gpu.toml``) or ``link`` (``*-link.toml``).
    A CPU file counts as this machine's when its ``[meta]`` names this CPU model or this host (a
    container's host name changes from run to run; its CPU does not); a GPU or link file when
    calibrate wrote it (validating them needs a GPU here, which is checked apart).

    Raises:
        ParsimError: in one line naming ``option``: a preset id, another kind of processor, a
            file calibrate did not write, or one calibrated on another machine.
    """
    import tomllib

    from parsim.hardware.tomlio import loads_hardware, read_hardware_text

    value = str(path)
    wanted = {"cpu": "CPU", "gpu": "GPU", "link": "host-device link"}[kind]
    if not value.endswith(".toml"):
        from parsim.hardware.presets import LINKS, PROCESSORS

        preset = value in PROCESSORS or value in LINKS
        what = " (a preset: it describes other hardware, not this machine)" if preset else ""
        raise ParsimError(
            f"'{option}' must be the {wanted} file parsim calibrate wrote on this machine (a .toml), "
            f"not {value!r}{what}"
        )
    # read once: a missing, unreadable or malformed file is refused here, in one line; its [meta] is
    # parsed from the same text, never from the name again (a link could have taken it over)
    text = read_hardware_text(value, option)
    spec = loads_hardware(text, source=value)
    actual = "link" if isinstance(spec, LinkSpec) else spec.kind
    if actual != kind:
        raise ParsimError(f"'{option}': {value} describes a {actual}, not this machine's {wanted}")
    meta = tomllib.loads(text).get("meta")
    source = meta.get("source") if isinstance(meta, dict) else None
    expected = "parsim calibrate (GPU)" if kind != "cpu" else "parsim calibrate"
    if not isinstance(source, str) or source.removesuffix(" --quick") != expected:
        found = f"its [meta] source is {source!r}" if source is not None else "it has no [meta] source"
        raise ParsimError(
            f"'{option}': {value} was not written by parsim calibrate ({found}); run parsim calibrate here"
        )
    here = platform.node()
    if kind == "cpu" and meta.get("cpu_model") != cpu_model() and meta.get("host") != here:
        raise ParsimError(
            f"'{option}': {value} was calibrated on {meta.get('host')!r} ({meta.get('cpu_model')}), "
            f"not on this machine ({here!r}, {cpu_model()}); run parsim calibrate here"
        )
    return spec
