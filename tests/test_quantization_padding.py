"""The experts' FP8 padding copies (``moe_layer_ops.pads_for_quantization``, ``quantization_padding``)
and DeepEP's permutation after its dispatch (``hidden_moves``), by hand and on a whole step."""

from __future__ import annotations

import math

import pytest

from parsim.base.errors import ParsimError
from parsim.studies import pipeline_figures
from parsim.workloads.llms import llm
from parsim.workloads.moe import EXPERT_NODE, QUANTIZATION_PADDING, groups_touched
from parsim.workloads.moe_layer_ops import (
    dispatcher_of,
    hidden_moves,
    pads_for_quantization,
    quantization_padding,
)


def test_only_fp8_dropless_routing_through_a_dispatcher_that_does_not_align_pads():
    fp8 = {"fp8": True, "ep": 8}
    assert pads_for_quantization(fp8)  # the all-to-all dispatcher hands over the counts as routed
    assert pads_for_quantization(fp8 | {"dispatcher": "flex", "flex_backend": "deepep"})
    assert not pads_for_quantization(fp8 | {"dispatcher": "flex"})  # HybridEP pads in its dispatch
    assert not pads_for_quantization(fp8 | {"capacity_factor": 1.0})  # padded to capacity already
    assert not pads_for_quantization({"ep": 8})  # 16-bit GEMMs need no alignment
    assert dispatcher_of({}) == "alltoall" and dispatcher_of({"dispatcher": "flex"}) == "hybridep"


def test_the_padding_copies_read_and_write_the_experts_rows_once_each():
    qwen = llm("qwen3-30b-a3b")  # hidden 2048, 8 experts per token
    forward, backward = quantization_padding(qwen, 4096, "layer 0", "bfloat16", 0)
    rows_B = 4096 * 8 * 2048 * 2  # k T rows of 16-bit hidden states
    probs_B = 4096 * 8 * 4  # their float32 probabilities
    assert [k.work.bytes_read for k in forward] == [rows_B, probs_B, rows_B]
    assert [k.work.bytes_written for k in backward] == [rows_B, rows_B, probs_B]
    assert all(k.part == QUANTIZATION_PADDING for k in forward + backward)
    assert QUANTIZATION_PADDING in EXPERT_NODE  # the experts' node of the combined 1F1B schedule


def test_deepep_receives_each_token_once_per_gpu_its_experts_live_on_then_permutes():
    qwen = llm("qwen3-30b-a3b")  # 128 experts, 8 per token
    # over 8 GPUs (16 experts each) a token's 8 experts miss a GPU with chance C(112, 8) / C(128, 8)
    touched = 8 * (1 - math.comb(112, 8) / math.comb(128, 8))
    assert groups_touched(128, 8, 8) == pytest.approx(touched)
    assert 5.0 < touched < 6.0
    assert hidden_moves(qwen, 16, "deepep", ep=8) == ([(touched, 8)], [(8, touched)])
    assert groups_touched(128, 8, 1) == pytest.approx(1.0)  # one group holds every expert


def _step(**extra: object) -> float:
    params = {"model": "qwen3-30b-a3b", "train": True, "dtype": "bfloat16", "optimizer": "adam", "seq": 256}
    params |= {"gpus": 8, "nodes": 1, "ep": 8, "microbatches": 2, "batch": 16, "distributed_optimizer": True}
    return pipeline_figures.step_figures(params | extra, "dgx-h100")["step_s"]


def test_an_fp8_step_through_deepep_pays_the_padding_and_hybridep_does_not():
    fp8 = {"fp8": True, "fp8_recipe": "tensorwise", "dispatcher": "flex"}
    hybrid, deep = _step(**fp8), _step(**fp8, flex_backend="deepep")
    assert deep > hybrid  # DeepEP's permutation and the padding copies, 48 layers x 2 micro-batches
    bf16_hybrid, bf16_deep = _step(dispatcher="flex"), _step(dispatcher="flex", flex_backend="deepep")
    assert deep - hybrid > bf16_deep - bf16_hybrid  # FP8 adds the padding to the permutation


def test_a_flex_backend_needs_the_flex_dispatcher():
    with pytest.raises(ParsimError, match="flex_backend=deepep needs dispatcher=flex"):
        _step(flex_backend="deepep")
