"""Measurements from real GPUs, kept as data: shipped with parsim, re-predicted, and recorded anew.

A measurement made on a real GPU is worth more than the afternoon it took: it is the only thing the
model can be held to on a machine without one. So parsim ships them (``parsim/data/measured/``, one
validation report per GPU and date, the machine and software in its header) and treats the two
columns differently: the measured times are data and never change; the prediction beside them is
whatever the installed model says today for the preset named in the file's ``preset`` field
(``repredict``), so a better model shows up as smaller errors on the same measurements. A file
without a ``preset`` (predicted with a calibration made on that machine) keeps its predictions.

``record`` measures the same grid on the GPU at hand and writes such a file, so every GPU that
parsim meets can add one: ``parsim validate --record OUT.json``. It writes only the file the user
named, creating it new (never through a link, never over an existing file).
"""

from __future__ import annotations

import datetime
import os
import platform
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from parsim.base import jsontext, safefiles
from parsim.base.errors import ParsimError
from parsim.studies.validate import SCHEMA, Point, load_report, summarise

FOLDER = "data/measured"  # inside the parsim package

ELEMENTWISE = ("vector_add", "saxpy", "relu", "sigmoid", "reduce_sum")
CONV_SHAPES = (  # ResNet-50's layer shapes (batch, channels, height/width, filters, kernel, dtype)
    (32, 64, 56, 64, 3, "float16"),
    (32, 256, 14, 256, 3, "float16"),
    (8, 3, 224, 64, 3, "float32"),
    (32, 128, 28, 128, 3, "float32"),
    (32, 64, 56, 256, 1, "float16"),
)
GRID: tuple[tuple[str, dict], ...] = (
    *((op, {"n": n}) for n in (1e4, 1e5, 1e6, 1e7, 1e8, 4e8) for op in ELEMENTWISE),
    *(
        ("matmul", {"m": e, "n": e, "k": e, **d})
        for e in (256, 512, 1024, 2048, 4096, 8192)
        for d in (
            {"dtype": "float32", "math": "ieee"},
            {"dtype": "float32", "math": "tf32"},
            {"dtype": "float16"},
            {"dtype": "bfloat16"},
        )
    ),
    *(
        ("matmul", {"m": m, "n": n, "k": k, "dtype": "float16"})
        for m, n, k in ((4096, 4096, 256), (16384, 1024, 4096), (1, 4096, 4096), (16, 8192, 8192))
    ),
    *(
        (
            "conv2d",
            {"batch": b, "channels": c, "height": h, "width": h, "filters": f, "kernel": k, "dtype": d},
        )
        for b, c, h, f, k, d in CONV_SHAPES
    ),
    *(
        ("copy", {"n": n, "direction": d, "pinned": p})
        for n in (1e3, 1e5, 1e6, 1e7, 1e8)
        for d in ("h2d", "d2h")
        for p in (True, False)
    ),
    *(("offload", {"op": "relu", "n": n, "streams": s}) for n in (1e6, 1e7, 1e8) for s in (1, 4)),
    ("mlp_train_step", {"batch": 64, "weights": "resident"}),
    ("mlp_train_step", {"batch": 64, "weights": "copied"}),
    ("mlp_train_step", {"batch": 1024, "d_in": 4096, "hidden": 4096, "d_out": 4096, "weights": "resident"}),
)
"""The grid measured on the H100 (``h100-sxm-2026-11-25``), and by ``record`` on any GPU."""


# --- the shipped files ---------------------------------------------------------------------------


def shipped_names() -> list[str]:
    """The measurements shipped with parsim, by name (``h100-sxm-2026-11-25``)."""
    folder = resources.files("parsim").joinpath(FOLDER)
    return sorted(
        entry.name.removesuffix(".json") for entry in folder.iterdir() if entry.name.endswith(".json")
    )


def load(value: str | Path) -> dict:
    """A validation report from a file or by a shipped name, its rows re-predicted (``repredict``).

    Raises:
        ParsimError: a missing or bad file, or an unknown name, in one line.
    """
    text = str(value)
    if text in shipped_names() and not Path(text).exists():
        with resources.as_file(resources.files("parsim").joinpath(f"{FOLDER}/{text}.json")) as path:
            return repredict(load_report(path), source=text)
    if not Path(text).suffix and not Path(text).exists():
        raise ParsimError(
            f"'--load': no file {text!r} and no measurement of that name ships with parsim "
            f"(shipped: {', '.join(shipped_names())})"
        )
    return repredict(load_report(text), source=text)


def repredict(data: dict, source: str = "report") -> dict:
    """``data`` with each row predicted by the installed model for the preset the file names.

    The file's measured times stay; each row's own prediction is kept as ``recorded_predicted_s``;
    a row today's model refuses (a parameter it does not know), or whose program parsim no longer
    runs (its ``superseded`` says why), moves to ``not_predicted`` with the reason. Per-class and
    overall figures are computed again. A file naming no preset is returned
    as it is (it was predicted with a calibration of that machine, which is not here).
    """
    from parsim.hardware.presets import PROCESSORS
    from parsim.methods.predict import predict

    preset = data.get("preset")
    if preset is None:
        return data
    if preset not in PROCESSORS or PROCESSORS[preset].kind != "gpu":
        raise ParsimError(f"{source}: 'preset' must be a GPU preset of this parsim: {str(preset)[:40]!r}")
    rows, refused = [], []
    for row in data["rows"]:
        if isinstance(row.get("superseded"), str):  # a program parsim no longer runs: not compared
            refused.append({**_without_prediction(row), "why": row["superseded"]})
            continue
        try:
            predicted = predict(row["workload"], row["params"], device=preset).latency_s
        except ParsimError as exc:
            refused.append({**_without_prediction(row), "why": str(exc)})
            continue
        kept = {**row, "recorded_predicted_s": row["predicted_s"], "predicted_s": predicted}
        rows.append({**kept, "error": (predicted - row["measured_s"]) / row["measured_s"]})
    from parsim import __version__

    return {
        **data,
        "predicted_with": f"the {preset} preset, uncalibrated, by the installed parsim {__version__}",
        **_summaries(rows),
        "not_predicted": refused,
    }


def _without_prediction(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in ("predicted_s", "error")}


def _summaries(rows: list[dict]) -> dict:
    """Rows with their per-class and overall figures (``parsim.studies.validate.summarise``)."""
    classes: dict[str, list[Point]] = {}
    for row in rows:
        point = Point(
            row["workload"],
            row["params"],
            row["backend"],
            row["mode"],
            row["measured_s"],
            0,
            0,
            row["predicted_s"],
        )
        classes.setdefault(row["class"], []).append(point)
    every = [point for points in classes.values() for point in points]
    return {
        "rows": rows,
        "classes": {k: summarise(v) for k, v in classes.items()},
        "overall": summarise(every),
    }


def headline(data: dict) -> str:
    """What a shipped report is, in one line: "measured on an NVIDIA H100 80GB HBM3 (2026-11-25), ..."."""
    date = str(data.get("created_at", ""))[:10]
    with_what = data.get("predicted_with", "this machine's calibration at the time")
    return f"measured on an {data['device']} ({date}), predicted beside it with {with_what}"


# --- recording a new file on the GPU at hand -----------------------------------------------------


def record(
    out: str | Path,
    budget_s: float = 0.3,
    progress: Callable[[int, int, str], None] | None = None,
    grid: tuple[tuple[str, dict], ...] | None = None,
    lock_timeout_s: float = 600.0,
) -> dict:
    """Measure ``grid`` (default ``GRID``) on the present GPU, predict each point for it (as
    ``present_gpu`` decides), and write the report to the new file ``out``.

    Raises:
        ParsimError: no GPU here, or ``out`` exists or is a link (checked before measuring and again
            when the file is created), in one line.
    """
    from parsim.measure import measure
    from parsim.measure.present import present_gpu

    check_recordable(out)
    grid = GRID if grid is None else grid
    here = present_gpu()
    rows, not_measured, not_predicted = [], [], []
    for index, (workload, params) in enumerate(grid):
        if progress is not None:
            progress(index, len(grid), workload)
        try:
            result = measure(
                workload, params, backend="cupy", budget_s=budget_s, lock_timeout_s=lock_timeout_s
            )
        except ParsimError as exc:
            not_measured.append({"workload": workload, "params": params, "why": str(exc)})
            continue
        row = {
            "workload": workload,
            "params": result.params,
            "backend": "cupy",
            "mode": result.mode,
            "measured_s": result.median_s,
            "p25_s": result.p25_s,
            "p75_s": result.p75_s,
            "class": f"{workload} (cupy, {result.mode})",
            "repeats": result.repeats,
            "note": result.implementation,
        }
        try:
            predicted = here.predict(workload, result.params).latency_s
        except ParsimError as exc:
            not_predicted.append({**row, "why": str(exc)})
            continue
        rows.append(
            {**row, "predicted_s": predicted, "error": (predicted - result.median_s) / result.median_s}
        )
    if progress is not None:
        progress(len(grid), len(grid), "done")
    data = {
        **header(here, budget_s),
        **_summaries(rows),
        "not_measured": not_measured,
        "not_predicted": not_predicted,
    }
    write_new(out, jsontext.dumps(data))
    return data


def header(here, budget_s: float) -> dict:
    """The machine and software a recorded file describes (``here``: ``present_gpu()``'s answer)."""
    import numpy

    from parsim import __version__
    from parsim.measure.backends import cpu_model, import_cupy

    cupy = import_cupy()
    identity = here.identity
    runtime = cupy.cuda.runtime
    cuda = runtime.runtimeGetVersion()
    return {
        "schema": SCHEMA,
        "created_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "host": platform.node(),
        "device": identity.name,
        **({"preset": here.device.id} if here.how == "preset" else {}),
        "machine": {
            "gpu": f"{identity.name}, {identity.sms} SMs, {identity.clock_Hz / 1e6:.0f} MHz max SM clock, "
            f"{identity.memory_B / 2**30:.1f} GiB, compute capability {identity.capability}, "
            f"driver {_driver_version(runtime)}",
            "host": f"{cpu_model()}, {os.cpu_count()} logical CPUs",
        },
        "software": {
            "python": platform.python_version(),
            "cupy": f"{cupy.__version__} (CUDA runtime {cuda // 1000}.{cuda % 1000 // 10})",
            "numpy": numpy.__version__,
            "parsim": __version__,
        },
        "method": f"parsim.measure.measure(workload, params, backend='cupy', budget_s={budget_s:g}) per row: "
        "median and quartiles",
        "predicted_with": f"{here.label}, at record time",
        "targets": {
            "mape_large": 0.15,
            "large_s": 100e-6,
            "small_abs_s": 5e-6,
            "small_rel": 0.30,
            "spearman": 0.95,
        },
    }


def _driver_version(runtime) -> str:
    """The NVIDIA driver's version (from the kernel module where Linux shows it) and its CUDA version."""
    cuda = runtime.driverGetVersion()
    shown = f"CUDA {cuda // 1000}.{cuda % 1000 // 10}"
    try:
        first = Path("/proc/driver/nvidia/version").read_text().splitlines()[0]
    except (OSError, IndexError):
        return shown
    words = [w for w in first.split() if w[:1].isdigit() and "." in w]
    return f"{words[0]} ({shown})" if words else shown


def check_recordable(out: str | Path) -> None:
    """Refuse, in one line, before anything is measured: no GPU here, or an ``out`` that exists or is
    a link (even a dangling one)."""
    from parsim.measure.backends import gpu_available

    available, why = gpu_available()
    if not available:
        raise ParsimError(f"'--record' measures the GPU here, and there is none: {why}")
    path = Path(out)
    if os.path.lexists(path):
        what = "a link" if path.is_symlink() else "there already"
        raise ParsimError(
            f"'--record': {str(path)!r} is {what}; parsim writes only a new file (name another)"
        )


def write_new(out: str | Path, text: str) -> None:
    """Create ``out`` and write ``text``: a new file only, never through a link (``safefiles``)."""
    with safefiles.create_new(Path(out), option="--record") as file:
        file.write(text)
