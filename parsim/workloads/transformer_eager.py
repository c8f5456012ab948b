"""The kernels an eager framework launches for a transformer's composite layers.

A fused serving engine (vLLM, TensorRT-LLM, a compiled graph) runs an RMSNorm, a rotary embedding
or SiLU x up as one kernel each. Eager PyTorch running a Hugging Face model runs them as the tensor
ops the Python is written in, one kernel per op, like a cook who fetches every ingredient from the
cellar separately instead of once for the whole dish:

- ``LlamaRMSNorm``: ``x.to(float32)``, ``pow(2)``, ``mean(-1)``, ``+ eps``, ``rsqrt``, ``x * rsqrt``,
  ``.to(dtype)``, ``weight * x``: eight kernels, five of them streaming the hidden states in float32;
- ``apply_rotary_pos_emb``: ``q * cos``, ``-x2``, ``cat((-x2, x1))``, ``* sin``, ``+``, for q and for k:
  ten kernels;
- q, k and v as three projections (``q_proj``, ``k_proj``, ``v_proj``), not one fused GEMM;
- ``DynamicCache.update``: ``torch.cat((past, new))`` for the keys and for the values: every step
  reads and writes the whole cache (``kv_cache_concat``);
- the attention output ``transpose(1, 2).contiguous()``: one copy;
- ``act_fn(gate) * up``: two kernels; each residual add: one.

That makes 41 kernels per Llama layer where a fused engine runs about a dozen (the issue's H100
profile: 1,334 kernels per decoded token of llama-2-7b, 32 layers). A module call (a norm, a
linear, the activation) pays the framework's ``op_cycles`` to issue; the ops inside it, and the
plain tensor arithmetic between modules, are ``Issue.primitive`` and pay ``primitive_cycles``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from parsim.workloads.base import Kernel
from parsim.workloads.llms import LlmConfig
from parsim.workloads.transformer_ops import EMBEDDING, Ops, block_layers

_F32 = 4  # bytes of a float32 element: a Hugging Face RMSNorm computes in float32
_TOKEN_ID_B = 8  # int64 token ids


def forward(
    ops: Ops,
    attention_kernels: Callable[..., list[Kernel]],
    config: LlmConfig,
    batch: int,
    new: int,
    past: int,
    attention: str,
    tp: int,
    kv_size: float,
    kv_concat: bool,
) -> None:
    """One inference step as eager PyTorch runs a Hugging Face model: its kernels onto ``ops``.

    ``attention_kernels`` is ``transformer._attention`` (the fused or unfused attention itself is
    the same kernel in either framework); ``kv_concat``: the cache grows by ``torch.cat``.
    """
    s = ops.size
    d, hd, tokens, keys = config.hidden, config.head_dim, batch * new, past + new
    heads, kv_heads, width = config.heads // tp, config.kv_heads // tp, config.mlp_hidden // tp
    ids, rows = tokens * _TOKEN_ID_B, tokens * d * s
    ops.forward.append(
        ops.kernel(EMBEDDING, "token gather", 0, rows + ids, rows, tokens * d, cold=rows + ids)
    )
    if config.position == "learned":
        ops.forward.append(ops.stream(EMBEDDING, "position add", tokens * d, 1, 2, cold=rows, primitive=True))
    elif config.position == "rotary":  # ALiBi: a bias on the scores, no table
        rotary_tables(ops, tokens, hd)

    def norm(layer: str, what: str) -> None:
        if config.norm == "rmsnorm":
            rms_norm(ops, layer, what, tokens, d)
        else:  # F.layer_norm: one native kernel
            ops.pointwise(layer, what, tokens * d, (5, 1, 0), (8, 2, 1))

    def residual(layer: str) -> None:
        ops.forward.append(ops.stream(layer, "residual add", tokens * d, 1, 2, primitive=True))

    for i in range(config.layers):
        attn, mlp = block_layers(i)
        norm(attn, "ln_1")
        if config.fused_qkv:
            ops.linear(attn, "qkv", tokens, (heads + 2 * kv_heads) * hd, d, config.bias, False)
        else:
            for name, count in (("q", heads), ("k", kv_heads), ("v", kv_heads)):
                ops.linear(attn, name, tokens, count * hd, d, config.bias, False)
        if config.position == "rotary":
            rotary(ops, attn, tokens, heads, kv_heads, hd)
        if kv_concat:
            kv_cat(ops, attn, batch, past, new, kv_heads * hd, kv_size)
        else:
            cached = tokens * 2 * kv_heads * hd
            ops.forward.append(
                ops.kernel(attn, "kv cache write", cached, cached * s, cached * kv_size, cached)
            )
        attention_kernels(ops, attn, attention, batch, new, keys, heads, kv_heads, hd, kv_size, False)
        copy(ops, attn, "heads contiguous", tokens * heads * hd)
        ops.linear(attn, "out", tokens, d, heads * hd, config.bias, False)
        residual(attn)
        norm(mlp, "ln_2")
        if config.mlp == "gelu":
            ops.linear(mlp, "up", tokens, width, d, config.bias, False)
            ops.pointwise(mlp, "gelu", tokens * width, (8, 1, 1), (10, 2, 1))
        else:
            ops.linear(mlp, "gate", tokens, width, d, config.bias, False)
            ops.linear(mlp, "up", tokens, width, d, config.bias, False)
            silu_times_up(ops, mlp, tokens, width)
        ops.linear(mlp, "down", tokens, d, width, config.bias, False)
        residual(mlp)
    norm("ln_f", "norm")
    # generation needs only each sequence's last logits (``logits_to_keep=1``)
    ops.linear("lm_head", "logits", batch, math.ceil(config.vocab / tp), d, False, False)


def rms_norm(ops: Ops, layer: str, what: str, tokens: int, d: int) -> None:
    """``LlamaRMSNorm`` over ``tokens`` rows of ``d``: eight kernels, the statistics in float32."""
    n, s = tokens * d, ops.size
    steps = (  # (op, read, written, module call)
        ("to float32", n * s, n * _F32, True),
        ("pow", n * _F32, n * _F32, False),
        ("mean", n * _F32, tokens * _F32, False),
        ("+ eps", tokens * _F32, tokens * _F32, False),
        ("rsqrt", tokens * _F32, tokens * _F32, False),
        ("x * rsqrt", n * _F32 + tokens * _F32, n * _F32, False),
        ("to dtype", n * _F32, n * s, False),
        ("weight * x", n * s + d * s, n * s, False),
    )
    for op, read, written, module in steps:
        items = max(1, int(written // _F32))
        ops.forward.append(
            ops.kernel(layer, f"{what} {op}", items, read, written, items, primitive=not module)
        )


def rotary(ops: Ops, layer: str, tokens: int, heads: int, kv_heads: int, hd: int) -> None:
    """``apply_rotary_pos_emb`` on q (``heads``) and k (``kv_heads``): five kernels each."""
    s = ops.size
    for name, count in (("q", heads), ("k", kv_heads)):
        n = tokens * count * hd
        table = tokens * hd * s  # cos or sin, broadcast over the heads
        steps = (  # (op, read, written)
            ("* cos", n * s + table, n * s),
            ("-x2", n * s // 2, n * s // 2),
            ("cat(-x2, x1)", n * s, n * s),
            ("* sin", n * s + table, n * s),
            ("add", 2 * n * s, n * s),
        )
        for op, read, written in steps:
            ops.forward.append(ops.kernel(layer, f"rotary {name} {op}", n, read, written, n, primitive=True))


def rotary_tables(ops: Ops, tokens: int, hd: int) -> None:
    """``LlamaRotaryEmbedding``, once per forward: the angles (a float32 product), cos and sin of
    them, scaled and cast to the activations' type: eight small kernels."""
    n = tokens * hd
    steps = ("inv_freq expand", "positions float", "angles", "cat", "cos", "sin", "cos cast", "sin cast")
    for step in steps:
        ops.forward.append(ops.kernel(EMBEDDING, f"rotary {step}", n, n * _F32, n * _F32, n, primitive=True))


def kv_cat(ops: Ops, layer: str, batch: int, past: int, new: int, kv_width: int, kv_size: float) -> None:
    """``torch.cat((past, new))`` of the keys and of the values: the whole cache read and written."""
    cache = batch * (past + new) * kv_width
    for name in ("keys", "values"):
        ops.forward.append(
            ops.kernel(
                layer,
                f"kv cache cat {name}",
                0,
                cache * kv_size,
                cache * kv_size,
                cache,
                cold=batch * past * kv_width * kv_size,
                primitive=True,
            )
        )


def copy(ops: Ops, layer: str, what: str, n: int) -> None:
    """A ``.contiguous()`` (or any copy) of ``n`` elements."""
    ops.forward.append(ops.kernel(layer, what, 0, n * ops.size, n * ops.size, n, primitive=True))


def silu_times_up(ops: Ops, layer: str, tokens: int, width: int) -> None:
    """``act_fn(gate) * up``: the SiLU module's kernel, then a primitive multiply."""
    n, s = tokens * width, ops.size
    ops.forward.append(ops.kernel(layer, "silu", 5 * n, n * s, n * s, n, special_ops=float(n)))
    ops.forward.append(ops.kernel(layer, "* up", n, 2 * n * s, n * s, n, primitive=True))
