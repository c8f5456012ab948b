"""Scale out: data-parallel training over 1..8 GPUs, and the latency-throughput trade-off of batching.

Both tabs are lessons (``data_parallel_scaling`` and ``batching_latency_vs_throughput``) moved to
the model, GPU and host you pick with ``scenarios.retarget``; a ring all-reduce case takes the
chosen GPU's own NVLink when it has one (else peers talk over PCIe), and the case labels say which.
"""

from __future__ import annotations

import pandas
import streamlit as st

from parsim import plots
from parsim.app.cache import as_changes, scenario_in_pieces, scenario_path
from parsim.app.widgets import cached_png, csv_download, processor_picker, show_png
from parsim.errors import ParsimError
from parsim.workloads.registry import model_names

GPU_COUNTS = (1, 2, 4, 8)
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128)


def render() -> None:
    st.title("Scale out")
    training, serving = st.tabs(["Data-parallel training", "Batching: latency vs throughput"])
    with training:
        _training()
    with serving:
        _serving()


def _model(key: str, default: str) -> str:
    names = model_names()
    return st.selectbox("model", names, index=names.index(default), key=key)


def _training() -> None:
    left, right = st.columns([1, 2], gap="large")
    with left:
        model = _model("scale_model", "resnet50")
        scaling = st.radio(
            "scaling",
            ["strong", "weak"],
            horizontal=True,
            key="scale_scaling",
            help="strong: one global batch split over the GPUs; weak: this batch on every GPU",
        )
        label = "global batch" if scaling == "strong" else "batch per GPU"
        batch = int(st.number_input(label, min_value=8, max_value=4096, value=256, key="scale_batch"))
        gpu = processor_picker("GPU", "scale_gpu", kind="gpu", default="a100-80gb")
        host = processor_picker("host", "scale_host", kind="cpu", default="xeon-8480")
        most = st.select_slider("up to G GPUs", list(GPU_COUNTS), value=8, key="scale_gpus")
    counts = tuple(g for g in GPU_COUNTS if g <= most)
    changes = as_changes(
        {"gpu": gpu, "host": host, "params": {"model": model, "batch": batch, "scaling": scaling}}
    )
    result = _run("data_parallel_scaling", changes, counts)
    if result is None:
        return
    rows = [
        {"case": r.label, "gpus": r.value, "step_s": r.prediction.latency_s, **r.prediction.metrics}
        for r in result.results
    ]
    with right:
        png = cached_png(_figure, "data_parallel_scaling", changes, counts)
        show_png(png, "scaling", key="scale_png")
    table = pandas.DataFrame(rows)
    st.dataframe(table, hide_index=True, key="scale_table")
    csv_download(table, "scaling", key="scale_csv")


def _serving() -> None:
    model = _model("serve_model", "resnet50")
    gpu = processor_picker("GPU", "serve_gpu", kind="gpu", default="t4")
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
                "latency_s": r.prediction.latency_s,
                "samples_per_s": r.prediction.metrics["samples_per_s"],
            }
            for r in result.results
        ]
    )
    st.dataframe(table, hide_index=True, key="serve_table")
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
