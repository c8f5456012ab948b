"""What fills a GPU's memory, as a stacked bar: the breakdown ``predict`` attaches to a prediction.

One bar per GPU's memory: weights, gradients, optimizer state, activations, KV cache, workspace and
the framework's runtime reserve stacked up, the free room last, so the bar's length is the
capacity (``model.footprint.MemoryBreakdown``). Only workloads that declare their parts get one
(transformer training and serving, 3D parallelism, the networks): a kernel's arrays are one number.
"""

from __future__ import annotations

import pandas
import streamlit as st

from parsim.model.footprint import MemoryBreakdown

GiB = 2**30


def memory_frame(memory: MemoryBreakdown) -> pandas.DataFrame:
    """One row per part (GiB per GPU) plus the free room, in the breakdown's order."""
    rows = [(name.replace("_", " "), value / GiB) for name, value in memory.parts()]
    free = memory.capacity_B - float(memory.need_B)
    rows += [("free", free / GiB)] if free > 0 else []
    where = "each GPU" if memory.gpus > 1 else "the GPU"
    return pandas.DataFrame(
        {"memory": [where] * len(rows), "part": [r[0] for r in rows], "GiB": [r[1] for r in rows]}
    )


def memory_bar(memory: MemoryBreakdown | None, key: str) -> None:
    """The stacked bar and a one-line caption, for a breakdown that has parts (else nothing)."""
    if memory is None or not memory.itemised:
        return
    st.markdown(f"**Memory**: {memory.line()}")
    frame = memory_frame(memory)
    with st.container(key=key):
        st.bar_chart(frame, x="memory", y="GiB", color="part", horizontal=True, stack=True, height=160)
