"""The host's calls of Megatron-Core's combined 1F1B schedule nodes (``ep_overlap``:
``moe_layer_ops.schedule_nodes``): five per MoE layer and pass, each an operator call's host work
and no GPU work, two of them on the experts' side; by hand on a block of a tiny MoE (4 layers,
hidden 64, 8 experts, top-2: ``tests.systems.TINY_MOE``) and on a whole step."""

from __future__ import annotations

import attrs
import pytest

from parsim.hardware import registry
from parsim.methods.engine.machine import shape
from parsim.methods.engine.processor import kernel_s
from parsim.model.blocks import block_parts
from parsim.model.issue import issue_s
from parsim.stack import framework
from parsim.studies import published
from parsim.workloads.base import Block, Kernel, Workload
from parsim.workloads.moe import EXPERT_NODE, EXPERT_SCHEDULE_NODE, SCHEDULE_NODE
from parsim.workloads.moe_layer_ops import SCHEDULE_NODES, schedule_nodes
from tests.systems import TINY_MOE as TINY
from tests.systems import tiny_step

SYSTEM = registry.system("h100-sxm", "xeon-8480", None, 8, None)
EAGER = framework("eager")
NODE_PARTS = (SCHEDULE_NODE, EXPERT_SCHEDULE_NODE)


def test_each_node_is_one_operator_call_and_no_kernel():
    nodes = schedule_nodes("h.0.mlp", "bfloat16", 0, backward=True)
    assert [k.name for k in nodes] == [f"h.0.mlp {n} node bwd" for n in SCHEDULE_NODES]
    assert [k.part for k in nodes] == [SCHEDULE_NODE] * 3 + [EXPERT_SCHEDULE_NODE] * 2
    assert EXPERT_SCHEDULE_NODE in EXPERT_NODE and SCHEDULE_NODE not in EXPERT_NODE
    operator_s = EAGER.op_host_s(SYSTEM.host.framework_clock_Hz)  # the framework's work, no launch
    assert all(issue_s(SYSTEM, EAGER, False, k) == pytest.approx(operator_s) for k in nodes)
    assert all(k.issue.launches == 0 and k.issue.multi_tensor for k in nodes)
    runs = [
        EAGER.floor(kernel_s(SYSTEM.gpu, "roofline", "none", shape(k)), k.issue.multi_tensor) for k in nodes
    ]
    assert runs == [0.0] * 5  # no work, and no launch floor


def test_a_block_of_nodes_costs_their_host_work_in_series():
    nodes = schedule_nodes("h.0.mlp", "bfloat16", 0, backward=False)
    compute, communication = block_parts(SYSTEM, EAGER, nodes, (), lambda k: 0.0)
    assert compute == pytest.approx(5 * EAGER.op_host_s(SYSTEM.host.framework_clock_Hz))
    assert communication == 0.0


def _step(**given: object) -> Workload:
    return tiny_step(microbatches=2, **given)


def _nodes(block: Block) -> list[Kernel]:
    return [k for k in block.kernels if k.part in NODE_PARTS]


def test_every_pass_of_every_moe_layer_calls_five_nodes_only_under_ep_overlap():
    blocks = [op for op in _step(ep_overlap=True).ops if isinstance(op, Block) and op.name in ("F", "B")]
    paired = [any(c.beside for c in b.collectives) for b in blocks]
    assert any(paired) and not all(paired)  # the steady state's pairs and the lone warm-up/drain passes
    assert all(len(_nodes(b)) == 5 * TINY.layers for b in blocks)
    plain = [op for op in _step().ops if isinstance(op, Block)]
    assert not any(_nodes(b) for b in plain)


def test_no_cuda_graph_replays_a_node():
    step = _step(ep_overlap=True, cuda_graphs="attn,moe_router,moe_preprocess")
    kernels = [k for op in step.ops if isinstance(op, Block) for k in op.kernels]
    assert any(k.issue.graph_node for k in kernels)
    assert not any(k.issue.graph_node for k in kernels if k.part in NODE_PARTS)


def test_a_paired_pass_pays_the_nodes_host_work_and_hides_no_less_of_its_exchanges():
    # a steady-state forward of the overlapped step, priced with its node calls and without them:
    # the kernels' time grows by exactly five operator calls a layer; the exchanges beside each
    # half can only hide more behind the longer halves
    step = _step(ep_overlap=True)
    forwards = [op for op in step.ops if isinstance(op, Block) and op.name == "F"]
    paired = next(op for op in forwards if any(c.beside for c in op.collectives))
    kept = [n for n, k in enumerate(paired.kernels) if k.part not in NODE_PARTS]
    renumber = {old: new for new, old in enumerate(kept)}
    bare_collectives = tuple(
        attrs.evolve(c, beside=tuple(renumber[n] for n in c.beside if n in renumber))
        for c in paired.collectives
    )
    bare = (tuple(paired.kernels[n] for n in kept), bare_collectives)

    def run(k: Kernel) -> float:
        return kernel_s(SYSTEM.gpu, "roofline", "none", shape(k))

    compute, communication = block_parts(SYSTEM, EAGER, paired.kernels, paired.collectives, run)
    bare_compute, bare_communication = block_parts(SYSTEM, EAGER, *bare, run)
    operator_s = EAGER.op_host_s(SYSTEM.host.framework_clock_Hz)
    assert compute - bare_compute == pytest.approx(5 * TINY.layers * operator_s)
    assert communication <= bare_communication + 1e-15


def test_where_the_exchanges_are_long_the_overlap_still_pays():
    # Megatron-Bridge's HybridEP benchmark (Qwen3-30B-A3B on 16 H100, EP 16 across two nodes, BF16):
    # the same step with and without the overlap, measured 24.71 s and 20.99 s; the exchanges over
    # InfiniBand outlast the node calls, so parsim's overlapped step is still the faster one
    rows = {r.id: r for r in published.rows_of(("moe-training",))}
    plain = published.predicted(rows["mbridge-hybridep-qwen3-30b-h100-bf16-16"])
    overlapped = published.predicted(rows["mbridge-hybridep-qwen3-30b-h100-bf16-16-overlap"])
    assert overlapped < 0.95 * plain
