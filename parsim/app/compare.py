"""Compare: the shipped lessons on the hardware, op and size you pick, and the size sweep with its crossover.

Every comparison is a lesson (``parsim/lessons/``) moved to your choices with
``scenarios.retarget``; this page only draws what the scenario run returns.
"""

from __future__ import annotations

import pandas
import streamlit as st

from parsim import plots
from parsim.app import compare_llm, layout
from parsim.app.cache import as_changes, cached_scenario, scenario_in_pieces, scenario_path
from parsim.app.widgets import cached_png, csv_download, processor_picker, show_png, trace_download
from parsim.base import units
from parsim.base.budget import APP
from parsim.base.errors import ParsimError
from parsim.report import chrome_trace
from parsim.workloads.registry import workload_names

# comparison -> (scenario file, figure)
COMPARISONS = {
    "Flynn modes": ("flynn_vector_add", "bars"),
    "CPU vs GPU (PCIe paid)": ("gpu_offload_crossover", "timelines"),  # one shared time axis
    "pinned vs pageable": ("pcie_pinned_vs_pageable", "timelines"),
    "1 vs several streams": ("streams_overlap", "timelines"),
}
CROSSOVER = "gpu_offload_crossover"
TABLE_COLUMNS = {
    "latency_ms": st.column_config.NumberColumn("latency", format="%.4g ms"),
    "speed-up vs first": st.column_config.NumberColumn(format="%.2fx"),
}
SIZES = tuple(round(10 ** (k / 4)) for k in range(12, 37))  # 1e3 .. 1e9, four points a decade


def render() -> None:
    st.title("Compare")
    with layout.controls():
        kind = st.segmented_control(
            "comparison",
            [*COMPARISONS, *compare_llm.COMPARISONS],
            default="Flynn modes",
            key="compare_kind",
            bind="query-params",
        )
        if kind in compare_llm.COMPARISONS:
            model, llm_gpu = compare_llm.controls(kind)
    if kind in compare_llm.COMPARISONS:
        if llm_gpu is not None:
            compare_llm.render(kind, model, llm_gpu)
        return
    with layout.controls():
        cpu = processor_picker("CPU", "compare_cpu", kind="cpu", default="laptop-4c-avx2")
        gpu = processor_picker("GPU", "compare_gpu", kind="gpu", default="v100-pcie")
        n = int(
            st.number_input(
                "elements (n)",
                min_value=1,
                max_value=10**10,
                value=10**7,
                key="compare_n",
                bind="query-params",
            )
        )
        ops = workload_names("elementwise")
        op = st.selectbox("operation", ops, key="compare_op", bind="query-params")
    if cpu is None or gpu is None:
        return
    stem, figure = COMPARISONS[kind or "Flynn modes"]
    # A swept lesson is compared at this n (a lesson without a sweep ignores 'values').
    changes = as_changes({**_choices(cpu, gpu, op, ops), "params": {"n": n, "op": op}, "values": [n]})
    try:
        path = scenario_path(stem)
        args = (str(path), path.stat().st_mtime, changes)
        result = cached_scenario(*args)
    except (OSError, ParsimError) as exc:
        st.error(str(exc))
        return
    predictions = [r.prediction for r in result.results]
    table = pandas.DataFrame(
        {
            "configuration": [r.label for r in result.results],
            "latency_ms": [p.latency_s * 1e3 for p in predictions],
            "speed-up vs first": [predictions[0].latency_s / p.latency_s for p in predictions],
            "bottleneck": [p.bottleneck for p in predictions],
        }
    )
    title = f"{result.scenario.title} ({op}, n = {units.si(n)})"
    show_png(cached_png(_comparison_figure, *args, figure, title), "comparison", key="compare_png")
    if figure == "timelines":
        trace_download(_comparison_trace, *args, title, name="comparison", key="compare_trace")
    st.dataframe(table, hide_index=True, key="compare_table", column_config=TABLE_COLUMNS)
    csv_download(table, "comparison", key="compare_csv")
    st.subheader("Size sweep: where does the GPU win?")
    _crossover_sweep(as_changes({**_choices(cpu, gpu, op, ops), "params": {"op": op}}))


def _choices(cpu: str, gpu: str, op: str, ops: list[str]) -> dict:
    """The page's hardware and op as ``retarget`` arguments (the op replaces every elementwise case's)."""
    return {"cpu": cpu, "gpu": gpu, "workloads": dict.fromkeys(ops, op)}


def _comparison_figure(path: str, stamp: float, changes: tuple, figure: str, title: str):
    result = cached_scenario(path, stamp, changes)
    draw = plots.timelines if figure == "timelines" else plots.bars
    return draw([r.label for r in result.results], [r.prediction for r in result.results], title)


def _comparison_trace(path: str, stamp: float, changes: tuple, title: str):
    result = cached_scenario(path, stamp, changes)
    return chrome_trace.pending_cases([(r.label, r.prediction) for r in result.results], title, budget=APP)


def _sweep_figure(path: str, changes: tuple):
    return plots.scenario(scenario_in_pieces(path, changes, SIZES))


def _crossover_sweep(changes: tuple) -> None:
    path = str(scenario_path(CROSSOVER))
    bar = st.progress(0.0, text="sweeping sizes")
    try:
        result = scenario_in_pieces(path, changes, SIZES, bar)
    except (OSError, ParsimError) as exc:
        st.error(str(exc))
        return
    finally:
        bar.empty()
    baseline = result.labels[0]
    for value, winner, loser in result.crossovers():
        notice = st.success if winner != baseline else st.warning
        notice(f"{winner} beats {loser} from n = {units.si(float(value))} elements")
    for label in result.never_faster():
        st.warning(f"{label} is never faster than {baseline} at these sizes")
    show_png(cached_png(_sweep_figure, path, changes), "crossover", key="compare_sweep_png")
    rows = pandas.DataFrame(
        [
            {
                "case": r.label,
                "n": r.value,
                "latency_s": r.prediction.latency_s,
                "bottleneck": r.prediction.bottleneck,
            }
            for r in result.results
        ]
    )
    csv_download(rows, "crossover", key="compare_sweep_csv")
