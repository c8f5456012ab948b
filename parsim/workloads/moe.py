"""Mixture of experts: top-k routing, the experts a step touches, and their grouped GEMMs.

A mixture-of-experts (MoE) block replaces the one MLP by ``E`` expert MLPs and a router: a
``hidden x E`` GEMM scores each token, a softmax and a top-k pick the ``k`` experts it goes to,
each of those runs the token through its MLP and the outputs are summed with the router's
weights. Like a hospital triage desk sending each patient to k of E specialists: each patient costs
k consultations (a token's FLOPs are k experts'), but the specialists who must come in to work
today are the union of those any patient was sent to.

That union is what a step *reads*. With ``n`` tokens in a step and expert ``i`` picked by a token
with probability ``k p_i``, the expected number of distinct experts touched is

    U(n) = sum_i [1 - (1 - k p_i)^n]      (uniform p_i = 1/E: E [1 - (1 - k/E)^n]),

``k`` at ``n = 1`` and ``E`` as ``n`` grows: decode at batch 1 reads k experts' weights, a large
batch (or any prefill) all E, so MoE decode is memory-bound on the union of the active experts.

The grouped expert GEMM of a GPU holding ``E_local`` experts is priced as ``E_local`` GEMMs of the
busiest expert's rows, ``r = min(imbalance, capacity_factor) x n k / E``: ``imbalance`` is the most
loaded expert's tokens over the mean (1.0: balanced, then the rows are exactly ``n k E_local / E``,
k experts' FLOPs per token); ``capacity_factor`` (Switch Transformer, GShard) caps an expert at
``capacity x mean`` rows and drops the tokens above it (0: dropless, as Mixtral is served). A
grouped GEMM's wave ends with its busiest expert, and a capacity-padded batched GEMM computes
``E x capacity`` rows whatever the routing, so the busiest expert's rows set every expert's
here (under ``imbalance=1`` nothing is padded). Its weight traffic is the local share of U(n).

Expert parallelism (``ep``) shards the experts over ``ep`` GPUs, E/ep each; each GPU sends its
tokens' k copies of the hidden state to the experts' GPUs (all-to-all dispatch) and gets the
results back (all-to-all combine): a buffer of ``tokens x k x hidden`` elements per GPU, of which
``(ep-1)/ep`` leaves it (``model.collectives`` prices the all-to-all). ``check_routing`` refuses
what cannot be split.

Training (``moe_mlp`` with ``ops.train``) runs each forward kernel's gradients as the dense
layers do: a grouped GEMM's data gradient (``[rows, n] @ W^T``, the weights read again) and its
weight gradient (``X^T @ dY`` per expert: every local expert's weights written), the router's two,
and a streaming pass for the top-k, the activation and the combine. The all-to-alls a step adds,
the expert weights sharded over ``ep`` and their gradient reduction are the 3D-parallel step's
(``workloads.expert_parallel``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import attrs
from pydantic import Field

from parsim.base.errors import ParsimError
from parsim.workloads.base import Kernel
from parsim.workloads.llm_config import LlmConfig
from parsim.workloads.transformer_ops import Ops

# The routing's two parameters, one definition for every workload that takes them (training steps
# and served loads alike).
IMBALANCE_FIELD: Any = Field(
    1.0, ge=1.0, le=1000.0, description="mixture of experts: the busiest expert's tokens over the mean"
)
CAPACITY_FACTOR_FIELD: Any = Field(
    0.0,
    ge=0.0,
    le=1000.0,
    description="mixture of experts: rows an expert takes over the mean (0: dropless)",
)

ROUTER = "router"
"""``Kernel.part`` of the router's GEMMs (its forward and both gradients)."""
ROUTE = "route"
"""``Kernel.part`` of the softmax/top-k: the all-to-all dispatch goes after it."""
EXPERT_ACT = "experts act"
"""``Kernel.part`` of the experts' activation (SiLU x up, or GELU), forward and backward."""
COMBINE = "combine"
"""``Kernel.part`` of the weighted sum of each token's k expert outputs, forward and backward."""
GROUPED_GEMM = "grouped gemm"
"""``Work.op`` of an expert GEMM over every local expert's rows (``Kernel.work.op``): what a library
may run as one GEMM per expert (``moe_layer_ops.per_expert_gemms``)."""
EXPERT_PERMUTATION = "experts permutation"
"""``Kernel.part`` of DeepEP's permutation of the received tokens into the local experts' rows, and
its gradient: Megatron-Core runs it in the experts' part of the layer (``dispatch_postprocess``
inside ``routed_experts_compute``), after the dispatch (``moe_layer_ops.hidden_moves``)."""
SCHEDULE_NODE = "schedule node"
"""``Kernel.part`` of the host's calls of the combined 1F1B schedule's nodes on the attention's side
of a MoE layer (``moe_layer_ops.schedule_nodes``)."""
EXPERT_SCHEDULE_NODE = "experts schedule node"
"""``Kernel.part`` of those on the experts' side (the ``mlp`` and ``moe_combine`` nodes)."""
QUANTIZATION_PADDING = "experts padding"
"""``Kernel.part`` of the copies that pad each expert's rows to a quantised GEMM's alignment and
strip the padding again (``moe_layer_ops.quantization_padding``)."""
EXPERT_NODE = (
    "gate",
    "up",
    "down",
    EXPERT_ACT,
    COMBINE,
    EXPERT_PERMUTATION,
    QUANTIZATION_PADDING,
    EXPERT_SCHEDULE_NODE,
)
"""The ``Kernel.part`` of the kernels Megatron-Core's combined 1F1B schedule runs as a MoE layer's
``mlp`` node (the grouped GEMMs, their activation, the combine, DeepEP's permutation, the experts'
padding, the host's calls of that side's nodes); the rest of the layer is its ``attn`` node
(``expert_parallel.paired_collectives``)."""


def groups_touched(experts: int, top_k: int, groups: int) -> float:
    """Expected groups a token's ``top_k`` experts (of ``experts`` spread evenly over ``groups``
    groups, picked uniformly) live in: ``G (1 - C(E - E/G, k) / C(E, k))``."""
    return groups * (1.0 - math.comb(experts - experts // groups, top_k) / math.comb(experts, top_k))


@attrs.frozen
class Routing:
    """How a step's tokens reach the experts.

    Attributes:
        imbalance: the most loaded expert's tokens over the mean (>= 1; 1: balanced).
        capacity_factor: an expert computes at most this x the mean rows, the rest dropped
            (0: dropless).
        ep: GPUs the experts are sharded over (expert parallelism).
        tokens: tokens routed in the step over the whole EP group (0: this GPU's own).
        expert_tp: GPUs each expert is split over when fewer than the attention's ``tp`` (MoE
            parallel folding: each GPU routes its ``1 / (tp / expert_tp)`` of the tokens through
            experts ``1 / expert_tp`` wide); 0: as the attention.
    """

    imbalance: float = 1.0
    capacity_factor: float = 0.0
    ep: int = 1
    tokens: int = 0
    expert_tp: int = 0

    @property
    def load(self) -> float:
        """The busiest expert's rows over the mean: min(imbalance, capacity)."""
        return min(self.imbalance, self.capacity_factor) if self.capacity_factor else self.imbalance

    def local_experts(self, experts: int) -> int:
        """The experts each GPU of the EP group holds, of ``experts``."""
        return experts // self.ep


def expected_experts(tokens: float, experts: int, top_k: int, probs: Sequence[float] | None = None) -> float:
    """U(n): the expected number of distinct experts ``tokens`` tokens touch, each picking
    ``top_k`` of ``experts`` (expert i with probability ``top_k x probs[i]``; uniform by default)."""
    if tokens <= 0:
        return 0.0
    shares = [1.0 / experts] * experts if probs is None else list(probs)
    return float(sum(1.0 - (1.0 - min(1.0, top_k * p)) ** tokens for p in shares))


def dispatch_B(tokens: int, config: LlmConfig, size: float) -> float:
    """One GPU's all-to-all buffer: its tokens' k copies of the hidden state (dispatch or combine)."""
    return float(tokens * config.experts_per_token * config.hidden * size)


def check_routing(config: LlmConfig, routing: Routing, gpus: int, where: str) -> None:
    """Refuse, in one line, routing that the model or the GPUs cannot take."""
    if routing.imbalance < 1 or not math.isfinite(routing.imbalance):
        raise ParsimError(
            f"{where}: 'imbalance' must be >= 1 (the busiest expert over the mean): {routing.imbalance}"
        )
    if routing.capacity_factor < 0 or not math.isfinite(routing.capacity_factor):
        raise ParsimError(f"{where}: 'capacity_factor' must be >= 0 (0: dropless): {routing.capacity_factor}")
    if routing.ep == 1:
        return
    if not config.moe:
        raise ParsimError(f"{where}: 'ep' must be 1 for {config.name}, a dense model: {routing.ep}")
    if config.experts % routing.ep:
        raise ParsimError(f"{where}: 'ep' must divide {config.name}'s {config.experts} experts: {routing.ep}")
    if routing.ep > gpus or gpus % routing.ep:
        raise ParsimError(f"{where}: 'ep' must divide gpus={gpus}: {routing.ep}")


def moe_mlp(
    ops: Ops, layer: str, config: LlmConfig, tokens: int, width: int, routing: Routing
) -> list[Kernel]:
    """The forward kernels of one MoE block's MLP on one GPU (``ops``: a ``transformer_ops.Ops``):
    router GEMM, softmax/top-k, the grouped gate/up GEMMs, SiLU x up (or GELU), the grouped down GEMM
    and the weighted sum of each token's k outputs. ``width``: an expert's inner width on this GPU.

    Returns:
        the backward kernels when ``ops.train`` (in forward order, each op's own reversed: the
        ``transformer_kernels`` convention), else none.
    """
    s, d, experts, k = ops.size, config.hidden, config.experts, config.experts_per_token
    routed = routing.tokens or tokens  # the tokens every expert of the EP group may receive
    local = routing.local_experts(experts)
    rows = local * routing.load * routed * k / experts  # E_local experts x the busiest's rows
    touched = expected_experts(routed, experts, k) / routing.ep  # of the local experts, expected
    ops.forward.append(
        ops.gemm(
            layer,
            "router fwd",
            tokens,
            experts,
            d,
            (tokens * d + d * experts) * s,
            tokens * experts * s,
            cold=d * experts * s,
            part=ROUTER,
        )
    )
    ops.forward.append(
        ops.kernel(
            layer,
            "softmax top-k fwd",
            5.0 * tokens * experts,
            tokens * experts * s,
            tokens * k * (s + 4),
            tokens * experts,
            special_ops=tokens * experts,
            part=ROUTE,
        )
    )
    bias = 1 if config.bias else 0
    matrices = ("up",) if config.mlp == "gelu" else ("gate", "up")
    for what in matrices:
        ops.forward.append(_grouped(ops, layer, what, rows, width, d, touched * (d + bias) * width))
    act, flops = ("gelu", 8) if config.mlp == "gelu" else ("silu x up", 5)  # as the dense MLP's
    n = max(1, math.ceil(rows * width))
    ops.forward.append(
        ops.stream(layer, f"experts {act} fwd", n, flops, len(matrices), special_ops=n, part=EXPERT_ACT)
    )
    ops.forward.append(_grouped(ops, layer, "down", rows, d, width, touched * (width * d + bias * d)))
    out = tokens * k * d  # each token's k outputs, weighted and summed
    ops.forward.append(
        ops.kernel(layer, "combine fwd", 2.0 * out, out * s, tokens * d * s, out, part=COMBINE)
    )
    if not ops.train:
        return []
    held = local * (d + bias) * width  # a weight gradient writes every local expert's matrix
    back = _router_backward(ops, layer, tokens, d, experts, k)
    for what in matrices:
        back += _grouped_backward(ops, layer, what, rows, width, d, touched * (d + bias) * width, held, local)
    reads = 3 if len(matrices) == 2 else 2  # as the dense MLP's activation backward
    back.append(ops.stream(layer, f"experts {act} bwd", n, 10, reads, len(matrices), part=EXPERT_ACT))
    down = (width * d + bias * d, local * (width * d + bias * d))  # touched and held per expert
    back += _grouped_backward(ops, layer, "down", rows, d, width, touched * down[0], down[1], local)
    # the combine's gradient: each of a token's k outputs gets dy x its weight, each weight dy . output
    read, written = (out + tokens * d) * s, (out + tokens * k) * s
    back.append(ops.kernel(layer, "combine bwd", 4.0 * out, read, written, out, part=COMBINE))
    return back


def _router_backward(ops: Ops, layer: str, tokens: int, d: int, experts: int, k: int) -> list[Kernel]:
    """The top-k softmax's gradient, then the router GEMM's (data, weight), in accumulation order."""
    s = ops.size
    scores = tokens * experts
    return [
        ops.gemm(
            layer,
            "router bwd-weight",
            d,
            experts,
            tokens,
            (tokens * d + scores) * s,
            d * experts * s,
            part=ROUTER,
        ),
        ops.gemm(
            layer,
            "router bwd-data",
            tokens,
            d,
            experts,
            (scores + d * experts) * s,
            tokens * d * s,
            cold=d * experts * s,
            part=ROUTER,
        ),
        ops.kernel(
            layer,
            "softmax top-k bwd",
            3.0 * scores,
            (scores + tokens * k) * s,
            scores * s,
            scores,
            part=ROUTE,
        ),
    ]


def _grouped_backward(
    ops: Ops, layer: str, what: str, rows: float, n: int, k: int, weights: float, held: float, local: int
) -> list[Kernel]:
    """A grouped GEMM's gradients in accumulation order (weight, then data, as ``Ops.linear``'s
    reversed): ``dX = dY @ W^T`` reads the experts' weights again; ``dW = X^T @ dY`` per expert
    writes each local expert's ``k x n`` matrix (``held`` elements), ``local`` GEMMs of that shape."""
    s, m = ops.size, max(1, math.ceil(rows))
    flops = 2.0 * rows * n * k
    common = {
        "matrix": True,
        "python_ops_per_item": n,
        "math": ops.numerics.linear_math,
        "part": what,
        "op": GROUPED_GEMM,
    }
    return [
        ops.kernel(
            layer,
            f"experts {what} bwd-weight",
            flops,
            rows * (k + n) * s,
            held * s,
            local * k * n,
            gemm_mn=(max(1, local * k), max(1, n)),
            **common,
        ),
        ops.kernel(
            layer,
            f"experts {what} bwd-data",
            flops,
            rows * n * s + weights * s,
            rows * k * s,
            m * k,
            gemm_mn=(m, max(1, k)),
            cold=weights * s,
            **common,
        ),
    ]


def _grouped(ops: Ops, layer: str, what: str, rows: float, n: int, k: int, weights: float) -> Kernel:
    """One grouped GEMM over ``rows`` rows in all (``[rows, k] @ [k, n]`` per expert), reading
    ``weights`` elements of the experts it touches (cold: streamed once per step)."""
    s = ops.size
    m = max(1, math.ceil(rows))
    return ops.kernel(
        layer,
        f"experts {what} fwd",
        2.0 * rows * n * k,
        rows * k * s + weights * s,
        rows * n * s,
        m * n,
        matrix=True,
        gemm_mn=(m, max(1, n)),
        python_ops_per_item=k,
        math=ops.numerics.linear_math,
        cold=weights * s,
        part=what,
        op=GROUPED_GEMM,
    )
