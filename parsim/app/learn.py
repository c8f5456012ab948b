"""Learn: every scenario as a lesson — its text, its figure, its table, and a live measurement."""

from __future__ import annotations

import pandas
import streamlit as st

from parsim import plots, units
from parsim.app.cache import cached_scenario
from parsim.app.widgets import cached_png, csv_download, show_png
from parsim.errors import ParsimError
from parsim.hardware import registry
from parsim.scenarios import load_scenario, resolve, scenario_paths

MEASURABLE = {"vector_add", "saxpy", "relu", "sigmoid", "reduce_sum", "matmul"}
# A course order: Flynn's taxonomy first, then data movement, then deep learning.
ORDER = [
    "flynn_vector_add",
    "conv3x3",
    "matmul_roofline",
    "gpu_offload_crossover",
    "pcie_pinned_vs_pageable",
    "streams_overlap",
    "mlp_training",
    "cpu_vs_gpu_training",
    "data_parallel_scaling",
    "batching_latency_vs_throughput",
]


def scenario_folder():
    from pathlib import Path

    here = Path.cwd() / "scenarios"
    return here if here.is_dir() else Path(__file__).resolve().parents[2] / "scenarios"


def render() -> None:
    st.title("Learn")
    paths = sorted(
        scenario_paths(scenario_folder()),
        key=lambda p: (ORDER.index(p.stem) if p.stem in ORDER else len(ORDER), p.stem),
    )
    if not paths:
        st.error("no scenarios/ folder found next to the app")
        return
    titles = {}
    for path in paths:
        try:
            titles[load_scenario(path).title] = path
        except ParsimError as exc:  # one broken lesson file must not hide the others
            st.warning(f"skipped {exc}")
    if not titles:
        return
    title = st.selectbox("lesson", list(titles), key="learn_lesson")
    path = titles[title]
    stamp = path.stat().st_mtime  # an edited lesson file is read again
    try:
        result = cached_scenario(str(path), stamp)
    except ParsimError as exc:
        st.error(str(exc))
        return
    st.markdown(f"## {result.scenario.title}")
    st.markdown(result.scenario.lesson)
    show_png(cached_png(_lesson_figure, str(path), stamp), path.stem, key="learn_png")
    table = pandas.DataFrame(
        [
            {
                "case": r.label,
                "value": r.value,
                "latency": units.seconds(r.prediction.latency_s),
                "latency_s": r.prediction.latency_s,
                "bottleneck": r.prediction.bottleneck,
            }
            for r in result.results
        ]
    )
    st.dataframe(table, hide_index=True, key="learn_table")
    csv_download(table, path.stem, key="learn_csv")
    _measure_here(result)


def _lesson_figure(path: str, stamp: float):
    return plots.scenario(cached_scenario(path, stamp))


def _measure_here(result) -> None:
    """Measure the cases this machine can run (CPU cases of measurable workloads)."""
    runnable = []
    for raw in result.scenario.cases:
        case = resolve(result.scenario, raw)
        try:
            on_cpu = not registry.processor(case.device).is_gpu
        except ParsimError:
            on_cpu = False
        if on_cpu and case.workload in MEASURABLE and result.scenario.sweep is None:
            runnable.append(case)
    if not runnable:
        st.caption(
            "the cases of this lesson run on GPUs or are not single kernels: nothing to measure on this CPU"
        )
        return
    if not st.button("Measure it here", key="learn_measure", type="primary"):
        return
    from parsim.measure import measure

    rows = []
    bar = st.progress(0.0, text="measuring on this machine")
    for index, case in enumerate(runnable):
        try:
            measured = measure(case.workload, case.params, mode=case.mode, budget_s=0.2)
            rows.append(
                {
                    "case": case.label or case.workload,
                    "mode": measured.mode,
                    "measured": units.seconds(measured.median_s),
                    "measured_s": measured.median_s,
                }
            )
        except ParsimError as exc:
            rows.append(
                {"case": case.label or case.workload, "mode": case.mode, "measured": f"not measured: {exc}"}
            )
        bar.progress((index + 1) / len(runnable))
    bar.empty()
    st.subheader(f"Measured here ({len(rows)} cases)")
    st.dataframe(pandas.DataFrame(rows), hide_index=True, key="learn_measured")
