"""2D parallelism for transformer training: tensor parallel inside a node, FSDP across the rest.

torchtitan's 2D layout (pytorch/torchtitan, ``parallelize_llama``: a device mesh ``(dp, tp)`` with
``tp`` innermost, so a tensor-parallel group is ``tp`` neighbouring GPUs of one node): each block's
linear layers are split Megatron-style over the ``tp`` GPUs (wq, wk, wv, w1, w3 column-parallel; wo, w2
row-parallel), its norms run sequence-parallel (each GPU normalises 1/tp of the tokens), and FSDP
shards each GPU's 1/tp slice of the weights again over the ``dp = G / tp`` GPUs that hold the same
slice: one per tensor-parallel group, ``gpus / tp`` of them in each node. Like two chefs splitting
every recipe in half (tensor parallel) while a pantry across the street keeps each half's
ingredients shelved in many stores (FSDP): each half-recipe still fetches its own ingredients.

Per sub-layer (a block's attention or its MLP) and pass, sequence parallelism exchanges the
tokens' hidden states twice inside the tensor-parallel group: an all-gather before the
column-parallel linears and a reduce-scatter after the row-parallel one; the backward pass runs
the same pair (reduce-scatter of the gathered input's gradient, all-gather of the output's), and a
full recomputation replays the forward pair. Both sit on the critical path of the unit's kernels
(``Block.collectives``), as in the 3D step (``megatron.tp_collectives``); FSDP's gathers and
reduce-scatters of the slices overlap them on their own stream (``ddp``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from parsim.base.errors import ParsimError
from parsim.workloads.base import AllReduce, Kernel, Params
from parsim.workloads.llms import LlmConfig, llm
from parsim.workloads.parallel3d import RECOMPUTE_PHASE
from parsim.workloads.transformer_ops import EMBEDDING, block_layers

NEEDS = "tp > 1 (2D: tensor parallel inside a node, FSDP across the data-parallel GPUs)"


def check(config: LlmConfig | None, params: Params) -> None:
    """Refuse a 2D split parsim cannot run, naming the field, the bound and the value.

    Raises:
        ParsimError: not a language model, not FSDP (zero=3 over sync=ring), ``tp`` wider than
            a node's ``gpus`` or not dividing them, or not dividing the heads, KV heads or MLP width.
    """
    tp, gpus = params["tp"], params["gpus"]
    if config is None:
        raise ParsimError(
            f"data_parallel: {NEEDS} splits a language model's layers; {params['model']} is not one"
        )
    if params["sync"] != "ring" or params.get("zero", 0) != 3:
        raise ParsimError(
            f"data_parallel: {NEEDS} needs sync=ring zero=3 (torchtitan's FSDP2 + TP); for replicated "
            "weights use network tp=... (Megatron's 3D step)"
        )
    if tp > gpus or gpus % tp:
        raise ParsimError(
            f"data_parallel: 'tp' must divide a node's 'gpus' ({gpus}): tensor parallelism stays "
            f"inside a node: {tp}"
        )
    for name, value in (
        ("heads", config.heads),
        ("kv_heads", config.kv_heads),
        ("mlp_hidden", config.mlp_hidden),
    ):
        if value % tp:
            raise ParsimError(f"data_parallel: 'tp' must divide {config.name}'s {name} ({value}): {tp}")


def split_layer_params(
    layer_params: Sequence[tuple[str, int]], config: LlmConfig, tp: int
) -> tuple[tuple[str, int], ...]:
    """One GPU's ``(layer, parameters)``: a block's linears and the embedding and LM head over ``tp``
    (torchtitan shards both), each block's norm and the final norm whole (replicated)."""
    if tp == 1:
        return tuple(layer_params)
    whole = {EMBEDDING: 0, "lm_head": 0}  # sharded all through; every other layer keeps a norm whole
    split = []
    for layer, params in layer_params:
        kept = whole.get(layer, config.norm_params)
        split.append((layer, kept + math.ceil((params - kept) / tp)))
    return tuple(split)


def sync_fields(params: Params, dtype_B: int, micro: int) -> dict[str, Any]:
    """``ddp.Sync``'s fields for a 2D step of ``micro`` sequences per pass: the FSDP group (one GPU
    of each tensor-parallel group, ``gpus / tp`` of them per node) and each unit's exchanges."""
    config, tp = llm(params["model"]), params["tp"]
    return {
        "ranks": params["gpus"] * params.get("nodes", 1) // tp,
        "per_node": params["gpus"] // tp,
        "tp": tp,
        "tp_B": exchange_B(micro * params["seq"], config, dtype_B),
        "tp_replay": params.get("recompute", "none") == "full",
        "layers": config.layers,
    }


def exchange_B(tokens: int, config: LlmConfig, dtype_B: int) -> float:
    """Bytes of one exchange: the micro-batch's hidden states (all of its tokens, 16-bit)."""
    return float(tokens * config.hidden * dtype_B)


def exchanges(
    kernels: Sequence[Kernel], tp: int, size_B: float, replay: bool, layers: int
) -> tuple[AllReduce, ...]:
    """The tensor-parallel collectives of one FSDP unit's kernels: per block sub-layer among them
    an all-gather and a reduce-scatter of ``size_B`` over the ``tp`` GPUs, twice when the unit
    also replays that sub-layer's forward (``replay``: full recomputation in the backward pass)."""
    if tp == 1:
        return ()
    blocks = {name for i in range(layers) for name in block_layers(i)}
    seen: dict[str, int] = {}
    for kernel in kernels:
        if kernel.layer in blocks:
            again = replay and kernel.phase == RECOMPUTE_PHASE
            seen[kernel.layer] = max(seen.get(kernel.layer, 1), 2 if again else 1)
    gather = AllReduce("tp all-gather", size_B, kind="all_gather", ranks=tp, per_node=tp)
    scatter = AllReduce("tp reduce-scatter", size_B, kind="reduce_scatter", ranks=tp, per_node=tp)
    return (gather, scatter) * sum(seen.values())
