"""The FLOP counts published training tables divide a step by, so a predicted step time converts
to the TFLOP/s per GPU they print.

Each count is the table's own formula, not parsim's tally of the kernels: Narayanan et al.'s for
Megatron-LM's GPT runs (recomputation included) and Megatron-Core's ``num_floating_point_operations``
for its logged throughput (mixtures of experts, grouped-query attention, gated MLPs), whose core
attention later Megatron-LM halves for the causal mask. A row names the count by its metric
(``published.MCORE_METRICS``).
"""

from __future__ import annotations

from parsim.workloads.llms import llm


def megatron_flops(params: dict) -> float:
    """FLOPs of one step as Narayanan et al. 2021 count them (their eq. 3, recomputation included):
    ``96 B s l h^2 (1 + s / 6h + V / 16 l h)``, so a predicted step time converts to the TFLOP/s
    per GPU their tables print."""
    config = llm(str(params["model"]))
    batch, seq = float(params["batch"]), float(params.get("seq") or config.context)
    layers, hidden, vocab = config.layers, config.hidden, config.vocab
    return 96 * batch * seq * layers * hidden**2 * (1 + seq / (6 * hidden) + vocab / (16 * layers * hidden))


def mcore_flops(params: dict, causal: bool = False) -> float:
    """FLOPs of one step as Megatron-Core counts them for the TFLOP/s it logs
    (``num_floating_point_operations`` in megatron/training/training.py, NVIDIA/Megatron-LM@83f0eba84e):
    ``12 B s l h^2 ((1 + g/a + s/h) q/h
    + (f/h) k m + V / (2 l h))`` with g KV heads of a query heads, q their query width, f one expert's
    MLP width, k the experts a token is routed to (1 for a dense MLP) and m 3/2 for a gated MLP: the
    mixture of experts' counterpart of ``megatron_flops`` (no recomputation counted). ``causal``: the
    count as later Megatron-LM logs it (NVIDIA/Megatron-LM@7146484607, ``standard_self_attn_core_term``
    "/ 2  # causal mask"), the core attention's ``s/h`` term halved; the rest is the same sum."""
    config = llm(str(params["model"]))
    batch, seq = float(params["batch"]), float(params.get("seq") or config.context)
    h, layers = config.hidden, config.layers
    core = seq / h / (2 if causal else 1)
    attention = (1 + config.kv_heads / config.heads + core) * config.query_width / h
    gated = 1.5 if config.mlp == "swiglu" else 1.0
    mlp = config.mlp_hidden / h * config.experts_per_token * gated
    return 12 * batch * seq * layers * h * h * (attention + mlp + config.vocab / (2 * layers * h))
