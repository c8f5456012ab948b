"""2D parallelism in ``data_parallel`` (``workloads.fsdp_tp``): tensor parallel inside a node, FSDP
over the tensor-parallel groups, as torchtitan runs it."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import parsim
from parsim.base.errors import ParsimError
from parsim.workloads import ddp, fsdp_tp
from parsim.workloads.base import AllReduce, Block, Kernel
from parsim.workloads.llms import llm
from parsim.workloads.parallel3d import RECOMPUTE_PHASE
from parsim.workloads.registry import make_workload
from parsim.workloads.transformer_ops import EMBEDDING


def _k(name: str, layer: str, phase: str = "") -> Kernel:
    kernel = Kernel.of(name, 1e6, 1e3, 1e3, 10, layer=layer)
    return kernel.but(phase=phase) if phase else kernel


def _sync(**kw) -> ddp.Sync:
    base = {
        "bucket_B": 1.0,  # every layer its own bucket
        "overlap": True,
        "zero": 3,
        "optimizer": "sgd",
        "master_dtype": "float32",
        "weight_dtype": "float16",
        "ranks": 4,  # 8 GPUs of one node in pairs: 4 FSDP ranks, 4 of them in the node
        "per_node": 4,
        "tp": 2,
        "tp_B": 100.0,
        "layers": 1,
    }
    return ddp.Sync(**{**base, **kw})


def _block_step(replayed: bool) -> ddp.GpuStep:
    forward = [_k("attn fwd", "h.0.attn"), _k("mlp fwd", "h.0.mlp")]
    again = [_k("mlp again", "h.0.mlp", RECOMPUTE_PHASE)] if replayed else []
    backward = [*again, _k("mlp bwd", "h.0.mlp"), _k("attn bwd", "h.0.attn")]
    return ddp.GpuStep(8.0, forward, backward)


def test_each_unit_carries_its_sub_layers_gather_and_scatter_over_the_tp_group():
    ops, _ = ddp.ring_step([_block_step(False)], [("h.0.mlp", 10), ("h.0.attn", 20)], _sync(), ranks=4)
    blocks = [op for op in ops if isinstance(op, Block)]
    assert [b.name for b in blocks] == ["F0 h.0.attn", "F0 h.0.mlp", "B0 h.0.mlp", "B0 h.0.attn"]
    for block in blocks:  # one sub-layer each: an all-gather and a reduce-scatter of 100 B over 2 GPUs
        assert [(c.kind, c.nbytes, c.ranks, c.per_node) for c in block.collectives] == [
            ("all_gather", 100.0, 2, 2),
            ("reduce_scatter", 100.0, 2, 2),
        ]
    fsdp = [op for op in ops if isinstance(op, AllReduce)]
    # FSDP's gathers (float16 slices) and reduce-scatters (float32) span the 4 groups, 4 in the node
    assert [(op.kind, op.nbytes) for op in fsdp] == [
        ("all_gather", 40.0),
        ("all_gather", 20.0),
        ("all_gather", 20.0),
        ("all_gather", 40.0),
        ("reduce_scatter", 40.0),
        ("reduce_scatter", 80.0),
    ]
    assert {(op.ranks, op.per_node) for op in fsdp} == {(4, 4)}


def test_full_recomputation_replays_the_forward_exchanges_in_the_backward_unit():
    step = _block_step(True)
    ops, _ = ddp.ring_step([step], [("h.0.mlp", 10), ("h.0.attn", 20)], _sync(tp_replay=True), ranks=4)
    counts = {op.name: len(op.collectives) for op in ops if isinstance(op, Block)}
    assert counts == {"F0 h.0.attn": 2, "F0 h.0.mlp": 2, "B0 h.0.mlp": 4, "B0 h.0.attn": 2}
    # selective recomputation keeps the exchanges' outputs (torchtitan saves the collectives)
    ops, _ = ddp.ring_step([step], [("h.0.mlp", 10), ("h.0.attn", 20)], _sync(tp_replay=False), ranks=4)
    assert {len(op.collectives) for op in ops if isinstance(op, Block)} == {2}


def test_one_gpu_keeps_a_slice_of_each_linear_and_every_norm_whole():
    config = llm("llama-3-8b")
    norm = config.norm_params
    split = fsdp_tp.split_layer_params(
        [("lm_head", 1000), ("ln_f", norm), ("h.0.mlp", norm + 1001), (EMBEDDING, 998)], config, 4
    )
    assert split == (("lm_head", 250), ("ln_f", norm), ("h.0.mlp", norm + 251), (EMBEDDING, 250))
    assert fsdp_tp.split_layer_params([("h.0.mlp", 7)], config, 1) == (("h.0.mlp", 7),)
    # an exchange: the micro-batch's tokens x hidden x 2 bytes
    assert fsdp_tp.exchange_B(2 * 8192, config, 2) == 2 * 8192 * 4096 * 2


LLM = {
    "model": "gpt2",
    "seq": 256,
    "sync": "ring",
    "scaling": "weak",
    "dtype": "bfloat16",
    "optimizer": "adam",
    "zero": 3,
    "batch": 2,
    "gpus": 8,
}


def test_the_2d_step_runs_over_the_tp_groups_and_counts_their_samples():
    workload = make_workload("data_parallel", {**LLM, "tp": 2, "nodes": 2})
    fsdp = [op for op in workload.ops if isinstance(op, AllReduce)]
    assert {(op.ranks, op.per_node) for op in fsdp} == {(8, 4)}  # 16 GPUs in pairs: 8 groups, 4 a node
    blocks = [op for op in workload.ops if isinstance(op, Block) and op.device == 0]
    # gpt2's 25 MB buckets hold two blocks (four sub-layers): eight exchanges a unit; none for the embedding
    subs = [len({k.layer for k in b.kernels if k.layer.startswith("h.")}) for b in blocks]
    assert [len(b.collectives) for b in blocks] == [2 * n for n in subs]
    assert subs[:3] == [0, 4, 4]
    assert blocks[1].collectives[0].nbytes == 2 * 256 * 768 * 2  # gpt2: hidden 768, bfloat16
    # the forward pass gathers each GPU's slice of every weight once, in bfloat16
    forward = [op for op in fsdp if op.kind == "all_gather" and "(forward 0)" in op.name]
    whole = fsdp_tp.split_layer_params(_params_of("gpt2"), llm("gpt2"), 1)
    sliced = fsdp_tp.split_layer_params(whole, llm("gpt2"), 2)
    assert sum(op.nbytes for op in forward) == 2 * sum(n for _, n in sliced)
    p = parsim.predict("data_parallel", {**LLM, "tp": 2}, cluster="dgx-a100")
    # batch 2 on each of the 4 groups a step (steps back to back: throughput_per_s)
    assert p.metrics["samples_per_s"] == pytest.approx(2 * 4 * p.throughput_per_s)


def test_a_2d_split_parsim_cannot_run_is_refused_with_the_field():
    with pytest.raises(ParsimError, match=r"'tp' must divide a node's 'gpus' \(8\).*: 3"):
        make_workload("data_parallel", {**LLM, "tp": 3})
    with pytest.raises(ParsimError, match="needs sync=ring zero=3"):
        make_workload("data_parallel", {**LLM, "tp": 2, "zero": 1})
    with pytest.raises(ParsimError, match="is not one"):
        make_workload("data_parallel", {**LLM, "model": "resnet18", "tp": 2, "seq": None})
    with pytest.raises(ParsimError, match=r"'tp' must divide gpt2's heads \(12\): 8"):
        make_workload("data_parallel", {**LLM, "tp": 8})


def test_the_cli_predicts_a_2d_step_and_refuses_a_bad_one_with_exit_2():
    base = [sys.executable, "-m", "parsim", "predict", "data_parallel", "model=gpt2", "seq=256", "batch=2"]
    base += [
        "sync=ring",
        "scaling=weak",
        "dtype=bfloat16",
        "optimizer=adam",
        "zero=3",
        "--cluster",
        "dgx-a100",
    ]
    good = subprocess.run([*base, "tp=2"], capture_output=True, text=True, timeout=300)
    assert good.returncode == 0, good.stderr
    assert "tp=2" in good.stdout
    bad = subprocess.run([*base, "tp=5"], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "'tp'" in bad.stderr + bad.stdout


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tp=st.sampled_from([2, 4]), gpus=st.sampled_from([4, 8]), recompute=st.sampled_from(["none", "full"]))
def test_a_2d_step_never_scales_above_its_gpus(tp, gpus, recompute):
    params = {**LLM, "gpus": gpus, "tp": tp, "recompute": recompute}
    p = parsim.predict("data_parallel", params, device="a100-80gb", link="nvlink3")
    assert 0 < p.metrics["efficiency"] <= 1 + 1e-12
    # each GPU holds about 1/tp of every weight, FSDP shards that over gpus / tp
    config = llm("gpt2")
    whole = fsdp_tp.split_layer_params(_params_of("gpt2"), config, 1)
    held = sum(n for _, n in fsdp_tp.split_layer_params(whole, config, tp))
    total = sum(n for _, n in whole)
    kept = (2 * config.layers + 1) * config.norm_params  # each block's two norms and the final one
    assert math.ceil(total / tp) <= held <= total / tp + kept + len(whole)


def _params_of(model: str) -> tuple[tuple[str, int], ...]:
    from parsim.workloads.training import llm_layer_params

    return llm_layer_params(llm(model))


SCENARIO = """
title = "FSDP alone or with tensor parallelism in the node"
lesson = "2D: tp GPUs split each layer, FSDP shards over the groups."
plot = "bars"

[defaults]
workload = "data_parallel"
cluster = "dgx-a100"

[defaults.params]
model = "gpt2"
seq = 256
batch = 2
sync = "ring"
scaling = "weak"
dtype = "bfloat16"
optimizer = "adam"
zero = 3

[[cases]]
label = "FSDP over 8 GPUs"

[[cases]]
label = "FSDP over 4 pairs, tp=2"

[cases.params]
model = "gpt2"
seq = 256
batch = 2
sync = "ring"
scaling = "weak"
dtype = "bfloat16"
optimizer = "adam"
zero = 3
tp = 2
"""


def test_a_scenario_compares_fsdp_with_the_2d_split():
    from parsim.studies.scenarios import loads_scenario, run_scenario

    result = run_scenario(loads_scenario(SCENARIO))
    one, two = (r.prediction for r in result.results)
    assert one.params.get("tp", 1) == 1 and two.params["tp"] == 2
    # 8 GPUs either way; the 2D step runs 4 replicas of batch 2 where FSDP alone runs 8
    step_one, step_two = 1 / one.throughput_per_s, 1 / two.throughput_per_s
    assert one.metrics["samples_per_s"] == pytest.approx(16 / step_one)
    assert two.metrics["samples_per_s"] == pytest.approx(8 / step_two)
