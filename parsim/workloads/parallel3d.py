"""3D parallelism for transformer training: tensor parallel in a node, pipeline across nodes, data parallel.

Megatron-LM's layout (Narayanan et al., SC21): GPUs are numbered tensor-parallel rank first,
then data-parallel rank, then pipeline stage, so the ``tp`` GPUs of a tensor-parallel group sit in
one node (two all-reduces of the activations per layer forward, two backward, on the critical
path), a stage's ``dp`` replicas are ``tp`` apart, and consecutive stages ``tp x dp`` apart
(usually in different nodes). The global ``batch`` is cut into ``microbatches`` per replica; the
stages run them in the 1F1B order (each stage warms up with ``pp - s - 1`` forwards, then
alternates one forward and one backward, then drains), sending activations forward and
gradients back. The idle time while the pipeline fills and drains, the bubble, is
``(pp - 1) / (microbatches + pp - 1)`` of the step when the stages are equal. After its last
backward pass each stage all-reduces its gradients over its data-parallel group and updates its
weights.

Only one GPU per stage is simulated (tensor-parallel rank 0 of data-parallel replica 0): all GPUs of
a stage do the same work at the same time, and their collectives span the others through the
fabric model. A stage's pass over a micro-batch is one ``Block`` (its kernels and its tensor-parallel
all-reduces), so the events grow with stages x micro-batches, not with layers, tokens or GPUs.

Activation recomputation (Korthikanti et al. 2022): ``none`` keeps every layer's activations for
the micro-batches in flight; ``selective`` recomputes the attention core in the backward pass;
``full`` keeps only each layer's input and runs its forward pass again before its backward pass.
What each GPU holds is ``transformer_memory``'s, as for every transformer workload. The layout, the
fullest GPU's memory and the enumeration of splits are ``parallel3d_layout``'s (re-exported here).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs

from parsim.base import collector, units
from parsim.base.dtypes import itemsize
from parsim.workloads import cuda_graphs, dp_overlap, expert_parallel, megatron, moe_layer_ops
from parsim.workloads import pipeline_schedule as schedule
from parsim.workloads.base import AllReduce, Block, Kernel, Params, Transfer, Workload
from parsim.workloads.layers import Numerics
from parsim.workloads.llms import LlmConfig
from parsim.workloads.optimizers import update_kernel
from parsim.workloads.parallel3d_layout import Layout as Layout
from parsim.workloads.parallel3d_layout import applies as applies
from parsim.workloads.parallel3d_layout import layout as layout
from parsim.workloads.parallel3d_layout import memory_needs as memory_needs
from parsim.workloads.parallel3d_layout import split_fields as split_fields
from parsim.workloads.parallel3d_layout import splits as splits
from parsim.workloads.records import Record, figure
from parsim.workloads.transformer import transformer_kernels
from parsim.workloads.transformer_memory import stage_layers, stage_params
from parsim.workloads.transformer_ops import ATTENTION_CORE, CAST_WEIGHTS, EMBEDDING, block_layers

TOKEN_ID_B = 8
RECOMPUTE = ("none", "selective", "full")
RECOMPUTED = " (recomputed)"
"""The suffix of the name of a forward kernel run again before its backward pass (for people)."""
RECOMPUTE_PHASE = "recompute"
"""The ``Kernel.phase`` of such a kernel: its FLOPs are not the model's (MFU leaves them out)."""


@attrs.frozen
class ParallelMetrics(Record):
    """A 3D-parallel step as Megatron-LM's papers report it (``results.cluster_figures`` fills it in).

    Attributes:
        step_s: one training step.
        tokens_per_s: tokens of the global batch per second.
        tflops_per_gpu: every FLOP a GPU runs per second, recomputation included.
        mfu: model FLOPs (no recomputation) over the matrix units' peak.
        compute_share, tp_comm_share, dp_comm_share, idle_share: of each stage's GPU time,
            averaged over the stages: kernels, tensor-parallel all-reduces, the gradient
            all-reduce, and the rest (pipeline bubble, waits for sends).
        bubble_ideal: ``(p - 1) / (v m + p - 1)``, the 1F1B bubble of equal stages (v virtual stages).
        memory_per_gpu_B: the fullest GPU's footprint.
        tp, pp, dp, micro_batch: the split.
    """

    step_s: float = figure()
    tokens_per_s: float = figure("tokens/s, all", units.si)
    tflops_per_gpu: float = figure("TFLOP/s/GPU", lambda v: f"{v:.0f} (recomputation included)")
    mfu: float = figure("MFU", lambda v: f"{v:.1%} (model FLOPs / peak)")
    compute_share: float = figure("compute", lambda v: f"{v:.0%} of each stage's GPU time")
    tp_comm_share: float = figure("tensor-par.", lambda v: f"{v:.0%} (all-reduces inside each pass)")
    dp_comm_share: float = figure("data-par.", lambda v: f"{v:.0%} (gradient all-reduce)")
    idle_share: float = figure("idle", lambda v: f"{v:.0%} (pipeline bubble, waits)")
    bubble_ideal: float = figure("1F1B bubble", lambda v: f"{v:.1%} = (p-1)/(vm+p-1)")
    memory_per_gpu_B: float = figure("memory/GPU", units.gib)
    tp: float = figure()
    pp: float = figure()
    dp: float = figure()
    micro_batch: float = figure()


def _stage_of(config: LlmConfig, blocks: list[range]) -> Callable[[Kernel], int]:
    """A kernel's stage: its block's (``transformer_ops.block_layers``), the first for the embedding's,
    the last for the head's (ln_f, lm_head, loss)."""
    stage = {layer: s for s, r in enumerate(blocks) for i in r for layer in block_layers(i)}
    last = len(blocks) - 1
    return lambda kernel: stage.get(kernel.layer, 0 if kernel.layer == EMBEDDING else last)


@attrs.frozen
class _Stage:
    forward: tuple[Block, ...]  # one per chunk of layers (virtual stage) the GPU holds
    backward: tuple[Block, ...]
    exchange_B: tuple[float, ...]  # context-parallel keys and values sent per forward pass of a chunk
    update: Block
    grads_B: float
    weights_B: float
    expert_grads_B: float = 0.0  # the local experts' (expert parallelism): reduced over their own group
    expert_weights_B: float = 0.0
    # under ep_overlap, each chunk's passes with their all-to-alls stopping them: the warm-up's
    # forwards and the cool-down's backwards, which have no pass of another micro-batch beside them
    forward_alone: tuple[Block, ...] = ()
    backward_alone: tuple[Block, ...] = ()


def recomputed(forward: list[Kernel], recompute: str) -> list[Kernel]:
    """The forward kernels the backward pass runs again: all of them (``full``), the attention core
    (``selective``) or none, renamed and in the recompute phase."""
    if recompute == "full":
        again = forward
    elif recompute == "selective":
        again = [k for k in forward if k.part == ATTENTION_CORE]
    else:
        again = []
    return [attrs.evolve(k, name=k.name + RECOMPUTED, phase=RECOMPUTE_PHASE) for k in again]


def _features_applied(
    kernels: list[Kernel], lay: Layout, features: megatron.Features, dtype: str, forward: bool
) -> list[Kernel]:
    kernels = megatron.context_attention(kernels, lay.cp)
    if features.sequence_parallel and lay.tp > 1:
        kernels = megatron.sequence_split(kernels, lay.tp)
    if not features.fp8:
        return kernels
    split = lay.tp if features.sequence_parallel else 1
    return megatron.fp8_linears(kernels, dtype, forward, features.fp8_recipe, split)


def _stages(config: LlmConfig, lay: Layout, params: Params, numerics: Numerics) -> list[_Stage]:
    recompute, features = params["recompute"], megatron.features_of(params)
    local = params["seq"] // lay.cp  # tokens of each sequence this GPU holds
    routing = expert_parallel.routing(params, lay.micro_batch * local)
    forward, backward = transformer_kernels(
        config,
        lay.micro_batch,
        local,
        numerics,
        True,
        attention=params["attention"],
        tp=lay.tp,
        update=False,
        dropout=params["dropout"],
        routing=routing,
    )
    # each GPU's experts: Transformer Engine runs their grouped GEMMs one GEMM per expert
    experts_here = routing.local_experts(config.experts) if config.moe else 1
    forward = moe_layer_ops.per_expert_gemms(forward, experts_here)
    backward = moe_layer_ops.per_expert_gemms(backward, experts_here)
    # Megatron-LM keeps float16 copies of the weights (its mixed-precision optimizer) instead of
    # autocasting them again for every micro-batch
    forward = _features_applied(
        [k for k in forward if k.part != CAST_WEIGHTS], lay, features, numerics.dtype, True
    )
    backward = _features_applied(
        [k for k in backward if k.part != CAST_WEIGHTS], lay, features, numerics.dtype, False
    )
    chunks = lay.pp * lay.virtual_stages
    blocks = stage_layers(config, chunks)
    stage_of = _stage_of(config, blocks)
    size_B = local * lay.micro_batch * config.hidden * itemsize(numerics.dtype)
    kv_B = megatron.context_exchange_B(
        config.kv_heads, config.head_dim, local * lay.micro_batch, numerics.dtype, lay.tp, lay.cp
    )
    shards = lay.dp * lay.cp if features.distributed_optimizer else 1
    expert_shards = expert_parallel.expert_dp(params, lay.dp, lay.cp) if features.distributed_optimizer else 1
    # the tokens a GPU dispatches: its micro-batch's seq/cp (1/tp of them under sequence parallelism)
    routed = lay.micro_batch * local // (lay.tp if features.sequence_parallel else 1)
    grad_B = itemsize(numerics.dtype if features.distributed_optimizer else numerics.master_dtype)
    dispatched = routing.tokens // routing.ep  # its tokens, 1/(tp/expert_tp) of them under folding

    sublayers = cuda_graphs.sublayers_of(config.layers)  # each layer name -> attn or mlp
    overlapped = expert_parallel.overlapped(params)

    def moe_kernels(layer: str) -> tuple[tuple[Kernel, ...], tuple[Kernel, ...]]:
        return moe_layer_ops.layer_kernels(
            config, dispatched, layer, numerics.dtype, experts_here, params, routing.ep, overlapped
        )

    stages = []
    for s in range(lay.pp):
        fwds, bwds, exchange, held, experts = [], [], [], 0, 0
        alone_f: list[Block] = []  # under ep_overlap: the passes with no other micro-batch beside them
        alone_b: list[Block] = []
        for j in range(s, chunks, lay.pp):  # chunk c of stage s is virtual stage c p + s
            fwd = [k for k in forward if stage_of(k) == j]
            bwd = [k for k in backward if stage_of(k) == j]
            layers = len(blocks[j])
            if config.moe:  # Megatron-Core's MoE layer as it runs it (``moe_layer_ops.layer_kernels``)
                for i in blocks[j]:
                    more_f, more_b = moe_kernels(block_layers(i)[1])
                    fwd += more_f
                    bwd += more_b
            # per-layer CUDA graphs: the captured scopes replay, one call per layer and graph
            fwd = cuda_graphs.captured(fwd, features.cuda_graphs, sublayers)
            bwd = cuda_graphs.captured(bwd, features.cuda_graphs, sublayers)
            tp_fwd = megatron.tp_collectives(size_B, lay.tp, layers, "forward", features.sequence_parallel)
            tp_bwd = megatron.tp_collectives(size_B, lay.tp, layers, "backward", features.sequence_parallel)
            a2a_fwd = expert_parallel.dispatch_collectives(
                config, params, routed, layers, "forward", lay.gpus_per_node
            )
            a2a_bwd = expert_parallel.dispatch_collectives(
                config, params, routed, layers, "backward", lay.gpus_per_node
            )
            f_kernels, b_kernels = tuple(fwd), tuple(recomputed(fwd, recompute) + bwd)
            tp_again = tp_fwd + a2a_fwd if recompute == "full" else ()
            plain_f = Block("F", f_kernels, tp_fwd + a2a_fwd, device=s, layer=f"stage {s}")
            plain_b = Block("B", b_kernels, tp_again + tp_bwd + a2a_bwd, device=s, layer=f"stage {s}")
            if overlapped:  # Megatron-Core's combined 1F1B: each exchange beside one node of the other pass
                pair_f = expert_parallel.paired_collectives(
                    expert_parallel.exchange(config, params, routed, "backward", lay.gpus_per_node),
                    f_kernels,
                    blocks[j],
                )
                pair_b = expert_parallel.paired_collectives(
                    expert_parallel.exchange(config, params, routed, "forward", lay.gpus_per_node),
                    b_kernels,
                    blocks[j],
                )
                fwds.append(Block("F", f_kernels, tp_fwd + pair_f, device=s, layer=f"stage {s}"))
                bwds.append(Block("B", b_kernels, tp_bwd + pair_b, device=s, layer=f"stage {s}"))
                alone_f.append(plain_f)
                alone_b.append(plain_b)
            else:
                fwds.append(plain_f)
                bwds.append(plain_b)
            exchange.append(kv_B * layers)
            chunk = stage_params(config, blocks, j)
            dense, local_experts = expert_parallel.split_params(config, layers, chunk, params)
            held, experts = held + dense, experts + local_experts
        held, experts = math.ceil(held / lay.tp), math.ceil(experts)
        stepped = math.ceil(held / shards + experts / expert_shards)
        update = [
            update_kernel(
                params["optimizer"],
                "optimizer step",
                stepped,
                numerics.master_dtype,
                moments_dtype=megatron.moments_dtype(features),
            )
        ]
        if features.fp8:  # the updated weights cast to FP8 once a step (Transformer Engine's weight cache)
            cast = attrs.evolve(update[0], layer="optimizer")
            recipe = features.fp8_recipe
            update += megatron.quantize(cast, held + experts, numerics.dtype, recipe, weights=True)
        stages.append(
            _Stage(
                tuple(fwds),
                tuple(bwds),
                tuple(exchange),
                Block("optimizer step", tuple(update), (), device=s, layer="optimizer"),
                held * grad_B,
                held * itemsize(numerics.dtype),
                experts * grad_B,
                experts * itemsize(numerics.dtype),
                tuple(alone_f),
                tuple(alone_b),
            )
        )
    return stages


def parallel_step(config: LlmConfig, params: Params, numerics: Numerics, named: bool = True) -> Workload:
    """One training step of ``config`` under ``tp x cp x pp x dp`` (see the module docstring and
    ``megatron`` for the features). ``named=False``: each pass and send is its stage's shape, not
    a copy named after its micro-batch (what times the step; the timeline needs the names)."""
    with collector.paused():  # stages x micro-batches ops, none of them garbage yet
        return _parallel_step(config, params, numerics, named)


def _parallel_step(config: LlmConfig, params: Params, numerics: Numerics, named: bool) -> Workload:
    lay = layout(config, params)
    seq, m, p = params["seq"], lay.microbatches, lay.pp
    stages = _stages(config, lay, params, numerics)
    ahead = int(expert_parallel.overlapped(params))  # the combined 1F1B's forward ahead (pipeline_schedule)
    # the pipeline's boundary tensor: scatter-gathered over tp (1/tp each), seq/cp tokens
    boundary_B = seq // lay.cp * lay.micro_batch * config.hidden * itemsize(numerics.dtype) / lay.tp
    sequences: list[list[schedule.Step]] = []
    for s, stage in enumerate(stages):
        ops: list[schedule.Step] = []
        if s == 0:
            tokens = Transfer(
                "h2d tokens", lay.micro_batch * m * seq // lay.cp * TOKEN_ID_B, "h2d", device=0, layer="data"
            )
            ops.append((tokens, [], None))
        last: schedule.Key = ("B", s, 0)
        shapes: dict[tuple[str, str, int], AllReduce] = {}  # unnamed: one op per shape of this stage
        order = list(schedule.order(s, lay.pp, lay.virtual_stages, m, ahead))
        # the data-parallel stream (``dp_overlap``): the weights' buckets from the step's start
        sync = dp_overlap.stage_plan(
            (stage.grads_B, stage.weights_B, stage.expert_grads_B, stage.expert_weights_B),
            lay,
            params,
            s,
            itemsize(numerics.dtype),
        )
        keys: list[schedule.Key] = [("gather", s, j) for j in range(len(sync.early + sync.ahead))]
        ops += [(op, [], key) for op, key in zip(sync.early + sync.ahead, keys, strict=True)]
        first, rest = keys[: len(sync.early)], keys[len(sync.early) :]
        passes = [kind for kind, _, _ in order]
        first_f, last_b = passes.index("F"), len(passes) - 1 - passes[::-1].index("B")
        warmup = schedule.warmup_passes(s, lay.pp, lay.virtual_stages, m, ahead)
        held: tuple[AllReduce, schedule.Key, schedule.Key] | None = None  # a paired forward's send
        for n, (kind, c, i) in enumerate(order):
            # ep_overlap runs each steady-state forward beside the backward after it (Megatron-Core's
            # combined 1F1B); the warm-up's forwards and the cool-down's backwards have no partner
            # and run alone, their all-to-alls stopping them
            alone = stage.forward_alone if kind == "F" else stage.backward_alone
            in_pair = schedule.steady(n, warmup, len(order))
            if alone and not in_pair:
                block = alone[c]
            else:
                block = stage.forward[c] if kind == "F" else stage.backward[c]
            needs = schedule.waits(kind, s, c, i, lay.pp, lay.virtual_stages, m)
            needs = needs + (first if n == first_f else []) + (rest if n == first_f + 1 else [])
            if n == last_b:  # every bucket but the last reduced while the last backward runs
                ops += [(op, [*needs, last], None) for op in sync.during]
            key = (kind, s, c * m + i)
            paired = bool(alone) and in_pair and kind == "F"
            if paired:  # the combined step starts once both micro-batches' inputs are in
                needs = needs + schedule.combined_waits(order[n + 1], s, lay.pp, lay.virtual_stages, m)
            passed = (
                Block(
                    f"{kind}{i}" + (f".{c}" if lay.virtual_stages > 1 else ""),
                    block.kernels,
                    block.collectives,
                    s,
                    0,
                    block.layer,
                )
                if named
                else block
            )
            ops.append((passed, needs, key))
            last = key
            if stage.exchange_B[c]:  # ring attention: keys and values around the cp ring, beside the pass
                ring = shapes.get(("ring", kind, c)) if not named else None
                if ring is None:
                    ring = AllReduce(
                        f"cp ring {kind}{i}" if named else f"cp ring {kind}",
                        stage.exchange_B[c] * (1 if kind == "F" else 2),
                        stream=4,
                        device=s,
                        layer="context",
                        kind="send",
                        ranks=2,
                        per_node=2 if lay.cp_per_node() == lay.cp else 1,
                    )
                    shapes[("ring", kind, c)] = ring
                ops.append((ring, needs, None))
            if p > 1 and schedule.sends(kind, s, c, lay.pp, lay.virtual_stages):
                peer = (s + 1) % p if kind == "F" else (s - 1) % p
                across = lay.crosses_nodes(s) if kind == "F" else lay.crosses_nodes(peer)
                send = shapes.get(("send", kind, c)) if not named else None
                if send is None:
                    send = AllReduce(
                        f"send {kind}{i} to stage {peer}" if named else f"send {kind} to stage {peer}",
                        boundary_B,
                        stream=1 if kind == "F" else 2,
                        device=s,
                        layer="pipeline",
                        kind="send",
                        ranks=2,
                        per_node=1 if across else 2,
                    )
                    shapes[("send", kind, c)] = send
                if paired:  # its output leaves when the combined step ends
                    held = (send, key, ("send" + kind, s, c * m + i))
                else:
                    ops.append((send, [key], ("send" + kind, s, c * m + i)))
            if held is not None and kind == "B":
                ops.append((held[0], [held[1], key], held[2]))
                held = None
        reduced: schedule.Key = ("sync", s, 0)
        ops.append((sync.reductions[0], [last], reduced))
        if len(sync.reductions) > 1:  # expert parallelism: the local experts' reduction, then the update
            ops.append((sync.reductions[1], [reduced], ("expert sync", s, 0)))
            reduced = ("expert sync", s, 0)
        ops.append((stage.update, [reduced], ("update", s, 0)))
        for op in sync.gathers:  # the distributed optimizer's all-gathers
            ops.append((op, [("update", s, 0)], None))
        sequences.append(ops)
    ordered, deps = schedule.topological(sequences)
    layers = tuple((f"stage {s}", "stage") for s in range(p)) + (("pipeline", "send"), ("dp sync", "sync"))
    if lay.cp > 1:
        layers += (("context", "send"),)
    return Workload(
        "network",
        tuple(sorted(params.items())),
        tuple(ordered),
        tuple(deps),
        memory=memory_needs(config, lay, params, numerics),
        gpus=params["gpus"],
        devices=p,
        layers=layers + (("optimizer", "update"),),
        framework=params["framework"],
    )
