"""Learn: every scenario as a lesson — its text, its figure, its table, and a live measurement."""

from __future__ import annotations

import pandas
import streamlit as st

from parsim import plots, units
from parsim.app.cache import cached_scenario, scenario_folder
from parsim.app.widgets import cached_png, csv_download, show_png
from parsim.errors import ParsimError
from parsim.hardware import registry
from parsim.measure.run import measurable
from parsim.scenarios import case_labels, load_scenario, resolve, scenario_paths

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
    for label, raw in zip(case_labels(result.scenario), result.scenario.cases, strict=True):
        case = resolve(result.scenario, raw)
        on_cpu = registry.kind_of(case.device) == "cpu"
        if on_cpu and measurable(case.workload) and result.scenario.sweep is None:
            runnable.append((label, case))
    if not runnable:
        st.caption(
            "the cases of this lesson run on GPUs or are not single kernels: nothing to measure on this CPU"
        )
        return
    if not st.button("Measure it here", key="learn_measure", type="primary"):
        return
    from parsim.measure import measure  # the measuring machinery loads only when asked

    rows = []
    bar = st.progress(0.0, text="measuring on this machine")
    for index, (label, case) in enumerate(runnable):
        try:
            measured = measure(case.workload, case.params, mode=case.mode, budget_s=0.2)
            rows.append(
                {
                    "case": label,
                    "mode": measured.mode,
                    "measured": units.seconds(measured.median_s),
                    "measured_s": measured.median_s,
                }
            )
        except ParsimError as exc:
            rows.append({"case": label, "mode": case.mode, "measured": f"not measured: {exc}"})
        bar.progress((index + 1) / len(runnable))
    bar.empty()
    st.subheader(f"Measured here ({len(rows)} cases)")
    st.dataframe(pandas.DataFrame(rows), hide_index=True, key="learn_measured")
