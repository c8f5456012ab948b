"""Measure: what this machine really does — measurements, a quick calibration, predicted vs measured.

Everyone sees a real GPU's measurements shipped with parsim beside today's prediction
(``measure_shipped``). Measurements are serialised across users by parsim's machine-wide lock, so
two people timing at once never disturb each other; results can be saved and loaded as JSON, so a
lecture laptop without a GPU can show figures measured on a GPU server.
"""

from __future__ import annotations

import json

import pandas
import streamlit as st

from parsim import plots
from parsim.app import layout, measure_shipped
from parsim.app.cache import cached_snapshot, published_again
from parsim.app.measure_here import CALIBRATION, calibrate_button, present
from parsim.app.widgets import cached_png, csv_download, figure, load_calibrated, show_png
from parsim.base import units
from parsim.base.errors import ParsimError
from parsim.hardware.tomlio import loads_hardware
from parsim.measure.backends import gpu_available
from parsim.measure.jsonfiles import parse_json
from parsim.measure.run import SISD_WORKLOADS, check_measurement
from parsim.studies import measured, published_snapshot
from parsim.studies.validate import SCHEMA as REPORT_SCHEMA
from parsim.studies.validate import check_report, summarise
from parsim.workloads.registry import WORKLOADS

PUBLISHED_SHOWN = "published_shown"  # session state: the section was asked for once
MEASURABLE = list(SISD_WORKLOADS)
"""What this page measures: the workloads ``measure`` runs in every mode, down to a Python loop."""


def render() -> None:
    st.title("Measure")
    available, why = gpu_available()
    if available:
        st.success("NumPy (CPU) and CuPy (GPU) are both available: measurements can run on either.")
    else:
        st.warning(
            f"No GPU here — {why}. You can measure the CPU with NumPy, or load measurements made on a "
            "GPU machine.",
            icon=":material/info:",
        )
    load_calibrated()
    history = st.session_state.setdefault("measurements", [])
    _calibration()
    measure_shipped.render()
    _published()
    _measure_form(history, available)
    _files(history)
    _comparison(history)


def _calibration() -> None:
    with st.container(border=True):
        st.subheader("This machine")
        if st.session_state.get("calibrated_toml"):
            spec = loads_hardware(st.session_state["calibrated_toml"])
            st.write(
                f"calibrated: {spec.name}, {spec.cores} cores, {units.si(spec.memory.bandwidth_Bps, 'B/s')} "
                f"DRAM, dispatch {units.seconds(spec.dispatch_s)}"
            )
            if spec.memory.curve:  # the staircase the calibration measured, at once
                png = cached_png(_calibration_figure, st.session_state["calibrated_toml"])
                show_png(png, "this-machine-bandwidth", key="measure_calibration_png")
            st.download_button(
                "Download this-machine.toml",
                st.session_state["calibrated_toml"].encode(),
                file_name="this-machine.toml",
                key="measure_calibration_download",
            )
        else:
            st.write(f"not calibrated yet: no `{CALIBRATION}` in the folder the app was started from")
        if calibrate_button(key="measure_calibrate"):
            st.rerun()  # every page reads the new calibration


def _calibration_figure(toml_text: str):
    return plots.calibration_curve(loads_hardware(toml_text))


def _measure_form(history: list, gpu: bool) -> None:
    with st.form("measure_form"):
        st.subheader("Measure a workload")
        columns = st.columns(4)
        workload = columns[0].selectbox("workload", MEASURABLE, key="measure_workload")
        size = columns[1].number_input(
            "n (or matrix edge)", min_value=1, max_value=10**8, value=10**6, key="measure_size"
        )
        mode = columns[2].selectbox("mode", ["simd", "mimd+simd", "mimd", "sisd"], key="measure_mode")
        backend = columns[3].selectbox(
            "backend", ["numpy", "cupy"] if gpu else ["numpy"], key="measure_backend"
        )
        submitted = st.form_submit_button("Measure", key="measure_submit")
    if not submitted:
        return
    from parsim.measure import measure
    from parsim.methods.predict import predict

    params = dict.fromkeys(WORKLOADS[workload].sizes, size)  # every size of the workload: n, or m n k
    try:
        with st.spinner("measuring (waits if someone else is measuring this machine)"):
            result = measure(
                workload, params, backend=backend, mode=None if backend == "cupy" else mode, budget_s=0.3
            )
        device = st.session_state.get("calibrated_toml")
        predicted, predicted_for = None, "calibrate to compare with a prediction"
        if backend == "cupy":  # the GPU that ran it, named (parsim.measure.present)
            here, why = present()
            predicted_for = here.label if here is not None else f"not predicted: {why}"
            if here is not None:
                predicted = here.predict(workload, result.params).latency_s
        elif device:
            predicted_for = "predicted for this machine's calibration"
            predicted = predict(
                workload, result.params, device=loads_hardware(device), mode=result.mode
            ).latency_s
    except ParsimError as exc:
        st.error(str(exc))
        return
    history.append({**result.to_dict(), "predicted_s": predicted, "predicted_for": predicted_for})
    median = f"median {units.seconds(result.median_s)} (p25 {units.seconds(result.p25_s)}, "
    median += f"p75 {units.seconds(result.p75_s)}, {result.repeats} repeats)"
    shown = f"predicted {units.seconds(predicted)}, {predicted_for}" if predicted else predicted_for
    st.success(f"{workload}: {median}; {shown}")


def _files(history: list) -> None:
    with st.container(border=True):
        st.subheader("Measurement files")
        if history:
            st.download_button(
                "Download these measurements (JSON)",
                json.dumps(history, indent=2).encode(),
                file_name="measurements.json",
                key="measure_save",
            )
        file = st.file_uploader(
            "Load measurements or a validation report (JSON)", type=["json"], key="measure_load"
        )
        if file is None:
            return
        if file.size > 50_000_000:
            st.error(f"{file.name} is larger than 50 MB; nothing loaded")
            return
        try:
            data = parse_json(file.getvalue(), file.name, "measurement file or validation report")
            _check_document(data, file.name)
            if isinstance(data, dict) and data.get("schema") == REPORT_SCHEMA:
                data = measured.repredict(data, file.name)  # a GPU preset's file: today's prediction
        except ParsimError as exc:
            st.error(f"{exc}; nothing loaded")
            return
        rows = _rows_of(data)
        if rows is None:
            st.error(f"{file.name} is neither parsim measurements nor a validation report; nothing loaded")
            return
        st.session_state["loaded_rows"] = rows
        st.caption(f"loaded {len(rows)} rows from {file.name}")


def _check_document(data: object, source: str) -> None:
    """The field-by-field checks of ``parsim validate --load`` and the measurement files, so the page
    names what is wrong in a file instead of only refusing it."""
    if isinstance(data, dict) and data.get("schema") == REPORT_SCHEMA:
        check_report(data, source)
    else:
        for row in data if isinstance(data, list) else [data]:
            check_measurement(row, source)


REPORT_ROW = {"measured_s": (int, float), "predicted_s": (int, float), "class": str}
MEASUREMENT = {"median_s": (int, float), "workload": str, "backend": str, "mode": str}


def _shaped(row: object, fields: dict) -> bool:
    """A dict whose ``fields`` hold values of the given types (positive, finite numbers)."""
    if not isinstance(row, dict):
        return False
    for name, kind in fields.items():
        value = row.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):
            return False
        if isinstance(value, (int, float)) and not 0 < value < float("inf"):
            return False
    return True


def _rows_of(data) -> list[dict] | None:
    """The rows of a validation report or of measurement files, or None when ``data`` is neither
    (a field missing, a number that is not one): the page then says so and keeps what it had."""
    if isinstance(data, dict) and data.get("schema") == REPORT_SCHEMA:
        rows = data.get("rows")
        return rows if isinstance(rows, list) and all(_shaped(r, REPORT_ROW) for r in rows) else None
    if isinstance(data, dict):
        data = [data]
    if (
        isinstance(data, list)
        and data
        and all(_shaped(r, MEASUREMENT) and r.get("schema") == "parsim.measurement/1" for r in data)
    ):
        return [
            {**r, "measured_s": r["median_s"], "class": f"{r['workload']} ({r['backend']}, {r['mode']})"}
            for r in data
        ]
    return None


def _comparison(history: list) -> None:
    rows = [
        {**r, "measured_s": r["median_s"], "class": f"{r['workload']} ({r['backend']}, {r['mode']})"}
        for r in history
    ] + st.session_state.get("loaded_rows", [])
    if not rows:
        st.info("measure something (or load a file) to see predicted against measured")
        return
    table = pandas.DataFrame(rows)
    columns = ("class", "params", "measured_s", "predicted_s", "predicted_for", "device_name", "host")
    shown = [c for c in columns if c in table]
    people = table[shown].copy()
    if "params" in people:  # words, not a JSON mapping
        people["params"] = people["params"].map(lambda p: units.assignments(p) if isinstance(p, dict) else p)
    for column in ("measured_s", "predicted_s"):
        if column in people:
            people[column] = pandas.to_numeric(people[column], errors="coerce") * 1e3
    st.dataframe(
        people,
        hide_index=True,
        key="measure_table",
        column_config={
            "measured_s": st.column_config.NumberColumn("measured (ms)", format="%.4g"),
            "predicted_s": st.column_config.NumberColumn("predicted (ms)", format="%.4g"),
            "device_name": "device",
            "predicted_for": "prediction",
        },
    )
    csv_download(table[shown], "measurements", key="measure_csv")
    paired = [r for r in rows if r.get("predicted_s")]
    if not paired:
        return
    from parsim.studies.validate import Point

    points = [
        Point(r.get("workload", ""), {}, "", "", r["measured_s"], 0, 0, r["predicted_s"]) for r in paired
    ]
    summary = summarise(points)
    columns = st.columns(3)
    columns[0].metric(
        "MAPE (>= 100 us)", "-" if summary["mape_large"] is None else f"{summary['mape_large']:.0%}"
    )
    columns[1].metric("largest error", f"{summary['max_error']:.0%}")
    columns[2].metric("rank correlation", f"{summary['spearman']:.2f}")
    figure(plots.validation(paired), "predicted-vs-measured", key="measure_png")


@st.fragment
def _published() -> None:
    """Predicted vs published, at once: the snapshot shipped with parsim (``published_snapshot``)
    is drawn when the page opens; predicting every published run again with the installed model
    takes about a minute, so that only happens when asked (and is then cached)."""
    with st.container(border=True):
        st.subheader("Predicted vs published")
        st.write(
            "What people really measured on GPUs and CPUs (NVIDIA DeepLearningExamples, DeepBench, "
            "bandwidthTest logs, framework and serving-engine benchmarks; each row with its source), "
            "against parsim's prediction of the same run — no GPU needed here. Each point is one "
            "measurement: inside the grey band the prediction meets the class's target."
        )
        data = None if st.session_state.get(PUBLISHED_SHOWN) else _snapshot()
        again = "Predict again with this parsim (about a minute)"
        if data is not None and st.button(again, key="published_show"):
            st.session_state[PUBLISHED_SHOWN] = True
            data = None
        if data is None:
            bar = st.progress(0.0, text="predicting the published runs (about a minute), a class at a time")
            data = published_again(bar)
            bar.empty()
            st.caption(f"predicted now by the installed parsim ({data.get('created_at', '')})")
        else:
            late = published_snapshot.behind(data)
            since = f"; {late} published row{'s' * (late != 1)} changed since, not in it" if late else ""
            made = data.get("created_at", "when it was packaged")
            st.caption(
                f"predictions shipped with parsim, made {made}{since}: shown at once; the button "
                "predicts every run again with the model installed here"
            )
        _published_tables(data)


def _snapshot() -> dict | None:
    """The shipped snapshot, else None (none shipped, or a file that is not one: said in place)."""
    try:
        return cached_snapshot()
    except ParsimError as exc:
        st.warning(f"{exc}; predicting instead")
        return None


def _published_tables(data: dict) -> None:
    """The per-class table, the predicted-vs-published figure and every row of a report."""
    summary = pandas.DataFrame(
        [
            {
                "class": s["what"],
                "rows": s["rows"],
                "MAPE": s["mape"],
                "target": s["target"],
                "met": "yes" if s["met"] else "no",
                "Spearman": s["spearman"],
                "MAPE by percentile": ", ".join(
                    f"{tag} {mape:.0%}" for tag, mape in s.get("by_percentile", {}).items()
                ),
                "MAPE by engine": ", ".join(
                    f"{name} {e['mape']:.0%}" for name, e in s.get("by_engine", {}).items()
                ),
                "worst row": None
                if s["worst"] is None
                else f"{s['worst']['id']} ({s['worst']['error']:+.0%})",
            }
            for s in data["classes"].values()
        ]
    )
    st.dataframe(
        summary,
        hide_index=True,
        key="published_summary",
        column_config={
            "MAPE": st.column_config.NumberColumn(format="percent"),
            "target": st.column_config.NumberColumn(format="percent"),
            "Spearman": st.column_config.NumberColumn(format="%.2f"),
        },
    )
    # The shipped snapshot's figure ships drawn (seconds of drawing for a panel per class); a
    # report predicted here, or a slide in presentation mode, is drawn (once: cached_png).
    shipped = None if layout.presenting() else published_snapshot.shipped_figure(data)
    png = shipped if shipped is not None else cached_png(plots.published, data)
    show_png(png, "predicted-vs-published", key="published_png")
    rows = pandas.DataFrame(data["rows"])
    rows["params"] = rows["params"].map(units.assignments)
    shown = ["class", "id", "workload", "params", "device", "metric", "published", "predicted", "error"]
    st.dataframe(
        rows[[*shown, "source"]],
        hide_index=True,
        key="published_rows",
        column_config={
            "published": st.column_config.NumberColumn(format="%.4g"),
            "predicted": st.column_config.NumberColumn(format="%.4g"),
            "error": st.column_config.NumberColumn(format="percent"),
            "source": st.column_config.TextColumn(width="large"),
        },
    )
    csv_download(rows[[*shown, "refused", "source"]], "published-vs-predicted", key="published_csv")
