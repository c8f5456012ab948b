"""torchtitan's selective per-op recomputation (``recompute=selective-op``, ``workloads.selective_op``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parsim
from parsim.base.errors import ParsimError
from parsim.workloads import selective_op
from parsim.workloads.base import Block, Kernel
from parsim.workloads.llms import llm
from parsim.workloads.registry import make_workload

FSDP = {"sync": "ring", "scaling": "weak", "dtype": "bfloat16", "optimizer": "adam", "zero": 3}


def test_the_even_calls_of_a_llama_block_run_again_k_as_its_share_of_qkv():
    # wq wk wv wo w1 w3 w2: wk, wo and w3 (up) again; Llama 3 8B has 32 heads and 8 KV heads
    assert selective_op.matmul_order(llm("llama-3-8b")) == ("q", "k", "v", "out", "gate", "up", "down")
    # the fused code's one qkv GEMM runs its k columns again; the eager code's wk whole
    expected = {"qkv": 8 / 48, "k": 1.0, "out": 1.0, "up": 1.0}
    assert selective_op.recomputed_share(llm("llama-3-8b")) == expected


def test_an_ungated_block_runs_k_out_and_down_again():
    # GPT-2: wq wk wv wo up down, 12 heads = 12 KV heads: k is a third of qkv
    assert selective_op.recomputed_share(llm("gpt2")) == {"qkv": 1 / 3, "k": 1.0, "out": 1.0, "down": 1.0}


def _recomputed_gemm_flops(params: dict) -> float:
    workload = make_workload("data_parallel", params)
    kernels: list[Kernel] = []
    for op in workload.ops:
        kernels += list(op.kernels) if isinstance(op, Block) else [op] if isinstance(op, Kernel) else []
    return sum(k.work.flops for k in kernels if k.phase == "recompute" and k.device == 0 and k.work.matrix)


def test_the_recomputed_matmuls_are_the_hand_counted_flops():
    # gpt2, 2 x 128 tokens per GPU: per layer 2 x tokens x hidden x (k's 768 + out's 768 + down's 3072)
    tokens, hidden, layers = 2 * 128, 768, 12
    want = layers * 2 * tokens * hidden * (768 + 768 + 3072)
    params = {**FSDP, "model": "gpt2", "batch": 2, "seq": 128, "recompute": "selective-op"}
    got = _recomputed_gemm_flops(params)
    assert got == pytest.approx(want, rel=1e-9)


def test_the_block_keeps_its_input_the_odd_matmuls_and_the_attention_output():
    # gpt2: input 768 + q 768 + v 768 + up 3072 + attention output 768 elements per token
    assert selective_op.kept_per_token(llm("gpt2")) == 768 * 4 + 3072


def test_selective_op_costs_more_than_none_and_less_than_full():
    def latency(recompute: str) -> float:
        params = {**FSDP, "model": "gpt2", "batch": 4, "seq": 512, "recompute": recompute}
        return parsim.predict("data_parallel", params, cluster="dgx-a100").latency_s

    assert latency("none") < latency("selective-op") < latency("full")


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(["gpt2", "llama-3-8b", "llama-2-13b", "mpt-7b", "gpt3-1.3b"]))
def test_the_kept_activations_lie_between_full_and_none(model):
    from parsim.workloads.transformer_memory import layer_activation_B

    config = llm(model)
    full, op, none = (
        layer_activation_B(config, 2, 1024, "bfloat16", recompute=r) for r in ("full", "selective-op", "none")
    )
    assert full < op < none


def test_an_unknown_recompute_is_refused_with_the_choices():
    with pytest.raises(ParsimError, match="selective-op"):
        make_workload("data_parallel", {**FSDP, "model": "gpt2", "batch": 2, "seq": 128, "recompute": "op"})
