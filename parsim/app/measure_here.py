"""Measure a lesson here: its cases timed on this machine beside their prediction for this machine.

A lesson's cases name preset hardware (a 2014 Xeon, a V100); a class sits in front of another
machine. So each case this machine can run is measured on it — CPU cases on this CPU whatever
preset they name, GPU cases with CuPy when a GPU is here (or, for the work NumPy can do, on this CPU
when none is) — and predicted for this machine, so the two numbers beside each other are about the
same hardware: a CPU case for its calibration (``this-machine.toml``), a GPU case for the GPU that
ran it, as ``parsim.measure.present`` decides (its calibration, its preset, or a calibration made
now) and names. Sweeps are measured at the values this machine runs in a fraction of a second.
Results live in ``st.session_state`` per lesson, so they survive reruns and page switches; the
calibration is written next to the app, so it survives a restart.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import NamedTuple

import streamlit as st

from parsim.base import paths
from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.hardware.presets import PROCESSORS
from parsim.hardware.tomlio import dumps_hardware, loads_hardware
from parsim.measure.present import PresentGpu
from parsim.measure.run import NOT_MEASURED, SISD_WORKLOADS, check_measurable, measurable
from parsim.studies.scenarios import case_labels, parse_values, resolve

CALIBRATION = str(paths.CALIBRATION)
PRESENT = "present_gpu"  # session state: (PresentGpu or None, why not)
ESTIMATE = "laptop-4c-avx2"  # sizes the sweep when the machine is not calibrated yet
MOST_S = 0.05  # a sweep value is measured when this machine should run it in at most this long
MOST_CASE_S = 1.0  # ... and a lesson without a sweep each case that runs in at most this long
MOST_VALUES = 6  # ... and at most this many values per case, spread over the sweep
BUDGET_S = 0.2  # repeats per point (measure() takes at least 5)
CALIBRATION_STEPS = (
    "DRAM and cache bandwidth per core count, the dispatch cost of a NumPy call, the fork/join of "
    "the worker threads, each core's vector and matrix FLOP rates, and the Python interpreter's "
    "cost per element"
)


class Planned(NamedTuple):
    """One measurement to take: the lesson's case and sweep value, and how it runs here."""

    label: str
    value: object  # the sweep value, or None
    workload: str
    params: dict
    backend: str  # numpy or cupy
    mode: str | None
    why: str  # why it is measured this way ("" for a CPU case on this CPU)
    gpu: str | None = None  # the lesson's GPU (a CuPy measurement is predicted for the GPU present)


def machine():
    """This machine's calibrated spec from ``this-machine.toml`` in the working directory, or None."""
    from parsim.app.widgets import load_calibrated

    load_calibrated()  # one reader of the file: size-checked, validated, once per session
    text = st.session_state["calibrated_toml"]
    if not text:
        return None
    try:
        return loads_hardware(text, source=CALIBRATION)
    except ParsimError:
        return None


def save_calibration(spec, raw: dict, folder: Path = Path()) -> Path:
    """Write ``this-machine.toml`` atomically (a temp file, then ``os.replace``) and return its path."""
    from parsim.measure.calibrate import describe

    text = dumps_hardware(spec, describe(raw, quick=True))
    target = folder / CALIBRATION
    handle, temp = tempfile.mkstemp(dir=folder, prefix=".this-machine-", suffix=".toml")
    try:
        with os.fdopen(handle, "w") as out:
            out.write(text)
        os.replace(temp, target)
    except OSError:
        Path(temp).unlink(missing_ok=True)
        raise
    st.session_state["calibrated_toml"] = text
    return target


def calibrate_button(key: str) -> bool:
    """The quick calibration: a button that says what it measures, progress per step, saved to disk."""
    st.caption(f"The quick calibration measures {CALIBRATION_STEPS}, then saves `{CALIBRATION}` here.")
    if not st.button("Calibrate this machine", key=key):
        return False
    from parsim.measure.calibrate import calibrate

    bar = st.progress(0.0, text="calibrating (waits if someone else is measuring this machine)")
    try:
        spec, raw = calibrate(
            quick=True, progress=lambda done, steps, what: bar.progress(done / steps, text=f"{what}")
        )
        path = save_calibration(spec, raw)
    except (ParsimError, OSError) as exc:  # one line: what could not be measured and why (or the file)
        bar.empty()
        text = str(exc)
        st.error(text if text.startswith("calibration") else f"calibration failed: {text}")
        return False
    bar.empty()
    st.success(f"calibrated and saved to {path.name} in the folder the app was started from")
    return True


def plan(scenario, spec, gpu: bool) -> tuple[list[Planned], list[str]]:
    """What to measure for ``scenario`` here, and one line for each case left out (and why)."""
    estimate = spec or PROCESSORS[ESTIMATE]
    planned, skipped = [], []
    values = parse_values(scenario.sweep.values) if scenario.sweep else [None]
    for label, raw in zip(case_labels(scenario), scenario.cases, strict=True):
        case = resolve(scenario, raw)
        if case.cluster is not None:
            nodes = case.params.get("nodes", 1)
            where = f"a cluster ({nodes} node{'s' if nodes != 1 else ''} or more)"
            skipped.append(f"{label}: runs on {where}: nothing to measure on one machine")
            continue
        kind = registry.kind_of(case.device)
        if kind not in ("cpu", "gpu"):  # a TPU: no backend here runs its program
            skipped.append(f"{label}: runs on a {str(kind).upper()}, which parsim cannot measure")
            continue
        on_gpu = kind == "gpu"
        backend, mode, why = "numpy", case.mode or "mimd+simd", ""
        if on_gpu and gpu and measurable(case.workload, "cupy"):
            backend, mode, why = "cupy", None, "on this machine's GPU (CuPy)"
        elif on_gpu:
            reason = _cpu_instead(case)
            if reason:
                skipped.append(f"{label}: {reason}")
                continue
            mode, why = "mimd+simd", "no GPU here: the same work on this CPU"
        elif not measurable(case.workload):
            skipped.append(f"{label}: {_predicted_only(case.workload)}")
            continue
        chosen = [v for v in values if _fits(case, scenario.sweep, v, estimate, mode, backend)]
        if not chosen:
            longest = MOST_S if scenario.sweep else MOST_CASE_S
            skipped.append(f"{label}: predicted longer than {longest:g} s here, too long to repeat")
            continue
        step = max(1, -(-len(chosen) // MOST_VALUES))
        refused = ""
        for value in chosen[::step]:
            params = _with_value(case.params, scenario.sweep, value)
            try:  # what the measurement would refuse (no program, too big...) is not offered
                check_measurable(case.workload, params, backend, mode)
            except ParsimError as exc:
                refused = refused or str(exc)
                continue
            gpu_id = case.device if backend == "cupy" else None
            planned.append(Planned(label, value, case.workload, params, backend, mode, why, gpu_id))
        if refused and not any(item.label == label for item in planned):
            skipped.append(f"{label}: {refused}")
    kept, same = _unique(planned)
    return kept, skipped + same


def _predicted_only(workload: str) -> str:
    if workload in NOT_MEASURED:
        return f"{workload} needs a deep-learning framework to measure"
    return f"{workload} is predicted only: parsim has no program to measure it"


def _cpu_instead(case) -> str:
    """Why a GPU case cannot run on this CPU instead ("" when it can)."""
    if not measurable(case.workload, "cupy"):
        return _predicted_only(case.workload)
    if not measurable(case.workload):
        return f"{case.workload} needs a GPU (no GPU here)"
    if case.params.get("dtype", "float32") != "float32":
        return f"no GPU here, and NumPy has no fast {case.params['dtype']} to stand in"
    return ""


def _fits(case, sweep, value, estimate, mode, backend) -> bool:
    """Whether one run takes at most ``MOST_S`` here (by the calibration, or a laptop estimate)."""
    from parsim.methods.predict import predict

    params = _with_value(case.params, sweep, value)
    if backend == "numpy" and (mode or "mimd+simd") == "sisd" and case.workload not in SISD_WORKLOADS:
        return False  # no Python loop for it: measure() would refuse
    try:
        device = estimate if backend == "numpy" else case.device
        seconds = predict(case.workload, params, device=device, mode=mode, method="analytic").latency_s
    except ParsimError:
        return False
    return seconds <= (MOST_S if sweep else MOST_CASE_S)


def _with_value(params: dict, sweep, value) -> dict:
    if sweep is None:
        return dict(params)
    return {**params, **dict.fromkeys(sweep.params, value)}


def _unique(planned: list[Planned]) -> tuple[list[Planned], list[str]]:
    """Cases that became the same measurement here (a GPU case run on this CPU) are measured once:
    the CPU case keeps it, and the other is named as measured by it."""
    first: dict = {}
    for item in sorted(planned, key=lambda item: item.why != ""):  # stable: CPU cases claim first
        first.setdefault(_key(item), item)
    kept = [item for item in planned if item in first.values()]
    same = sorted(
        {
            f"{item.label}: {item.why}, which is the row of {first[_key(item)].label}"
            for item in planned
            if first[_key(item)] is not item
        }
    )
    return kept, same


def _key(item: Planned) -> tuple:
    return (item.workload, tuple(sorted(item.params.items())), item.backend, item.mode, item.value)


def present() -> tuple[PresentGpu | None, str]:
    """The present GPU and the spec that predicts it (``parsim.measure.present``), decided once per
    session (an unknown GPU is calibrated then, in seconds); ``(None, why)`` when it cannot be."""
    if PRESENT not in st.session_state:
        from parsim.measure.present import present_gpu

        try:
            with st.spinner("identifying this machine's GPU (an unknown one is calibrated, in seconds)"):
                st.session_state[PRESENT] = (present_gpu(), "")
        except ParsimError as exc:
            st.session_state[PRESENT] = (None, str(exc))
    return st.session_state[PRESENT]


def measure_one(item: Planned, spec, on_wait=None) -> dict:
    """Measure ``item`` here and predict it for the hardware that ran it: a CPU case for this
    machine's calibration ``spec``, a GPU case for the GPU present (``present``, which names the spec
    it used); one row of the paired table. ``on_wait`` is told, in one line, when another
    measurement holds this machine (``parsim.measure.measure``)."""
    from parsim.measure import measure
    from parsim.methods.predict import predict

    row = {"case": item.label, "value": item.value, "how": item.why or "on this CPU"}
    if item.gpu is not None:
        row["how"] += f"; the lesson's case is a {item.gpu}"
    try:
        measured = measure(
            item.workload,
            item.params,
            backend=item.backend,
            mode=item.mode,
            budget_s=BUDGET_S,
            on_wait=on_wait,
        )
    except ParsimError as exc:
        return {**row, "mode": item.mode, "note": f"not measured: {exc}"}
    row |= {"mode": measured.mode, "measured_s": measured.median_s}
    try:
        if item.backend == "cupy":
            here, why = present()
            if here is None:
                return {**row, "note": f"not predicted: {why}"}
            row["predicted for"] = here.label
            predicted = here.predict(item.workload, measured.params).latency_s
        elif spec is None:
            return {**row, "note": "no calibration: calibrate to predict this machine"}
        else:
            predicted = predict(item.workload, measured.params, device=spec, mode=measured.mode).latency_s
    except ParsimError as exc:
        return {**row, "note": f"not predicted: {exc}"}
    return {**row, "predicted_s": predicted, "error": predicted / measured.median_s - 1, "note": ""}
