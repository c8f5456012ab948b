"""Tables under three lessons' figures, read from the lesson's own predictions.

- ``software_stack``: the step's time per layer of the stack (host: Python, framework and launches;
  kernels on the CUDA cores; copies), case by case and batch by batch;
- ``mlp_sgd_vs_adam``: the optimizer's share of each training step;
- ``cpu_latency_vs_gpu_throughput``: one task's latency and the best throughput on each device.

The numbers come from ``parsim.studies.teaching_stack`` and are cached per lesson file and its
modification time, so reruns of the page cost nothing.
"""

from __future__ import annotations

from pathlib import Path

import pandas
import streamlit as st

from parsim.app.cache import cached_scenario
from parsim.base.units import seconds, si
from parsim.studies.teaching_stack import latency_throughput_rows, optimizer_rows, stack_rows


@st.cache_data(show_spinner=False, max_entries=8)
def _stack(path: str, stamp: float) -> list[dict]:
    return stack_rows(cached_scenario(path, stamp))


@st.cache_data(show_spinner=False, max_entries=8)
def _optimizer(path: str, stamp: float) -> list[dict]:
    return optimizer_rows(cached_scenario(path, stamp))


@st.cache_data(show_spinner=False, max_entries=8)
def _latency_throughput(path: str, stamp: float) -> list[dict]:
    return latency_throughput_rows(cached_scenario(path, stamp))


def stack_table(path: Path) -> None:
    rows = _stack(str(path), path.stat().st_mtime)
    st.markdown("#### Where the step goes, layer by layer")
    frame = pandas.DataFrame(
        {
            "case": [r["case"] for r in rows],
            "batch": [r["value"] for r in rows],
            "step": [seconds(r["step_s"]) for r in rows],
            "host share": [f"{r['host_share']:.0%}" for r in rows],
            "host (Python, framework, launches)": [seconds(r["host_s"]) for r in rows],
            "kernels (CUDA cores)": [seconds(r["kernels_s"]) for r in rows],
            "copies": [seconds(r["copies_s"]) for r in rows],
        }
    )
    st.dataframe(frame, hide_index=True, key="teach_stack_table")
    st.caption(
        "From the breakdown of each prediction: overhead = host, compute + memory = kernels, "
        "transfer = copies."
    )


def optimizer_table(path: Path) -> None:
    rows = _optimizer(str(path), path.stat().st_mtime)
    st.markdown("#### The optimizer's share of the step")
    frame = pandas.DataFrame(
        {
            "case": [r["case"] for r in rows],
            "optimizer": [r["optimizer"] for r in rows],
            "step": [seconds(r["step_s"]) for r in rows],
            "optimizer's ops": [seconds(r["optimizer_s"]) for r in rows],
            "share": [f"{r['optimizer_share']:.0%}" for r in rows],
        }
    )
    st.dataframe(frame, hide_index=True, key="teach_optimizer_table")
    st.caption(
        "The time during which an update op is issued by the host or runs, over the step (from the timeline)."
    )


def latency_throughput_table(path: Path) -> None:
    rows = _latency_throughput(str(path), path.stat().st_mtime)
    st.markdown("#### One task, or many?")
    frame = pandas.DataFrame(
        {
            "case": [r["case"] for r in rows],
            "latency of one task": [f"{seconds(r['latency_s'])} (batch {r['batch_1']:g})" for r in rows],
            "best throughput": [f"{si(r['best_items_per_s'], '/s')} (batch {r['at_batch']:g})" for r in rows],
        }
    )
    st.dataframe(frame, hide_index=True, key="teach_latency_throughput_table")


VISUALS = {
    "software_stack": stack_table,
    "mlp_sgd_vs_adam": optimizer_table,
    "cpu_latency_vs_gpu_throughput": latency_throughput_table,
}
"""The lessons with a table here, and the function drawing it."""


FLYNN_BOXES = "\n".join(
    [
        "| | **single data stream** | **multiple data streams** |",
        "|---|---|---|",
        "| **single instruction** | **SISD**: one core, one lane (the Python loop) "
        "| **SIMD**: one instruction, many lanes (NumPy on AVX); **SIMT**: a GPU's warps |",
        "| **multiple instructions** | **MISD**: data flowing through a chain of units — a systolic "
        "array such as a TPU's MXU ([lesson](/learn?lesson=systolic_vs_simt)), pipelined "
        "fault-tolerant systems that vote | **MIMD**: many cores, each its own program (threads) |",
    ]
)
"""Flynn's four boxes, MISD included, with where parsim shows each."""


def flynn_boxes() -> None:
    """Flynn's taxonomy as its 2 x 2 grid, with an honest word on why the MISD box is nearly empty."""
    st.markdown("#### The four boxes")
    st.markdown(FLYNN_BOXES)
    st.caption(
        "MISD is rare: most work offers many data items with the same thing to do to each, so chips "
        "add lanes or cores; a systolic array is the usual example, and even it runs one multiply-add "
        "in every cell (many authors call it SIMD)."
    )
