"""Compare: one workload on several configurations side by side, and a size sweep with the crossover."""

from __future__ import annotations

import pandas
import streamlit as st

from parsim import plots, units
from parsim.app.cache import cached_predict, sweep_with_progress
from parsim.app.widgets import cached_png, csv_download, processor_picker, show_png
from parsim.errors import ParsimError

COMPARISONS = ["Flynn modes", "CPU vs GPU (PCIe paid)", "pinned vs pageable", "1 vs several streams"]


def render() -> None:
    st.title("Compare")
    kind = st.segmented_control("comparison", COMPARISONS, default=COMPARISONS[0], key="compare_kind")
    kind = kind or COMPARISONS[0]
    columns = st.columns(4)
    with columns[0]:
        cpu = processor_picker("CPU", "compare_cpu", kind="cpu", default="laptop-4c-avx2")
    with columns[1]:
        gpu = processor_picker("GPU", "compare_gpu", kind="gpu", default="v100-pcie")
    n = int(
        columns[2].number_input("elements (n)", min_value=1, max_value=10**10, value=10**7, key="compare_n")
    )
    op = columns[3].selectbox("operation", ["vector_add", "relu", "saxpy", "sigmoid"], key="compare_op")
    try:
        cases = _cases(kind, op, n, cpu, gpu)
        predictions = [cached_predict(*case) for _, case in cases]
    except ParsimError as exc:
        st.error(str(exc))
        return
    labels = [label for label, _ in cases]
    table = pandas.DataFrame(
        {
            "configuration": labels,
            "latency": [units.seconds(p.latency_s) for p in predictions],
            "latency_s": [p.latency_s for p in predictions],
            "speed-up vs first": [predictions[0].latency_s / p.latency_s for p in predictions],
            "bottleneck": [p.bottleneck for p in predictions],
        }
    )
    st.dataframe(table, hide_index=True, key="compare_table")
    csv_download(table, "comparison", key="compare_csv")
    show_png(cached_png(_comparison_figure, kind, op, n, cpu, gpu), "comparison", key="compare_png")
    st.subheader("Size sweep: where does the GPU win?")
    _crossover_sweep(op, cpu, gpu)


def _comparison_figure(kind: str, op: str, n: int, cpu: str, gpu: str):
    cases = _cases(kind, op, n, cpu, gpu)
    labels, predictions = [label for label, _ in cases], [cached_predict(*case) for _, case in cases]
    if kind in ("1 vs several streams", "pinned vs pageable"):
        return plots.timelines(labels, predictions, kind)
    return plots.bars(labels, predictions, f"{op}, n = {units.si(n)}")


def _sweep_figure(series: tuple, crossing: tuple, op: str):
    lines = {label: (list(xs), list(ys)) for label, xs, ys in series}
    return plots.sweep_lines(
        lines,
        "elements (n)",
        crossovers=[(v, w, "") for v, w, _ in crossing],
        title=f"{op}: CPU vs GPU with PCIe",
    )


def _cases(kind: str, op: str, n: int, cpu: str, gpu: str) -> list[tuple[str, tuple]]:
    params = (("n", n),)
    if kind == "Flynn modes":
        return [
            (f"{mode} on the CPU", (op, params, cpu, None, None, mode))
            for mode in ("sisd", "simd", "mimd", "mimd+simd")
        ] + [("simt on the GPU", (op, params, gpu, None, None, "simt"))]
    if kind == "CPU vs GPU (PCIe paid)":
        return [
            ("CPU, all cores", (op, params, cpu, None, None, None)),
            ("GPU, data resident", (op, params, gpu, None, None, None)),
            ("GPU, H2D + op + D2H", ("offload", (("n", n), ("op", op)), gpu, None, None, None)),
        ]
    if kind == "pinned vs pageable":
        return [
            (f"{label} H2D", ("copy", (("n", n), ("pinned", pinned)), gpu, None, None, None))
            for label, pinned in (("pinned", True), ("pageable", False))
        ]
    return [
        (
            f"{s} stream{'s' if s > 1 else ''}",
            ("offload", (("n", n), ("op", op), ("streams", s)), gpu, None, None, None),
        )
        for s in (1, 2, 4, 8)
    ]


def _crossover_sweep(op: str, cpu: str, gpu: str) -> None:
    bar = st.progress(0.0, text="sweeping sizes")
    try:
        frames = []
        for label, base in (
            ("CPU, all cores", (("device", cpu), ("workload", op))),
            ("GPU with PCIe", (("device", gpu), ("params", (("op", op),)), ("workload", "offload"))),
        ):
            sizes = [round(10 ** (k / 4)) for k in range(12, 37)]
            frame = sweep_with_progress(base, "workload.n", sizes, bar)
            frames.append(frame.assign(series=label))
    except ParsimError as exc:
        st.error(str(exc))
        return
    finally:
        bar.empty()
    data = pandas.concat(frames, ignore_index=True)
    data = data[data["error"].fillna("") == ""]
    series = {
        label: (part["workload.n"].tolist(), part["latency_s"].tolist())
        for label, part in data.sort_values("workload.n").groupby("series")
    }
    crossing = plots.crossovers(dict(sorted(series.items())))
    if crossing:
        st.success(f"the GPU wins above {units.si(float(crossing[0][0]))} elements, PCIe included")
    else:
        st.warning(
            "the GPU never wins here once PCIe is paid: each byte crosses the link for a single operation"
        )
    show_png(
        cached_png(
            _sweep_figure, tuple((k, tuple(x), tuple(y)) for k, (x, y) in series.items()), tuple(crossing), op
        ),
        "crossover",
        key="compare_sweep_png",
    )
    csv_download(data, "crossover", key="compare_sweep_csv")
