"""Home: what parsim is, and a 45-minute class as a list of links, one per step.

Each link opens a page with its settings in the URL (``st.query_params``), so the same steps
work as bookmarks on a teacher's slides.
"""

from __future__ import annotations

import streamlit as st

# (topic, what the class sees, page script, URL settings)
CLASS = [
    (
        "Flynn's taxonomy",
        "one vector add as SISD, SIMD, MIMD, MIMD+SIMD and SIMT: which lanes and cores work",
        "learn.py",
        {"lesson": "flynn_vector_add"},
    ),
    (
        "CPU latency vs GPU throughput",
        "one dense layer swept over batch: a CPU finishes one task sooner, a GPU many; the crossover",
        "learn.py",
        {"lesson": "cpu_latency_vs_gpu_throughput"},
    ),
    (
        "CPU vs GPU",
        "the same operation on a laptop CPU and a GPU, PCIe paid: where the GPU starts to win",
        "compare.py",
        {"compare_kind": "CPU vs GPU (PCIe paid)"},
    ),
    (
        "Latency vs throughput",
        "batching: each request waits longer, the GPU serves more per second",
        "scale.py",
        {"scale_tab": "batching"},
    ),
    (
        "The cost of PCIe copies",
        "pinned vs pageable host memory, and streams that hide copies behind kernels",
        "compare.py",
        {"compare_kind": "pinned vs pageable"},
    ),
    (
        "Multi-GPU training",
        "data-parallel training on 1 to 8 GPUs: where the all-reduce eats the speed-up",
        "scale.py",
        {"scale_tab": "training"},
    ),
]


def render() -> None:
    from parsim.app import VIEWS
    from parsim.app.entry import PAGES

    st.title("parsim")
    st.markdown(
        "A simulator of parallel hardware — SISD, SIMD, MIMD and SIMT cores, memory bandwidth, "
        "PCIe copies, several GPUs — that predicts how long a computation takes, shows **why**, "
        "and measures the same computation on this machine to check itself."
    )
    st.subheader(f"A class in {len(CLASS)} steps")
    for index, (topic, what, script, query) in enumerate(CLASS, start=1):
        title = PAGES[script][0]
        st.page_link(
            VIEWS / script,
            label=f"{index}. {topic} — {title}",
            query_params=query,
            icon=PAGES[script][1],
        )
        st.caption(what)
    st.caption(
        "Every page keeps its settings in the address bar: bookmark a step to put it on a slide. "
        "The presentation-mode switch in the sidebar makes fonts large and folds the controls away."
    )
