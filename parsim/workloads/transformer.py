"""The kernels a framework launches for one step of a decoder-only transformer.

Every block is the same list of ops, each one kernel sized by the step's tokens (batch x new
tokens), so a step has as many events as the model has layers, whatever the batch or sequence:

- ``h.i.attn``: norm, the QKV projection (one GEMM), rotary embedding on q and k (RoPE models),
  attention, the output projection and the residual add;
- ``h.i.mlp``: norm, up GEMM, GELU, down GEMM (GPT-2) or gate and up GEMMs, SiLU x up, down GEMM
  (SwiGLU, Llama), and the residual add;
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
from typing import Any

from parsim.dtypes import itemsize
from parsim.errors import ParsimError
from parsim.workloads import transformer_eager as eager
from parsim.workloads.base import Kernel
from parsim.workloads.layers import Numerics
from parsim.workloads.llms import (
    LlmConfig,
    kv_cache_bytes,
    kv_itemsize,
    transformer_footprint_B,
)
from parsim.workloads.optimizers import update_kernel

__all__ = [  # the memory side of the API lives with the configurations in llms.py
    "ATTENTIONS",
    "kv_cache_bytes",
    "kv_itemsize",
    "transformer_footprint_B",
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
        (f"h.{i}.{part}", part if part == "mlp" else "attention")
        for i in range(config.layers)
        for part in ("attn", "mlp")
    ]
    tail = [("ln_f", config.norm), ("lm_head", "linear")] + ([("loss", "cross_entropy")] if train else [])
    return (("embed", "embedding"), *blocks, *tail)


class _Ops:
    """Builds the kernels of one GPU's share of a step, in the layer_kernels conventions."""

    def __init__(self, numerics: Numerics, device: int, optimizer: str, train: bool, update: bool):
        self.numerics, self.device, self.optimizer = numerics, device, optimizer
        self.train, self.update = train, update and train
        self.size = itemsize(numerics.dtype)
        self.forward: list[Kernel] = []
        self.backward: list[Kernel] = []

    def kernel(
        self, layer: str, step: str, flops: float, read: float, written: float, items: int, **extra: Any
    ) -> Kernel:
        # What a kernel writes, and the weights (streamed once per step), is cold traffic: ``cold``.
        cold = extra.pop("cold", 0.0)
        return Kernel(
            f"{layer} {step}",
            float(flops),
            float(read),
            float(written),
            max(1, int(items)),
            dtype=self.numerics.dtype,
            device=self.device,
            layer=layer,
            cold_bytes=float(cold + written),
            cpu_library=self.numerics.cpu_library,
            **extra,
        )

    def stream(
        self, layer: str, what: str, n: int, flops: float, reads: int, writes: int = 1, **extra: Any
    ) -> Kernel:
        """A streaming kernel over ``n`` elements: ``reads`` arrays in, ``writes`` out."""
        return self.kernel(layer, what, flops * n, reads * n * self.size, writes * n * self.size, n, **extra)

    def pointwise(
        self, layer: str, what: str, n: int, fwd: tuple[float, int, float], bwd: tuple[float, int, int]
    ) -> list[Kernel]:
        """A streaming op: its forward kernel now; returns its backward kernel when training.

        ``fwd``: FLOPs per element, arrays read, transcendentals per element; ``bwd``: FLOPs per
        element, arrays read, arrays written.
        """
        flops, reads, special = fwd
        self.forward.append(self.stream(layer, f"{what} fwd", n, flops, reads, special_ops=special * n))
        if not self.train:
            return []
        b_flops, b_reads, b_writes = bwd
        return [self.stream(layer, f"{what} bwd", n, b_flops, b_reads, b_writes, special_ops=special * n)]

    def gemm(
        self, layer: str, what: str, m: int, n: int, k: int, read: float, written: float, **extra: Any
    ) -> Kernel:
        return self.kernel(
            layer,
            what,
            2.0 * m * n * k,
            read,
            written,
            m * n,
            matrix=True,
            gemm_mn=(max(1, m), max(1, n)),
            python_ops_per_item=k,
            math=self.numerics.linear_math,
            **extra,
        )

    def linear(self, layer: str, what: str, m: int, n: int, k: int, bias: bool, train: bool) -> list[Kernel]:
        """y[m, n] = x[m, k] @ W[k, n]: the forward GEMM now; returns its backward kernels."""
        s, weights = self.size, (k * n + (n if bias else 0)) * self.size
        reorder = {"reorder_B": float(weights)} if self.numerics.plain_weights else {}
        if self.numerics.casts:
            self.forward.append(
                self._cast(layer, f"{what} cast weights", weights / s, "float32", self.numerics.dtype)
            )
        self.forward.append(
            self.gemm(
                layer, f"{what} fwd", m, n, k, (m * k) * s + weights, m * n * s, cold=weights, **reorder
            )
        )
        if not train:
            return []
        backward = [
            self.gemm(
                layer, f"{what} bwd-data", m, k, n, m * n * s + weights, m * k * s, cold=weights, **reorder
            ),
            self.gemm(layer, f"{what} bwd-weight", k, n, m, (m * k + m * n) * s, weights),
        ]
        if self.numerics.casts:
            backward.append(
                self._cast(layer, f"{what} cast gradient", weights / s, self.numerics.dtype, "float32")
            )
        return backward

    def _cast(self, layer: str, what: str, items: float, source: str, target: str) -> Kernel:
        count = int(items)
        read, written = count * itemsize(source), count * itemsize(target)
        return Kernel(
            f"{layer} {what}",
            float(count),
            read,
            written,
            count,
            dtype=target,
            device=self.device,
            layer=layer,
            cold_bytes=float(read + written),
        )

    def update_of(self, layer: str, params: int) -> list[Kernel]:
        if not (self.update and params):
            return []
        master = self.numerics.master_dtype
        return [
            update_kernel(
                self.optimizer,
                f"{layer} update",
                params,
                master,
                self.device,
                layer,
                cold=True,
                foreach=self.numerics.foreach_optimizer,
                multi_tensor=True,  # torch.optim steps over every layer's weights at once
            )
        ]


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

    Under ``numerics.primitive_layers`` inference runs the layers as an eager framework does
    (``transformer_eager``).
    """
    new = seq if new_tokens is None else new_tokens
    _check(config, batch, new, past, tp, attention)
    if numerics.primitive_layers and not train:
        ops = _Ops(numerics, device, optimizer, False, False)
        kv_size = kv_itemsize(kv_dtype or numerics.dtype)
        eager.forward(ops, _attention, config, batch, new, past, attention, tp, kv_size, kv_concat)
        return ops.forward, []

    ops = _Ops(numerics, device, optimizer, train, update)
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
    ops.forward.append(ops.kernel("embed", "token gather", 0, rows + ids, rows, tokens * d, cold=rows + ids))
    if config.position == "learned":
        ops.forward.append(ops.stream("embed", "position add", tokens * d, 1, 2, cold=rows))
    positions = config.context * d if config.position == "learned" else 0
    embed_bwd = [ops.kernel("embed", "bwd", tokens * d, rows + ids, (vocab * d + positions) * s, tokens * d)]
    groups.append(embed_bwd + ops.update_of("embed", vocab * d + positions))

    for i in range(config.layers):
        attn, mlp = f"h.{i}.attn", f"h.{i}.mlp"
        back = ops.pointwise(attn, "ln_1", tokens * d, (norm_flops, 1, 0), (8, 2, 1))
        back += ops.linear(attn, "qkv", tokens, (heads + 2 * kv_heads) * hd, d, config.bias, train)[::-1]
        if config.position == "rotary":
            back += ops.pointwise(attn, "rotary", tokens * (heads + kv_heads) * hd, (3, 1, 0), (3, 1, 1))
        if not train:
            cached = tokens * 2 * kv_heads * hd
            ops.forward.append(
                ops.kernel(attn, "kv cache write", cached, cached * s, cached * kv_size, cached)
            )
        back += _attention(
            ops, attn, attention, batch, new, keys, heads, kv_heads, hd, kv_size, train, dropout
        )
        back += ops.linear(attn, "out", tokens, d, heads * hd, config.bias, train)[::-1]
        back += ops.pointwise(attn, "residual add", tokens * d, (1, 2, 0), (1, 2, 1))
        groups.append(back[::-1] + ops.update_of(attn, config.norm_params + config.attention_params // tp))

        back = ops.pointwise(mlp, "ln_2", tokens * d, (norm_flops, 1, 0), (8, 2, 1))
        if config.mlp == "gelu":
            back += ops.linear(mlp, "up", tokens, width, d, config.bias, train)[::-1]
            back += ops.pointwise(mlp, "gelu", tokens * width, (8, 1, 1), (10, 2, 1))
        else:
            back += ops.linear(mlp, "gate", tokens, width, d, config.bias, train)[::-1]
            back += ops.linear(mlp, "up", tokens, width, d, config.bias, train)[::-1]
            back += ops.pointwise(mlp, "silu x up", tokens * width, (5, 2, 1), (10, 3, 2))
        back += ops.linear(mlp, "down", tokens, d, width, config.bias, train)[::-1]
        back += ops.pointwise(mlp, "residual add", tokens * d, (1, 2, 0), (1, 2, 1))
        groups.append(back[::-1] + ops.update_of(mlp, config.norm_params + config.mlp_params // tp))

    norm_bwd = ops.pointwise("ln_f", "norm", tokens * d, (norm_flops, 1, 0), (8, 2, 1))
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
    ops: _Ops,
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
) -> list[Kernel]:
    """Attention of ``new`` queries over ``keys`` keys per sequence: forward now, backward returned.

    With ``dropout`` (training), the unfused form drops probabilities in one more pass over the
    square (the probabilities in, the kept ones and a byte of mask per element out; backward reads
    the mask again); a fused kernel draws its mask on chip."""
    s = ops.size
    q_B = batch * new * heads * hd * s  # q, the output and their gradients
    kv_B = batch * keys * kv_heads * hd * kv_size  # k or v, from the cache when serving
    cache_B = 2 * batch * (keys - new) * kv_heads * hd * kv_size  # past keys and values: cold
    bh, items = batch * heads, batch * new * heads * hd
    if kind != "unfused":
        # causal: query j of the new ones sees the past and new keys up to itself
        pairs = bh * (new * (keys - new) + new * (new + 1) / 2)
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
    ops.forward.append(ops.gemm(layer, "scores q@kT fwd", bh * new, keys, hd, q_B + kv_B, square))
    ops.forward.append(ops.stream(layer, "softmax fwd", n, 5, 1, special_ops=n))
    dropping = dropout and train
    if dropping:
        ops.forward.append(ops.kernel(layer, "attention dropout fwd", 2 * n, square, square + n, n))
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
