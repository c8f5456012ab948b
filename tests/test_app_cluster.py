"""The Scale out page past one node: the numbers it shows are parsim.predict's and split_table's.

Each test opens one cluster tab from its URL (only the open tab is computed), reads the metrics
and tables the page shows, and holds them against ``parsim.predict`` for the same settings.
"""

from __future__ import annotations

import attrs
import pytest

from parsim.hardware import registry
from parsim.hardware.presets_cluster import NIC_PRESETS
from parsim.methods.predict import predict
from parsim.studies.splits import split_table
from tests.apptest import app, seconds

pytestmark = pytest.mark.slow

ACROSS = {"scale_tab": "Across nodes"}
EXPLORER = {"scale_tab": "(tp, pp, dp) explorer"}
ALLREDUCE = {"scale_tab": "All-reduce bandwidth"}
# the Across nodes tab's defaults: resnet50, 32 samples per GPU, 16 DGX A100 nodes, overlapped
DDP = {
    "model": "resnet50",
    "batch": 32,
    "sync": "ring",
    "scaling": "weak",
    "dtype": "float32",
    "optimizer": "sgd",
    "zero": 0,
    "nodes": 16,
    "overlap": True,
}
# the explorer's defaults: Megatron 7.5B on 8 DGX A100 nodes
SPLITS = {
    "model": "megatron-7.5b",
    "batch": 128,
    "nodes": 8,
    "recompute": "selective",
    "dtype": "bfloat16",
    "optimizer": "adam",
}


def shown(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def percent(text: str) -> float:
    return float(text.rstrip("%")) / 100


def with_nic(cluster: str, nic: str):
    spec = registry.cluster(cluster)
    return attrs.evolve(spec, network=attrs.evolve(spec.network, nic=NIC_PRESETS[nic]))


def assert_step(at, prediction) -> None:
    """The four figures of the Across nodes tab against a prediction (to the digits shown)."""
    figures = shown(at)
    metrics = prediction.metrics
    assert seconds(figures["step time"]) == pytest.approx(prediction.latency_s, rel=5e-3)
    assert percent(figures["efficiency vs 1 GPU"]) == pytest.approx(metrics["efficiency"], abs=5e-4)
    exposed = prediction.latency_s - metrics["single_gpu_latency_s"]
    assert seconds(figures["exposed communication"]) == pytest.approx(exposed, rel=5e-3)
    value, unit = figures["samples/s"].split()
    assert float(value) * {"k": 1e3, "M": 1e6}[unit] == pytest.approx(metrics["samples_per_s"], rel=5e-3)


def test_across_nodes_shows_the_prediction_for_its_settings():
    at = app("scale", ACROSS)
    assert not at.error
    assert_step(at, predict("data_parallel", DDP, cluster="dgx-a100"))
    # the sweep behind the figure: every node count, the chosen one equal to the metrics above
    (table,) = at.dataframe
    assert table.value["nodes"].tolist() == [2**i for i in range(11)]
    row = table.value.set_index("nodes").loc[16]
    assert row["gpus"] == 128
    efficiency = predict("data_parallel", DDP, cluster="dgx-a100").metrics["efficiency"]
    assert row["efficiency_on"] == pytest.approx(efficiency)
    assert len(at.image) == 2  # the efficiency figure and one node's step timeline


def test_a_slower_nic_lowers_the_efficiency():
    at = app("scale", ACROSS)
    before = percent(shown(at)["efficiency vs 1 GPU"])
    assert at.selectbox(key="nodes_nic_dgx-a100").value == "ib-hdr"  # the preset's own NIC
    at.selectbox(key="nodes_nic_dgx-a100").set_value("eth-25g").run()
    assert not at.exception and not at.error
    assert at.query_params["nodes_nic"] == "eth-25g"
    after = percent(shown(at)["efficiency vs 1 GPU"])
    assert after < before - 0.01
    assert_step(at, predict("data_parallel", DDP, cluster=with_nic("dgx-a100", "eth-25g")))
    # another cluster brings its own NIC
    at.selectbox(key="nodes_cluster").set_value("dgx-h100").run()
    assert at.selectbox(key="nodes_nic_dgx-h100").value == "ib-ndr"
    assert_step(at, predict("data_parallel", DDP, cluster="dgx-h100"))


def test_overlap_off_is_not_faster_at_any_node_count():
    at = app("scale", {**ACROSS, "nodes_nic": "eth-25g"})  # a bookmark with another NIC
    assert at.selectbox(key="nodes_nic_dgx-a100").value == "eth-25g"
    on = seconds(shown(at)["step time"])
    at.toggle(key="nodes_overlap").set_value(False).run()
    assert not at.exception
    off = seconds(shown(at)["step time"])
    assert off > on
    spec = with_nic("dgx-a100", "eth-25g")
    assert_step(at, predict("data_parallel", {**DDP, "overlap": False}, cluster=spec))
    table = at.dataframe[0].value
    assert (table["step_off_ms"] >= table["step_on_ms"]).all()
    assert (table["efficiency_off"] <= table["efficiency_on"]).all()


def test_moving_the_nodes_slider_predicts_that_many_nodes():
    at = app("scale", {**ACROSS, "nodes_nodes": "64"})
    assert at.select_slider(key="nodes_nodes").value == 64
    at.select_slider(key="nodes_nodes").set_value(1024).run()
    assert "1024 x 8 = 8,192 GPUs" in [c.value for c in at.caption][0]
    assert_step(at, predict("data_parallel", {**DDP, "nodes": 1024}, cluster="dgx-a100"))


def test_a_model_that_does_not_fit_is_an_error_not_a_traceback():
    at = app("scale", ACROSS)
    at.selectbox(key="nodes_model").set_value("gpt3-175b").run()
    assert not at.exception
    assert at.error and "\n" not in at.error[0].value.strip()


def test_the_explorer_marks_split_tables_fastest_split():
    at = app("scale", EXPLORER)
    assert not at.dataframe  # predicting every split waits for the button
    at.button(key="split_find").click().run()
    assert not at.exception and not at.error
    rows = split_table(SPLITS, "dgx-a100")
    table, unfit = at.dataframe[0].value, at.dataframe[1].value
    fitting = [r for r in rows if r.fits]
    assert len(table) == len(fitting) and len(table) + len(unfit) == len(rows)
    (best,) = [r for r in rows if r.fastest]
    (marked,) = table[table["fastest"]]["split"].tolist()
    assert marked == f"tp {best.tp} x pp {best.pp} x dp {best.dp}"
    # splits that do not fit have a table of their own, with the memory they need: no empty cells
    assert len(unfit) == sum(not r.fits for r in rows) > 0
    assert not table.isna().any().any() and not unfit.isna().any().any()
    assert table["step_s"].tolist()[3] == pytest.approx(fitting[3].step_s)
    # the chosen split is the fastest, with its own prediction's figures
    assert at.selectbox(key="split_choice").value == marked
    step = predict(
        "network",
        {**SPLITS, "train": True, "tp": best.tp, "pp": best.pp, "microbatches": best.microbatches},
        cluster="dgx-a100",
    )
    figures = shown(at)
    assert percent(figures["MFU"]) == pytest.approx(step.metrics["mfu"], abs=5e-4)
    assert float(figures["TFLOP/s per GPU"]) == pytest.approx(step.metrics["tflops_per_gpu"], abs=0.05)
    assert percent(figures["MFU"]) == pytest.approx(best.mfu, abs=5e-4)
    shares = at.dataframe[2].value["share"].tolist()
    keys = ("compute_share", "tp_comm_share", "dp_comm_share", "idle_share")
    assert shares == pytest.approx([step.metrics[k] for k in keys])
    assert len(at.image) == 1  # the pipeline timeline


def test_the_explorer_shows_another_split_when_chosen():
    at = app("scale", EXPLORER)
    at.button(key="split_find").click().run()
    rows = [r for r in split_table(SPLITS, "dgx-a100") if r.fits]
    other = next(r for r in rows if not r.fastest and r.pp == 4)
    at.selectbox(key="split_choice").set_value(f"tp {other.tp} x pp {other.pp} x dp {other.dp}").run()
    assert not at.exception
    assert percent(shown(at)["MFU"]) == pytest.approx(other.mfu, abs=5e-4)
    # a new setting needs the button again; going back finds the table at once
    at.number_input(key="split_batch").set_value(64).run()
    assert not at.dataframe and at.info
    at.number_input(key="split_batch").set_value(128).run()
    assert len(at.dataframe[0].value) == len(rows)  # the splits that fit


def test_allreduce_bus_bandwidth_is_parsims():
    at = app("scale", {**ALLREDUCE, "ar_nodes": "4"})
    assert not at.exception and not at.error
    size = at.select_slider(key="ar_bytes").value
    figures = shown(at)
    for algorithm in ("ring", "tree", "auto"):
        params = {"bytes": float(size), "algorithm": algorithm, "nodes": 4}
        busbw = predict("allreduce", params, cluster="dgx-a100").metrics["bus_bandwidth_Bps"]
        value, unit = figures[f"{algorithm}: bus bandwidth"].split()
        assert float(value) * {"GB/s": 1e9, "MB/s": 1e6, "TB/s": 1e12}[unit] == pytest.approx(busbw, rel=5e-3)
    table = at.dataframe[0].value
    assert table["buffer"].tolist()[0] == "1 KiB" and table["buffer"].tolist()[-1] == "8 GiB"
    # auto is the faster of ring and tree at every size (shown in GB/s)
    best = table[["ring_busbw_GBps", "tree_busbw_GBps"]].max(axis=1)
    assert table["auto_busbw_GBps"].tolist() == pytest.approx(best.tolist())
    pairs = zip(table["ring_busbw_GBps"], table["tree_busbw_GBps"], strict=True)
    takes = ["tree" if tree >= ring else "ring" for ring, tree in pairs]
    assert table["auto_takes"].tolist() == takes


def test_presentation_mode_keeps_the_cluster_controls_in_the_box():
    at = app("scale", {**ACROSS, "present": "true"})
    assert not at.exception
    assert [e.label for e in at.expander] == ["controls"]
    assert at.select_slider(key="nodes_nodes").value == 16
    assert not at.sidebar.select_slider
