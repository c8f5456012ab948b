"""Training a mixture of experts and expert parallelism (``workloads.expert_parallel``, ``moe.moe_mlp``).

Known answers are computed by hand in the comments on a tiny MoE (4 layers, hidden 64, 8 experts of
inner width 128, top-2); the invariants (hypothesis) are that balanced expert parallelism changes
no GPU's kernel FLOPs, only its collectives and its share of the experts' memory, and that ``ep = 1`` is
the dense-expert step op for op.
"""

from __future__ import annotations

import math

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.methods.predict import predict
from parsim.model.blocks import block_parts
from parsim.model.collectives import Group, collective, op_timing
from parsim.model.issue import issue_s
from parsim.stack import framework
from parsim.studies.published_flops import mcore_flops
from parsim.studies.scenarios import loads_scenario, run_scenario
from parsim.workloads import parallel3d
from parsim.workloads.base import AllReduce, Block, Workload
from parsim.workloads.expert_parallel import remote_nodes
from parsim.workloads.layers import Numerics
from parsim.workloads.llm_config import LlmConfig
from parsim.workloads.moe_layer_ops import SMALL_OPS
from parsim.workloads.registry import make_workload, validate_params
from parsim.workloads.training import numerics_of
from parsim.workloads.transformer import transformer_kernels
from tests.systems import TINY_MOE as TINY

BASE = {"model": "mixtral-8x7b", "train": True, "dtype": "bfloat16", "optimizer": "adam", "seq": 128}


def _params(**given: object) -> dict:
    return validate_params("network", {**BASE, "batch": 16, "gpus": 8, **given})


def _step(config: LlmConfig = TINY, **given: object) -> Workload:
    params = _params(**given)
    return parallel3d.parallel_step(config, params, numerics_of(params), named=False)


def _blocks(workload: Workload) -> list[Block]:
    return [op for op in workload.ops if isinstance(op, Block)]


def _collectives(workload: Workload, kind: str) -> list[AllReduce]:
    inside = [c for b in _blocks(workload) for c in b.collectives]
    return [op for op in [*inside, *workload.ops] if isinstance(op, AllReduce) and op.kind == kind]


def test_all_to_all_inside_one_node_by_hand():
    # 8 GPUs on NVLink 4: each sends 7/8 of its buffer to its 7 peers at its NVLink rate, after one
    # hop's latency
    system = registry.system("h100-sxm", None, None, 8, None)
    link = system.ring_link
    timing = collective(system, "all_to_all", 64e6, Group(8, 8))
    assert timing.algorithm == "direct"
    assert timing.seconds == pytest.approx(link.latency_s + 7 / 8 * 64e6 / link.bandwidth_Bps)
    # an EP group of 2 sends half its buffer
    pair = collective(system, "all_to_all", 64e6, Group(2, 2))
    assert pair.seconds == pytest.approx(link.latency_s + 0.5 * 64e6 / link.bandwidth_Bps)


def test_moe_training_kernels_by_hand():
    # batch 2 x 16 tokens = 32 tokens, top-2 of 8 experts: 64 expert rows; hidden 64, width 128.
    # Forward: gate, up and down grouped GEMMs, 2 x 64 x 128 x 64 FLOPs each = 1,048,576 each;
    # backward: a data and a weight gradient of the same FLOPs per GEMM. Router: 2 x 32 x 8 x 64 = 32,768.
    forward, backward = transformer_kernels(TINY, 2, 16, Numerics(dtype="bfloat16"), True)
    mlp = {k.name.removeprefix("h.0.mlp "): k for k in forward + backward if k.layer == "h.0.mlp"}
    for what in ("gate", "up", "down"):
        assert mlp[f"experts {what} fwd"].work.flops == 1_048_576
        assert mlp[f"experts {what} bwd-data"].work.flops == 1_048_576
        assert mlp[f"experts {what} bwd-weight"].work.flops == 1_048_576
    assert mlp["router fwd"].work.flops == mlp["router bwd-data"].work.flops == 32_768
    assert mlp["router bwd-weight"].work.flops == 32_768
    # a weight gradient writes all 8 experts' 64 x 128 matrices (bfloat16): 131,072 B
    assert mlp["experts up bwd-weight"].work.bytes_written == 8 * 64 * 128 * 2


def test_each_moe_layer_adds_two_all_to_alls_per_pass_of_its_tokens():
    # pp=2 (2 layers a stage), ep=4 of dp=8, batch 16 = 8 x 1 micro-batch of 2 x 128 tokens:
    # buffer 256 tokens x top-2 x hidden 64 x 2 B
    step = _step(pp=2, ep=4, nodes=2, microbatches=1)
    forward = next(b for b in _blocks(step) if b.name == "F")
    backward = next(b for b in _blocks(step) if b.name == "B")
    for block in (forward, backward):
        a2a = [c for c in block.collectives if c.kind == "all_to_all"]
        assert len(a2a) == 2 * 2
        assert {(c.nbytes, c.ranks, c.per_node) for c in a2a} == {(256 * 2 * 64 * 2, 4, 4)}
    # NCCL runs the plain dispatcher's exchanges; HybridEP's own kernels run the flex one's
    assert {c.library for c in _collectives(step, "all_to_all")} == {"nccl"}
    flex = _step(pp=2, ep=4, nodes=2, microbatches=1, dispatcher="flex")
    assert {c.library for c in _collectives(flex, "all_to_all")} == {"kernels"}
    full = _step(pp=2, ep=4, nodes=2, microbatches=1, recompute="full")
    again = next(b for b in _blocks(full) if b.name == "B")
    assert len([c for c in again.collectives if c.kind == "all_to_all"]) == 2 * 2 * 2  # forward again


def test_megatron_cores_small_moe_ops_cost_the_host_per_layer_and_pass():
    # 20 forward and 10 backward framework ops per MoE layer and micro-batch, each a pass over the
    # tokens' k indices and probabilities (256 tokens x 2 x 4 B), each at least the eager
    # framework's per-op host cost in the block's time (kernels priced 0 s here)
    step = _step(pp=2, ep=4, nodes=2, microbatches=1)
    forward = next(b for b in _blocks(step) if b.name == "F")
    backward = next(b for b in _blocks(step) if b.name == "B")
    small = [[k for k in b.kernels if k.part in SMALL_OPS] for b in (forward, backward)]
    assert [len(ops) for ops in small] == [20 * 2, 10 * 2]
    # the first three of each layer's forward ops move the hidden states too (bfloat16, 256 x 64 a
    # GPU): the permutation reads them once and writes their 2 copies, each chunk sort (2 local
    # experts) reads and writes the 2 copies; the backward's first three mirror them
    indices, hidden = 256 * 2 * 4, 256 * 64 * 2
    moved = [(indices + hidden, indices + 2 * hidden)] + [(indices + 2 * hidden, indices + 2 * hidden)] * 2
    per_layer = moved + [(indices, indices)] * 17
    assert [(k.work.bytes_read, k.work.bytes_written) for k in small[0]] == per_layer * 2
    mirrored = [(indices + 2 * hidden, indices + 2 * hidden)] * 2 + [(indices + 2 * hidden, indices + hidden)]
    backward_moves = [(k.work.bytes_read, k.work.bytes_written) for k in small[1]]
    assert backward_moves == (mirrored + [(indices, indices)] * 7) * 2
    system = registry.system("h100-sxm", "xeon-8480", None, 8, None)
    eager = framework("eager")
    lean = attrs.evolve(forward, kernels=tuple(k for k in forward.kernels if k.part not in SMALL_OPS))
    seconds = [sum(block_parts(system, eager, b.kernels, (), lambda k: 0.0)) for b in (forward, lean)]
    # dropless routing: each layer's host also waits for its split sizes' read-back: the copy's run
    # (the eager floor) and PCIe's latency, no longer hidden behind the issue
    read_back = 2 * (eager.kernel_floor_s + system.host_link.latency_s)
    issued = 40 * issue_s(system, eager, False, small[0][0])
    assert seconds[0] - seconds[1] == pytest.approx(issued + read_back)


def test_expert_gradients_reduce_over_the_experts_data_parallel_group():
    # 16 GPUs, pp=2: dp=8, a stage is a node; ep=4 leaves 2 GPUs per set of experts (4 ranks apart)
    step = _step(pp=2, ep=4, nodes=2, microbatches=1)
    syncs = _collectives(step, "all_reduce")
    dense = [op for op in syncs if op.name == "gradient all-reduce"]
    experts = [op for op in syncs if op.name == "expert gradient all-reduce"]
    assert {(op.ranks, op.per_node) for op in dense} == {(8, 8)}
    assert {(op.ranks, op.per_node) for op in experts} == {(2, 2)}
    # a stage's 2 layers of 8 experts x 3 x 64 x 128 weights, 1/4 of them here, float32 gradients
    assert {op.nbytes for op in experts} == {2 * 8 * 3 * 64 * 128 / 4 * 4}


def test_ep_1_is_the_dense_expert_step_op_for_op():
    one, default = _step(pp=2, ep=1, nodes=2, microbatches=2), _step(pp=2, nodes=2, microbatches=2)
    assert one.ops == default.ops
    assert not _collectives(one, "all_to_all")
    assert [op.name for op in one.ops if isinstance(op, AllReduce) and op.layer == "dp sync"] == [
        "gradient all-reduce"
    ] * 2


@given(st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2]), st.booleans())
@settings(max_examples=12, deadline=None)
def test_balanced_expert_parallelism_moves_no_flops_only_collectives_and_memory(ep, micro, distributed):
    given_ = {"nodes": 1, "microbatches": 16 // (8 * micro), "distributed_optimizer": distributed}
    dense, split = _step(ep=1, **given_), _step(ep=ep, **given_)

    # every pass does the same FLOPs, part by part (each GPU's E/ep experts get ep GPUs' tokens;
    # Transformer Engine's grouped GEMM runs them as rounds of four experts, so the rounds differ);
    # only the optimizer steps fewer weights
    def flops(step: Workload) -> list[dict[str, float]]:
        passes = []
        for b in _blocks(step):
            if b.layer != "optimizer":
                parts: dict[str, float] = {}
                for k in b.kernels:
                    parts[k.part] = parts.get(k.part, 0.0) + k.work.flops
                passes.append({part: round(total, 3) for part, total in parts.items()})
        return passes

    assert flops(dense) == flops(split)
    # the experts' weights: 1/ep of them per GPU, every other parameter whole (bfloat16 + float32
    # master; the distributed optimizer's master shard is 1/dp of every weight's, ep or not)
    experts = TINY.expert_params * (2 if distributed else 2 + 4)
    assert dense.memory.weights_B - split.memory.weights_B == pytest.approx(experts * (1 - 1 / ep))


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"ep": 3, "nodes": 3, "gpus": 8, "batch": 24}, r"'ep' must divide tiny-moe's 8 experts: 3"),
        (
            {"ep": 8, "tp": 2, "sequence_parallel": True},
            r"ep x expert_tp = 8 x 2 must divide tp x dp x cp = 2 x 4",
        ),
        (
            {"ep": 2, "tp": 4, "expert_tp": 3},
            r"'expert_tp' must divide tp=4 and tiny-moe's expert width 128: 3",
        ),
        ({"ep": 2, "tp": 2}, r"ep=2 with tp=2 needs sequence_parallel=true"),
    ],
)
def test_expert_parallelism_megatron_cannot_run_is_refused_in_one_line(given, message):
    with pytest.raises(ParsimError, match=message):
        _step(**given)


def test_moe_parallel_folding_routes_each_gpus_share_of_the_tokens_through_whole_experts():
    # tp=2 with expert_tp=1 (folding): ep=8 may exceed dp=4; each GPU routes 256/2 = 128 of its
    # micro-batch's tokens through whole experts (width 128, not 64): the same expert FLOPs per GPU
    folded = _step(tp=2, ep=8, expert_tp=1, sequence_parallel=True, microbatches=2)
    split = _step(tp=2, ep=2, sequence_parallel=True, microbatches=2)  # experts split like attention
    up = {
        name: next(
            k for b in _blocks(w) if b.name == "F" for k in b.kernels if k.name == "h.0.mlp experts up fwd"
        )
        for name, w in (("folded", folded), ("split", split))
    }
    assert up["folded"].library.gemm_mn == (128 * 2, 128) and up["split"].library.gemm_mn == (256 * 2, 64)
    assert up["folded"].work.flops == up["split"].work.flops == 2 * 256 * 2 * 64 * 64
    # the experts' weights: whole ones, 8 / 8 = 1 of them per GPU (every layer's, bfloat16 + float32)
    a2a = _collectives(folded, "all_to_all")
    assert {(op.ranks, op.per_node) for op in a2a} == {(8, 8)}
    experts = [op for op in _collectives(folded, "all_reduce") if op.name.startswith("expert")]
    assert {op.ranks for op in experts} == {1}  # tp x dp / (ep x expert_tp) = 8 / 8


def test_overlapped_all_to_alls_pair_with_one_node_of_the_other_pass():
    # Megatron-Core's combined 1F1B: per layer, the two exchanges of the other pass run beside this
    # pass's attention node and its mlp node (the grouped GEMMs, their activation and the combine)
    plain = _step(batch=32, ep=4, nodes=2, microbatches=2)
    overlapped = _step(batch=32, ep=4, nodes=2, microbatches=2, ep_overlap=True)
    assert not [op for op in overlapped.ops if isinstance(op, AllReduce) and op.kind == "all_to_all"]
    paired = [b for b in _blocks(overlapped) if any(c.beside for c in b.collectives)]
    forward = next(b for b in paired if b.name == "F" and b.device == 0)
    a2a = [c for c in forward.collectives if c.kind == "all_to_all"]
    # one stage holds the 4 blocks: two exchanges per layer, each a 1 x 128-token micro-batch's
    # top-2 hidden states (64 wide, bfloat16), all beside kernels of their own layer
    assert len(a2a) == 2 * 4 and {c.nbytes for c in a2a} == {128 * 2 * 64 * 2}
    node, rest = ({forward.kernels[n].name for n in c.beside} for c in (a2a[1], a2a[0]))
    assert node == {
        "h.0.mlp experts gate fwd",
        "h.0.mlp experts up fwd",
        "h.0.mlp experts silu x up fwd",
        "h.0.mlp experts down fwd",
        "h.0.mlp combine fwd",
        "h.0.mlp mlp node fwd",  # the host's calls of the schedule's nodes on that side
        "h.0.mlp moe_combine node fwd",
    }
    assert {"h.0.attn qkv fwd", "h.0.mlp router fwd", "h.0.mlp moe dispatch op 0 fwd"} <= rest
    assert {forward.kernels[n].layer for n in a2a[0].beside} == {"h.0.attn", "h.0.mlp"}
    assert rest.isdisjoint(node)
    # without a pipeline the combined schedule runs one forward ahead and drains with one backward
    # (combined_1f1b_schedule_for_no_pipelining): F0 and B1 run alone, their exchanges stopping
    # them; F1 and B0 are the steady state's pair
    stage0 = [b for b in _blocks(overlapped) if b.device == 0]
    alone = [[not any(c.beside for c in b.collectives) for b in stage0 if b.name == kind] for kind in "FB"]
    assert alone == [[True, False], [False, True]]
    # on this tiny model the exchanges it hides are shorter than the schedule's own host work (five
    # node calls a layer and pass: ``moe_layer_ops.schedule_nodes``): the overlap costs time
    times = [predict(w, cluster="dgx-h100").latency_s for w in (plain, overlapped)]
    assert times[0] < times[1]


def test_a_paired_exchange_costs_only_what_it_outlasts_its_node_by_hand():
    # a kernel of 1 ms (longer than its issue) beside an exchange of a seconds: a long exchange adds
    # a - 1 ms; a short one adds the 16 of the H100's 132 SMs NCCL held from the kernel while it
    # ran (a x 16 / 132, ``comm_sms``)
    system = registry.system("h100-sxm", None, None, 8, None)
    fw = framework("eager")
    kernel = transformer_kernels(TINY, 1, 16, Numerics(dtype="bfloat16"), True)[0][0]
    for nbytes, long in ((4e9, True), (1e6, False)):
        a2a = AllReduce("x", nbytes, kind="all_to_all", ranks=8, per_node=8, beside=(0,))
        a = op_timing(system, a2a).seconds
        compute, added = block_parts(system, fw, (kernel,), (a2a,), lambda k: 1e-3)
        assert compute == pytest.approx(1e-3)
        assert added == pytest.approx(a - 1e-3 if long else a * 16 / 132)
        assert long == (a > 1e-3)


def test_full_recomputation_refuses_overlapped_all_to_alls():
    with pytest.raises(ParsimError, match="disable full recomputation when enabling overlap"):
        _step(pp=2, ep=4, nodes=2, microbatches=2, ep_overlap=True, recompute="full")
    with pytest.raises(ParsimError, match="ep_overlap=true with pp=2 needs virtual_stages > 1"):
        _step(pp=2, ep=4, nodes=2, microbatches=2, ep_overlap=True)


def test_a_dense_model_takes_no_ep_and_the_cli_exits_2(cli):
    dense = attrs.evolve(TINY, experts=1, experts_per_token=1, name="tiny-dense")
    with pytest.raises(ParsimError, match=r"'ep' must be 1 for tiny-dense, a dense model: 2"):
        _step(dense, ep=2)
    args = ("model=mixtral-8x7b", "batch=8", "seq=64", "gpus=8", "ep=3", "--device", "h100-sxm")
    code, _, err = cli("predict", "network", *args)
    assert code == 2 and "'ep' must divide mixtral-8x7b's 8 experts: 3" in err


@pytest.mark.parametrize("overlap", [False, True])
def test_mixtral_trains_with_expert_parallelism_and_the_event_engine_agrees(overlap):
    given_ = {
        "ep_overlap": overlap,
        **BASE,
        "batch": 16,
        "seq": 1024,
        "gpus": 8,
        "nodes": 2,
        "pp": 2,
        "virtual_stages": 2,
        "ep": 8,
        "microbatches": 2,
        "distributed_optimizer": True,
    }
    fast = predict(make_workload("network", given_), cluster="dgx-h100", method="analytic")
    events = predict(make_workload("network", {**given_, "pipeline_events": True}), cluster="dgx-h100")
    recurrence = predict(make_workload("network", given_), cluster="dgx-h100")
    assert recurrence.latency_s == pytest.approx(events.latency_s, rel=1e-9)
    assert fast.latency_s > 0


def test_serving_under_load_takes_expert_parallelism():
    params = {
        "model": "mixtral-8x7b",
        "dtype": "bfloat16",
        "gpus": 8,
        "ep": 8,
        "requests": 20,
        "rate": 5.0,
        "prompt": 256,
        "output": 16,
    }
    workload = make_workload("llm_load", params)
    kinds = {op.kind for op in workload.ops if isinstance(op, AllReduce)}
    assert "all_to_all" in kinds
    result = predict(workload, device="h100-sxm")
    assert result.latency_s > 0
    with pytest.raises(ParsimError, match=r"'ep' must divide mixtral-8x7b's 8 experts: 3"):
        make_workload("llm_load", {**params, "ep": 3, "gpus": 6})


def test_megatron_cores_flop_count_of_mixtral_by_hand():
    # 12 x 4096 x 32 x 4096^2 x ((1 + 8/32 + 4096/4096) x 1 + 14336/4096 x 2 x 3/2 + 32000/(2 x 32 x 4096))
    # per sequence of 4096 tokens: 82.93 GFLOP per token
    per_token = 12 * 32 * 4096**2 * (2.25 + 10.5 + 32000 / (2 * 32 * 4096))
    flops = mcore_flops({"model": "mixtral-8x7b", "batch": 2, "seq": 4096})
    assert flops == pytest.approx(2 * 4096 * per_token)
    assert per_token == pytest.approx(82.93e9, rel=1e-4)


def test_megatron_lms_causal_flop_count_of_qwen3_30b_by_hand():
    # per token and layer (h 2048, q 32 x 128 = 4096, 4 of 32 heads KV, s 4096, expert width 768, k 8,
    # V 151,936 over 48 layers): projections 12 h q (1 + 4/32) = 113,246,208; the core attention
    # 12 s q whole, 6 s q causal (Megatron-LM@7146484607: "/ 2  # causal mask") = 100,663,296;
    # the routed experts 12 h f k x 3/2 = 226,492,416; the logits 6 h V / 48 = 38,895,616
    causal_per_token_layer = 113_246_208 + 100_663_296 + 226_492_416 + 38_895_616
    params = {"model": "qwen3-30b-a3b", "batch": 1, "seq": 4096}
    assert mcore_flops(params, causal=True) == pytest.approx(48 * 4096 * causal_per_token_layer)
    assert mcore_flops(params) - mcore_flops(params, causal=True) == pytest.approx(48 * 4096 * 100_663_296)


def test_a_scenario_file_takes_expert_parallelism_like_any_parameter():
    text = """
title = "Mixtral 8x7B on 16 H100: all-to-alls in the pass or beside it"
lesson = "Expert parallelism's all-to-alls stop the pass, or run beside another micro-batch's compute."
[defaults]
workload = "network"
cluster = "dgx-h100"
[defaults.params]
model = "mixtral-8x7b"
batch = 16
seq = 1024
dtype = "bfloat16"
optimizer = "adam"
nodes = 2
pp = 2
virtual_stages = 2
microbatches = 2
distributed_optimizer = true
[[cases]]
label = "ep=8"
params = { ep = 8 }
[[cases]]
label = "ep=8, all-to-alls overlapped"
params = { ep = 8, ep_overlap = true }
"""
    result = run_scenario(loads_scenario(text))
    times = {r.label: r.prediction.latency_s for r in result.results}
    assert set(times) == {"ep=8", "ep=8, all-to-alls overlapped"}
    # the overlap moves the step: here (1,024 tokens a micro-batch) its schedule's host work
    # (``moe_layer_ops.schedule_nodes``) outweighs the exchanges it hides
    assert 0 < times["ep=8"] < times["ep=8, all-to-alls overlapped"]


def test_remote_nodes_of_a_tokens_experts_by_hand():
    assert remote_nodes(8, 2, 1) == 0.0
    assert remote_nodes(8, 2, 2) == pytest.approx(1 - 6 / 28)  # 1 - C(4,2)/C(8,2)
    assert remote_nodes(8, 2, 4) == pytest.approx(3 * (1 - 15 / 28))  # 3 x (1 - C(6,2)/C(8,2))
    assert remote_nodes(128, 8, 2) == pytest.approx(1 - math.comb(64, 8) / math.comb(128, 8))


def test_a_flex_dispatcher_crosses_nodes_once_per_node_not_per_expert():
    # ep=8 over 2 nodes of 4 GPUs: a micro-batch of 2 x 128 tokens; each token's hidden state (64 x
    # 2 B) crosses to the other node 1 - C(4,2)/C(8,2) = 22/28 times on average, not top-2 x 4/8 = 1:
    # the all-to-all's buffer is sized so that its cross-node half is that (the NVLink fan-out
    # overlaps it)
    flex = _step(gpus=4, nodes=2, ep=8, microbatches=1, dispatcher="flex")
    forward = next(b for b in _blocks(flex) if b.name == "F")
    a2a = [c for c in forward.collectives if c.kind == "all_to_all"]
    assert len(a2a) == 2 * 4  # 4 layers, a dispatch and a combine
    assert {(c.name, c.ranks, c.per_node) for c in a2a} == {("forward ep flex all-to-all", 8, 4)}
    assert a2a[0].nbytes * 4 / 8 == pytest.approx(256 * 64 * 2 * 22 / 28)
    # on DGX H100 nodes: tp=2 (the experts too) puts 4 of the 8 EP peers in each of 2 nodes
    split = {"nodes": 2, "tp": 2, "sequence_parallel": True, "ep": 8, "microbatches": 1}
    plain, flex = _step(**split), _step(**split, dispatcher="flex")
    times = [predict(w, cluster="dgx-h100").latency_s for w in (plain, flex)]
    assert times[1] < times[0]
