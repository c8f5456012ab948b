"""A transformer's memory per GPU, part by part: the one formula every transformer workload uses.

``transformer_needs`` gives the ``MemoryNeeds`` of one GPU, for a step on one GPU, a
tensor-parallel server, a data-parallel shard and every stage of a 3D-parallel pipeline alike;
``model.footprint`` adds the device's runtime reserve and answers whether they fit.

Parameter state, per parameter under mixed precision (PyTorch autocast and Megatron-LM alike):
float32 master weights (4 B) and the float16/bfloat16 copy the kernels read (2 B), a float32
gradient (4 B: autocast's gradients take the parameter's dtype, Megatron-LM accumulates its
``main_grad`` in float32), and Adam's two float32 moments (8 B): 18 B. ZeRO's 16 B (Rajbhandari et
al. 2020) keeps float16 gradients, which neither framework does by default.

Activations one layer saves for its backward, per micro-batch (Korthikanti et al. 2022, section
4.1; ``s`` tokens, ``b`` sequences, ``h`` hidden, ``a`` heads, ``t`` tensor-parallel GPUs), item by
item so that grouped-query attention (fewer k, v heads) and SwiGLU (three inner tensors) count
right: the two norms' inputs and outputs (``4sbh``, replicated over ``t``); q, k, v and the
attention output (``4sbh/t`` under multi-head attention); the MLP's inner tensors (``16sbh/t`` for
GELU's 4h); the attention core: FlashAttention's float32 log-sum-exp per query and head, or the
unfused ``a s^2 b`` probabilities. In float16 that is ``sbh (8 + 24/t) + 2as^2b/t`` bytes; dropout
adds its one-byte masks (``2sbh`` hidden, ``a s^2 b/t`` attention) and the dropped probabilities
(``2as^2b/t``): exactly the paper's ``sbh (10 + 24/t + 5as/(ht))``. Selective recomputation drops
the ``s^2`` terms; full recomputation keeps each layer's input (``2sbh``), as the paper counts it
(the one layer rebuilt at a time during the backward pass is not counted, as there). Under 1F1B
stage ``s`` of ``pp`` holds ``min(pp - s, m)`` micro-batches at once, so the first stage holds
``pp``; the fullest stage is what each GPU must hold. The last stage also keeps the final norm and
the logits with their float32 log-probabilities; the workspace is the largest gradient in flight.
"""

from __future__ import annotations

import attrs

from parsim.base.dtypes import itemsize
from parsim.base.errors import ParsimError
from parsim.workloads import selective_op
from parsim.workloads.layers import Numerics
from parsim.workloads.llms import LlmConfig, kv_cache_bytes
from parsim.workloads.needs import MemoryNeeds
from parsim.workloads.optimizers import parameter_needs

LSE_B = 4  # FlashAttention's float32 log-sum-exp, one per query and head
MASK_B = 1  # a dropout mask: one byte per element
LOG_PROBS_B = 4  # the loss's float32 log-probabilities beside the logits


def stage_layers(config: LlmConfig, pp: int) -> list[range]:
    """The transformer blocks of each stage, as even as the count allows (earlier stages get one more)."""
    base, extra = divmod(config.layers, pp)
    bounds = [0]
    for stage in range(pp):
        bounds.append(bounds[-1] + base + (1 if stage < extra else 0))
    return [range(bounds[s], bounds[s + 1]) for s in range(pp)]


def uneven_stages(config: LlmConfig, pp: int) -> str:
    """A sentence when ``pp`` stages cannot hold equal layers ("" when they can): the stages with
    one more layer take longer per micro-batch and set the pipeline's pace, so the others wait."""
    base, extra = divmod(config.layers, pp)
    if extra == 0:
        return ""
    return (  # pp <= layers (parallel3d.layout refuses deeper pipelines): every stage has a layer
        f"pp={pp} does not divide {config.name}'s {config.layers} layers: the stages are unequal "
        f"({extra} of {base + 1} layers and {pp - extra} of {base}); the {base + 1}-layer stages set "
        "the pipeline's pace and the others wait"
    )


def layers_per_stage(config: LlmConfig, pp: int) -> str:
    """The layers a stage holds, as a table shows it: ``"12"``, or ``"2 or 1"`` for unequal stages."""
    base, extra = divmod(config.layers, pp)
    return f"{base + 1} or {base}" if extra else str(base)


def stage_params(config: LlmConfig, blocks: list[range], stage: int) -> int:
    """Parameters stage ``stage`` holds (before tensor parallelism); with more than one stage the
    last keeps its own copy of tied embeddings for the LM head, as Megatron-LM does."""
    held = len(blocks[stage]) * config.layer_params
    if stage == 0:
        held += config.embedding_params
    if stage == len(blocks) - 1:
        tied_copy = config.vocab * config.hidden if len(blocks) > 1 else 0
        held += config.norm_params + (config.head_params or tied_copy)
    return held


def layer_activation_B(
    config: LlmConfig,
    micro_batch: int,
    seq: int,
    dtype: str,
    tp: int = 1,
    recompute: str = "none",
    attention: str = "flash",
    dropout: bool = False,
    sequence_parallel: bool = False,
    fp8: bool = False,
) -> float:
    """Bytes one layer keeps for its backward, for one micro-batch on one GPU (module docstring).
    Sequence parallelism splits the replicated ``[s, b, h]`` tensors (the norms' and the dropout
    masks) over ``tp`` too: the paper's ``sbh (34/t + 5as/(ht))``. ``fp8``: the linears keep their
    inputs as the FP8 casts Transformer Engine made of them, one byte each (``_fp8_saved``)."""
    size, tokens, t = itemsize(dtype), micro_batch * seq, tp
    split = t if sequence_parallel else 1
    if recompute == "full":
        return float(tokens * config.hidden * size / split)  # the layer's input
    if recompute == selective_op.MODE:  # torchtitan's per-op policy (flash attention's LSE kept too)
        return float(tokens * (selective_op.kept_per_token(config, t) * size + config.heads / t * LSE_B))
    heads, kv_heads = config.heads / t, config.kv_heads / t
    # a mixture of experts keeps each token's k experts' rows and its k dispatched copies (1/tp of
    # them here: the experts split over tp, or under folding each GPU's 1/tp of the tokens)
    k = config.experts_per_token
    inner = (2 if config.mlp == "gelu" else 3) * config.mlp_hidden / t * k
    own = (2 * heads + 2 * kv_heads) * config.head_dim + inner + (k * config.hidden / t if config.moe else 0)
    kept = tokens * (4 * config.hidden / split + own) * size
    if fp8:  # the linears' saved inputs as their one-byte casts (``_fp8_saved``)
        shrunk, doubled = _fp8_saved(config, heads, t, split)
        kept -= tokens * (shrunk * (size - 1) - doubled)
    kept += 2 * tokens * config.hidden * MASK_B / split if dropout else 0.0
    if attention != "unfused":
        return float(kept + tokens * heads * LSE_B)
    if recompute == "selective":  # the attention core is computed again, its squares not kept
        return float(kept)
    square = micro_batch * heads * seq * seq
    return float(kept + square * (size + (MASK_B + size if dropout else 0)))


def _fp8_saved(config: LlmConfig, heads: float, t: int, split: int) -> tuple[float, float]:
    """Elements per token of one layer's saved activations that ``fp8`` keeps in one byte instead of
    16 bits, and those it keeps twice (16 bits and a one-byte cast). Transformer Engine saves each FP8
    linear's input as the FP8 cast it made for the weight gradient: the first norm's output (QKV's
    input, cast by the fused norm; the 16-bit output is not kept) and, in a dense block, the second
    norm's output and the activation's (the MLP's inputs); in a mixture of experts the grouped GEMMs'
    inputs instead (the k dispatched copies and the down projections' inputs: the router reads the
    second norm's output in 16 bits and keeps it so). The attention output is the projection's input
    but also what flash attention keeps for its own backward in 16 bits: under FP8 both are kept."""
    shrunk = config.hidden / split
    if config.moe:
        shrunk += config.experts_per_token * (config.hidden + config.mlp_hidden) / t
    else:
        shrunk += config.hidden / split + config.mlp_hidden / t
    return shrunk, heads * config.head_dim


def transformer_needs(
    config: LlmConfig,
    batch: int,
    seq: int,
    numerics: Numerics,
    train: bool,
    optimizer: str = "sgd",
    *,
    tp: int = 1,
    pp: int = 1,
    microbatches: int = 1,
    recompute: str = "none",
    attention: str = "flash",
    dropout: bool = False,
    fused_loss: bool = False,
    offload: bool = False,
    sequence_parallel: bool = False,
    fp8: bool = False,
) -> MemoryNeeds:
    """One GPU's needs for a step of ``config`` over ``batch`` sequences of ``seq`` tokens
    (training: ``batch`` is the micro-batch; the fullest of ``pp`` stages), or for a forward pass
    that keeps the KV cache of its ``seq`` tokens (inference). ``fused_loss``: the log-softmax is
    fused into the loss (XLA), no float32 log-probabilities kept; ``offload``: under full
    recomputation each layer's checkpointed input lives in host memory, not on the device."""
    size, d, t = itemsize(numerics.dtype), config.hidden, tp
    tokens = batch * seq
    vocab, inner = config.vocab / t, (2 if config.mlp == "gelu" else 3) * config.mlp_hidden / t
    if not train:
        inner *= config.experts_per_token  # a mixture of experts: each token's k experts' rows
        scores = batch * config.heads / t * seq * seq * size if attention == "unfused" else 0.0
        return attrs.evolve(
            parameter_needs(config.params / t, numerics.dtype, numerics.mixed, False, optimizer),
            kv_cache_B=kv_cache_bytes(config, batch, seq, numerics.dtype) / t,
            activations_B=2.0 * tokens * d * size,  # a layer's input and output
            workspace_B=max(tokens * inner * size, scores, batch * vocab * size),
        )
    per_layer = layer_activation_B(
        config, batch, seq, numerics.dtype, t, recompute, attention, dropout, sequence_parallel, fp8
    )
    if offload:
        if recompute != "full":
            raise ParsimError(
                f"'offload' keeps the checkpoints of recompute=full in host memory: recompute={recompute}"
            )
        per_layer = 0.0  # the layer inputs are copied to the host in the forward pass, back in the backward
    log_probs = 0 if fused_loss else LOG_PROBS_B
    blocks = stage_layers(config, pp)
    fullest = MemoryNeeds()
    for stage in range(pp):
        last = stage == pp - 1
        in_flight = min(pp - stage, microbatches)
        acts = len(blocks[stage]) * per_layer
        if last:  # the final norm's input and output, the logits and their float32 log-probabilities
            acts += 2 * tokens * d * size + tokens * vocab * (size + log_probs)
        gradient = tokens * max(config.mlp_hidden / t, vocab if last else 0.0) * size  # the largest in flight
        needs = attrs.evolve(
            parameter_needs(
                stage_params(config, blocks, stage) / t, numerics.dtype, numerics.mixed, True, optimizer
            ),
            activations_B=in_flight * acts,
            workspace_B=gradient,
        )
        if stage == 0 or needs.total_B > fullest.total_B:
            fullest = needs
    return fullest
