"""Scale out across nodes: data-parallel training on a cluster of identical nodes.

A node is a team of eight GPUs in one room, talking over NVLink; a cluster is many such rooms
joined by the network cards (NICs) between them. Adding rooms adds hands, and also adds a slower
phone line every gradient has to cross once per step. This tab shows what that line costs: the
step of one node in full (``data_parallel`` on a cluster preset, ``nodes`` of them), its
efficiency against one GPU, and how the efficiency holds from 1 to 1024 nodes with the gradient
all-reduce overlapped with the backward pass or waiting for its end.

Everything shown comes from ``parsim.predict`` (cached per setting); the cluster picker here is
shared with the (tp, pp, dp) explorer and the all-reduce panel.
"""

from __future__ import annotations

from typing import NamedTuple

import attrs
import pandas
import streamlit as st

from parsim import plots
from parsim.app import urlstate
from parsim.app.memory import memory_bar
from parsim.app.widgets import cached_png, csv_download, model_picker, show_png, trace_download, url_choice
from parsim.base.budget import APP
from parsim.base.errors import ParsimError
from parsim.base.units import seconds, si
from parsim.hardware import registry
from parsim.hardware.network import ClusterSpec
from parsim.hardware.presets_cluster import NIC_PRESETS
from parsim.methods.predict import predict
from parsim.plots.lines import sweep_lines
from parsim.report import chrome_trace
from parsim.workloads.registry import model_names
from parsim.workloads.standard import DATA_PARALLEL

NODE_COUNTS = tuple(2**i for i in range(11))  # 1 .. 1024 nodes
DTYPES = ("float32", "bfloat16", "float16")
OPTIMIZERS = ("sgd", "adam")
DEFAULT_CLUSTER = "dgx-a100"
DEFAULT_NODES = 16
DEFAULTS = {"model": "resnet50", "batch": 32, "dtype": DTYPES[0], "optimizer": OPTIMIZERS[0], "zero": 0}
"""The tab's first view: what its widgets start at, and what the server computes ahead (``warm``)."""
OVERLAP = {True: "all-reduce overlapped with backward", False: "all-reduce after backward"}


def cluster_label(cluster_id: str) -> str:
    return f"{registry.cluster(cluster_id).name} ({cluster_id})"


def nic_label(nic_id: str) -> str:
    return f"{NIC_PRESETS[nic_id].name} ({nic_id})"


def cluster_of(source: tuple[str, str]) -> ClusterSpec:
    """A cluster preset with the NIC ``source`` names: ``("dgx-a100", "eth-25g")``.

    Pages pass this plain pair around (Streamlit's caches hash plain values) and build the spec
    where parsim is called.
    """
    name, nic = source
    spec = registry.cluster(name)
    if nic == spec.network.nic.id:
        return spec
    return attrs.evolve(spec, network=attrs.evolve(spec.network, nic=NIC_PRESETS[nic]))


def cluster_picker(prefix: str, nodes: int) -> tuple[tuple[str, str], int]:
    """A cluster preset, its NIC (the preset's own unless another is chosen) and a node count,
    as ``((cluster id, NIC id), nodes)``.

    The NIC's key names the cluster, so choosing another cluster brings that cluster's own NIC
    (the link picker's rule); the URL keeps ``?<prefix>_nic=eth-25g`` only when it differs.
    """
    name = urlstate.choice(
        "cluster", registry.cluster_ids(), DEFAULT_CLUSTER, f"{prefix}_cluster", format_func=cluster_label
    )
    spec = registry.cluster(name)
    own = spec.network.nic.id
    nic = urlstate.choice(
        "NIC",
        list(NIC_PRESETS),
        own,
        f"{prefix}_nic_{name}",
        param=f"{prefix}_nic",
        format_func=nic_label,
        help=f"the network card between nodes ({spec.network.nics_per_node} per node)",
    )
    count = st.select_slider("nodes", NODE_COUNTS, value=nodes, key=f"{prefix}_nodes", bind="query-params")
    st.caption(f"{count} x {spec.gpus_per_node} = {count * spec.gpus_per_node:,} GPUs ({spec.device})")
    return (name, nic), int(count)


@st.cache_resource(show_spinner=False, max_entries=256)  # a prediction is immutable: shared, not copied
def predict_on(workload: str, params: tuple, cluster: tuple[str, str]):
    """``parsim.predict`` on a cluster, cached by plain values (``params`` as sorted pairs)."""
    return predict(workload, dict(params), cluster=cluster_of(cluster), budget=APP)


def timeline_figure(workload: str, params: tuple, cluster: tuple[str, str], title: str):
    return plots.timeline(predict_on(workload, params, cluster), title)


def timeline_trace(workload: str, params: tuple, cluster: tuple[str, str]):
    return chrome_trace.pending_cases([("", predict_on(workload, params, cluster))], budget=APP)


@st.fragment
def step_timeline(workload: str, params: tuple, cluster: tuple[str, str], title: str, key: str) -> None:
    """One step's timeline, drawn only when asked (a fragment: its toggle reruns only itself)."""
    if st.toggle("draw the step's timeline", value=True, key=f"{key}_show"):
        png = cached_png(timeline_figure, workload, params, cluster, title)
        show_png(png, key.replace("_", "-"), key=f"{key}_png")
        trace_download(
            timeline_trace, workload, params, cluster, name=key.replace("_", "-"), key=f"{key}_trace"
        )


class Settings(NamedTuple):
    cluster: tuple[str, str]  # (cluster id, NIC id)
    nodes: int
    params: tuple  # data_parallel parameters without nodes and overlap, as sorted pairs
    overlap: bool


def controls() -> Settings:
    source, nodes = cluster_picker("nodes", DEFAULT_NODES)
    names = model_names()
    model = model_picker("model", names, DEFAULTS["model"], "nodes_model")
    batch = st.number_input(
        "batch per GPU",
        min_value=1,
        max_value=4096,
        value=DEFAULTS["batch"],
        key="nodes_batch",
        help="weak scaling: every GPU of every node trains on this many samples per step",
        bind="query-params",
    )
    dtype = url_choice("dtype", DTYPES, DEFAULTS["dtype"], "nodes_dtype")
    optimizer = url_choice("optimizer", OPTIMIZERS, DEFAULTS["optimizer"], "nodes_optimizer")
    overlap = st.toggle(
        "overlap the all-reduce with the backward pass",
        value=True,
        key="nodes_overlap",
        help="DDP's buckets: each is reduced as soon as its gradients exist; off: all wait for the end",
        bind="query-params",
    )
    zero = st.select_slider(
        "ZeRO stage",
        [0, 1, 2, 3],
        value=DEFAULTS["zero"],
        key="nodes_zero",
        help="1: optimizer state sharded, 2: also gradients, 3: also weights (gathered per bucket)",
        bind="query-params",
    )
    return Settings(source, nodes, step_params(model, int(batch), dtype, optimizer, int(zero)), bool(overlap))


def step_params(model: str, batch: int, dtype: str, optimizer: str, zero: int) -> tuple:
    """The ``data_parallel`` parameters of the tab's step (weak scaling over a ring), as sorted pairs."""
    params = {
        "model": model,
        "batch": batch,
        "sync": "ring",
        "scaling": "weak",
        "dtype": dtype,
        "optimizer": optimizer,
        "zero": zero,
    }
    return tuple(sorted(params.items()))


def default_source() -> tuple[str, str]:
    """The cluster pickers' first choice: ``DEFAULT_CLUSTER`` with its own NIC."""
    return DEFAULT_CLUSTER, registry.cluster(DEFAULT_CLUSTER).network.nic.id


def default_settings() -> Settings:
    """The settings the tab opens with (``DEFAULTS``, the cluster's own NIC, overlap on)."""
    return Settings(default_source(), DEFAULT_NODES, step_params(**DEFAULTS), True)


def warm() -> None:
    """Compute the tab's first view ahead (``parsim.app.warmup``): its step, its sweep of nodes and
    their figures."""
    settings = default_settings()
    source, nodes, params, overlap = settings
    chosen = with_nodes(params, nodes, overlap)
    predict_on(DATA_PARALLEL.name, chosen, source)
    efficiency_png(settings, sweep(params, source))
    cached_png(timeline_figure, DATA_PARALLEL.name, chosen, source, step_title(settings))


def with_nodes(params: tuple, nodes: int, overlap: bool) -> tuple:
    return tuple(sorted({**dict(params), "nodes": nodes, "overlap": overlap}.items()))


def view(settings: Settings) -> None:
    source, nodes, params, overlap = settings
    chosen = with_nodes(params, nodes, overlap)
    try:
        step = predict_on(DATA_PARALLEL.name, chosen, source)
        curves = sweep(params, source)
    except ParsimError as exc:
        st.error(str(exc))
        return
    metrics = step.metrics
    columns = st.columns(4)
    columns[0].metric("step time", seconds(step.latency_s), border=True)
    columns[1].metric("samples/s", si(metrics["samples_per_s"]), border=True)
    columns[2].metric(
        "efficiency vs 1 GPU",
        f"{metrics['efficiency']:.1%}",
        border=True,
        help="samples/s over (GPUs x one GPU's samples/s alone)",
    )
    columns[3].metric(
        "exposed communication",
        seconds(step.latency_s - metrics["single_gpu_latency_s"]),
        border=True,
        help="the step's time beyond one GPU's step alone: the all-reduce not hidden behind the "
        "backward pass, and the node's GPUs sharing PCIe and the host",
    )
    memory_bar(step.memory, "nodes_memory")
    show_png(efficiency_png(settings, curves), "efficiency-vs-nodes", key="nodes_png")
    st.dataframe(in_ms(curves), hide_index=True, key="nodes_table", column_config=SWEEP_COLUMNS)
    csv_download(curves, "efficiency-vs-nodes", key="nodes_csv")
    st.subheader("One node's step")
    step_timeline(DATA_PARALLEL.name, chosen, source, step_title(settings), "nodes_step")


def efficiency_png(settings: Settings, curves: pandas.DataFrame) -> bytes:
    """The efficiency against nodes, overlapped and not, as drawn (cached per sweep)."""
    spec, params = cluster_of(settings.cluster), dict(settings.params)
    title = f"{params['model']} on {spec.id} ({spec.network.nic.id}), batch {params['batch']} per GPU"
    series = {
        OVERLAP[on]: (curves["nodes"].tolist(), curves[f"efficiency_{'on' if on else 'off'}"].tolist())
        for on in (True, False)
    }
    return cached_png(sweep_lines, series, "nodes", "efficiency vs 1 GPU", (), title, True, False)


def step_title(settings: Settings) -> str:
    """The title of the chosen node count's step timeline."""
    model = dict(settings.params)["model"]
    return f"{model}, one of {settings.nodes} nodes, {OVERLAP[settings.overlap]}"


def in_ms(frame: pandas.DataFrame) -> pandas.DataFrame:
    """The table as shown: every ``*_s`` column in milliseconds as ``*_ms`` (the CSV keeps seconds)."""
    seconds_columns = [c for c in frame.columns if c.endswith("_s") and not c.endswith("_per_s")]
    shown = frame.assign(**{c: frame[c] * 1e3 for c in seconds_columns})
    return shown.rename(columns={c: c.removesuffix("_s") + "_ms" for c in seconds_columns})


SWEEP_COLUMNS = {
    "nodes": st.column_config.NumberColumn(format="%d"),
    "gpus": st.column_config.NumberColumn("GPUs", format="%d"),
    "step_on_ms": st.column_config.NumberColumn("step, overlapped", format="%.1f ms"),
    "step_off_ms": st.column_config.NumberColumn("step, not overlapped", format="%.1f ms"),
    "samples_per_s_on": st.column_config.NumberColumn("samples/s, overlapped", format="compact"),
    "efficiency_on": st.column_config.NumberColumn("efficiency, overlapped", format="percent"),
    "efficiency_off": st.column_config.NumberColumn("efficiency, not overlapped", format="percent"),
}


@st.cache_data(show_spinner="predicting 1 to 1024 nodes", max_entries=64)
def sweep(params: tuple, cluster: tuple[str, str]) -> pandas.DataFrame:
    """The step at every node count, overlapped and not (one model and batch: the nodes slider
    and the overlap toggle then only read this)."""
    rows = []
    for nodes in NODE_COUNTS:
        on = predict_on(DATA_PARALLEL.name, with_nodes(params, nodes, True), cluster)
        off = predict_on(DATA_PARALLEL.name, with_nodes(params, nodes, False), cluster)
        rows.append(
            {
                "nodes": nodes,
                "gpus": on.gpus,  # all nodes' GPUs
                "step_on_s": on.latency_s,
                "step_off_s": off.latency_s,
                "samples_per_s_on": on.metrics["samples_per_s"],
                "efficiency_on": on.metrics["efficiency"],
                "efficiency_off": off.metrics["efficiency"],
            }
        )
    return pandas.DataFrame(rows)
