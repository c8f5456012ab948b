"""Current NVIDIA GPUs and rented clusters: datasheet peaks, and predictions that respect them.

Each new GPU runs the three workloads a user asks of it first (a GEMM, a transformer training step,
LLM serving) through ``parsim.predict``, and no prediction may beat physics: a GEMM cannot finish
before its FLOPs at the datasheet's dense tensor peak, a decode step cannot read the weights faster
than the datasheet's memory bandwidth. Each new cluster runs a two-node data-parallel step, which
cannot be faster than the same weak-scaled step on one node.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import parsim
from parsim.base.dtypes import MATRIX_FORMATS
from parsim.hardware import presets_cluster, presets_gpu_current
from parsim.hardware.presets import LINKS, PROCESSORS
from parsim.hardware.registry import cluster_ids
from parsim.hardware.sources import source_of

NEW_GPUS = [
    "b200",
    "gb200",
    "h100-nvl",
    "a100-pcie-40gb",
    "a100-pcie-80gb",
    "l40s",
    "a10g",
    "l4",
    "rtx-3090",
    "rtx-a6000",
]
NEW_CLUSTERS = [
    "gb200-nvl72",
    "azure-nd-gb200-v6",
    "dgx-h200",
    "dgx-b200",
    "aws-p4d",
    "aws-p5",
    "gcp-a3",
    "azure-nd-h100-v5",
]

# Dense FP16 tensor peaks as the datasheets print them (sparse figures halved), FLOP/s
FP16_DENSE = {
    "b200": 2250e12,  # HGX B200: 4.5 PFLOP/s sparse
    "gb200": 2500e12,  # GB200 NVL72: 5 PFLOP/s sparse per GPU
    "h100-nvl": 835.5e12,  # H100 NVL: 1671 TFLOP/s sparse
    "a100-pcie-40gb": 312e12,  # A100: 624 sparse
    "a100-pcie-80gb": 312e12,
    "l40s": 362.05e12,  # L40S: 733 sparse
    "a10g": 70e12,  # estimate from the GA102 GeForce rate (see the preset)
    "l4": 121e12,  # L4: 242 sparse
    "rtx-3090": 71e12,  # GA102 whitepaper, FP32 accumulate
    "rtx-a6000": 154.8e12,  # RTX A6000: 309.7 sparse
}
PEAK_BANDWIDTH = {  # datasheet memory bandwidth, B/s
    "b200": 8e12,
    "gb200": 8e12,
    "h100-nvl": 3.9e12,
    "a100-pcie-40gb": 1555e9,
    "a100-pcie-80gb": 1935e9,
    "l40s": 864e9,
    "a10g": 600e9,
    "l4": 300e9,
    "rtx-3090": 936e9,
    "rtx-a6000": 768e9,
}
LLAMA2_7B_PARAMS = 6.74e9  # Touvron et al. 2023, Table 1: 7B (6.74 billion parameters)
GPT2_NON_EMBEDDING_PARAMS = 85e6  # GPT-2 small: 12 layers x 12 x 768^2 = 85 M weights in its blocks


def test_new_ids_are_registered_with_their_kind():
    assert set(presets_gpu_current.CURRENT_GPU_PRESETS) == set(NEW_GPUS)
    for pid in NEW_GPUS:
        assert PROCESSORS[pid].kind == "gpu" and PROCESSORS[pid].id == pid
    assert set(NEW_CLUSTERS) <= set(cluster_ids())
    assert "nvlink5" in LINKS and PROCESSORS["b200"].peer_link == "nvlink5"


@pytest.mark.parametrize("pid", NEW_GPUS)
def test_peaks_are_the_datasheets(pid):
    spec = PROCESSORS[pid]
    assert spec.peak_flops_per_s("float16", matrix=True) == pytest.approx(FP16_DENSE[pid])
    assert spec.memory.peak_bandwidth_Bps == pytest.approx(PEAK_BANDWIDTH[pid])
    assert spec.memory.bandwidth_Bps <= spec.memory.peak_bandwidth_Bps
    rates = dict(spec.matrix_flops_per_s)
    assert set(rates) <= set(MATRIX_FORMATS)
    if "float8" in rates:  # FP8 is twice FP16 on every generation that has it (Ada, Hopper, Blackwell)
        assert rates["float8"] == pytest.approx(2 * rates["float16"], rel=0.02)  # L40S: 733 vs 2 x 362.05


def test_fp4_and_fp8_where_the_datasheets_give_them():
    assert dict(PROCESSORS["b200"].matrix_flops_per_s)["float4"] == pytest.approx(9000e12)
    assert dict(PROCESSORS["b200"].matrix_flops_per_s)["float8"] == pytest.approx(4500e12)
    for pid in ("h100-nvl", "l40s", "l4"):
        assert "float8" in dict(PROCESSORS[pid].matrix_flops_per_s)
    for pid in ("a100-pcie-40gb", "a100-pcie-80gb", "a10g", "rtx-3090", "rtx-a6000"):  # Ampere: no FP8
        assert "float8" not in dict(PROCESSORS[pid].matrix_flops_per_s)


def test_vector_peaks_match_datasheets():
    fp32 = {"h100-nvl": 60e12, "l40s": 91.6e12, "l4": 30.3e12, "rtx-3090": 35.6e12, "rtx-a6000": 38.7e12}
    for pid, peak in fp32.items():
        assert PROCESSORS[pid].vector_flops_per_s("float32") == pytest.approx(peak, rel=0.02), pid
    # B200 at the 1965 MHz nvidia-smi reports: 74.4 TFLOP/s, within 10 % of the datasheet's 80
    assert PROCESSORS["b200"].vector_flops_per_s("float32") == pytest.approx(80e12, rel=0.1)


@pytest.mark.parametrize("pid", NEW_GPUS)
def test_matmul_cannot_beat_the_tensor_peak(pid):
    m = n = k = 4096
    p = parsim.predict("matmul", {"m": m, "n": n, "k": k, "dtype": "float16"}, device=pid)
    assert p.latency_s >= 2.0 * m * n * k / FP16_DENSE[pid]


@pytest.mark.parametrize("pid", NEW_GPUS)
def test_training_step_cannot_beat_the_tensor_peak(pid):
    batch, seq = 8, 1024
    params = {
        "model": "gpt2",
        "batch": batch,
        "seq": seq,
        "train": True,
        "dtype": "bfloat16",
        "optimizer": "adam",
    }
    p = parsim.predict("network", params, device=pid)
    # forward + backward: at least 6 FLOPs per block weight and token
    assert p.latency_s >= 6.0 * GPT2_NON_EMBEDDING_PARAMS * batch * seq / FP16_DENSE[pid]


@pytest.mark.parametrize("pid", NEW_GPUS)
def test_decode_cannot_read_weights_faster_than_the_memory(pid):
    p = parsim.predict("llm_serve", {"model": "llama-2-7b"}, device=pid)
    tpot = p.metrics["time_per_output_token_s"]
    assert tpot >= LLAMA2_7B_PARAMS * 2 / PEAK_BANDWIDTH[pid]  # float16 weights, each read once per step
    assert p.metrics["time_to_first_token_s"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("cid", NEW_CLUSTERS)
def test_two_nodes_are_no_faster_than_one_weak_scaled(cid):
    params = {
        "model": "gpt2",
        "batch": 8,
        "seq": 1024,
        "sync": "ring",
        "scaling": "weak",
        "optimizer": "adam",
    }
    one = parsim.predict("data_parallel", {**params, "nodes": 1}, cluster=cid)
    two = parsim.predict("data_parallel", {**params, "nodes": 2}, cluster=cid)
    assert two.latency_s >= one.latency_s * (1 - 1e-9)
    assert two.transfer_bytes > one.transfer_bytes  # the inter-node all-reduce adds traffic


@pytest.mark.parametrize("cid", NEW_CLUSTERS)
def test_cluster_parts_exist_and_nics_are_below_their_line_rate(cid):
    spec = presets_cluster.CLUSTER_PRESETS[cid]
    assert spec.device in PROCESSORS and spec.host in PROCESSORS and spec.fabric in LINKS
    assert PROCESSORS[spec.host].max_gpus >= spec.gpus_per_node
    nic = spec.network.nic
    assert nic.bandwidth_Bps <= nic.peak_bandwidth_Bps


def test_cluster_nics_match_the_rented_configurations():
    gbps = {  # the vendors' pages: Gb/s of NIC line rate per node
        "aws-p4d": 400,
        "aws-p5": 3200,
        "gcp-a3": 1600,
        "azure-nd-h100-v5": 3200,
        "dgx-h200": 3200,
        "dgx-b200": 3200,
        "gb200-nvl72": 72 * 400,
        "azure-nd-gb200-v6": 4 * 400,
    }
    for cid, line_rate in gbps.items():
        network = presets_cluster.CLUSTER_PRESETS[cid].network
        assert network.nics_per_node * network.nic.peak_bandwidth_Bps * 8 / 1e9 == pytest.approx(line_rate), (
            cid
        )
    nvl72 = presets_cluster.CLUSTER_PRESETS["gb200-nvl72"]
    assert nvl72.gpus_per_node == 72 and LINKS[nvl72.fabric].peak_bandwidth_Bps == pytest.approx(900e9)


def test_every_new_cluster_cites_its_sources():
    text = Path(presets_cluster.__file__).read_text(encoding="utf-8")
    for tag in ("[DGXH200]", "[DGXB200]", "[NVL72]", "[AZGB200]", "[AWSP4D]", "[AWSP5]", "[GCPA3]", "[AZND]"):
        assert text.count(tag) >= 3, tag  # in the sources list and next to the numbers


@pytest.mark.parametrize(
    "pid", NEW_GPUS + NEW_CLUSTERS + ["nvlink5", "efa-100g", "eth-200g-tcpxo", "grace-x2", "grace-nvl72"]
)
def test_hardware_list_names_a_source_for_every_new_id(pid, cli):
    assert source_of(pid) != "a hardware file"  # a line of its own in parsim/hardware/sources.py
    code, out, _ = cli("hardware", "list", "--json")
    row = next(r for r in json.loads(out) if r["id"] == pid)
    assert code == 0 and row["source"] == source_of(pid)


def test_fp8_serving_where_the_unit_exists_and_refused_on_ampere():
    fp8 = parsim.predict("llm_serve", {"model": "llama-2-7b", "weights": "float8"}, device="b200")
    fp16 = parsim.predict("llm_serve", {"model": "llama-2-7b"}, device="b200")
    # one byte per weight instead of two: the memory-bound decode step gets faster
    assert fp8.metrics["time_per_output_token_s"] < fp16.metrics["time_per_output_token_s"]
    with pytest.raises(parsim.ParsimError, match="FP8 tensor cores"):
        parsim.predict("llm_serve", {"model": "llama-2-7b", "weights": "float8"}, device="a10g")
