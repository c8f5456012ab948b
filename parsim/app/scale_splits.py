"""The (tp, pp, dp) explorer: which way of cutting a cluster trains a language model fastest.

A model too large for one GPU is cut three ways at once, like a book copied by many scribes:
each page split between scribes at one desk (tensor parallelism, inside a node), the chapters
passed along a row of desks (pipeline stages), and whole rows copying other volumes side by side
(data-parallel replicas). ``parsim.studies.splits.split_table`` tries every cut of the cluster's GPUs,
refuses those that do not fit in memory and predicts the rest; this tab shows its rows, the
fastest marked, and for the chosen split its figures and its pipeline timeline.

Predicting every split takes seconds to tens of seconds (all cores), so it runs on a button;
the settings a user has already explored stay found for the session.
"""

from __future__ import annotations

from typing import NamedTuple

import pandas
import streamlit as st

from parsim.app.memory import memory_bar
from parsim.app.scale_cluster import cluster_of, cluster_picker, default_source, predict_on, step_timeline
from parsim.app.widgets import csv_download, model_picker, url_choice
from parsim.base.budget import APP
from parsim.base.errors import ParsimError
from parsim.base.units import gib, si
from parsim.studies.splits import SplitRow, split_table
from parsim.workloads.parallel3d import ParallelMetrics
from parsim.workloads.registry import llm_names
from parsim.workloads.standard import NETWORK

DEFAULT_NODES = 8
DEFAULTS = {"model": "megatron-7.5b", "batch": 128, "recompute": "selective", "dtype": "bfloat16"}
"""The tab's first settings: what its widgets start at, and what the server computes ahead (``warm``)."""
DEFAULT_MICRO_BATCH = 1
RECOMPUTE = ("selective", "none", "full")
DTYPES = ("bfloat16", "float16", "float32")
FOUND = "split_found"  # the settings whose table was asked for in this session
CHOICE = "split_choice"


class Settings(NamedTuple):
    cluster: tuple[str, str]  # (cluster id, NIC id)
    params: tuple  # network parameters without tp, pp, microbatches (sorted pairs)
    micro_batch: int


def controls() -> Settings:
    names = llm_names()
    model = model_picker("language model", names, DEFAULTS["model"], "split_model")
    source, nodes = cluster_picker("split", DEFAULT_NODES)
    batch = st.number_input(
        "global batch (sequences)",
        min_value=1,
        max_value=65536,
        value=DEFAULTS["batch"],
        key="split_batch",
        bind="query-params",
    )
    micro = st.number_input(
        "micro-batch size",
        min_value=1,
        max_value=64,
        value=DEFAULT_MICRO_BATCH,
        key="split_micro",
        help="sequences per micro-batch; each replica's share of the batch is cut into these",
        bind="query-params",
    )
    recompute = url_choice(
        "recompute",
        RECOMPUTE,
        DEFAULTS["recompute"],
        "split_recompute",
        help="activations recomputed in the backward pass instead of kept (Korthikanti et al.)",
    )
    dtype = url_choice("dtype", DTYPES, DEFAULTS["dtype"], "split_dtype")
    return Settings(source, network_params(model, int(batch), nodes, recompute, dtype), int(micro))


def network_params(model: str, batch: int, nodes: int, recompute: str, dtype: str) -> tuple:
    """The ``network`` parameters every split shares (Adam), as sorted pairs."""
    params = {
        "model": model,
        "batch": batch,
        "nodes": nodes,
        "recompute": recompute,
        "dtype": dtype,
        "optimizer": "adam",
    }
    return tuple(sorted(params.items()))


@st.cache_resource(show_spinner=False, max_entries=16)  # rows are immutable: shared, not copied
def cached_splits(params: tuple, source: tuple[str, str], micro_batch: int) -> tuple[SplitRow, ...]:
    """Every split of the settings (``split_table``), once for the server: a press while the
    warm-up predicts the same settings waits for it instead of predicting them again."""
    return split_table(dict(params), cluster_of(source), micro_batch=micro_batch, budget=APP)


def with_split(params: tuple, row: SplitRow) -> tuple:
    """``params`` of one training step cut as ``row`` says."""
    split = {"train": True, "tp": row.tp, "pp": row.pp, "microbatches": row.microbatches}
    return tuple(sorted({**dict(params), **split}.items()))


def warm() -> None:
    """Predict every split of the tab's first settings ahead, and the fastest one's step
    (``parsim.app.warmup``): the first press of the button then finds them computed."""
    source = default_source()
    params = network_params(nodes=DEFAULT_NODES, **DEFAULTS)
    rows = cached_splits(params, source, DEFAULT_MICRO_BATCH)
    fastest = next((row for row in rows if row.fits and row.fastest), None)
    if fastest is not None:
        predict_on(NETWORK.name, with_split(params, fastest), source)


def split_name(row: SplitRow) -> str:
    return f"tp {row.tp} x pp {row.pp} x dp {row.dp}"


def table(rows: tuple[SplitRow, ...]) -> pandas.DataFrame:
    return pandas.DataFrame(
        [
            {
                "split": split_name(row),
                "tp": row.tp,
                "pp": row.pp,
                "dp": row.dp,
                "layers_per_stage": row.layers_per_stage,
                "microbatches": row.microbatches,
                "memory_GiB": row.memory_per_gpu_B / 2**30,
                "fits": "yes" if row.fits else "does not fit",
                "step_s": row.step_s,
                "tokens_per_s": row.tokens_per_s,
                "tflops_per_gpu": row.tflops_per_gpu,
                "mfu": row.mfu,
                "idle_share": row.idle_share,
                "fastest": row.fastest,
            }
            for row in rows
        ]
    )


COLUMNS = {
    "layers_per_stage": st.column_config.TextColumn(
        "layers per stage", help="'2 or 1': pp does not divide the layers; the fuller stages set the pace"
    ),
    "microbatches": st.column_config.NumberColumn("micro-batches", format="%d"),
    "fits": st.column_config.TextColumn("fits", width="medium"),
    "memory_GiB": st.column_config.NumberColumn("memory per GPU", format="%.1f GiB"),
    "step_s": st.column_config.NumberColumn("step", format="%.3f s"),
    "tokens_per_s": st.column_config.NumberColumn("tokens/s", format="%.0f"),
    "tflops_per_gpu": st.column_config.NumberColumn("TFLOP/s per GPU", format="%.1f"),
    "mfu": st.column_config.NumberColumn("MFU", format="percent"),
    "idle_share": st.column_config.NumberColumn("idle", format="percent"),
    "fastest": st.column_config.CheckboxColumn("fastest"),
}


SHOWN = {
    "memory_GiB": "{:.1f} GiB",
    "step_s": "{:.3f} s",
    "tokens_per_s": "{:,.0f}",
    "tflops_per_gpu": "{:.1f}",
    "mfu": "{:.1%}",
    "idle_share": "{:.1%}",
}
"""How the styled table prints its numbers (a Styler's text wins over ``column_config`` formats)."""


def splits_sentence(total: int, unfit: int, gpus: int, device: str) -> str:
    """``21 splits of 64 GPUs; 1 split does not fit in a100-80gb's memory; ...``: counts with nouns."""
    split = "split does" if unfit == 1 else "splits do"
    return (
        f"{total} split{'s' if total != 1 else ''} of {gpus:,} GPUs; {unfit} {split} not fit in "
        f"{device}'s memory; the fastest is highlighted."
    )


def _highlight(row: pandas.Series) -> list[str]:
    if row["fastest"]:
        return ["background-color: rgba(33, 195, 84, 0.25); font-weight: bold"] * len(row)
    if row["fits"] != "yes":
        return ["color: grey"] * len(row)
    return [""] * len(row)


def view(settings: Settings) -> None:
    source, params, micro = settings
    spec = cluster_of(source)
    wanted = (params, source, micro)
    found = st.session_state.setdefault(FOUND, [])
    gpus = dict(params)["nodes"] * spec.gpus_per_node
    pressed = st.button("Find the fastest split", key="split_find", type="primary", icon=":material/search:")
    if pressed and wanted not in found:
        found.append(wanted)
    if wanted not in found:
        st.info(f"Press the button to predict every (tp, pp, dp) split of {gpus:,} GPUs.")
        return
    try:
        with st.spinner(f"predicting every split of {gpus:,} GPUs"):
            rows = cached_splits(params, source, micro)
    except ParsimError as exc:
        st.error(str(exc))
        return
    frame = table(rows)
    fitting = [row for row in rows if row.fits]
    st.caption(splits_sentence(len(rows), len(rows) - len(fitting), gpus, spec.device))
    # the splits that fit, every figure with its unit; those that do not, with the memory they need
    # (a split that does not fit has no prediction: its figures would be empty cells)
    fits = frame[frame["fits"] == "yes"]
    st.dataframe(
        fits.style.apply(_highlight, axis=1).format(SHOWN),
        hide_index=True,
        key="split_table",
        column_config=COLUMNS,
        column_order=[c for c in frame.columns if c not in ("tp", "pp", "dp", "fits")],
    )
    too_big = frame[frame["fits"] != "yes"]
    if not too_big.empty:
        st.dataframe(
            too_big[["split", "memory_GiB"]].style.format({"memory_GiB": SHOWN["memory_GiB"]}),
            hide_index=True,
            key="split_unfit_table",
            column_config={
                "split": st.column_config.TextColumn("does not fit"),
                "memory_GiB": COLUMNS["memory_GiB"],
            },
        )
    csv_download(frame, "splits", key="split_csv")
    if not fitting:
        st.error("No split fits in memory: more nodes, a smaller micro-batch or full recompute may.")
        return
    _chosen(fitting, wanted, params, source)


def _chosen(fitting: list[SplitRow], wanted: tuple, params: tuple, source: tuple[str, str]) -> None:
    """The chosen split's figures and pipeline timeline (the fastest until another is chosen)."""
    names = [split_name(row) for row in fitting]
    fastest = next((split_name(row) for row in fitting if row.fastest), names[0])
    if st.session_state.get(f"{CHOICE}_for") != wanted or st.session_state.get(CHOICE) not in names:
        st.session_state[CHOICE] = fastest  # new settings: start from their fastest split
        st.session_state[f"{CHOICE}_for"] = wanted
    name = st.selectbox(
        "split", names, key=CHOICE, format_func=lambda n: f"{n} (fastest)" if n == fastest else n
    )
    row = fitting[names.index(name)]
    chosen = with_split(params, row)
    try:
        step = predict_on(NETWORK.name, chosen, source)
    except ParsimError as exc:
        st.error(str(exc))
        return
    figures = step.record(ParallelMetrics)
    columns = st.columns(4)
    columns[0].metric("tokens/s", si(figures.tokens_per_s), border=True)
    columns[1].metric("TFLOP/s per GPU", f"{figures.tflops_per_gpu:.1f}", border=True)
    columns[2].metric("MFU", f"{figures.mfu:.1%}", border=True, help="model FLOPs over the peak")
    columns[3].metric("memory per GPU", gib(figures.memory_per_gpu_B), border=True)
    memory_bar(step.memory, "split_memory")
    shares = pandas.DataFrame(
        {
            "where the step goes": ["compute", "tensor-parallel", "data-parallel", "idle (bubble, waits)"],
            "share": [
                figures.compute_share,
                figures.tp_comm_share,
                figures.dp_comm_share,
                figures.idle_share,
            ],
        }
    )
    st.dataframe(
        shares,
        hide_index=True,
        key="split_shares",
        column_config={"share": st.column_config.ProgressColumn(format="percent", min_value=0, max_value=1)},
    )
    title = f"{dict(params)['model']}: {name}, {row.microbatches} micro-batches, one step"
    step_timeline(NETWORK.name, chosen, source, title, "split_step")
