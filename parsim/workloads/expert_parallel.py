"""Expert parallelism in the 3D-parallel training step (Megatron-Core's ``--expert-model-parallel-size``).

A mixture of experts' block holds ``E`` expert MLPs; expert parallelism deals them out over ``ep``
GPUs, ``E / ep`` each, like a hospital whose specialists sit in different wings: every patient
(token) still sees k of them, so each wing sends its patients to the others' specialists and
takes them back afterwards. Megatron-Core carves the ``ep`` GPUs out of the data-parallel (x
context-parallel) ranks (its rank order ``tp-cp-ep-dp-pp``: the EP peers of a GPU are ``tp x cp``
apart, inside a node when ``tp x cp x ep`` fits one), so each of them runs its own micro-batch
through the attention and only the experts are split:

- **all-to-alls** (``--moe-token-dispatcher-type alltoall``): per MoE layer and micro-batch, a
  dispatch after the router's top-k and a combine after the experts' down projection in the
  forward pass, the same two in the backward pass (and two more when full recomputation runs the
  forward again). Each GPU's buffer is its own tokens' k copies of the hidden state (its
  ``seq / cp`` tokens, ``/ tp`` under sequence parallelism), of which ``(ep - 1) / ep`` leaves it
  (``model.collectives``: NVLink inside a node, the NICs across nodes). They stop the stream
  (the experts need the tokens), as Megatron-Core runs them without overlap by default.
- **expert GEMMs**: each GPU's ``E / ep`` experts receive the tokens of all ``ep`` GPUs routed to
  them: balanced, ``tokens x k`` rows in all, as many as without expert parallelism; the busiest
  expert's share over the mean (``imbalance``, default 1.0: the published Megatron-Bridge and NeMo
  benchmarks force-balance the routing; ``capacity_factor`` caps it) sets the grouped GEMM's time
  (``moe.moe_mlp``).
- **memory**: the experts' weights, gradients and (without the distributed optimizer) their
  optimizer state are ``1 / ep`` on each GPU; the distributed optimizer shards the local experts'
  state over the ``dp x cp / ep`` expert-data-parallel peers, which leaves ``1 / (dp x cp)`` of
  every parameter's state per GPU, as without expert parallelism.
- **gradient reduction**: the dense parameters' gradients over the ``dp x cp`` data-parallel
  GPUs as before, the local experts' over the ``dp x cp / ep`` GPUs that hold the same experts.

``expert_tp`` (Megatron-Core's ``--expert-tensor-parallel-size``, default the attention's ``tp``)
splits each expert over fewer GPUs than the attention: under MoE parallel folding (Liu et al. 2025,
arXiv:2504.14960) the ``ep x expert_tp`` expert groups are carved from ``tp x dp x cp``, so with
``expert_tp = 1`` each GPU routes its own ``1/tp`` of the tokens (sequence parallelism) through
whole experts, and ``ep`` may exceed ``dp x cp``. ``ep_overlap`` (Megatron-Core's
``overlap_moe_expert_parallel_comm``, its combined 1F1B schedule) runs one micro-batch's forward
beside another's backward layer by layer, each all-to-all on a stream of its own beside one node
of the other pass (``paired_collectives``): an exchange longer than its node still shows, and the
warm-up's forwards and the cool-down's backwards, with no partner, run their exchanges alone.

Megatron-Core's MoE layer also runs small framework ops the kernels above leave out, each an
eager PyTorch operator that costs the host its dispatch (``FrameworkSpec.op_cycles``) whatever
its size: the router's auxiliary load-balancing loss, the dispatcher's token counts per expert and
per rank (their all-gather, the device-to-host copy the dropless split sizes need), and the
permutation, chunk sorting and unpermutation of the tokens and their probabilities
(``MCORE_MOE_FORWARD_OPS`` forward, ``MCORE_MOE_BACKWARD_OPS`` backward, per MoE layer and
micro-batch, counted from the code; ``layer_ops``). Most are small passes over the routed tokens'
indices and probabilities, whose cost is the host's time to issue them, so they weigh on small
micro-batches and on many thin experts; the all-to-all dispatcher's permutation and chunk sorts
also move the hidden states (``hidden_moves``). Transformer Engine runs each grouped expert GEMM
as one cuBLAS GEMM per local expert, four streams at a time (``per_expert_gemms``).

``dispatcher=flex`` (DeepEP, HybridEP) sends a token across nodes once per node its experts live
on, not once per expert, the NVLink fan-out overlapped with it (``flex_exchange``); inside one
node it is the all-to-all above.

The layer's small ops, the dropless wait and Transformer Engine's per-expert GEMMs are
``moe_layer_ops``'.

With ``ep = 1`` nothing changes: no all-to-all, one gradient reduction of every parameter (the
dense path, which the tests check op for op).
"""

from __future__ import annotations

import math

import attrs

from parsim.base.dtypes import itemsize
from parsim.base.errors import ParsimError
from parsim.workloads.base import AllReduce, Kernel, Params
from parsim.workloads.llm_config import LlmConfig
from parsim.workloads.megatron import optimizer_sync
from parsim.workloads.moe import EXPERT_NODE, Routing, dispatch_B, groups_touched
from parsim.workloads.transformer_memory import stage_params
from parsim.workloads.transformer_ops import block_layers

NAME = "network"


def ep_of(params: Params) -> int:
    """The expert-parallel GPUs ``params`` name (1: none)."""
    return int(params.get("ep", 1))


def expert_tp_of(params: Params) -> int:
    """GPUs each expert is split over: ``expert_tp``, or the attention's ``tp`` when not given (0)."""
    return int(params.get("expert_tp", 0)) or int(params.get("tp", 1))


def dispatcher_named(params: Params) -> tuple[str, ...]:
    """The token-dispatcher settings ``params`` name away from their defaults (``dispatcher=flex``,
    ``flex_backend=deepep``), as ``key=value``."""
    return tuple(
        f"{key}={params[key]}"
        for key, default in (("dispatcher", "alltoall"), ("flex_backend", "hybridep"))
        if params.get(key, default) != default
    )


def check(config: LlmConfig, params: Params, tp: int, dp: int, cp: int) -> None:
    """Refuse, in one line, expert parallelism that Megatron-Core or the model cannot run.

    Raises:
        ParsimError: ``ep`` > 1 on a dense model, ``ep`` not dividing the experts, ``ep x
            expert_tp`` not dividing the ``tp x dp x cp`` GPUs they are carved from, ``expert_tp``
            not dividing ``tp`` or the experts' width, expert and tensor parallelism without
            sequence parallelism, overlapped all-to-alls under full recomputation or in a pipeline
            without virtual stages, or DeepEP with dropping and padding to capacity
            (NVIDIA/Megatron-LM@92c8482e megatron/core/transformer/transformer_config.py asserts
            these); also a flex backend named without the flex dispatcher, which Megatron-Core
            would ignore, and a dispatcher setting on a dense model.
    """
    ep, etp = ep_of(params), expert_tp_of(params)
    if tp % etp or config.mlp_hidden % etp:
        raise ParsimError(
            f"{NAME}: 'expert_tp' must divide tp={tp} and {config.name}'s expert width "
            f"{config.mlp_hidden}: {etp}"
        )
    flex = params.get("dispatcher", "alltoall") == "flex"
    backend = params.get("flex_backend", "hybridep")
    named = dispatcher_named(params)
    if named and not config.moe:
        raise ParsimError(
            f"{NAME}: {' '.join(named)} routes tokens to experts; {config.name} is a dense model"
        )
    if backend != "hybridep" and not flex:
        raise ParsimError(
            f"{NAME}: flex_backend={backend} needs dispatcher=flex (the backend of Megatron-Core's "
            "flex token dispatcher)"
        )
    if flex and backend == "deepep" and float(params.get("capacity_factor", 0.0)) > 0:
        raise ParsimError(
            f"{NAME}: flex_backend=deepep needs dropless routing, capacity_factor=0 (Megatron-Core: "
            "'Flex token dispatcher with deepep backend does not support "
            f"moe_pad_expert_input_to_capacity'): {params['capacity_factor']}"
        )
    if ep == 1 and etp == tp:
        return
    if not config.moe:
        raise ParsimError(f"{NAME}: 'ep' must be 1 for {config.name}, a dense model: {ep}")
    if config.experts % ep:
        raise ParsimError(f"{NAME}: 'ep' must divide {config.name}'s {config.experts} experts: {ep}")
    if (tp * dp * cp) % (ep * etp):
        raise ParsimError(
            f"{NAME}: ep x expert_tp = {ep} x {etp} must divide tp x dp x cp = {tp} x {dp} x {cp} "
            f"(the expert groups are carved out of them): ep={ep}"
        )
    if tp > 1 and not params.get("sequence_parallel", False):
        raise ParsimError(
            f"{NAME}: ep={ep} with tp={tp} needs sequence_parallel=true (Megatron-Core refuses expert "
            "and tensor parallelism without it)"
        )
    if overlapped(params) and params.get("recompute", "none") == "full":
        raise ParsimError(
            f"{NAME}: ep_overlap=true needs recompute other than full (Megatron-Core: 'disable full "
            "recomputation when enabling overlap_moe_expert_parallel_comm')"
        )
    if overlapped(params) and int(params.get("pp", 1)) > 1 and int(params.get("virtual_stages", 1)) == 1:
        raise ParsimError(
            f"{NAME}: ep_overlap=true with pp={params['pp']} needs virtual_stages > 1 (Megatron-Core: "
            "'virtual_pipeline_model_parallel_size must be specified when pipeline_model_parallel_size > 1')"
        )


def routing(params: Params, tokens: int) -> Routing:
    """The routing of one GPU's ``tokens`` (a micro-batch's, ``seq / cp`` each) over the EP group."""
    ep = ep_of(params)
    split = int(params.get("tp", 1)) // expert_tp_of(params)  # experts split over fewer GPUs: 1/split each
    return Routing(
        float(params.get("imbalance", 1.0)),
        float(params.get("capacity_factor", 0.0)),
        ep,
        tokens // split * ep,
        expert_tp_of(params),
    )


def expert_dp(params: Params, dp: int, cp: int) -> int:
    """GPUs holding the same experts: the ``tp x dp x cp / (ep x expert_tp)`` expert-data-parallel group."""
    return int(params.get("tp", 1)) * dp * cp // (ep_of(params) * expert_tp_of(params))


def _per_node(ranks: int, apart: int, gpus_per_node: int) -> int:
    """Members of a group of ``ranks`` GPUs ``apart`` ranks apart that share one node."""
    return math.gcd(ranks, max(1, gpus_per_node // apart))


def exchange(
    config: LlmConfig, params: Params, tokens: int, name: str, gpus_per_node: int
) -> tuple[AllReduce, ...]:
    """One dispatch or combine over the EP group: each GPU's buffer its ``tokens`` (under sequence
    parallelism already ``/ tp``) k hidden states; ``dispatcher=flex`` exchanges as
    ``flex_exchange`` across nodes and, inside one, by its own kernels (``library`` ``kernels``:
    no NCCL all-to-all start). Empty without expert parallelism."""
    ep = ep_of(params)
    if ep == 1 or not config.moe:
        return ()
    buffer = dispatch_B(tokens, config, itemsize(params["dtype"]))
    per_node = _per_node(ep, expert_tp_of(params), gpus_per_node)
    flex = params.get("dispatcher", "alltoall") == "flex"
    if flex and per_node < ep:
        return flex_exchange(config, tokens, itemsize(params["dtype"]), ep, per_node, name)
    library = "kernels" if flex else "nccl"
    return (
        AllReduce(
            f"{name} ep all-to-all", buffer, kind="all_to_all", ranks=ep, per_node=per_node, library=library
        ),
    )


def dispatch_collectives(
    config: LlmConfig, params: Params, tokens: int, layers: int, name: str, gpus_per_node: int
) -> tuple[AllReduce, ...]:
    """One pass's all-to-alls over the EP group, each stopping the pass: a dispatch and a combine
    per MoE layer (``exchange``)."""
    return exchange(config, params, tokens, name, gpus_per_node) * (2 * layers)


def paired_collectives(
    exchanged: tuple[AllReduce, ...], kernels: tuple[Kernel, ...], blocks: range
) -> tuple[AllReduce, ...]:
    """A pass's all-to-alls under Megatron-Core's combined 1F1B schedule (``ep_overlap``:
    ``overlap_moe_expert_parallel_comm``): one micro-batch's forward runs beside another's
    backward, layer by layer (``TransformerLayerSchedulePlan.run`` in
    megatron/core/models/common/model_chunk_schedule_plan.py)::

        comm stream: combine_bwd    | dispatch_fwd | dispatch_bwd | combine_fwd
        comp stream: attn_fwd       | mlp_bwd      | mlp_fwd      | attn_bwd

    so each of a layer's four exchanges hides behind one node of the other pass, not behind the
    whole pass. Priced per pass (``AllReduce.beside``: positions in ``kernels``): a forward pass's
    layer pays for the two exchanges beside its attention node and its mlp node (the backward's
    combine and dispatch), a backward pass's for the two beside its own (the forward's): the same
    four pairs. The mlp node is the kernels of ``moe.EXPERT_NODE``; the attention node the rest of
    the layer (attention, norms, router, top-k, the dispatcher's small ops). Every layer of
    ``blocks`` (transformer block indices) with kernels in ``kernels`` gets its two."""
    made: list[AllReduce] = []
    for index in blocks:
        layers = block_layers(index)
        own = [n for n, k in enumerate(kernels) if k.layer in layers]
        if not own:
            continue
        node = tuple(n for n in own if kernels[n].part in EXPERT_NODE)
        rest = tuple(n for n in own if kernels[n].part not in EXPERT_NODE)
        for op in exchanged:
            made += [attrs.evolve(op, beside=rest), attrs.evolve(op, beside=node)]
    return tuple(made)


def remote_nodes(experts: int, top_k: int, nodes: int) -> float:
    """Expected other nodes a token's ``top_k`` experts (of ``experts`` spread evenly over ``nodes``
    nodes, picked uniformly) live on: ``(N - 1) (1 - C(E - E/N, k) / C(E, k))``."""
    if nodes <= 1:
        return 0.0
    return groups_touched(experts, top_k, nodes) * (nodes - 1) / nodes


def flex_exchange(
    config: LlmConfig, tokens: int, size: int, ep: int, per_node: int, name: str
) -> tuple[AllReduce, ...]:
    """DeepEP's and HybridEP's exchange (Megatron-Core's ``--moe-token-dispatcher-type flex``): a
    token crosses to another node once, however many of its k experts live there (RDMA to the GPU
    of the same index there), and is forwarded to them over that node's NVLink while the RDMA
    transfers are in flight, so the crossing sets the time: the EP group's all-to-all with each
    GPU's cross-node bytes ``remote_nodes`` hidden states per token instead of the k copies'
    ``(P - P_node) / P`` share."""
    nodes = ep // per_node
    crossing = tokens * config.hidden * size * remote_nodes(config.experts, config.experts_per_token, nodes)
    buffer = crossing * ep / (ep - per_node)  # what leaves for other nodes: (P - P_node) / P of it
    name = f"{name} ep flex all-to-all"
    return (AllReduce(name, buffer, kind="all_to_all", ranks=ep, per_node=per_node, library="kernels"),)


def overlapped(params: Params) -> bool:
    """The all-to-alls run beside another micro-batch's compute (``ep_overlap``)."""
    return bool(params.get("ep_overlap", False)) and ep_of(params) > 1


def split_params(config: LlmConfig, layers: int, held: int, params: Params) -> tuple[int, int]:
    """``(dense, local experts)`` of the ``held`` parameters of a chunk of ``layers`` blocks: the
    dense ones (attention, router, norms, embeddings) before tensor parallelism, the experts' share
    one GPU holds (``1 / (ep x expert_tp)``). Without expert parallelism everything counts as dense
    (one reduction)."""
    ep, etp, tp = ep_of(params), expert_tp_of(params), int(params.get("tp", 1))
    if (ep == 1 and etp == tp) or not config.moe:
        return held, 0
    experts = layers * config.expert_params // config.layers
    return held - experts, experts // (ep * etp)


def kept_share(config: LlmConfig, blocks: list[range], params: Params) -> float:
    """Of the first stage's parameters over ``tp``, the share one GPU holds under expert
    parallelism (1 without): its dense ones over ``tp`` and its ``1 / (ep x expert_tp)`` of the experts."""
    whole = stage_params(config, blocks, 0)
    dense, local = split_params(config, len(blocks[0]), whole, params)
    tp = int(params.get("tp", 1))
    return 1.0 if local == 0 else (dense / tp + local) / (whole / tp)


def expert_sync(
    grads_B: float,
    weights_B: float,
    params: Params,
    dp: int,
    cp: int,
    gpus_per_node: int,
    device: int,
    distributed: bool,
) -> tuple[AllReduce, ...]:
    """The local experts' gradient reduction over their expert-data-parallel group (and, under the
    distributed optimizer, their weights' all-gather after the update): ``megatron.optimizer_sync``'s
    ops over those GPUs, ``ep x expert_tp`` ranks apart."""
    ranks = expert_dp(params, dp, cp)
    apart = ep_of(params) * expert_tp_of(params)
    group = _per_node(ranks, apart, gpus_per_node)
    ops = optimizer_sync(grads_B, weights_B, ranks, group, device, distributed)
    return tuple(attrs.evolve(op, name=f"expert {op.name}") for op in ops)
