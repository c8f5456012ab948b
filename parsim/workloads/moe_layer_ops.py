"""Megatron-Core's MoE layer as its framework runs it: the small dispatcher ops, the hidden states they
move, the host's wait for dropless split sizes, and Transformer Engine's per-expert GEMMs.

``moe.moe_mlp`` prices an MoE block's arithmetic; this module turns it into the kernels Megatron-Core
and Transformer Engine actually issue on one GPU of the 3D-parallel step (``parallel3d``): ~20
forward and ~10 backward small framework ops per layer and micro-batch (router bookkeeping, the
token dispatcher's counts, permutations and chunk sorts, whose first passes move the hidden states:
``layer_ops``, ``hidden_moves``), the forward's host wait for the token counts when routing is
dropless (``dropless_syncs``), the copies that pad the experts' rows for FP8 GEMMs
(``quantization_padding``), and each grouped expert GEMM as Transformer Engine runs it: one
cuBLAS GEMM per local expert, four streams at a time, the gate half inside fc1's
(``per_expert_gemms``). The collectives and the memory of expert parallelism are
``expert_parallel``'s, which re-exports these names.
"""

from __future__ import annotations

import math

from parsim.base.dtypes import itemsize
from parsim.workloads.base import Kernel, Params
from parsim.workloads.llm_config import LlmConfig
from parsim.workloads.moe import (
    EXPERT_PERMUTATION,
    EXPERT_SCHEDULE_NODE,
    GROUPED_GEMM,
    QUANTIZATION_PADDING,
    SCHEDULE_NODE,
    groups_touched,
)

MCORE_MOE_FORWARD_OPS = 20
"""Forward framework ops of Megatron-Core's MoE layer besides its router GEMM, top-k, grouped GEMMs,
activation and combine, counted approximately in NVIDIA/Megatron-LM@d98e8a64 (with the perf
recipes' ``moe_router_fusion`` and ``moe_permute_fusion``): router.py's auxiliary-loss ops and
token counts (~5), token_dispatcher.py ``MoEAlltoAllTokenDispatcher.preprocess`` (the per-expert and
per-rank sums and reshapes, the all-gather of the counts, the device-to-host copy: ~8), and
moe_utils.py's ``permute``, ``sort_chunks_by_idxs`` (tokens and probabilities) and ``unpermute``
with the probabilities' own all-to-all (~7)."""
ROUTING_B = 4  # an int32 expert index or a float32 probability
DISPATCH_OPS = "moe dispatch"
"""``Kernel.part`` of those small ops, but the router's and the preprocess's."""
MCORE_MOE_BACKWARD_OPS = 10
"""Their autograd counterparts that launch work: the permutations' and sorts' gathers, the
probabilities' all-to-all and the auxiliary loss's gradient (counted as above)."""
ROUTER_OPS = 5
"""Of those, after the ones that move the hidden states: the router's (its auxiliary loss and token
counts), which a ``moe_router`` CUDA graph captures with the router (``cuda_graphs``)."""
ROUTER_SMALL_OPS = "moe router ops"
"""``Kernel.part`` of those."""
PREPROCESS_OPS = 8
"""The next ones: the dispatcher's ``preprocess`` (the per-expert and per-rank sums, the counts'
all-gather), which a ``moe_preprocess`` graph adds to the router's."""
PREPROCESS = "moe preprocess"
"""``Kernel.part`` of those."""
SMALL_OPS = (ROUTER_SMALL_OPS, PREPROCESS, DISPATCH_OPS, EXPERT_PERMUTATION)
"""``Kernel.part`` of every small op of ``layer_ops`` (DeepEP's permutation among them)."""
SPLIT_SIZES_READ_BACK = MCORE_MOE_FORWARD_OPS - 1
"""The forward op that stands for the dispatcher's device-to-host copy of the token counts, on which
the host waits once per MoE layer's forward when routing is dropless (``dropless_syncs``)."""


def dropless_syncs(params: Params) -> bool:
    """Whether Megatron-Core's token dispatcher makes the host wait for the GPU once per MoE layer's
    forward: dropless routing (``capacity_factor`` 0), whose token counts only the GPU knows.

    ``MoEAlltoAllTokenDispatcher`` (NVIDIA/Megatron-LM@core_v0.15.0 to core_v0.18.0
    megatron/core/transformer/moe/token_dispatcher.py) copies the counts and the all-to-all's split
    sizes to the host on a side stream (``_maybe_dtoh_and_synchronize`` at "before_permutation_1")
    and waits for them (``self.d2h_event.synchronize()``) before the expert-parallel all-to-all
    ("before_ep_alltoall"; "before_finish" without one), since ``all_to_all_single`` and Transformer
    Engine's ``GroupedLinear`` (``m_splits``) take them as host lists. The flex dispatcher's HybridEP
    backend waits alike: without ``num_permuted_tokens`` (set only when dropping and padding)
    ``hybrid_ep_dispatch`` runs blocking (fused_a2a.py: ``non_blocking = num_permuted_tokens is not
    None``). Dropping and padding to capacity (``moe_pad_expert_input_to_capacity``, what
    Megatron-Bridge's ``apply_moe_token_drop`` sets with a capacity factor) sizes everything ahead:
    ``cuda_sync_point`` stays "no_sync". The backward reuses the forward's split sizes (host lists
    saved for autograd): no wait."""
    return float(params.get("capacity_factor", 0.0)) == 0.0


Moves = list[tuple[float, float]]
"""``(read, written)`` passes over the hidden states, in a GPU's tokens' ``T x hidden``."""

DISPATCHERS = ("alltoall", "hybridep", "deepep")
"""The token dispatchers ``dispatcher_of`` names: Megatron-Core's all-to-all one, or the flex
dispatcher's backend (``flex_backend``)."""


def dispatcher_of(params: Params) -> str:
    """The token dispatcher a step runs (``DISPATCHERS``): ``alltoall``, or with ``dispatcher=flex``
    its ``flex_backend`` (HybridEP unless DeepEP is named)."""
    if params.get("dispatcher", "alltoall") != "flex":
        return "alltoall"
    return str(params.get("flex_backend", "hybridep"))


def hidden_moves(
    config: LlmConfig, local: int, dispatcher: str = "alltoall", ep: int = 1
) -> tuple[Moves, Moves]:
    """The dispatcher's passes over the hidden states of one MoE layer and micro-batch, forward and
    backward: ``(read, written)`` each, in a GPU's tokens' hidden states (``T x hidden``).

    ``MoEAlltoAllTokenDispatcher`` (NVIDIA/Megatron-LM@core_v0.16.1
    megatron/core/transformer/moe/token_dispatcher.py) permutes each token into its k experts'
    order before the all-to-all (``dispatch_preprocess``: ``permute``, reads T, writes k T) and,
    with more than one local expert, sorts the received chunks by local expert after it
    (``dispatch_postprocess``: ``sort_chunks_by_idxs``, k T in and out) and back before the combine
    (``combine_preprocess``); the unpermutation after the combine is ``moe.moe_mlp``'s combine.
    Their gradients mirror them (the permutation's gathers and sums its k copies). The flex
    dispatcher's HybridEP backend permutes inside its dispatch and combine kernels
    (``_HybridEPManager.get_permuted_hidden_states_by_experts`` returns its input), so none. Its
    DeepEP backend receives each token once per GPU its experts live on (``ep`` GPUs:
    ``moe.groups_touched`` of them, T of each GPU's tokens each) and permutes them into its local
    experts' k T rows after the dispatch (``_DeepepManager.get_permuted_hidden_states_by_experts``:
    ``permute``, in the same file at d98e8a64 and 7146484); the gradient gathers them back."""
    if dispatcher not in DISPATCHERS:
        raise ValueError(f"hidden_moves: dispatcher must be one of {DISPATCHERS}: {dispatcher!r}")
    k = config.experts_per_token
    if dispatcher == "hybridep":
        return [], []
    if dispatcher == "deepep":
        received = groups_touched(config.experts, k, ep)
        return [(received, k)], [(k, received)]
    sorts: Moves = [(k, k), (k, k)] if local > 1 else []
    return [(1, k), *sorts], [*sorts, (k, 1)]


def layer_ops(
    config: LlmConfig,
    tokens: int,
    layer: str,
    dtype: str,
    device: int,
    local: int = 1,
    dispatcher: str = "alltoall",
    ep: int = 1,
    syncs: bool = False,
) -> tuple[Kernel, ...]:
    """``MCORE_MOE_FORWARD_OPS`` then ``MCORE_MOE_BACKWARD_OPS`` small kernels of one MoE layer and
    micro-batch (``tokens``: this GPU's): each a pass over the tokens' k expert indices and
    probabilities (4 bytes each), what the framework's per-op host cost then prices; the first of
    each pass are the dispatcher's permutations (``hidden_moves``: ``local`` experts here, over
    ``ep`` GPUs, as ``dispatcher`` runs them), which move the hidden states too. With ``syncs``
    (``dropless_syncs``) the host waits for the forward's read-back of the split sizes
    (``SPLIT_SIZES_READ_BACK``)."""
    routed = tokens * config.experts_per_token
    hidden_B = tokens * config.hidden * itemsize(dtype)
    forward, backward = hidden_moves(config, local, dispatcher, ep)
    moving = EXPERT_PERMUTATION if dispatcher == "deepep" else DISPATCH_OPS  # after the dispatch or before
    made = []
    for index in range(MCORE_MOE_FORWARD_OPS + MCORE_MOE_BACKWARD_OPS):
        is_backward = index >= MCORE_MOE_FORWARD_OPS
        moves = backward if is_backward else forward
        place = index - MCORE_MOE_FORWARD_OPS if is_backward else index
        read, written = moves[place] if place < len(moves) else (0, 0)
        read_B, written_B = routed * ROUTING_B + read * hidden_B, routed * ROUTING_B + written * hidden_B
        made.append(
            Kernel.of(
                f"{layer} moe dispatch op {index} {'bwd' if is_backward else 'fwd'}",
                float(routed),
                float(read_B),
                float(written_B),
                max(1, int(routed + written * tokens * config.hidden)),
                dtype=dtype,
                device=device,
                layer=layer,
                cold_bytes=float(read_B + written_B),
                part=_part(is_backward, place, len(moves), moving),
                host_waits=syncs and index == SPLIT_SIZES_READ_BACK,
            )
        )
    return tuple(made)


def pads_for_quantization(params: Params) -> bool:
    """Whether Transformer Engine pads each local expert's rows to its FP8 GEMM's alignment and strips
    the padding again (``quantization_padding``): FP8 training with dropless routing, unless the
    dispatcher already hands the experts aligned rows.

    Megatron-Core's ``TEGroupedMLP.forward`` (NVIDIA/Megatron-LM@92c8482e, the 25.11 NeMo container's
    pin, to d98e8a64: megatron/core/transformer/moe/experts.py) runs ``Fp8Padding`` on the permuted
    hidden states and probabilities and ``Fp8Unpadding`` on the output whenever ``fp8``; Transformer
    Engine's ``Fp8Padding`` (transformer_engine/pytorch/module/fp8_padding.py) returns its input
    untouched only when every expert's count is already a multiple of the alignment (16 rows, 32
    under MXFP8), which forced-balanced random routing almost never gives. HybridEP pads inside its
    dispatch (``pad_multiple`` at 92c8482e; ``skip_routed_expert_padding`` from Megatron-LM#4071), and
    dropping with padding to capacity sizes every expert alike; the all-to-all dispatcher and DeepEP
    hand over the counts as routed (the perf recipes leave ``moe_router_padding_for_quantization``
    unset)."""
    return bool(params.get("fp8", False)) and dropless_syncs(params) and dispatcher_of(params) != "hybridep"


def quantization_padding(
    config: LlmConfig, tokens: int, layer: str, dtype: str, device: int
) -> tuple[tuple[Kernel, ...], tuple[Kernel, ...]]:
    """The padding copies of one MoE layer and micro-batch (``pads_for_quantization``), forward and
    backward: ``tex.fused_multi_row_padding`` of the local experts' k T rows of hidden states (k of
    this GPU's ``tokens`` each, routing balanced) and of their probabilities, then
    ``fused_multi_row_unpadding`` of the experts' output; each an operator call that reads and writes
    the rows once. The backward runs their gradients: the output's gradient padded, the hidden
    states' and the probabilities' unpadded."""
    rows = tokens * config.experts_per_token
    hidden_B, probs_B = rows * config.hidden * itemsize(dtype), rows * ROUTING_B

    def copy(what: str, size_B: int, items: int, backward: bool) -> Kernel:
        return Kernel.of(
            f"{layer} experts {what} {'bwd' if backward else 'fwd'}",
            float(items),
            float(size_B),
            float(size_B),
            max(1, items),
            dtype=dtype,
            device=device,
            layer=layer,
            cold_bytes=float(2 * size_B),
            part=QUANTIZATION_PADDING,
        )

    hidden, probs = rows * config.hidden, rows
    forward = (
        copy("pad rows", hidden_B, hidden, False),
        copy("pad probabilities", probs_B, probs, False),
        copy("unpad output", hidden_B, hidden, False),
    )
    backward = (
        copy("pad output gradient", hidden_B, hidden, True),
        copy("unpad rows gradient", hidden_B, hidden, True),
        copy("unpad probabilities gradient", probs_B, probs, True),
    )
    return forward, backward


SCHEDULE_NODES = ("attn", "post_attn", "moe_dispatch", "mlp", "moe_combine")
"""The nodes Megatron-Core's combined 1F1B schedule (``ep_overlap``) runs a MoE layer's pass as
(``TransformerLayerSchedulePlan._build_callable_nodes`` in NVIDIA/Megatron-LM@92c8482e
megatron/core/models/common/model_chunk_schedule_plan.py, the releases the published runs used;
Megatron-LM ffbe018c8e, July 2026, merges attn and post_attn into one); the last two run beside
the experts (``moe.EXPERT_NODE``), the first three on the attention's side."""


def schedule_nodes(layer: str, dtype: str, device: int, backward: bool) -> tuple[Kernel, ...]:
    """The host's work of running one MoE layer's pass as the combined 1F1B schedule's nodes: each
    node is a call the framework makes like an operator's, with no kernel of its own (``launches``
    0, no launch floor), so its host time adds to the pass in series (``model.blocks``) whether or
    not the host is the bottleneck. A node's forward waits on and records its stream's event and
    detaches its inputs and makes its outputs view-less (``ScheduleNode._forward`` in
    megatron/core/pipeline_parallel/utils.py at 92c8482e; the forward's nodes run under two FP8
    contexts a layer for recipes other than delayed); its backward runs the autograd engine on
    that node alone (``TransformerLayerNode.backward_impl`` in
    megatron/core/models/gpt/fine_grained_callables.py: ``run_backward`` per node, where a plain
    step runs it once per pass). Megatron-Core names the cost ("EP Overlap brings extra cpu
    overhead", Megatron-LM pull request #2168) and Megatron-Bridge turned the overlap off for it on
    B200 (pull request #1760); parsim prices each node as one operator call
    (``FrameworkSpec.op_cycles``), an estimate, and leaves out the per-chunk pre-, post-process and
    loss nodes and ``delay_wgrad_compute``'s separate weight-gradient calls."""
    return tuple(
        Kernel.of(
            f"{layer} {node} node {'bwd' if backward else 'fwd'}",
            0.0,
            0.0,
            0.0,
            1,
            dtype=dtype,
            device=device,
            layer=layer,
            part=EXPERT_SCHEDULE_NODE if node in ("mlp", "moe_combine") else SCHEDULE_NODE,
            launches=0,
            multi_tensor=True,
        )
        for node in SCHEDULE_NODES
    )


def layer_kernels(
    config: LlmConfig,
    tokens: int,
    layer: str,
    dtype: str,
    local: int,
    params: Params,
    ep: int,
    overlapped: bool,
) -> tuple[tuple[Kernel, ...], tuple[Kernel, ...]]:
    """What Megatron-Core runs of one MoE layer and micro-batch beyond ``moe.moe_mlp``'s arithmetic,
    forward and backward: the small ops (``layer_ops``: ``local`` experts here, over ``ep`` GPUs,
    this GPU's ``tokens``), the FP8 padding copies where ``pads_for_quantization``, and under the
    combined 1F1B schedule (``overlapped``) its node calls (``schedule_nodes``)."""
    small = layer_ops(
        config, tokens, layer, dtype, 0, local, dispatcher_of(params), ep, dropless_syncs(params)
    )
    forward, backward = small[:MCORE_MOE_FORWARD_OPS], small[MCORE_MOE_FORWARD_OPS:]
    if pads_for_quantization(params):
        pad_f, pad_b = quantization_padding(config, tokens, layer, dtype, 0)
        forward, backward = forward + pad_f, backward + pad_b
    if overlapped:
        forward += schedule_nodes(layer, dtype, 0, False)
        backward += schedule_nodes(layer, dtype, 0, True)
    return forward, backward


def _part(is_backward: bool, place: int, moves: int, moving: str) -> str:
    """The ``Kernel.part`` of a pass's ``place``-th small op: ``moving`` for the first ``moves``
    (those that move the hidden states), then ``DISPATCH_OPS`` in the backward and the router's and
    preprocess's parts in the forward (``_forward_part``)."""
    if place < moves:
        return moving
    return DISPATCH_OPS if is_backward else _forward_part(place - moves)


def _forward_part(index: int) -> str:
    """The part of the ``index``-th forward small op after those that move the hidden states (the
    permutation and the chunk sorts, ``hidden_moves``, which no graph holds): the router's first,
    then the preprocess's."""
    if index < ROUTER_OPS:
        return ROUTER_SMALL_OPS
    return PREPROCESS if index < ROUTER_OPS + PREPROCESS_OPS else DISPATCH_OPS


TE_COMPUTE_STREAMS = 4
"""The compute streams Transformer Engine's grouped GEMM deals its GEMMs over (``num_compute_streams``
in NVIDIA/TransformerEngine@70f53666 transformer_engine/common/util/multi_stream.cpp)."""


GATE_IN_FC1 = "gate"
"""``Kernel.part`` of a gated expert MLP's gate half: Megatron-Core's ``TEGroupedMLP`` holds gate
and up as one fc1 ``GroupedLinear`` (``linear_fc1`` of width ``2 x ffn_hidden_size`` when
``gated_linear_unit``), so its GEMMs are the up half's (megatron/core/transformer/moe/experts.py)."""


def per_expert_gemms(kernels: list[Kernel], local: int) -> list[Kernel]:
    """Each grouped expert GEMM (``moe.GROUPED_GEMM``) of ``kernels`` as Transformer Engine runs it:
    one GEMM per local expert, ``TE_COMPUTE_STREAMS`` of them at once.

    Megatron-Core's ``TEGroupedMLP`` calls TE's ``GroupedLinear``, whose ``general_grouped_gemm``
    (``te_general_grouped_gemm`` -> ``nvte_multi_tensor_gemm``) loops over the experts and launches
    one cuBLAS GEMM each, expert i on compute stream i mod 4 (NVIDIA/TransformerEngine@70f53666
    (v2.9), 5671fd36 (2.12) and 289e5a6b (2.16), the 25.11 to 26.04 NeMo containers' pins in
    Megatron-Bridge's uv.lock: transformer_engine/common/gemm/cublaslt_gemm.cu
    ``multi_stream_cublas_gemm``; a CUTLASS grouped GEMM only under NVTE_USE_CUTLASS_GROUPED_GEMM,
    which the perf recipes leave unset). So the grouped GEMM is ``ceil(local / 4)`` rounds, each
    four experts' GEMMs side by side (one kernel of their rows here: balanced routing gives each
    expert ``1 / local`` of the rows and work; a weight gradient's ``local x k`` rows, ``k`` an
    expert) for which the host issues four launches (``Issue.launches``); the first round also
    pays the module's call (the framework's cost per operator), the others run inside it
    (``Issue.in_library_call``). A round shorter than its launches leaves the GPU waiting on the
    host: thin experts at one sequence per micro-batch cost more per token than at four.

    A gated MLP's gate and up halves are one ``GroupedLinear`` (``TEGroupedMLP``'s fc1, of width
    2 x ffn): one GEMM per expert computes both, so the gate's rounds (its forward, both its
    gradients and the casts that go with them) launch nothing and make no call of their own
    (``GATE_IN_FC1``): their work is in the up half's launches."""
    made: list[Kernel] = []
    for kernel in kernels:
        if kernel.work.op != GROUPED_GEMM or kernel.library.gemm_mn is None:
            made.append(kernel)
            continue
        m, n = kernel.library.gemm_mn
        work, cold = kernel.work, kernel.access.cold_bytes
        for first in range(0, local, TE_COMPUTE_STREAMS):
            side = min(TE_COMPUTE_STREAMS, local - first)  # experts of this round
            share = side / local
            made.append(
                kernel.but(
                    name=kernel.name if first == 0 else f"{kernel.name} experts {first}+",
                    flops=work.flops * share,
                    bytes_read=work.bytes_read * share,
                    bytes_written=work.bytes_written * share,
                    work_items=max(1, math.ceil(work.work_items * share)),
                    cold_bytes=cold * share,
                    gemm_mn=(max(1, math.ceil(m * share)), n),
                    launches=0 if kernel.part == GATE_IN_FC1 else side,
                    in_library_call=first > 0 or kernel.part == GATE_IN_FC1,
                )
            )
    return made
