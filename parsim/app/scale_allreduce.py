"""All-reduce bus bandwidth: ring against tree, from a kilobyte to gigabytes, as nccl-tests reports it.

A ring passes the buffer around every GPU in pieces: each link carries almost the whole buffer
twice, so large buffers reach the links' bandwidth, but a small one pays 2(n-1) hops of latency.
A tree reduces up and broadcasts down in log(n) hops: far fewer latencies, and (over several
nodes) a little more of the NICs used. The *bus bandwidth* (``all_reduce_perf``'s busbw) makes
both comparable with the hardware: algorithm bandwidth times 2(n-1)/n. ``auto`` takes whichever
``parsim.predict`` says is faster, as NCCL's tuner does.
"""

from __future__ import annotations

from typing import NamedTuple

import pandas
import streamlit as st

from parsim.app.scale_cluster import cluster_of, cluster_picker, predict_on
from parsim.app.widgets import cached_png, csv_download, show_png
from parsim.base.errors import ParsimError
from parsim.base.units import seconds, si
from parsim.plots.lines import sweep_lines
from parsim.workloads.collective import ALL_REDUCE, CollectiveMetrics

SIZES = tuple(2**i for i in range(10, 34))  # 1 KiB .. 8 GiB, as all_reduce_perf -b 1K -e 8G -f 2
ALGORITHMS = ("ring", "tree", "auto")


def size_label(nbytes: int) -> str:
    return si(nbytes, "B")


class Settings(NamedTuple):
    cluster: tuple[str, str]  # (cluster id, NIC id)
    nodes: int
    nbytes: int


def controls() -> Settings:
    source, nodes = cluster_picker("ar", 16)
    size = st.select_slider(
        "buffer size",
        SIZES,
        value=2**27,
        format_func=size_label,
        key="ar_bytes",
        bind="query-params",
    )
    return Settings(source, nodes, int(size))


def params(nbytes: int, algorithm: str, nodes: int) -> tuple:
    return tuple(sorted({"bytes": float(nbytes), "algorithm": algorithm, "nodes": nodes}.items()))


@st.cache_data(show_spinner=False, max_entries=64)
def sweep(nodes: int, cluster: tuple[str, str]) -> pandas.DataFrame:
    """Every buffer size by every algorithm: bus bandwidth and time (one row per size)."""
    rows = []
    for nbytes in SIZES:
        row = {"bytes": nbytes}
        for algorithm in ALGORITHMS:
            figures = predict_on(ALL_REDUCE.name, params(nbytes, algorithm, nodes), cluster)
            row[f"{algorithm}_busbw_Bps"] = figures.record(CollectiveMetrics).bus_bandwidth_Bps
            row[f"{algorithm}_s"] = figures.record(CollectiveMetrics).collective_s
        # which of the two auto took, as the prediction's own figures say (equal bus bandwidth)
        row["auto_takes"] = "tree" if row["auto_busbw_Bps"] == row["tree_busbw_Bps"] else "ring"
        rows.append(row)
    return pandas.DataFrame(rows)


COLUMNS = {
    "buffer": st.column_config.TextColumn("buffer"),
    **{
        f"{a}_busbw_GBps": st.column_config.NumberColumn(f"{a} bus bandwidth", format="%.4g GB/s")
        for a in ALGORITHMS
    },
    **{f"{a}_ms": st.column_config.NumberColumn(f"{a} time", format="%.4g ms") for a in ALGORITHMS},
    "auto_takes": st.column_config.TextColumn("auto takes"),
}


def binary_size(nbytes: int) -> str:
    """A power-of-two buffer as nccl-tests prints it: ``1 KiB``, ``128 MiB``, ``8 GiB``."""
    for power, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if nbytes >= 2**power:
            return f"{nbytes / 2**power:g} {unit}"
    return f"{nbytes} B"


def shown(frame: pandas.DataFrame) -> pandas.DataFrame:
    """The table as shown: buffers in KiB/MiB/GiB, bus bandwidth in GB/s, times in ms (the CSV keeps
    bytes, B/s and seconds)."""
    table = pandas.DataFrame({"buffer": [binary_size(int(b)) for b in frame["bytes"]]})
    for a in ALGORITHMS:
        table[f"{a}_busbw_GBps"] = frame[f"{a}_busbw_Bps"] / 1e9
        table[f"{a}_ms"] = frame[f"{a}_s"] * 1e3
    table["auto_takes"] = frame["auto_takes"]
    return table


def view(settings: Settings) -> None:
    source, nodes, nbytes = settings
    spec = cluster_of(source)
    try:
        chosen = {a: predict_on(ALL_REDUCE.name, params(nbytes, a, nodes), source) for a in ALGORITHMS}
        frame = sweep(nodes, source)
    except ParsimError as exc:
        st.error(str(exc))
        return
    columns = st.columns(3)
    for column, algorithm in zip(columns, ALGORITHMS, strict=True):
        figures = chosen[algorithm].record(CollectiveMetrics)
        column.metric(
            f"{algorithm}: bus bandwidth",
            si(figures.bus_bandwidth_Bps, "B/s"),
            border=True,
            help=f"the all-reduce of {size_label(nbytes)} takes {seconds(figures.collective_s)}",
        )
    for note in chosen["auto"].notes:
        st.caption(f"auto at {size_label(nbytes)}: {note}")
    # auto is one of the two at every size: drawn as a third line it would hide the one it takes
    series = {a: (frame["bytes"].tolist(), frame[f"{a}_busbw_Bps"].tolist()) for a in ("ring", "tree")}
    title = (
        f"all-reduce over {nodes} x {spec.gpus_per_node} GPUs of {spec.id} ({spec.network.nic.id}): "
        "bus bandwidth (auto takes the higher)"
    )
    png = cached_png(sweep_lines, series, "buffer size (bytes)", "bytes_per_s", (), title, True, True)
    show_png(png, "allreduce-busbw", key="ar_png")
    st.dataframe(shown(frame), hide_index=True, key="ar_table", column_config=COLUMNS)
    csv_download(frame, "allreduce-busbw", key="ar_csv")
