"""The experts' FP8 padding copies (``moe_layer_ops.pads_for_quantization``, ``quantization_padding``)
and DeepEP's permutation after its dispatch (``hidden_moves``): by hand, then where they land in the
3D-parallel step of a tiny MoE (4 layers, hidden 64, 8 experts, top-2; ``tests.systems.TINY_MOE``):
which pass, how many, recomputed under full recomputation, never a CUDA graph's node, and in the
experts' half of the combined 1F1B schedule."""

from __future__ import annotations

import math

import attrs
import pytest

from parsim.base.errors import ParsimError
from parsim.workloads import parallel3d
from parsim.workloads.base import Block, Workload
from parsim.workloads.llms import llm
from parsim.workloads.moe import EXPERT_PERMUTATION, QUANTIZATION_PADDING, groups_touched
from parsim.workloads.moe_layer_ops import (
    MCORE_MOE_FORWARD_OPS,
    dispatcher_of,
    hidden_moves,
    layer_ops,
    pads_for_quantization,
    quantization_padding,
)
from tests.systems import TINY_MOE as TINY
from tests.systems import pass_named, tiny_step

FP8 = {"fp8": True, "fp8_recipe": "tensorwise"}
DEEPEP = {"dispatcher": "flex", "flex_backend": "deepep"}


def test_only_fp8_dropless_routing_through_a_dispatcher_that_does_not_align_pads():
    fp8 = {"fp8": True, "ep": 8}
    assert pads_for_quantization(fp8)  # the all-to-all dispatcher hands over the counts as routed
    assert pads_for_quantization(fp8 | DEEPEP)
    assert not pads_for_quantization(fp8 | {"dispatcher": "flex"})  # HybridEP pads in its dispatch
    assert not pads_for_quantization(fp8 | {"capacity_factor": 1.0})  # padded to capacity already
    assert not pads_for_quantization({"ep": 8})  # 16-bit GEMMs need no alignment
    assert dispatcher_of({}) == "alltoall" and dispatcher_of({"dispatcher": "flex"}) == "hybridep"
    assert dispatcher_of(DEEPEP) == "deepep"


def test_the_padding_copies_read_and_write_the_experts_rows_once_each():
    qwen = llm("qwen3-30b-a3b")  # hidden 2048, 8 experts per token
    forward, backward = quantization_padding(qwen, 4096, "layer 0", "bfloat16", 0)
    rows_B = 4096 * 8 * 2048 * 2  # k T rows of 16-bit hidden states
    probs_B = 4096 * 8 * 4  # their float32 probabilities
    assert [k.work.bytes_read for k in forward] == [rows_B, probs_B, rows_B]
    assert [k.work.bytes_written for k in forward] == [rows_B, probs_B, rows_B]
    assert [k.work.bytes_read for k in backward] == [rows_B, rows_B, probs_B]
    assert all(k.part == QUANTIZATION_PADDING for k in forward + backward)


def test_deepep_receives_each_token_once_per_gpu_its_experts_live_on_then_permutes():
    qwen = llm("qwen3-30b-a3b")  # 128 experts, 8 per token
    # over 8 GPUs (16 experts each) a token's 8 experts miss a given GPU with chance C(112, 8) / C(128, 8)
    touched = 8 * (1 - math.comb(112, 8) / math.comb(128, 8))
    assert groups_touched(128, 8, 8) == pytest.approx(touched)
    assert groups_touched(128, 8, 1) == pytest.approx(1.0)  # one group holds every expert
    assert groups_touched(128, 8, 128) == pytest.approx(8.0)  # one expert a group: k groups
    assert hidden_moves(qwen, 16, "deepep", ep=8) == ([(touched, 8)], [(8, touched)])
    # its permutation is the experts' work (after the dispatch), the all-to-all one the dispatcher's
    ops = layer_ops(qwen, 4096, "layer 0", "bfloat16", 0, local=16, dispatcher="deepep", ep=8)
    assert ops[0].part == EXPERT_PERMUTATION and ops[MCORE_MOE_FORWARD_OPS].part == EXPERT_PERMUTATION
    assert ops[0].work.bytes_read == pytest.approx(4096 * 8 * 4 + touched * 4096 * 2048 * 2)
    with pytest.raises(ValueError, match="dispatcher must be one of"):
        hidden_moves(qwen, 16, "flex")


_step = tiny_step
_pass = pass_named


def _copies(workload: Workload, name: str) -> list[str]:
    return [k.name for k in _pass(workload, name).kernels if k.part == QUANTIZATION_PADDING]


def test_each_moe_layer_pads_three_times_forward_and_three_backward():
    fwd, bwd = _copies(_step(**FP8), "F"), _copies(_step(**FP8), "B")
    assert len(fwd) == 3 * TINY.layers and all(n.endswith("fwd") for n in fwd)
    assert len(bwd) == 3 * TINY.layers and all(n.endswith("bwd") for n in bwd)
    assert len(_copies(_step(**FP8, **DEEPEP), "F")) == 3 * TINY.layers
    assert len(_copies(_step(**FP8, ep=1), "F")) == 3 * TINY.layers  # TEGroupedMLP pads without EP too


@pytest.mark.parametrize(
    "given",
    [
        {},  # 16-bit GEMMs
        FP8 | {"dispatcher": "flex"},  # HybridEP
        FP8 | {"capacity_factor": 1.0},  # dropped and padded to capacity
    ],
)
def test_no_copies_where_nothing_needs_aligning(given):
    assert _copies(_step(**given), "F") == [] and _copies(_step(**given), "B") == []


def test_a_dense_model_never_pads():
    dense = attrs.evolve(TINY, name="tiny-dense", experts=0, experts_per_token=0)
    assert _copies(_step(dense, **FP8, ep=1), "F") == []


def test_full_recomputation_runs_the_forward_copies_again_in_the_backward():
    again = _copies(_step(**FP8, recompute="full"), "B")
    assert len(again) == 6 * TINY.layers
    assert sum(n.endswith(parallel3d.RECOMPUTED) for n in again) == 3 * TINY.layers


def test_no_cuda_graph_replays_a_copy():
    step = _step(**FP8, cuda_graphs="attn,moe_router,moe_preprocess")
    kernels = _pass(step, "F").kernels + _pass(step, "B").kernels
    copies = [k for k in kernels if k.part == QUANTIZATION_PADDING]
    assert copies and not any(k.issue.graph_node for k in copies)
    assert any(k.issue.graph_node for k in kernels)  # the graphs did replay something


def test_under_ep_overlap_the_copies_sit_in_the_experts_half_of_each_layer():
    step = _step(**FP8, ep_overlap=True, microbatches=2)
    forward = next(
        op
        for op in step.ops
        if isinstance(op, Block) and op.name == "F" and any(c.beside for c in op.collectives)
    )
    paired = [op for op in forward.collectives if op.beside]
    assert paired  # the steady state's forward: each exchange beside one half of a layer
    copies = {n for n, k in enumerate(forward.kernels) if k.part == QUANTIZATION_PADDING}
    experts_half = [set(op.beside) for op in paired if set(op.beside) & copies]
    assert experts_half and set().union(*experts_half) >= copies  # every copy beside an exchange
    for half in experts_half:  # beside the experts' GEMMs, never beside the attention's
        parts = {forward.kernels[n].part for n in half}
        assert {"up", "down"} <= parts and "qkv" not in parts


def test_deepep_refuses_what_megatron_core_refuses():
    with pytest.raises(ParsimError, match="flex_backend=deepep needs dispatcher=flex"):
        _step(flex_backend="deepep")
    with pytest.raises(ParsimError, match="flex_backend=deepep needs dropless routing.*: 1.0"):
        _step(**DEEPEP, capacity_factor=1.0)


def test_a_dispatcher_setting_off_the_split_step_or_on_a_dense_model_is_refused(cli):
    # one GPU's program routes tokens without Megatron-Core's dispatchers, EP overlap or expert
    # split: naming one there would be silently ignored, so it is refused by name (exit 2), as is
    # any of them on a model without experts
    base = ("predict", "network", "batch=1", "seq=128", "--device", "h200")
    code, out, err = cli(*base[:2], "model=qwen3-30b-a3b", "train=false", "flex_backend=deepep", *base[2:])
    assert code == 2 and "Traceback" not in out + err
    assert "flex_backend=deepep: Megatron-Core's expert parallelism runs in the 3D-parallel step" in err
    assert "qwen3-30b-a3b infers as one GPU's program here" in err
    for given, words in (
        (("model=resnet50", "dispatcher=flex"), "dispatcher=flex: resnet50 has no experts to route"),
        (("model=gpt2", "seq=128", "ep_overlap=true"), "ep_overlap=true: gpt2 has no experts"),
        (("model=qwen3-30b-a3b", "seq=128", "train=false", "expert_tp=2"), "expert_tp=2: Megatron-Core's"),
    ):
        code, out, err = cli("predict", "network", "batch=1", *given, "--device", "h200")
        assert code == 2 and "Traceback" not in out + err and words in err, (given, err)
    with pytest.raises(ParsimError, match="dispatcher=flex routes tokens to experts; tiny-dense is a dense"):
        _step(attrs.evolve(TINY, name="tiny-dense", experts=0, experts_per_token=0), ep=1, dispatcher="flex")
    _step(dispatcher="flex", flex_backend="deepep")  # a MoE split step takes both
