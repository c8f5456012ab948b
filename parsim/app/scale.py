"""Scale out: data-parallel training over 1..8 GPUs, and the latency-throughput trade-off of batching."""

from __future__ import annotations

import pandas
import streamlit as st

from parsim import plots
from parsim.app.cache import cached_predict
from parsim.app.widgets import cached_png, csv_download, label_of, processor_picker, show_png
from parsim.errors import ParsimError

MODELS = ["resnet50", "resnet18", "resnet56", "vgg16", "alexnet", "mlp"]


def render() -> None:
    st.title("Scale out")
    training, serving = st.tabs(["Data-parallel training", "Batching: latency vs throughput"])
    with training:
        _training()
    with serving:
        _serving()


def _training() -> None:
    left, right = st.columns([1, 2], gap="large")
    with left:
        model = st.selectbox("model", MODELS, key="scale_model")
        scaling = st.radio(
            "scaling",
            ["strong", "weak"],
            horizontal=True,
            key="scale_scaling",
            help="strong: one global batch split over the GPUs; weak: this batch on every GPU",
        )
        label = "global batch" if scaling == "strong" else "batch per GPU"
        batch = int(st.number_input(label, min_value=8, max_value=4096, value=256, key="scale_batch"))
        device = processor_picker("GPU", "scale_gpu", kind="gpu", default="a100-80gb")
        host = processor_picker("host", "scale_host", kind="cpu", default="xeon-8480")
        most = st.select_slider("up to G GPUs", [1, 2, 4, 8], value=8, key="scale_gpus")
    counts = [g for g in (1, 2, 4, 8) if g <= most]
    rows, series = [], {}
    bar = st.progress(0.0, text="predicting")
    try:
        for index, (sync, link) in enumerate((("host", None), ("ring", "nvlink3"))):
            label = "host averaging (PCIe)" if sync == "host" else "ring all-reduce (NVLink)"
            points = []
            for g in counts:
                params = (
                    ("batch", batch),
                    ("gpus", g),
                    ("model", model),
                    ("scaling", scaling),
                    ("sync", sync),
                )
                p = cached_predict("data_parallel", params, device, host, link, None)
                points.append(p)
                rows.append({"sync": label, "gpus": g, "step_s": p.latency_s, **p.metrics})
                bar.progress((index * len(counts) + len(points)) / (2 * len(counts)))
            series[label] = points
    except ParsimError as exc:
        st.error(str(exc))
        return
    finally:
        bar.empty()
    table = pandas.DataFrame(rows)
    with right:
        speedups = tuple(tuple(p.metrics["speedup"] for p in points) for points in series.values())
        serial = tuple(points[-1].metrics["serial_fraction"] for points in series.values())
        png = cached_png(
            _scaling_figure,
            tuple(series),
            tuple(counts),
            speedups,
            serial,
            f"{model}, batch {batch} ({scaling} scaling)",
        )
        show_png(png, "scaling", key="scale_png")
    st.dataframe(table, hide_index=True, key="scale_table")
    csv_download(table, "scaling", key="scale_csv")


def _scaling_figure(labels, counts, speedups, serial, title):
    return plots.scaling(
        list(labels), [list(counts)] * len(labels), [list(s) for s in speedups], list(serial), title
    )


def _tradeoff_figure(labels, latencies, rates, batches, title):
    return plots.tradeoff(
        list(labels),
        [list(x) for x in latencies],
        [list(x) for x in rates],
        [list(batches)] * len(labels),
        title,
    )


def _serving() -> None:
    model = st.selectbox("model", MODELS, key="serve_model")
    device = processor_picker("GPU", "serve_gpu", kind="gpu", default="t4")
    dtypes = st.multiselect(
        "precision", ["float32", "float16"], default=["float32", "float16"], key="serve_dtypes"
    )
    batches = [1, 2, 4, 8, 16, 32, 64, 128]
    latencies, rates, rows = [], [], []
    try:
        for dtype in dtypes:
            points = [
                cached_predict(
                    "serve", (("batch", b), ("dtype", dtype), ("model", model)), device, None, None, None
                )
                for b in batches
            ]
            latencies.append([p.latency_s for p in points])
            rates.append([p.metrics["samples_per_s"] for p in points])
            rows += [
                {
                    "precision": dtype,
                    "batch": b,
                    "latency_s": p.latency_s,
                    "samples_per_s": p.metrics["samples_per_s"],
                }
                for b, p in zip(batches, points, strict=True)
            ]
    except ParsimError as exc:
        st.error(str(exc))
        return
    if not dtypes:
        st.info("choose at least one precision")
        return
    png = cached_png(
        _tradeoff_figure,
        tuple(dtypes),
        tuple(map(tuple, latencies)),
        tuple(map(tuple, rates)),
        tuple(batches),
        f"{model} on {label_of(device)}",
    )
    show_png(png, "batching", key="serve_png")
    table = pandas.DataFrame(rows)
    st.dataframe(table, hide_index=True, key="serve_table")
    csv_download(table, "batching", key="serve_csv")
