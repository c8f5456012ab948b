"""Scale out: data-parallel training over 1..8 GPUs, the latency-throughput trade-off of batching,
and past one node: a cluster's nodes, the (tp, pp, dp) explorer and all-reduce bandwidth.

The first two tabs are lessons (``data_parallel_scaling`` and ``batching_latency_vs_throughput``) moved to
the model, GPU and host you pick with ``scenarios.retarget``; a ring all-reduce case takes the
chosen GPU's own NVLink when it has one (else peers talk over PCIe), and the case labels say which.
The cluster tabs live in ``scale_cluster``, ``scale_splits`` and ``scale_allreduce``; serving under
load (requests arriving over time) in ``scale_load``.
"""

from __future__ import annotations

import pandas
import streamlit as st

from parsim import plots
from parsim.app import layout, scale_allreduce, scale_cluster, scale_load, scale_splits
from parsim.app.cache import as_changes, scenario_in_pieces, scenario_path
from parsim.app.memory import memory_bar
from parsim.app.widgets import (
    cached_png,
    csv_download,
    model_picker,
    processor_picker,
    show_png,
    trace_download,
)
from parsim.base.budget import APP
from parsim.base.errors import ParsimError
from parsim.report import chrome_trace
from parsim.workloads.registry import model_names

GPU_COUNTS = (1, 2, 4, 8)
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128)


TRAINING = "Data-parallel training"
BATCHING = "Batching: latency vs throughput"
TABS = [
    TRAINING,
    BATCHING,
    "Across nodes",
    "(tp, pp, dp) explorer",
    "All-reduce bandwidth",
    "LLM serving under load",
]
# the cluster tabs: (module, controls' heading); each module has controls() and view(settings)
CLUSTER_TABS = {
    2: (scale_cluster, "Data-parallel training across nodes"),
    3: (scale_splits, "(tp, pp, dp) explorer"),
    4: (scale_allreduce, "All-reduce bus bandwidth"),
    5: (scale_load, "LLM serving under load"),
}


def render() -> None:
    st.title("Scale out")
    # Only the open tab is computed (the tab is in the URL, so Streamlit tracks which one is open).
    tabs = st.tabs(TABS, key="scale_tab", bind="query-params")
    training, serving = tabs[:2]
    cluster = next((index for index in CLUSTER_TABS if tabs[index].open), None)
    with layout.controls():
        if cluster is not None:
            module, heading = CLUSTER_TABS[cluster]
            st.subheader(heading)
            settings = module.controls()
        elif serving.open:
            st.subheader("Batching")
            model = _model("serve_model", "resnet50")
            gpu = processor_picker("GPU", "serve_gpu", kind="gpu", default="t4")
        else:
            st.subheader("Data-parallel training")
            choices = _training_controls()
    if cluster is not None:
        with tabs[cluster]:
            module.view(settings)
    elif serving.open:
        with serving:
            if gpu is not None:
                _serving(model, gpu)
    else:
        with training:
            if choices is not None:
                _training(*choices)


def _model(key: str, default: str) -> str:
    names = model_names()
    return model_picker("model", names, default, key)


def _training_controls() -> tuple | None:
    model = _model("scale_model", "resnet50")
    scaling = st.radio(
        "scaling",
        ["strong", "weak"],
        horizontal=True,
        key="scale_scaling",
        help="strong: one global batch split over the GPUs; weak: this batch on every GPU",
        bind="query-params",
    )
    label = "global batch" if scaling == "strong" else "batch per GPU"
    batch = int(
        st.number_input(label, min_value=8, max_value=4096, value=256, key="scale_batch", bind="query-params")
    )
    gpu = processor_picker("GPU", "scale_gpu", kind="gpu", default="a100-80gb")
    host = processor_picker("host", "scale_host", kind="cpu", default="xeon-8480")
    most = st.select_slider("up to G GPUs", list(GPU_COUNTS), value=8, key="scale_gpus", bind="query-params")
    if gpu is None or host is None:
        return None
    return model, scaling, batch, gpu, host, most


def _training(model: str, scaling: str, batch: int, gpu: str, host: str, most: int) -> None:
    counts = tuple(g for g in GPU_COUNTS if g <= most)
    changes = as_changes(
        {"gpu": gpu, "host": host, "params": {"model": model, "batch": batch, "scaling": scaling}}
    )
    result = _run("data_parallel_scaling", changes, counts)
    if result is None:
        return
    png = cached_png(_figure, "data_parallel_scaling", changes, counts)
    show_png(png, "scaling", key="scale_png")
    table = pandas.DataFrame(
        [
            {
                "case": r.label,
                "gpus": r.value,
                "step_ms": r.prediction.latency_s * 1e3,
                "samples_per_s": r.prediction.metrics["samples_per_s"],
                "speedup": r.prediction.metrics["speedup"],
                "efficiency": r.prediction.metrics.get("efficiency"),
            }
            for r in result.results
        ]
    )
    st.dataframe(table, hide_index=True, key="scale_table", column_config=STEP_COLUMNS)
    csv_download(table, "scaling", key="scale_csv")
    _step(model, changes, counts, tuple(result.labels))


@st.fragment
def _step(model: str, changes: tuple, counts: tuple, labels: tuple) -> None:
    """One step's timeline for the chosen case and G (a fragment: its slider reruns only this)."""
    st.subheader("One training step, GPU by GPU")
    case = st.segmented_control(
        "case", labels, default=labels[-1], key="scale_step_case", bind="query-params"
    )
    # two GPUs first: a timeline a class can read row by row before the slider adds more
    shown = st.select_slider(
        "G", counts, value=min(2, counts[-1]), key="scale_step_gpus", bind="query-params"
    )
    title = f"{case or labels[-1]}, G = {shown}: one step of {model}"
    png = cached_png(_step_figure, changes, counts, case or labels[-1], shown, title)
    show_png(png, "step", key="scale_step_png")
    trace_download(
        _step_trace, changes, counts, case or labels[-1], shown, name="step", key="scale_step_trace"
    )
    memory_bar(_step_of(changes, counts, case or labels[-1], shown).memory, "scale_step_memory")


STEP_COLUMNS = {
    "step_ms": st.column_config.NumberColumn("step time", format="%.4g ms"),
    "samples_per_s": st.column_config.NumberColumn("samples/s", format="%.0f"),
    "speedup": st.column_config.NumberColumn("speed-up", format="%.2fx"),
    "efficiency": st.column_config.NumberColumn(format="percent"),
}


def _step_of(changes: tuple, counts: tuple, label: str, gpus: int):
    """The prediction of case ``label`` at ``gpus`` GPUs (the lesson's run is cached)."""
    result = scenario_in_pieces(
        str(scenario_path("data_parallel_scaling")), changes, counts, parts=len(counts)
    )
    return next(r for r in result.results if r.label == label and r.value == gpus).prediction


def _step_trace(changes: tuple, counts: tuple, label: str, gpus: int):
    return chrome_trace.pending_cases([("", _step_of(changes, counts, label, gpus))], budget=APP)


def _step_figure(changes: tuple, counts: tuple, label: str, gpus: int, title: str):
    return plots.timeline(_step_of(changes, counts, label, gpus), title)


def _serving(model: str, gpu: str) -> None:
    changes = as_changes({"gpu": gpu, "params": {"model": model}})
    result = _run("batching_latency_vs_throughput", changes, BATCHES)
    if result is None:
        return
    show_png(
        cached_png(_figure, "batching_latency_vs_throughput", changes, BATCHES), "batching", key="serve_png"
    )
    table = pandas.DataFrame(
        [
            {
                "case": r.label,
                "batch": r.value,
                "latency_ms": r.prediction.latency_s * 1e3,
                "samples_per_s": r.prediction.metrics["samples_per_s"],
            }
            for r in result.results
        ]
    )
    st.dataframe(
        table,
        hide_index=True,
        key="serve_table",
        column_config={
            "latency_ms": st.column_config.NumberColumn("latency", format="%.4g ms"),
            "samples_per_s": st.column_config.NumberColumn("samples/s", format="%.0f"),
        },
    )
    csv_download(table, "batching", key="serve_csv")


def _run(stem: str, changes: tuple, values: tuple):
    """The lesson at ``values`` with a progress bar, or None after showing why it failed."""
    bar = st.progress(0.0, text="predicting")
    try:
        return scenario_in_pieces(str(scenario_path(stem)), changes, values, bar, parts=len(values))
    except (OSError, ParsimError) as exc:
        st.error(str(exc))
        return None
    finally:
        bar.empty()


def _figure(stem: str, changes: tuple, values: tuple):
    result = scenario_in_pieces(str(scenario_path(stem)), changes, values, parts=len(values))
    return plots.scenario(result)
