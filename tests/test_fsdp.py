"""FSDP / ZeRO-3 and gradient accumulation in ``data_parallel`` (``workloads.ddp``), and the
scaling efficiency that can never exceed 1 under ZeRO (``methods.predict._with_scaling``)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import parsim
from parsim.base.errors import ParsimError
from parsim.workloads import ddp
from parsim.workloads.base import AllReduce, Block, Kernel, Transfer
from parsim.workloads.registry import make_workload
from parsim.workloads.training import interleaved


def _k(name: str, layer: str) -> Kernel:
    return Kernel.of(name, 1e6, 1e3, 1e3, 10, layer=layer)


def test_spans_cut_where_the_weights_change_and_weightless_kernels_join_their_run():
    assert ddp.spans([-1, 0, 0, -1, 1, 1]) == [(0, 0, 4), (1, 4, 6)]  # the loss-like -1 stays in run 0
    assert ddp.spans([-1, -1]) == [(-1, 0, 2)]
    assert ddp.spans([]) == []


def _two_unit_step() -> ddp.GpuStep:
    forward = [_k("a fwd", "a"), _k("b fwd", "b")]
    backward = [_k("b bwd", "b"), _k("a bwd", "a")]
    return ddp.GpuStep(8.0, forward, backward)


def _sync(**kw) -> ddp.Sync:
    base = {
        "bucket_B": 1.0,  # every layer its own bucket
        "overlap": True,
        "zero": 3,
        "optimizer": "sgd",
        "master_dtype": "float32",
        "weight_dtype": "float16",
    }
    return ddp.Sync(**{**base, **kw})


def test_fsdp_issues_each_gather_ahead_and_before_the_previous_units_reduce_scatter():
    # backward order: b (bucket 0), a (bucket 1); one GPU, prefetch 2
    ops, deps = ddp.ring_step([_two_unit_step()], [("b", 10), ("a", 20)], _sync(), ranks=4)
    names = [op.name for op in ops]
    assert names == [
        "h2d input",
        "all-gather weights 1 (forward 0)",  # unit 0 (a) and unit 1 (b) gathered at once
        "all-gather weights 0 (forward 0)",
        "F0 a",
        "all-gather weights 0 (backward 0)",  # gather 2 waits for unit 0 to free its weights
        "F0 b",
        "all-gather weights 1 (backward 0)",  # issued before b's reduce-scatter (BACKWARD_PRE)
        "B0 b",
        "cast gradients 0 to float32",  # float16 gradients cast to the reduce dtype
        "reduce-scatter bucket 0 (0 MB)",
        "B0 a",
        "cast gradients 1 to float32",
        "reduce-scatter bucket 1 (0 MB)",
        "w -= lr * g",
    ]
    assert deps[1] == deps[2] == ()
    assert deps[4] == (3,) and deps[6] == (5,)  # unit j - 2 ended
    assert deps[3] == (1,) and deps[5] == (2,) and deps[7] == (4,) and deps[10] == (6,)
    assert deps[8] == (7,) and deps[9] == (8,) and deps[11] == (10,) and deps[12] == (11,)
    assert deps[13] == (9, 12)
    assert [op.nbytes for op in ops if isinstance(op, AllReduce)][:2] == [20 * 2, 10 * 2]
    cast = ops[8]
    assert (cast.work.bytes_read, cast.work.bytes_written) == (10 * 2, 10 * 4)
    assert isinstance(ops[3], Block) and [k.name for k in ops[3].kernels] == ["a fwd"]


def test_prefetch_one_waits_for_each_unit_before_gathering_the_next():
    ops, deps = ddp.ring_step([_two_unit_step()], [("b", 10), ("a", 20)], _sync(prefetch=1), ranks=4)
    names = [op.name for op in ops]
    assert names[1:5] == [
        "all-gather weights 1 (forward 0)",
        "F0 a",
        "all-gather weights 0 (forward 0)",
        "F0 b",
    ]
    assert deps[3] == (2,)  # gather of unit 1 after unit 0's block


@pytest.mark.parametrize(("zero", "reduces"), [(0, 2), (1, 2), (2, 6), (3, 6)])
def test_accumulation_reduces_once_unless_the_gradients_are_sharded(zero, reduces):
    # 3 micro-batches, 2 buckets: DDP's no_sync and ZeRO-1 reduce the last; ZeRO-2 and FSDP every one
    ops, _ = ddp.ring_step(
        [_two_unit_step(), _two_unit_step()],
        [("b", 10), ("a", 20)],
        _sync(zero=zero, microbatches=3, weight_dtype="float32"),  # no casts: count collectives only
        ranks=2,
    )
    kinds = [op.kind for op in ops if isinstance(op, AllReduce)]
    assert kinds.count("all_reduce" if zero == 0 else "reduce_scatter") == reduces
    assert sum(isinstance(op, Transfer) for op in ops) == 3 * 2  # each micro-batch's input, per GPU
    assert kinds.count("all_gather") == {0: 0, 1: 1, 2: 1, 3: 3 * 2 * 2}[zero]


def test_recomputation_runs_each_layers_forward_just_before_its_backward():
    again = [_k("a fwd again", "a"), _k("b fwd again", "b")]
    backward = [_k("b bwd", "b"), _k("a bwd", "a")]
    assert [k.name for k in interleaved(again, backward)] == ["b fwd again", "b bwd", "a fwd again", "a bwd"]


LLM = {
    "model": "gpt2",
    "seq": 256,
    "sync": "ring",
    "scaling": "weak",
    "dtype": "bfloat16",
    "optimizer": "adam",
}


def test_a_smaller_prefetch_exposes_the_gathers():
    times = [
        parsim.predict(
            "data_parallel", {**LLM, "batch": 2, "zero": 3, "prefetch": p}, cluster="dgx-a100"
        ).latency_s
        for p in (1, 2, 4)
    ]
    # prefetch 2 hides the gathers; a deeper prefetch only runs them earlier, beside other units,
    # which lose the same share of their SMs to NCCL's channels (model.comm_sms): no faster
    assert times[0] > times[1]
    assert times[2] == pytest.approx(times[1], rel=1e-3)


def test_microbatches_divide_each_gpus_samples():
    with pytest.raises(ParsimError, match="'microbatches' 3 must divide each GPU's 4 samples"):
        make_workload("data_parallel", {**LLM, "batch": 4, "gpus": 2, "microbatches": 3})
    with pytest.raises(ParsimError, match="'microbatches' > 1 .* needs sync=ring"):
        make_workload("data_parallel", {**LLM, "sync": "host", "batch": 4, "gpus": 2, "microbatches": 2})
    with pytest.raises(ParsimError, match="prefetch"):
        make_workload("data_parallel", {**LLM, "batch": 4, "gpus": 2, "zero": 3, "prefetch": 0})


def test_accumulation_amortises_the_update():
    # 4 micro-batches of 2: 4x the samples of one step of 2, one update: more samples per second
    one = parsim.predict(
        "data_parallel", {**LLM, "batch": 2, "gpus": 8, "zero": 1}, device="a100-80gb", link="nvlink3"
    )
    four = parsim.predict(
        "data_parallel",
        {**LLM, "batch": 8, "microbatches": 4, "gpus": 8, "zero": 1},
        device="a100-80gb",
        link="nvlink3",
    )
    assert four.metrics["samples_per_s"] > one.metrics["samples_per_s"]
    assert four.latency_s < 4 * one.latency_s


@pytest.mark.slow
@pytest.mark.parametrize("model", ["gpt2", "gpt3-1.3b"])
@pytest.mark.parametrize("zero", [1, 2])
def test_zero_on_eight_a100s_does_not_scale_above_one(model, zero):
    # the reported bug: 1.0002-1.0006 because each GPU updates only 1/8 of the weights
    params = {**LLM, "model": model, "batch": 4, "gpus": 8, "zero": zero}
    p = parsim.predict("data_parallel", params, device="a100-80gb", link="nvlink3")
    assert 0 < p.metrics["efficiency"] <= 1


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    model=st.sampled_from(["gpt2", "gpt3-125m", "resnet18", "mlp"]),
    gpus=st.sampled_from([2, 4, 8]),
    zero=st.integers(0, 3),
    batch=st.integers(1, 8),
    microbatches=st.sampled_from([1, 2]),
)
def test_weak_scaling_efficiency_never_exceeds_one(model, gpus, zero, batch, microbatches):
    params = {
        "model": model,
        "batch": batch * microbatches,
        "microbatches": microbatches,
        "gpus": gpus,
        "zero": zero,
        "sync": "ring",
        "scaling": "weak",
        "dtype": "bfloat16",
        "optimizer": "adam",
    }
    if model.startswith("gpt"):
        params["seq"] = 128
    p = parsim.predict("data_parallel", params, device="a100-80gb", link="nvlink3")
    assert 0 < p.metrics["efficiency"] <= 1 + 1e-12
    assert p.metrics["speedup"] <= gpus * (1 + 1e-12)


@pytest.mark.slow
def test_fsdp_per_gpu_throughput_stays_flat_from_one_node_to_eight():
    # llm-foundry's MPT-7B on A100 40GB (FULL_SHARD, activation checkpointing) measures 3679 and
    # 3665 tokens/s per GPU on 8 and 64 GPUs: the gathers hide behind the compute at both scales
    base = {
        "model": "mpt-7b",
        "seq": 2048,
        "sync": "ring",
        "scaling": "weak",
        "dtype": "bfloat16",
        "optimizer": "adam",
        "zero": 3,
        "recompute": "full",
        "batch": 2,
    }
    one = parsim.predict("data_parallel", base, cluster="oci-a100-roce")
    eight = parsim.predict("data_parallel", {**base, "nodes": 8}, cluster="oci-a100-roce")
    per_gpu = [p.metrics["samples_per_s"] / p.gpus for p in (one, eight)]
    assert per_gpu[1] == pytest.approx(per_gpu[0], rel=0.05)
    assert eight.metrics["efficiency"] <= 1
