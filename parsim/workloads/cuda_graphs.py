"""Per-layer CUDA graphs in the 3D-parallel step: Megatron-Core's ``--cuda-graph-impl transformer_engine``
with ``--cuda-graph-scope`` (``cuda_graphs=attn,moe_router,moe_preprocess``).

An eager step issues every kernel from Python: each operator pays the framework's host cost
(``FrameworkSpec.op_cycles``) and its launch. With a scope captured, Transformer Engine's
``make_graphed_callables`` records that part of each layer once, forward and backward, and every
later micro-batch replays it: the host pays one call of the graphed module (the framework's cost of
one operator and a launch, the graph's) and each kernel inside only the driver's share of a launch
for a replayed node (``stack.presets.CUDA_GRAPH_LAUNCH_SHARE``); the GPU runs the same kernels. Like
a recorded announcement: written once, then played with one button, however many words it has.

The scopes, as NVIDIA/Megatron-LM@7146484607245a4b47c3269ea2df62d6581c61d3
megatron/core/transformer/transformer_config.py (``cuda_graph_modules``) defines them:

- ``attn``: ``TransformerLayer._forward_attention``: the input norm, the QKV and output
  projections, the rotary embedding, the attention core, the residual add (and the FP8 casts
  between them);
- ``mlp``: a dense layer's ``_forward_mlp``: its norm, projections, activation and residual add;
- ``moe_router``: a MoE layer's ``_forward_mlp`` up to ``MoELayer.router()``: the norm before it
  (eager here: ``SCOPE_OF_PART``), the router GEMM, the softmax and top-k, the router's own small
  ops (``moe_layer_ops.ROUTER_OPS``);
- ``moe_preprocess``: ``MoELayer.preprocess()``: the token dispatcher's preprocessing
  (``moe_layer_ops.PREPROCESS_OPS``), joined to the router's graph; it needs ``moe_router``;
- ``layer``: each whole ``TransformerLayer``, attention and MLP (or mixture of experts, all-to-alls
  included) as one graph a pass: Megatron-Core's own ``CudaGraphManager`` (``--enable-cuda-graph``
  with the default ``--cuda-graph-scope full`` in core_v0.14.0, ``--cuda-graph-impl local`` later;
  Megatron-Bridge's 25.09 recipes' ``cuda_graphs: true``). Like ``full_iteration`` it cannot hold a
  host wait (a mixture of experts needs routing that drops and pads), and core_v0.14.0 refuses it
  under any activation recomputation;
- ``full_iteration`` (``--cuda-graph-impl full_iteration``, or ``local`` with that scope in
  Megatron-Bridge's 25.11 recipes): the whole forward and backward of every micro-batch as one
  graph, the optimizer step left out: every kernel of the passes a replayed node (the one launch a
  step is not counted). It cannot hold a host wait, so a mixture of experts needs routing that
  drops and pads (``capacity_factor`` > 0).

Under the other scopes the permutations, the all-to-alls, the expert GEMMs and the combine stay
eager: routing that drops no token sizes them on the host from the counts the GPU computed.
Megatron-Core refuses the same combinations parsim does (``check``): ``moe_preprocess`` without
``moe_router``, ``mlp`` on a model whose every layer is a mixture of experts (parsim's MoE models)
or the MoE scopes on a dense one, and full recomputation under per-layer graphs (only a whole
iteration's graph recomputes). Its
refusal of ``moe_preprocess`` with the all-to-all dispatcher when the preprocess copies counts to
the host applies to dropping without padding, which parsim does not model: ``capacity_factor`` > 0
here drops and pads, and the preprocess then stays on the GPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from parsim.base.caching import cached
from parsim.base.errors import ParsimError
from parsim.workloads.base import Kernel, Params
from parsim.workloads.llm_config import LlmConfig
from parsim.workloads.moe import ROUTE, ROUTER
from parsim.workloads.moe_layer_ops import PREPROCESS, ROUTER_SMALL_OPS
from parsim.workloads.transformer_ops import block_layers

FULL = "full_iteration"
LAYER = "layer"
SCOPES = ("attn", "mlp", "moe_router", "moe_preprocess", LAYER, FULL)
"""Megatron-Core's per-layer capture scopes parsim prices (``--cuda-graph-scope``)."""
WHOLE = (LAYER, FULL)
"""The scopes that capture everything in their reach: named alone, never over a host wait."""
SCOPE_OF_PART = {
    ROUTER: "moe_router",
    ROUTE: "moe_router",
    ROUTER_SMALL_OPS: "moe_router",
    PREPROCESS: "moe_preprocess",
}
"""A MoE layer's kernels a router or preprocess graph holds, by ``Kernel.part``: the router's GEMMs,
its softmax and top-k, its small ops; the preprocess's small ops. (The norm before the router,
which Megatron-Core's graph holds too, runs eagerly here: one operator a layer and pass.)"""
GRAPH_OF = {"moe_preprocess": "moe_router"}
"""Scopes captured in another scope's graph: the preprocess extends the router's."""


def scopes_of(params: Params) -> tuple[str, ...]:
    """The scopes ``cuda_graphs`` names (comma-separated; empty or ``none``: no graphs), in
    ``SCOPES`` order, each once."""
    text = str(params.get("cuda_graphs", "") or "").strip()
    named = {part.strip() for part in text.split(",") if part.strip()} - {"none"}
    return tuple(scope for scope in SCOPES if scope in named) + tuple(sorted(named - set(SCOPES)))


def check(config: LlmConfig, params: Params) -> None:
    """Refuse, in one line, a scope Megatron-Core does not know or will not capture.

    Raises:
        ParsimError: an unknown scope, ``layer`` or ``full_iteration`` with another scope or over
            dropless routing, ``layer`` with recomputation or ``ep_overlap``, ``moe_preprocess``
            without ``moe_router``, ``mlp`` on a MoE model, a MoE scope on a dense one, or
            ``recompute=full`` with per-layer scopes.
    """
    scopes = scopes_of(params)
    if not scopes:
        return
    name = "network: 'cuda_graphs'"
    dropping = float(params.get("capacity_factor", 0.0)) > 0
    unknown = [scope for scope in scopes if scope not in SCOPES]
    if unknown:
        raise ParsimError(f"{name} scope {unknown[0]!r} is not one of {', '.join(SCOPES)} (or none)")
    whole = next((scope for scope in scopes if scope in WHOLE), "")
    if whole and len(scopes) > 1:
        other = next(scope for scope in scopes if scope != whole)
        reach = "the whole step" if whole == FULL else "each whole layer"
        raise ParsimError(f"{name} {whole} captures {reach}: name it alone, not with {other}")
    if whole and config.moe and not dropping:
        raise ParsimError(
            f"{name} {whole} cannot capture {config.name}'s dropless routing (the host reads the "
            "token counts back every layer): set capacity_factor > 0"
        )
    if whole == LAYER and params.get("recompute", "none") != "none":
        raise ParsimError(
            f"{name} layer graphs run without activation recomputation (Megatron-Core refuses the two "
            "together): "
            f"recompute={params.get('recompute')}"
        )
    if whole == LAYER and params.get("ep_overlap", False):
        raise ParsimError(
            f"{name} layer graphs hold a whole layer; ep_overlap splits each layer into nodes on two "
            "streams: set one of them"
        )
    if "moe_preprocess" in scopes and "moe_router" not in scopes:
        raise ParsimError(f"{name} moe_preprocess needs moe_router too (its graph extends the router's)")
    if config.moe and "mlp" in scopes:
        raise ParsimError(f"{name} mlp captures a dense layer's MLP; {config.name} is a mixture of experts")
    if not config.moe and ("moe_router" in scopes or "moe_preprocess" in scopes):
        raise ParsimError(
            f"{name} moe_router and moe_preprocess need a mixture of experts; {config.name} is dense"
        )
    if params.get("recompute", "none") == "full" and not whole:
        raise ParsimError(
            f"{name} per-layer graphs need recompute other than full (Megatron-Core recomputes fully only "
            "inside a full_iteration graph)"
        )


def scope_of(kernel: Kernel, scopes: tuple[str, ...], sublayers: dict[str, str]) -> str:
    """The captured scope ``kernel`` runs in (``""``: none): its sublayer's (``sublayers``: layer
    -> ``attn`` or ``mlp``, ``sublayers_of``), narrowed to the router's and the preprocess's kernels
    for the MoE scopes."""
    if FULL in scopes:
        return FULL
    scope = sublayers.get(kernel.layer, "")
    if LAYER in scopes:  # every kernel of a transformer layer; the embedding, head and loss stay eager
        return LAYER if scope else ""
    if scope == "mlp" and "mlp" not in scopes:  # a MoE layer: only its router's and preprocess's kernels
        scope = SCOPE_OF_PART.get(kernel.part, "")
    return scope if scope in scopes else ""


def sublayers_of(layers: int) -> dict[str, str]:
    """Each transformer block's layer names (``block_layers``) -> ``attn`` or ``mlp``."""
    named = {}
    for index in range(layers):
        attention, mlp = block_layers(index)
        named[attention], named[mlp] = "attn", "mlp"
    return named


@cached(maxsize=64)
def _blocks_of(layers: int) -> Mapping[str, str]:
    """Each transformer block's layer names (``block_layers``) -> the block's attention layer's name,
    which stands for the block (one graph under ``layer``)."""
    named = {}
    for index in range(layers):
        attention, mlp = block_layers(index)
        named[attention] = named[mlp] = attention
    return MappingProxyType(named)


def captured(kernels: list[Kernel], scopes: tuple[str, ...], sublayers: dict[str, str]) -> list[Kernel]:
    """``kernels`` (one pass over some layers) with each captured graph replayed: per layer and
    graph the first kernel stands for the graphed module's call (its own issue cost), the others
    are replayed nodes (``Issue.graph_node``). ``moe_router`` and ``moe_preprocess`` are one graph,
    and so are a block's attention and MLP under ``layer``; under ``full_iteration`` every kernel is
    a node."""
    if not scopes:
        return kernels
    if FULL in scopes:
        return [kernel.but(graph_node=True) for kernel in kernels]
    called: set[tuple[str, str]] = set()
    made = []
    for kernel in kernels:
        scope = scope_of(kernel, scopes, sublayers)
        # a layer graph holds both sublayers of its block (``h.3.attn`` and ``h.3.mlp``: block 3)
        owner = _blocks_of(len(sublayers) // 2)[kernel.layer] if scope == LAYER else kernel.layer
        graph = (owner, GRAPH_OF.get(scope, scope))
        replayed = bool(scope) and graph in called
        if scope:  # the graphs called so far; an eager kernel calls none
            called.add(graph)
        made.append(kernel.but(graph_node=True) if replayed else kernel)
    return made
