"""Megatron-LM's features in the 3D-parallel step (``workloads.megatron``, ``workloads.pipeline_schedule``):
hand-computed schedules, collectives and memory, the invariants the features keep, and the refusals."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parsim
from parsim.base.errors import ParsimError
from parsim.workloads import megatron, parallel3d
from parsim.workloads.llms import LLMS
from parsim.workloads.pipeline_schedule import interleaved, order, waits
from parsim.workloads.registry import make_workload
from parsim.workloads.transformer_memory import layer_activation_B

SMALL = {
    "model": "megatron-1.7b",
    "train": True,
    "dtype": "bfloat16",
    "optimizer": "adam",
    "seq": 2048,
    "gpus": 8,
}


def test_interleaved_order_by_hand():
    # p=2, v=2, m=2: stage 0 warms up with 2(p-1) + (v-1)p = 4 forwards (all of them), stage 1 with 2
    assert interleaved(0, 2, 2, 2) == [
        ("F", 0, 0), ("F", 0, 1), ("F", 1, 0), ("F", 1, 1),
        ("B", 1, 0), ("B", 1, 1), ("B", 0, 0), ("B", 0, 1),
    ]  # fmt: skip
    assert interleaved(1, 2, 2, 2) == [
        ("F", 0, 0), ("F", 0, 1), ("F", 1, 0), ("B", 1, 0),
        ("F", 1, 1), ("B", 1, 1), ("B", 0, 0), ("B", 0, 1),
    ]  # fmt: skip
    # one chunk is plain 1F1B
    assert order(0, 4, 1, 6)[:5] == [("F", 0, 0), ("F", 0, 1), ("F", 0, 2), ("F", 0, 3), ("B", 0, 0)]


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6), st.integers(2, 4), st.integers(1, 4))
def test_interleaved_runs_every_pass_once_forward_first(stages, chunks, rounds):
    m = stages * rounds
    for s in range(stages):
        passes = interleaved(s, stages, chunks, m)
        assert sorted(passes) == sorted((k, c, i) for k in "FB" for c in range(chunks) for i in range(m))
        at = {p: n for n, p in enumerate(passes)}
        assert all(at[("F", c, i)] < at[("B", c, i)] for c in range(chunks) for i in range(m))


def test_a_chunk_waits_for_the_previous_virtual_stage():
    # stage 0's chunk 1 takes micro-batch 3 from the last stage's chunk 0 (virtual stage p - 1)
    assert waits("F", 0, 1, 3, 4, 2, 8) == [("sendF", 3, 0 * 8 + 3)]
    assert waits("F", 2, 1, 3, 4, 2, 8) == [("sendF", 1, 1 * 8 + 3)]
    assert waits("B", 3, 0, 5, 4, 2, 8) == [("sendB", 0, 1 * 8 + 5)]
    assert waits("B", 3, 1, 5, 4, 2, 8) == []  # the last virtual stage starts the backward pass
    assert waits("F", 0, 0, 0, 4, 2, 8) == []


def test_interleaving_shrinks_the_bubble():
    base = {**SMALL, "batch": 16, "tp": 2, "pp": 4, "microbatches": 8, "nodes": 1}
    plain = parsim.predict("network", base, cluster="dgx-a100")
    inter = parsim.predict("network", {**base, "virtual_stages": 2}, cluster="dgx-a100")
    assert inter.latency_s < plain.latency_s
    assert inter.metrics["idle_share"] < plain.metrics["idle_share"]
    assert inter.metrics["bubble_ideal"] == pytest.approx(3 / (2 * 8 + 3))
    assert plain.metrics["bubble_ideal"] == pytest.approx(3 / (8 + 3))


def test_sequence_parallel_turns_each_all_reduce_into_a_scatter_and_a_gather():
    plain = megatron.tp_collectives(1e6, 4, 3, "forward", False)
    split = megatron.tp_collectives(1e6, 4, 3, "forward", True)
    assert [op.kind for op in plain] == ["all_reduce"] * 6
    assert [op.kind for op in split] == ["all_gather", "reduce_scatter"] * 6
    assert {op.nbytes for op in split} == {1e6} and megatron.tp_collectives(1e6, 1, 3, "x", True) == ()


def test_sequence_parallel_activations_are_korthikantis():
    # with sequence parallelism every term splits over t: sbh (34/t + 5as/(ht)) (paper, eq. 4)
    config = LLMS["gpt3-175b"]
    sbh, a, s, h, t = 2048 * 12288, 96, 2048, 12288, 8
    got = layer_activation_B(config, 1, 2048, "float16", t, "none", "unfused", True, True)
    assert got == pytest.approx(sbh * (34 / t + 5 * a * s / (h * t)))
    assert layer_activation_B(config, 1, 2048, "float16", t, "selective", "unfused", True, True) == (
        pytest.approx(sbh * 34 / t)
    )


def test_sequence_parallel_splits_the_norms_work():
    base = {**SMALL, "batch": 8, "tp": 8, "nodes": 1}
    plain, split = (make_workload("network", {**base, "sequence_parallel": sp}) for sp in (False, True))
    norm = [k for k in plain.ops[1].kernels if " ln_1 " in f" {k.name} "][0]
    norm_sp = [k for k in split.ops[1].kernels if " ln_1 " in f" {k.name} "][0]
    assert norm_sp.work.bytes_read == pytest.approx(norm.work.bytes_read / 8)
    assert split.memory.activations_B < plain.memory.activations_B


def test_the_distributed_optimizer_shards_the_state_and_splits_the_reduction():
    base = {**SMALL, "batch": 64, "tp": 1, "nodes": 2}  # dp = 16
    plain, dist = (make_workload("network", {**base, "distributed_optimizer": d}) for d in (False, True))
    assert dist.memory.optimizer_B == pytest.approx(plain.memory.optimizer_B / 16)
    held = plain.memory.weights_B / 6  # float32 master + bfloat16 copy
    assert dist.memory.weights_B == pytest.approx(held * (2 + 4 / 16))
    kinds = [op.kind for op in dist.ops if getattr(op, "layer", "") == "dp sync"]
    assert kinds == ["reduce_scatter", "all_gather"]
    assert [op.kind for op in plain.ops if getattr(op, "layer", "") == "dp sync"] == ["all_reduce"]


def test_bfloat16_moments_halve_the_state_and_the_moments_traffic_by_hand():
    """The precision-aware optimizer (``optimizer_moments=bfloat16``): Adam reads w, g (float32) and
    the two moments (2 bytes each) and writes w and the moments: 12 bytes read and 8 written a
    parameter against 16 and 12; the sharded state is half (the master weights are unchanged)."""
    from parsim.workloads.optimizers import adam_kernel

    full, half = (
        adam_kernel("step", 1000, "float32"),
        adam_kernel("step", 1000, "float32", moments_dtype="bfloat16"),
    )
    assert (full.work.bytes_read, full.work.bytes_written) == (16_000, 12_000)
    assert (half.work.bytes_read, half.work.bytes_written) == (12_000, 8_000)
    assert half.work.flops == full.work.flops
    base = {**SMALL, "batch": 64, "tp": 1, "nodes": 2, "distributed_optimizer": True}  # dp = 16
    fp32, bf16 = (make_workload("network", {**base, "optimizer_moments": m}) for m in ("float32", "bfloat16"))
    assert bf16.memory.optimizer_B == pytest.approx(fp32.memory.optimizer_B / 2)
    assert (
        bf16.memory.weights_B == fp32.memory.weights_B and bf16.memory.gradients_B == fp32.memory.gradients_B
    )

    def update(w):
        return next(k for op in w.ops if getattr(op, "layer", "") == "optimizer" for k in op.kernels)

    stepped = fp32.memory.optimizer_B / 8  # the shard's parameters: two float32 moments each
    assert update(bf16).work.bytes_read == pytest.approx(12 * stepped)
    assert update(fp32).work.bytes_read == pytest.approx(16 * stepped)
    # the default keeps the moments in the master dtype, float64 included: 4 arrays of 8 bytes
    f64 = make_workload("network", {**SMALL, "batch": 64, "tp": 2, "nodes": 1, "dtype": "float64"})
    plain = make_workload("network", {**SMALL, "batch": 64, "tp": 2, "nodes": 1, "dtype": "float32"})
    assert update(f64).work.bytes_read == pytest.approx(2 * update(plain).work.bytes_read)


def test_context_parallelism_halves_each_ranks_attention_and_tokens():
    base = {**SMALL, "tp": 1, "nodes": 1}  # one sequence per micro-batch: dp 8, or dp 4 x cp 2
    one, two = (make_workload("network", {**base, "cp": cp, "batch": 8 // cp}) for cp in (1, 2))

    def attention(w):
        return sum(k.work.flops for k in w.ops[1].kernels if k.library.fused_attention)

    def linear(w):
        return sum(k.work.flops for k in w.ops[1].kernels if k.part == "qkv")

    # the causal square of 2048 tokens, split evenly over two ranks (each does cp x its chunk's square)
    assert attention(two) == pytest.approx(attention(one) / 2, rel=0.01)
    assert linear(two) == pytest.approx(linear(one) / 2)  # the blocks see 4096 tokens per sequence
    assert (
        parallel3d.layout(LLMS["megatron-1.7b"], {**base, "batch": 4, "cp": 2, "pp": 1, "microbatches": 1}).dp
        == 4
    )
    assert any(getattr(op, "layer", "") == "context" for op in two.ops)


def test_fp8_runs_the_block_linears_at_the_fp8_rate_and_is_faster_on_h100():
    base = {**SMALL, "batch": 64, "microbatches": 2, "tp": 1, "nodes": 1}  # micro-batches of 4
    w = make_workload("network", {**base, "fp8": True})
    gemms = [k for k in w.ops[1].kernels if k.part in megatron.FP8_LINEARS and k.library.gemm_mn]
    assert gemms and all(k.library.math == "float8" for k in gemms)
    assert any("fp8 cast" in k.name for k in w.ops[1].kernels)
    bf16 = parsim.predict("network", base, cluster="dgx-h100")
    fp8 = parsim.predict("network", {**base, "fp8": True}, cluster="dgx-h100")
    assert fp8.latency_s < bf16.latency_s


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"virtual_stages": 2}, "needs a pipeline: pp must be > 1"),
        ({"pp": 4, "microbatches": 2, "virtual_stages": 2, "batch": 4}, "must be a multiple of pp=4"),
        ({"cp": 2, "attention": "unfused"}, "'attention' must be flash"),
        ({"cp": 3, "seq": 2048, "gpus": 3}, "'seq' 2048 must divide by 2 x cp = 6"),
        ({"fp8": True, "dtype": "float32"}, "'dtype' must be bfloat16 or float16"),
        ({"optimizer_moments": "bfloat16"}, "runs under the distributed optimizer only"),
        (
            {"optimizer_moments": "bfloat16", "distributed_optimizer": True, "optimizer": "sgd"},
            "sets Adam's moments; optimizer=sgd keeps none",
        ),
        (
            {"optimizer_moments": "bfloat16", "distributed_optimizer": True, "dtype": "float32"},
            "'dtype' must be bfloat16 or float16: float32",
        ),
    ],
)
def test_refused_feature_combinations_name_the_field(extra, message):
    with pytest.raises(ParsimError, match=message):
        make_workload("network", {**SMALL, "batch": 8, "nodes": 1, "tp": 1, **extra})


def test_fp8_on_a_gpu_without_fp8_tensor_cores_is_refused():
    with pytest.raises(ParsimError, match="fp8=true needs FP8 tensor cores"):
        parsim.predict("network", {**SMALL, "batch": 8, "nodes": 1, "fp8": True}, cluster="dgx-a100")


FEATURES = [
    "sequence_parallel=true",
    "distributed_optimizer=true",
    "optimizer_moments=bfloat16",
    "virtual_stages=2",
    "fp8=true",
]
LLAMA_CLI = [
    "predict", "network", "model=llama-2-13b", "batch=32", "seq=4096", "train=true", "dtype=bfloat16",
    "optimizer=adam", "tp=2", "pp=4", "microbatches=8", "nodes=2", "gpus=8", "--cluster", "dgx-h100",
]  # fmt: skip


def test_the_features_are_reachable_from_the_cli(cli):
    code, out, err = cli(*LLAMA_CLI, *FEATURES, "cp=1")
    assert code == 0, err
    assert "1F1B bubble" in out and "(p-1)/(vm+p-1)" in out


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["virtual_stages=2", "microbatches=2"], "'microbatches' 2 must be a multiple of pp=4"),
        (["cp=0"], "'cp' input should be greater than 0: 0"),
        (["cp=3"], "does not divide the 16 GPUs"),
        (["fp8=maybe"], "'fp8'"),
        (["optimizer_moments=float16"], "'optimizer_moments' input should be 'float32' or 'bfloat16'"),
        (["optimizer_moments=bfloat16"], "set distributed_optimizer=true"),
    ],
)
def test_bad_feature_values_exit_2_with_one_line(cli, extra, expected):
    keys = {e.split("=")[0] for e in extra}
    code, _, err = cli(*(a for a in LLAMA_CLI if a.split("=")[0] not in keys), *extra)
    assert code == 2 and expected in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_scenario_file_turns_the_features_on(cli, tmp_path):
    scenario = tmp_path / "megatron.toml"
    scenario.write_text(
        'title = "Megatron features"\n'
        'lesson = "Interleaving, sequence parallelism, the distributed optimizer and FP8 together."\n'
        "[defaults]\n"
        'workload = "network"\n'
        'cluster = "dgx-h100"\n'
        'params = { model = "llama-2-13b", batch = 32, seq = 4096, train = true, dtype = "bfloat16", '
        'optimizer = "adam", tp = 2, pp = 4, microbatches = 8, nodes = 2, gpus = 8 }\n'
        "[[cases]]\n"
        'label = "plain 1F1B"\n'
        "params = {}\n"
        "[[cases]]\n"
        'label = "interleaved, SP, distributed optimizer, FP8"\n'
        "params = { virtual_stages = 2, sequence_parallel = true, distributed_optimizer = true, "
        "fp8 = true }\n"
    )
    code, out, err = cli("run", str(scenario), "--json")
    assert code == 0, err
    report = json.loads(out)
    rows = report["cases"] if isinstance(report, dict) else report
    assert len(rows) == 2


@pytest.mark.slow
def test_the_training_metrics_are_read_from_the_prediction():
    from parsim.studies import published

    rows = {row.id: row for row in published.load_rows()}
    nemo, kor = rows["nemo2407-llama2-7b-8"], rows["kor22-t5-175b-sp-selective"]
    p = published.predict(nemo.workload, nemo.params, cluster=nemo.device)
    assert published.predicted(nemo) == pytest.approx(16 * 8 * 4096 / p.latency_s / 8)  # tokens/s per GPU
    step = published.predict(kor.workload, kor.params, cluster=kor.device)
    assert published.predicted(kor) == pytest.approx(step.latency_s)
    assert {"sequence_parallel": True, "virtual_stages": 3}.items() <= kor.params.items()


def test_splits_keep_cp_and_skip_what_interleaving_refuses():
    config = LLMS["megatron-1.7b"]
    params = {
        **SMALL,
        "batch": 16,
        "nodes": 1,
        "tp": 1,
        "pp": 1,
        "microbatches": 1,
        "cp": 2,
        "attention": "flash",
    }
    found = parallel3d.splits(config, params, micro=1)
    # 8 GPUs over cp=2: tp x pp x dp = 4, the batch of 16 in micro-batches of one
    assert {(s["tp"], s["pp"]) for s in found} == {(1, 1), (1, 2), (1, 4), (2, 1), (2, 2), (4, 1)}
    assert all(parallel3d.layout(config, s).gpus == 8 for s in found)
    interleaved_splits = parallel3d.splits(config, {**params, "virtual_stages": 2}, micro=1)
    # pp=1 cannot interleave; (1, 2): 8 micro-batches per replica, (2, 2): 16, (1, 4): 16
    assert {(s["tp"], s["pp"]) for s in interleaved_splits} == {(1, 2), (1, 4), (2, 2)}
