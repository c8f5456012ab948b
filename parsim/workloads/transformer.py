"""The kernels a framework launches for one step of a decoder-only transformer.

Every block is the same list of ops, each one kernel sized by the step's tokens (batch x new
tokens), so a step has as many events as the model has layers, whatever the batch or sequence:

- ``h.i.attn``: norm, the QKV projection (one GEMM), rotary embedding on q and k (RoPE models),
  attention, the output projection and the residual add;
- ``h.i.mlp``: norm, up GEMM, GELU, down GEMM (GPT-2) or gate and up GEMMs, SiLU x up, down GEMM
  (SwiGLU, Llama), and the residual add; a mixture of experts' MLP is its router, top-k and
  grouped expert GEMMs (``moe``);
- around them: token (+ learned position) embedding, a final norm, the LM head and, for
  training, the cross-entropy over every token's logits.

Attention is either ``unfused`` (eager PyTorch): QK^T writes the S x S scores of every head to
memory, softmax (with the causal mask) reads and rewrites them and the product with V reads them
again; the whole S x S square is computed, the mask only zeroes half of it. Or ``flash``
(FlashAttention): one kernel keeps its tiles on chip, skips the tiles above the causal diagonal
(half the work) and moves only q, k, v and the output: traffic linear in S, compute quadratic.
Its backward recomputes the scores: five S x S products, 2.5 x the forward's FLOPs.

Backward follows the CNN rule: two gradient GEMMs per linear layer (data and weight), a streaming
kernel per norm, activation and add; then the optimizer (SGD or Adam) per layer group. ``past``
tokens already in a KV cache make a step of serving: the new tokens' queries attend to past + new
keys read from the cache. ``tp`` is tensor parallelism: heads, KV heads, MLP columns and the
vocabulary are split G ways; each GPU gets 1/G of that work (the caller adds the all-reduces).
"""

from __future__ import annotations

import math

from parsim.base.errors import ParsimError
from parsim.workloads import transformer_eager as eager
from parsim.workloads import transformer_hf as hf
from parsim.workloads import transformer_titan as titan
from parsim.workloads.base import Kernel
from parsim.workloads.layers import Numerics
from parsim.workloads.llms import LlmConfig, kv_cache_bytes, kv_itemsize
from parsim.workloads.moe import Routing, moe_mlp
from parsim.workloads.transformer_ops import ATTENTION_CORE, EMBEDDING, REPLICATED, Ops, block_layers

__all__ = [  # the memory side of the API: llms.py (the KV cache) and transformer_memory.py
    "ATTENTIONS",
    "kv_cache_bytes",
    "kv_itemsize",
    "transformer_kernels",
    "transformer_layers",
]
ATTENTIONS = ("flash", "flash-v1", "unfused")
"""``flash``: FlashAttention-2-class fused kernels (also cuDNN's and TensorRT's fused attention);
``flash-v1``: the first FlashAttention, the same traffic at half the speed; ``unfused``: three kernels
through memory. The fused kinds differ only in the share of the GEMM rate their kernels reach
(``LibrarySpec.attention_efficiency``)."""
_TOKEN_ID_B = 8  # int64 token ids


def transformer_layers(config: LlmConfig, train: bool) -> tuple[tuple[str, str], ...]:
    """``(name, kind)`` of the rows of a per-layer breakdown, in model order."""
    blocks = [
        row for i in range(config.layers) for row in zip(block_layers(i), ("attention", "mlp"), strict=True)
    ]
    tail = [("ln_f", config.norm), ("lm_head", "linear")] + ([("loss", "cross_entropy")] if train else [])
    return ((EMBEDDING, "embedding"), *blocks, *tail)


def _check(config: LlmConfig, batch: int, new: int, past: int, tp: int, attention: str) -> None:
    if attention not in ATTENTIONS:
        raise ParsimError(f"'attention' must be one of {', '.join(ATTENTIONS)}: {attention!r}")
    if min(batch, new, tp) < 1 or past < 0:
        raise ParsimError(
            f"{config.name}: batch, tokens and tp must be >= 1 and past >= 0: {batch}, {new}, {tp}, {past}"
        )
    if past + new > config.context:
        raise ParsimError(
            f"{config.name}: {past + new} tokens are above its context of {config.context} tokens"
        )
    if config.heads % tp or config.kv_heads % tp or config.mlp_hidden % tp:
        raise ParsimError(
            f"{config.name}: tensor parallelism over {tp} GPUs must divide its {config.heads} heads, "
            f"{config.kv_heads} KV heads and MLP width {config.mlp_hidden}"
        )


def transformer_kernels(
    config: LlmConfig,
    batch: int,
    seq: int,
    numerics: Numerics,
    train: bool,
    *,
    attention: str = "flash",
    past: int = 0,
    new_tokens: int | None = None,
    device: int = 0,
    tp: int = 1,
    kv_dtype: str | None = None,
    optimizer: str = "sgd",
    update: bool = True,
    dropout: bool = False,
    kv_concat: bool = False,
    code: str = "fused",
    phase: str = "",
    routing: Routing | None = None,
) -> tuple[list[Kernel], list[Kernel]]:
    """The forward and backward kernels of one step on one GPU (of ``tp``).

    Args:
        config: the model.
        batch: sequences in the step.
        seq: tokens per sequence the step processes (a training step, a prefill).
        numerics: element types and mixed precision (``Numerics``).
        train: build the backward pass and the optimizer's update; inference instead writes the new
            keys and values to the KV cache and computes only each sequence's last logits.
        attention: ``flash`` or ``unfused``.
        past: tokens already in the KV cache: the new tokens attend to past + new keys.
        new_tokens: tokens per sequence processed now (default ``seq``; decode: 1).
        device: the GPU the kernels run on.
        tp: tensor-parallel GPUs: this GPU gets 1/tp of the heads, MLP columns and vocabulary.
        kv_dtype: element type of the KV cache (default: the activations' dtype).
        optimizer: ``sgd`` or ``adam``.
        update: include the optimizer's update kernels (data parallel may update elsewhere).
        dropout: training drops attention probabilities (an extra pass over the unfused square;
            hidden-state dropout is fused into the residual adds, as Megatron-LM fuses it).
        kv_concat: inference grows the KV cache by concatenation: every step copies all of it.
        code: ``fused`` (the model's code runs fused kernels), ``hf`` (Hugging Face's modules, one
            kernel per tensor op: ``transformer_eager`` for inference, ``transformer_hf`` for training)
            or ``eager`` / ``eager-fused-norm`` (the reference Llama op by op, training:
            ``transformer_titan``).
        phase: every kernel's ``Kernel.phase`` (an LLM request's ``prefill`` or ``decode``).
        routing: a mixture of experts' routing (``moe.Routing``; default balanced, dropless, no ep).

    Under ``numerics.primitive_layers`` inference runs the layers as an eager framework does
    (``transformer_eager``).
    """
    new = seq if new_tokens is None else new_tokens
    _check(config, batch, new, past, tp, attention)
    if config.moe and (numerics.primitive_layers or code != "fused"):
        raise ParsimError(
            f"{config.name}: a mixture of experts runs fused kernels here (framework=graph or "
            "cuda-graph, code=fused), not an eager framework's tensor ops"
        )
    if code in titan.CODES:
        if not train:
            raise ParsimError(
                f"code={code}: the reference Llama's eager code is modelled for training; inference "
                "op by op is Hugging Face's (code=hf)"
            )
        ops = Ops(numerics, device, optimizer, True, update, phase)
        backward = titan.train_step(ops, _attention, config, batch, new, attention, code)
        return ops.forward, backward
    if code == "hf" and train:
        ops = Ops(numerics, device, optimizer, True, update, phase)
        backward = hf.train_step(ops, _attention, config, batch, new, attention, dropout)
        return ops.forward, backward
    if (numerics.primitive_layers or code == "hf") and not train:
        ops = Ops(numerics, device, optimizer, False, False, phase)
        kv_size = kv_itemsize(kv_dtype or numerics.dtype)
        eager.forward(ops, _attention, config, batch, new, past, attention, tp, kv_size, kv_concat)
        return ops.forward, []

    ops = Ops(numerics, device, optimizer, train, update, phase)
    s, kv_size = ops.size, kv_itemsize(kv_dtype or numerics.dtype)
    d, hd, tokens, keys = config.hidden, config.head_dim, batch * new, past + new
    heads, kv_heads, width, vocab = (
        config.heads // tp,
        config.kv_heads // tp,
        config.mlp_hidden // tp,
        math.ceil(config.vocab / tp),
    )
    norm_flops = 5 if config.norm == "layernorm" else 4
    groups: list[list[Kernel]] = []  # backward kernels of each layer group, in model order

    # embedding: a gather of each token's row (+ its learned position row): bytes, no arithmetic
    ids, rows = tokens * _TOKEN_ID_B, tokens * d * s
    ops.forward.append(
        ops.kernel(EMBEDDING, "token gather", 0, rows + ids, rows, tokens * d, cold=rows + ids)
    )
    if config.position == "learned":
        ops.forward.append(ops.stream(EMBEDDING, "position add", tokens * d, 1, 2, cold=rows))
    positions = config.position_rows * d
    embed_bwd = [
        ops.kernel(EMBEDDING, "bwd", tokens * d, rows + ids, (vocab * d + positions) * s, tokens * d)
    ]
    groups.append(embed_bwd + ops.update_of(EMBEDDING, vocab * d + positions))

    for i in range(config.layers):
        attn, mlp = block_layers(i)
        back = ops.pointwise(attn, "ln_1", tokens * d, (norm_flops, 1, 0), (8, 2, 1), REPLICATED)
        back += ops.linear(attn, "qkv", tokens, (heads + 2 * kv_heads) * hd, d, config.bias, train)[::-1]
        if config.position == "rotary":
            back += ops.pointwise(attn, "rotary", tokens * (heads + kv_heads) * hd, (3, 1, 0), (3, 1, 1))
        if not train:
            cached = tokens * 2 * kv_heads * hd
            ops.forward.append(
                ops.kernel(attn, "kv cache write", cached, cached * s, cached * kv_size, cached)
            )
        back += _attention(
            ops,
            attn,
            attention,
            batch,
            new,
            keys,
            heads,
            kv_heads,
            hd,
            kv_size,
            train,
            dropout,
            window=config.sliding_window,
        )
        back += ops.linear(attn, "out", tokens, d, heads * hd, config.bias, train)[::-1]
        back += ops.pointwise(attn, "residual add", tokens * d, (1, 2, 0), (1, 2, 1), REPLICATED)
        groups.append(back[::-1] + ops.update_of(attn, config.norm_params + config.attention_params // tp))

        back = ops.pointwise(mlp, "ln_2", tokens * d, (norm_flops, 1, 0), (8, 2, 1), REPLICATED)
        if config.moe:
            routed = routing or Routing()
            # MoE parallel folding: experts over fewer GPUs, each routing its 1/split of the tokens
            split = tp // routed.expert_tp if routed.expert_tp else 1
            wide = config.mlp_hidden // (routed.expert_tp or tp)
            back += moe_mlp(ops, mlp, config, tokens // split, wide, routed)
        elif config.mlp == "gelu":
            back += ops.linear(mlp, "up", tokens, width, d, config.bias, train)[::-1]
            back += ops.pointwise(mlp, "gelu", tokens * width, (8, 1, 1), (10, 2, 1))
        else:
            back += ops.linear(mlp, "gate", tokens, width, d, config.bias, train)[::-1]
            back += ops.linear(mlp, "up", tokens, width, d, config.bias, train)[::-1]
            back += ops.pointwise(mlp, "silu x up", tokens * width, (5, 2, 1), (10, 3, 2))
        if not config.moe:
            back += ops.linear(mlp, "down", tokens, d, width, config.bias, train)[::-1]
        back += ops.pointwise(mlp, "residual add", tokens * d, (1, 2, 0), (1, 2, 1), REPLICATED)
        groups.append(back[::-1] + ops.update_of(mlp, config.norm_params + config.mlp_params // tp))

    norm_bwd = ops.pointwise("ln_f", "norm", tokens * d, (norm_flops, 1, 0), (8, 2, 1), REPLICATED)
    groups.append(norm_bwd + ops.update_of("ln_f", config.norm_params))
    # generation needs only each sequence's last logits; training scores every token
    scored = tokens if train else batch
    head_bwd = ops.linear("lm_head", "logits", scored, vocab, d, False, train)
    groups.append(head_bwd + ops.update_of("lm_head", config.head_params // tp))
    if train:
        loss_bwd = ops.pointwise("loss", "cross-entropy", scored * vocab, (5, 1, 1), (2, 1, 1))
        groups.append(loss_bwd)
    backward = [k for group in reversed(groups) for k in group] if train else []
    return ops.forward, backward


def _attention(
    ops: Ops,
    layer: str,
    kind: str,
    batch: int,
    new: int,
    keys: int,
    heads: int,
    kv_heads: int,
    hd: int,
    kv_size: float,
    train: bool,
    dropout: bool = False,
    window: int = 0,
) -> list[Kernel]:
    """Attention of ``new`` queries over ``keys`` keys per sequence: forward now, backward returned.

    ``window`` (sliding-window attention, Mistral's 4,096): a fused kernel sees only the last
    ``window`` keys of each query and skips the tiles outside them (FlashAttention-2's
    ``window_size``), so its work and the keys it reads stop growing with the context; the
    unfused form still computes the whole square and masks it.

    With ``dropout`` (training), the unfused form drops probabilities in one more pass over the
    square (the probabilities in, the kept ones and a byte of mask per element out; backward reads
    the mask again); a fused kernel draws its mask on chip."""
    s = ops.size
    fused = kind != "unfused"
    seen = min(keys, window + new - 1) if window and fused else keys  # keys any new query sees
    q_B = batch * new * heads * hd * s  # q, the output and their gradients
    kv_B = batch * seen * kv_heads * hd * kv_size  # k or v, from the cache when serving
    cache_B = 2 * batch * (seen - new) * kv_heads * hd * kv_size  # past keys and values: cold
    bh, items = batch * heads, batch * new * heads * hd
    if fused:
        # causal: query j of the new ones sees the past and new keys up to itself (within the window)
        pairs = bh * _causal_pairs(keys - new, new, window)
        lse = batch * new * heads * 4  # float32 log-sum-exp per query, kept for the backward
        shape = {
            "matrix": True,
            "gemm_mn": (bh * new, keys),
            "python_ops_per_item": hd,
            "math": ops.numerics.linear_math,
            "fused_attention": kind,
        }
        ops.forward.append(
            ops.kernel(
                layer,
                "flash attention fwd",
                4 * hd * pairs,
                q_B + 2 * kv_B,
                q_B + lse,
                items,
                special_ops=pairs,
                cold=cache_B,
                part=ATTENTION_CORE,
                **shape,
            )
        )
        if not train:
            return []
        # recomputes the scores: QK^T, then dV, dP, dQ and dK: five products for the forward's two
        return [
            ops.kernel(
                layer,
                "flash attention bwd",
                10 * hd * pairs,
                3 * q_B + 2 * kv_B + lse,
                q_B + 2 * kv_B,
                items,
                special_ops=pairs,
                **shape,
            )
        ]
    # unfused: every score of the new x keys square is computed and stored; the mask zeroes half
    n = bh * new * keys
    square = n * s
    core = ATTENTION_CORE
    ops.forward.append(ops.gemm(layer, "scores q@kT fwd", bh * new, keys, hd, q_B + kv_B, square, part=core))
    ops.forward.append(ops.stream(layer, "softmax fwd", n, 5, 1, special_ops=n, part=core))
    dropping = dropout and train
    if dropping:
        ops.forward.append(
            ops.kernel(layer, "attention dropout fwd", 2 * n, square, square + n, n, part=core)
        )
    # probs@v is left out of the core (as the words "attention", "softmax", "scores" once chose it),
    # though Korthikanti et al.'s selective recomputation runs it again too
    ops.forward.append(ops.gemm(layer, "probs@v fwd", bh * new, hd, keys, square + kv_B, q_B))
    if not train:
        return []
    dropped = [ops.kernel(layer, "attention dropout bwd", n, square + n, square, n)] if dropping else []
    return [
        ops.gemm(layer, "dv = pT@do bwd", bh * keys, hd, new, square + q_B, kv_B),
        ops.gemm(layer, "dp = do@vT bwd", bh * new, keys, hd, q_B + kv_B, square),
        *dropped,
        ops.stream(layer, "softmax bwd", n, 3, 2),
        ops.gemm(layer, "dq = ds@k bwd", bh * new, hd, keys, square + kv_B, q_B),
        ops.gemm(layer, "dk = dsT@q bwd", bh * keys, hd, new, square + q_B, kv_B),
    ][::-1]


def _causal_pairs(past: int, new: int, window: int = 0) -> float:
    """(query, key) pairs of ``new`` queries after ``past`` cached tokens, causal: the query at
    position p sees min(p + 1, window) keys (all p + 1 without a window); summed in closed form."""
    low, high = past + 1, past + new  # keys seen by the first and the last new query, unwindowed
    if not window or high <= window:
        return new * (low + high) / 2
    if low > window:
        return float(new * window)
    return (window - low + 1) * (low + window) / 2 + (high - window) * window
