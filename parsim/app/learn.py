"""Learn: every scenario as a lesson — its text, its figure, its table, and "Measure it here".

The chosen lesson is in the URL (``?lesson=<stem>``), so a teacher's slide can link each lesson.
The measurements run in a fragment (only that part of the page reruns while they are taken) and
are kept per lesson in the session, beside their prediction for this machine (see
``parsim.app.measure_here``).
"""

from __future__ import annotations

import pandas
import streamlit as st

from parsim import plots
from parsim.app import layout, measure_here, teach
from parsim.app.cache import cached_scenario, scenario_folder
from parsim.app.widgets import cached_png, csv_download, figure, show_png, trace_download
from parsim.base.budget import APP
from parsim.base.errors import ParsimError
from parsim.measure.backends import gpu_available
from parsim.report import chrome_trace
from parsim.studies.scenarios import lesson_text, load_scenario, resolve, scenario_paths

# A course order: Flynn's taxonomy first, then data movement, then deep learning (clusters with
# data parallelism; pipelines after the language models).
ORDER = [
    "flynn_vector_add",
    "cpu_latency_vs_gpu_throughput",
    "conv3x3",
    "matmul_roofline",
    "systolic_vs_simt",
    "gpu_offload_crossover",
    "pcie_pinned_vs_pageable",
    "streams_overlap",
    "mlp_training",
    "mlp_sgd_vs_adam",
    "software_stack",
    "cpu_vs_gpu_training",
    "data_parallel_scaling",
    "cluster_amdahl_gustafson",
    "cluster_allreduce_overlap",
    "cluster_ring_vs_tree",
    "batching_latency_vs_throughput",
    "flash_attention",
    "gpt2_training_cpu_vs_gpu",
    "llm_prefill_vs_decode",
    "llm_batching_decode",
    "llm_kv_cache",
    "llm_70b_gpus",
    "llm_load_queueing_knee",
    "llm_load_continuous_batching",
    "llm_load_chunked_prefill",
    "cluster_pipeline_bubble",
]
KEY = "learn_lesson"
MEASURED = "learn_measured"  # session state: {stem: [rows]}


def render() -> None:
    st.title("Learn")
    paths = sorted(
        scenario_paths(scenario_folder()),
        key=lambda p: (ORDER.index(p.stem) if p.stem in ORDER else len(ORDER), p.stem),
    )
    if not paths:
        st.error(f"no lessons found in {scenario_folder()}")
        return
    titles = {}
    for path in paths:
        try:
            titles[path.stem] = load_scenario(path).title
        except ParsimError as exc:  # one broken lesson file must not hide the others
            st.warning(f"skipped {exc}")
    if not titles:
        return
    asked = st.query_params.get("lesson")
    if KEY not in st.session_state and asked in titles:  # a bookmark opens its lesson
        st.session_state[KEY] = titles[asked]
    with layout.controls():  # the picker shows titles; the URL carries the short stem
        title = st.selectbox("lesson", list(titles.values()), key=KEY)
    stem = next(s for s, t in titles.items() if t == title)
    st.query_params["lesson"] = stem
    path = next(p for p in paths if p.stem == stem)
    stamp = path.stat().st_mtime  # an edited lesson file is read again
    try:
        result = cached_scenario(str(path), stamp)
    except ParsimError as exc:
        st.error(str(exc))
        return
    st.markdown(f"## {result.scenario.title}")
    st.markdown(lesson_text(result.scenario))
    show_png(cached_png(_lesson_figure, str(path), stamp), stem, key="learn_png")
    if result.scenario.plot == "timeline" and result.scenario.sweep is None:  # the figure is timelines
        trace_download(_lesson_trace, str(path), stamp, name=stem, key="learn_trace")
    teach.panel(stem)
    sweep = result.scenario.sweep
    table = pandas.DataFrame(
        [
            {
                "case": r.label,
                **({sweep.label: r.value} if sweep else {}),
                "latency": r.prediction.latency_s * 1e3,
                "bottleneck": r.prediction.bottleneck,
                "share": r.prediction.breakdown[r.prediction.bottleneck] / r.prediction.latency_s
                if r.prediction.latency_s
                else 0.0,
            }
            for r in result.results
        ]
    )
    st.dataframe(
        table,
        hide_index=True,
        key="learn_table",
        column_config={
            "latency": st.column_config.NumberColumn("latency (ms)", format="%.4g"),
            "share": st.column_config.NumberColumn("bottleneck's share", format="percent"),
        },
    )
    csv_download(table.rename(columns={"latency": "latency_ms"}), stem, key="learn_csv")
    _measure_here(stem, result.scenario)


def warm() -> None:
    """Run the lessons whose cases span a cluster ahead, and draw their figures
    (``parsim.app.warmup``): they are the slowest to open (thousands of GPUs' steps each)."""
    for path in scenario_paths(scenario_folder()):
        try:  # a broken lesson file is skipped here as the page skips it (it says why when opened)
            scenario = load_scenario(path)
            if any(resolve(scenario, case).cluster is not None for case in scenario.cases):
                stamp = path.stat().st_mtime
                cached_scenario(str(path), stamp)
                cached_png(_lesson_figure, str(path), stamp)
        except ParsimError:
            continue


def _lesson_trace(path: str, stamp: float):
    result = cached_scenario(path, stamp)
    cases = [(r.label, r.prediction) for r in result.results]
    return chrome_trace.pending_cases(cases, result.scenario.title, budget=APP)


def _lesson_figure(path: str, stamp: float):
    return plots.scenario(cached_scenario(path, stamp))


@st.fragment
def _measure_here(stem: str, scenario) -> None:
    """Measure the cases this machine can run, beside their prediction for this machine."""
    spec = measure_here.machine()
    gpu, why = gpu_available()
    planned, skipped = measure_here.plan(scenario, spec, gpu)
    if not planned:  # offered only where it runs: say why not, and offer nothing to press
        st.subheader("Measured here: not for this lesson")
        st.info(not_measured_sentence(skipped, gpu, why), icon=":material/info:")
        with st.expander("why, case by case"):
            for line in skipped:
                st.caption(line)
        return
    st.subheader("Measure it here")
    if not gpu:
        st.caption(f"No GPU here ({why}): GPU cases run on this CPU where NumPy can do their work.")
    store = st.session_state.setdefault(MEASURED, {})
    if spec is None:
        st.warning(
            "This machine is not calibrated: CPU measurements will have no prediction beside them "
            "(a GPU's are predicted for the GPU present). Calibrate first (it is saved, and the "
            "Measure page shows it).",
            icon=":material/info:",
        )
        if measure_here.calibrate_button(key="learn_calibrate"):
            spec = measure_here.machine()
    else:
        st.caption(
            f"Predictions beside the measurements are for this machine ({spec.name}, from "
            f"`{measure_here.CALIBRATION}`), whatever hardware the lesson's case names; a GPU case's "
            "for the GPU present, named in the table."
        )
    for line in skipped:
        st.caption(f"not measured: {line}")
    if st.button(f"Measure it here ({len(planned)} runs)", key="learn_measure", type="primary"):
        rows = []
        bar = st.progress(0.0, text="measuring on this machine")
        for index, item in enumerate(planned):
            bar.progress(index / len(planned), text=f"measuring {item.label}")
            done = index / len(planned)  # a wait for another measurement is said in the bar

            def waiting(line: str, done: float = done) -> None:
                bar.progress(done, text=line)

            rows.append(measure_here.measure_one(item, spec, on_wait=waiting))
        bar.empty()
        store[stem] = rows
    if stem in store:
        _show_measured(stem, store[stem], scenario)


def not_measured_sentence(skipped: list[str], gpu: bool, why: str) -> str:
    """Why a lesson offers no measurement here, from its cases' reasons (``measure_here.plan``)."""
    reasons = " ".join(skipped)
    if "runs on a cluster" in reasons:
        because = "its cases run on a cluster of many GPUs, which one machine cannot be"
    elif "predicted only" in reasons or "framework" in reasons:
        because = (
            "parsim predicts its workloads (language models, networks, collectives) but has no "
            "program to time them: it measures element-wise ops, reductions, matrix products, "
            "convolutions, the MLP step and copies"
        )
    elif not gpu:
        because = f"its cases need a GPU, and there is none here ({why})"
    else:
        because = "none of its cases can run on this machine"
    return f"Nothing in this lesson can be measured on this machine: {because}."


def _show_measured(stem: str, rows: list[dict], scenario) -> None:
    frame = pandas.DataFrame(rows)
    for column in ("measured_s", "predicted_s", "error", "value", "note"):
        if column not in frame:
            frame[column] = None
    sweep = scenario.sweep
    shown = frame.rename(columns={"value": sweep.label}) if sweep else frame.drop(columns="value")
    milliseconds = {c: shown[c].astype(float) * 1e3 for c in ("measured_s", "predicted_s")}
    st.dataframe(
        shown.assign(**milliseconds),
        hide_index=True,
        key="learn_measured_table",
        column_config={
            "measured_s": st.column_config.NumberColumn("measured (ms)", format="%.4g"),
            "predicted_s": st.column_config.NumberColumn("predicted here (ms)", format="%.4g"),
            "error": st.column_config.NumberColumn("error", format="percent"),
        },
    )
    csv_download(shown, f"{stem}-measured", key="learn_measured_csv")
    paired = frame.dropna(subset=["measured_s"])
    if not paired.empty:
        drawn = plots.measured(paired.to_dict("records"), sweep.label if sweep else None)
        figure(drawn, f"{stem}-measured", key="learn_measured_png")
