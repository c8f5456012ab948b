"""Per-layer CUDA graphs in the 3D-parallel step (``workloads.cuda_graphs``) and a host's framework
clock (``ProcessorSpec.framework_cycles_scale``).

Known answers on a tiny MoE (4 layers, hidden 64, 8 experts, top-2) and its dense twin: which
kernels a scope replays, what the host then pays for them, and Grace's per-operator host time; the
invariants (hypothesis) are that a graph changes no kernel's GPU work and never makes a pass
slower, and that a scope's host saving is exactly its replayed nodes' framework work.
"""

from __future__ import annotations

import json

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.hardware.tomlio import dumps_hardware, loads_hardware
from parsim.methods.predict import predict
from parsim.model.blocks import block_parts
from parsim.model.issue import issue_s
from parsim.stack import framework
from parsim.stack.presets import CUDA_GRAPH_LAUNCH_SHARE
from parsim.workloads import cuda_graphs
from parsim.workloads.base import Block
from parsim.workloads.llm_config import LlmConfig
from parsim.workloads.moe_layer_ops import DISPATCH_OPS, PREPROCESS, ROUTER_SMALL_OPS, SMALL_OPS
from tests.systems import TINY_CPU, pass_named, tiny_step
from tests.systems import TINY_MOE as TINY

DENSE = attrs.evolve(TINY, name="tiny-dense", experts=0, experts_per_token=0)
SYSTEM = registry.system("h100-sxm", "xeon-8480", None, 8, None)
EAGER = framework("eager")
SUBLAYERS = cuda_graphs.sublayers_of(TINY.layers)


_step = tiny_step
_pass = pass_named


def _host_s(block: Block) -> float:
    return sum(issue_s(SYSTEM, EAGER, False, k) for k in block.kernels)


def test_attention_scope_replays_each_layers_attention_but_its_first_kernel():
    # tiny-moe, one stage of 4 layers: the forward's attention kernels per layer are ln_1, qkv,
    # rotary, the attention core, out, the residual add: 6, of which the first (ln_1) stands for
    # the graphed module's call and the other 5 are replayed nodes; nothing outside attention is
    forward = _pass(_step(cuda_graphs="attn"), "F")
    attention = [k for k in forward.kernels if k.layer.endswith(".attn")]
    assert len(attention) == 4 * 6
    assert [k.issue.graph_node for k in attention] == ([False] + [True] * 5) * 4
    assert not any(k.issue.graph_node for k in forward.kernels if not k.layer.endswith(".attn"))


def test_router_and_preprocess_are_one_graph_per_layer():
    # the router scope: the router GEMM, the softmax top-k and the router's 5 small ops (the norm
    # before them stays eager); with moe_preprocess the dispatcher's next 8 join the same graph
    # (one call: the router GEMM's)
    router = _pass(_step(cuda_graphs="moe_router"), "F")
    both = _pass(_step(cuda_graphs="moe_router,moe_preprocess"), "F")
    per_layer = {
        name: [
            k for k in block.kernels if k.layer == "h.0.mlp" and cuda_graphs.scope_of(k, scopes, SUBLAYERS)
        ]
        for name, block, scopes in (
            ("router", router, ("moe_router",)),
            ("both", both, ("moe_router", "moe_preprocess")),
        )
    }
    assert len(per_layer["router"]) == 2 + 5
    assert len(per_layer["both"]) == 2 + 5 + 8
    for kernels in per_layer.values():
        assert [k.issue.graph_node for k in kernels] == [False] + [True] * (len(kernels) - 1)


def test_a_replayed_node_pays_the_drivers_share_of_a_launch():
    kernel = next(k for k in _pass(_step(cuda_graphs="attn"), "F").kernels if k.name == "h.0.attn qkv fwd")
    assert kernel.issue.graph_node
    assert issue_s(SYSTEM, EAGER, False, kernel) == pytest.approx(
        CUDA_GRAPH_LAUNCH_SHARE * SYSTEM.gpu.dispatch_s
    )


def test_a_scopes_host_saving_is_its_nodes_framework_work():
    # every replayed node drops the framework's per-operator work and 4/5 of its launch
    eager, graphed = _pass(_step(), "F"), _pass(_step(cuda_graphs="attn"), "F")
    nodes = sum(k.issue.graph_node for k in graphed.kernels)
    assert nodes == 4 * 5
    one_op = EAGER.op_host_s(SYSTEM.host.framework_clock_Hz) + SYSTEM.gpu.dispatch_s
    replayed = CUDA_GRAPH_LAUNCH_SHARE * SYSTEM.gpu.dispatch_s
    assert _host_s(eager) - _host_s(graphed) == pytest.approx(nodes * (one_op - replayed))


def test_full_iteration_replays_every_kernel_of_the_passes_not_the_optimizer():
    step = _step(DENSE, ep=1, cuda_graphs="full_iteration")
    for name in ("F", "B"):
        assert all(k.issue.graph_node for k in _pass(step, name).kernels)
    assert not any(k.issue.graph_node for k in _pass(step, "optimizer step").kernels)


def test_layer_scope_is_one_graph_per_block_and_pass_the_head_stays_eager():
    # drop and pad (no host wait): each of the 4 blocks' forward kernels, attention and MoE alike,
    # is one graph whose first kernel (ln_1) is the call; embedding, final norm, head, loss eager
    step = _step(cuda_graphs="layer", capacity_factor=1.0)
    for name in ("F", "B"):
        kernels = _pass(step, name).kernels
        for index in range(TINY.layers):
            block = [k for k in kernels if k.layer.startswith(f"h.{index}.")]
            assert len({k.layer for k in block}) == 2
            assert [k.issue.graph_node for k in block] == [False] + [True] * (len(block) - 1)
        outside = [k for k in kernels if not k.layer.startswith("h.")]
        assert outside and not any(k.issue.graph_node for k in outside)


def test_layer_scope_saves_the_host_all_but_one_call_per_block_and_pass():
    # the node count by hand: every kernel of a block but its first; each node then costs the
    # driver's share of each of its launches (TE's per-expert GEMMs launch 4, the gate half inside
    # fc1's none), every other kernel (the calls, the head) what it cost eager
    eager = _pass(_step(capacity_factor=1.0), "F").kernels
    graphed = _pass(_step(cuda_graphs="layer", capacity_factor=1.0), "F").kernels
    in_blocks = sum(k.layer.startswith("h.") for k in graphed)
    assert sum(k.issue.graph_node for k in graphed) == in_blocks - TINY.layers
    replayed = CUDA_GRAPH_LAUNCH_SHARE * SYSTEM.gpu.dispatch_s
    for before, after in zip(eager, graphed, strict=True):
        host = issue_s(SYSTEM, EAGER, False, after)
        if after.issue.graph_node:
            assert host == pytest.approx(replayed * after.issue.launches), after.name
        else:
            assert host == issue_s(SYSTEM, EAGER, False, before), after.name


SCOPE_SETS = ["", "attn", "moe_router", "moe_router,moe_preprocess", "attn,moe_router,moe_preprocess"]
SCOPE_SETS += ["layer"]


@settings(max_examples=14, deadline=None)
@given(scopes=st.sampled_from(SCOPE_SETS), microbatch=st.sampled_from([1, 2, 4]), pp=st.sampled_from([1, 2]))
def test_graphs_change_no_gpu_work_and_never_slow_a_pass(scopes: str, microbatch: int, pp: int):
    # layer graphs capture the MoE layers only over routing that drops and pads
    batch, dropping = 8 * microbatch // pp * pp, {"capacity_factor": 1.0} if scopes == "layer" else {}
    eager = _step(batch=batch, pp=pp, microbatches=pp, **dropping)
    graphed = _step(batch=batch, pp=pp, microbatches=pp, cuda_graphs=scopes, **dropping)
    for name in ("F", "B"):
        before, after = _pass(eager, name), _pass(graphed, name)
        assert [k.work for k in before.kernels] == [k.work for k in after.kernels]
        parts = [block_parts(SYSTEM, EAGER, b.kernels, (), lambda k: 1e-6) for b in (before, after)]
        assert parts[1][0] <= parts[0][0] + 1e-15


@pytest.mark.parametrize(
    ("config", "given", "words"),
    [
        (TINY, {"cuda_graphs": "attn,mlpp"}, "scope 'mlpp' is not one of attn"),
        (TINY, {"cuda_graphs": "moe_preprocess"}, "moe_preprocess needs moe_router"),
        (TINY, {"cuda_graphs": "mlp"}, "tiny-moe is a mixture of experts"),
        (DENSE, {"ep": 1, "cuda_graphs": "moe_router"}, "tiny-dense is dense"),
        (DENSE, {"ep": 1, "cuda_graphs": "attn,full_iteration"}, "name it alone, not with attn"),
        (TINY, {"cuda_graphs": "full_iteration"}, "dropless routing"),
        (TINY, {"cuda_graphs": "attn", "recompute": "full"}, "recompute other than full"),
        (TINY, {"cuda_graphs": "layer"}, "cannot capture tiny-moe's dropless routing"),
        (TINY, {"cuda_graphs": "attn,layer", "capacity_factor": 1.0}, "layer captures each whole layer"),
        (DENSE, {"ep": 1, "cuda_graphs": "layer", "recompute": "selective"}, "recompute=selective"),
        (TINY, {"cuda_graphs": "layer", "capacity_factor": 1.0, "ep_overlap": True}, "ep_overlap splits"),
    ],
)
def test_scopes_megatron_refuses_are_refused_in_one_line(config: LlmConfig, given: dict, words: str):
    with pytest.raises(ParsimError, match="'cuda_graphs'") as refused:
        _step(config, **given)
    assert words in str(refused.value) and "\n" not in str(refused.value)


def test_scopes_allowed_where_megatron_allows_them():
    _step(TINY, cuda_graphs="full_iteration", capacity_factor=1.0)  # drop and pad: no host wait
    _step(DENSE, ep=1, cuda_graphs="full_iteration", recompute="full")
    _step(DENSE, ep=1, cuda_graphs="attn,mlp")
    _step(DENSE, ep=1, cuda_graphs="layer")
    _step(TINY, cuda_graphs="layer", capacity_factor=0.5)
    # dropping and padding sizes the dispatch ahead: the preprocess copies nothing to the host
    # (Megatron-LM's test_moe_partial_cudagraph runs alltoall, capacity 1.0, padded, under it)
    _step(TINY, cuda_graphs="moe_router,moe_preprocess", capacity_factor=1.0)
    assert cuda_graphs.scopes_of({"cuda_graphs": " moe_router , attn,none"}) == ("attn", "moe_router")
    assert cuda_graphs.scopes_of({}) == ()


def test_the_small_ops_fall_in_the_router_then_the_preprocess_the_permutations_stay_eager():
    # the all-to-all dispatcher (2 local experts): the permutation and the two chunk sorts move the
    # hidden states and stay eager; then the router's 5 ops, the preprocess's 8, the last 4
    forward = [k for k in _pass(_step(), "F").kernels if k.part in SMALL_OPS and k.layer == "h.0.mlp"]
    parts = [DISPATCH_OPS] * 3 + [ROUTER_SMALL_OPS] * 5 + [PREPROCESS] * 8 + [DISPATCH_OPS] * 4
    assert [k.part for k in forward] == parts
    assert all(k.work.bytes_written > forward[-1].work.bytes_written for k in forward[:3])
    graphed = _pass(_step(cuda_graphs="moe_router,moe_preprocess"), "F")
    moving = [k for k in graphed.kernels if k.layer == "h.0.mlp" and k.part == DISPATCH_OPS]
    assert not any(k.issue.graph_node for k in moving)
    # the flex dispatcher moves nothing in its small ops: the router's come first
    flex = [
        k
        for k in _pass(_step(dispatcher="flex"), "F").kernels
        if k.part in SMALL_OPS and k.layer == "h.0.mlp"
    ]
    assert [k.part for k in flex] == [ROUTER_SMALL_OPS] * 5 + [PREPROCESS] * 8 + [DISPATCH_OPS] * 7
    backward = [k for k in _pass(_step(), "B").kernels if k.part in SMALL_OPS]
    assert {k.part for k in backward} == {DISPATCH_OPS}


def test_a_graph_node_flag_must_be_a_boolean():
    from parsim.workloads.base import Kernel

    with pytest.raises(ParsimError, match="'graph_node' must be true or false"):
        Kernel.of("x", 1.0, 1.0, 1.0, 1, graph_node="yes")
    with pytest.raises(ParsimError, match="'graph_node' must be true or false"):
        Kernel.of("x", 1.0, 1.0, 1.0, 1).but(graph_node=1)


def test_a_feature_outside_the_split_step_is_named(cli):
    code, out, err = cli(
        "predict", "network", "model=gpt2", "train=false", "seq=512", "batch=8", "cuda_graphs=attn"
    )
    assert code == 2 and "Traceback" not in out + err
    assert "cuda_graphs=attn need the 3D-parallel step of a language model in training" in err


def test_the_cli_takes_cuda_graphs_on_a_cluster_and_refuses_a_bad_scope(cli):
    base = ("predict", "network", "model=qwen3-30b-a3b", "batch=64", "seq=1024", "dtype=bfloat16")
    split = ("train=true", "optimizer=adam", "distributed_optimizer=true", "gpus=8", "ep=8", "microbatches=8")
    split = (*split, "--cluster", "dgx-h100")
    eager = predict("network", dict(a.split("=") for a in (*base[2:], *split[:-2])), cluster="dgx-h100")
    code, out, err = cli(*base, *split, "cuda_graphs=attn,moe_router,moe_preprocess", "--json")
    assert code == 0, err
    assert json.loads(out)["latency_s"] < eager.latency_s
    code, out, err = cli(*base, *split, "cuda_graphs=router")
    assert code == 2 and "Traceback" not in out + err
    assert "'cuda_graphs' scope 'router' is not one of attn, mlp, moe_router" in err


def test_grace_issues_a_frameworks_operator_in_twice_the_cycles():
    # [TE2053] direction, fitted magnitude: 133k eager cycles x 2 at Grace's 3.0 GHz = 88.7 us,
    # against 133k at the 8480's 2.0 GHz = 66.5 us
    grace, xeon = registry.processor("grace-nvl72"), registry.processor("xeon-8480")
    assert grace.framework_clock_Hz == pytest.approx(1.5e9)
    assert xeon.framework_clock_Hz == xeon.clock_Hz
    assert EAGER.op_host_s(grace.framework_clock_Hz) == pytest.approx(133_000 / 1.5e9)


def test_a_hardware_file_sets_and_bounds_the_framework_cycles_scale():
    text = dumps_hardware(TINY_CPU)
    assert "framework_cycles_scale = 1.0" in text
    spec = loads_hardware(text.replace("framework_cycles_scale = 1.0", "framework_cycles_scale = 2.5"))
    assert spec.framework_clock_Hz == pytest.approx(TINY_CPU.clock_Hz / 2.5)
    with pytest.raises(ParsimError, match="framework_cycles_scale") as refused:
        loads_hardware(
            text.replace("framework_cycles_scale = 1.0", "framework_cycles_scale = 500"), "arm.toml"
        )
    assert "500" in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.slow
def test_the_app_takes_cuda_graphs_as_text_and_says_what_is_wrong_with_it():
    from tests.apptest import app

    query = {
        "explore_device": "h100-sxm",
        "explore_workload": "network",
        "explore_network_model": "gpt2",
        "explore_network_train": "true",
        "explore_network_gpus": "2",
        "explore_network_batch": "2",
        "explore_network_cuda_graphs": "attn,router",
    }
    at = app("explore", query=query)
    assert at.text_input(key="explore_network_cuda_graphs").value == "attn,router"
    errors = [e.value for e in at.error]
    assert any("'cuda_graphs' scope 'router' is not one of attn" in e for e in errors), errors
