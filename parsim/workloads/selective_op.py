"""torchtitan's selective per-op activation checkpointing: every second matmul of a block run again.

torchtitan (``activation_checkpoint.mode = "selective"``, ``selective_ac_option = "op"``; pytorch/
torchtitan@041336434916bdc0f88c1f89fda176fd3c2092e4 torchtitan/parallelisms/parallelize_llama.py,
``_custom_policy``) wraps each transformer block in PyTorch's selective checkpoint. The block's
forward keeps only the outputs of the ops in its ``no_recompute_list`` (``aten.mm``, the flash or
memory-efficient SDPA, the reduce-scatter) "except every second mm", counted in the order the block
calls them; in the backward pass the block's forward is replayed and every op whose output was not
kept runs again: the norms, the rotary embedding, the activations and the residual adds, and the
2nd, 4th, 6th... matmul. The attention core's output is kept, so it is not recomputed.

A Llama block calls its matmuls as ``wq, wk, wv, wo, w1 (gate), w3 (up), w2 (down)``
(``Attention.forward``; ``FeedForward.forward`` is ``w2(silu(w1(x)) * w3(x))``), so ``wk``, ``wo``
and ``w3`` run again; an ungated block (``wq, wk, wv, wo, up, down``) runs ``wk``, ``wo`` and
``down`` again. parsim's fused code builds q, k and v as one GEMM (``qkv``): its recomputed share is
the k projection's columns, ``kv_heads / (heads + 2 kv_heads)`` of it; the eager code
(``transformer_titan``) runs them as three, and ``k`` runs again whole.
"""

from __future__ import annotations

import attrs

from parsim.workloads.base import Kernel
from parsim.workloads.llm_config import LlmConfig
from parsim.workloads.transformer_ops import ATTENTION_CORE, CAST_WEIGHTS, block_layers

MODE = "selective-op"
"""The ``recompute`` value of this policy."""


def matmul_order(config: LlmConfig) -> tuple[str, ...]:
    """The block's matmuls in the order its forward calls them (q, k and v as three)."""
    mlp = ("gate", "up", "down") if config.mlp == "swiglu" else ("up", "down")
    return ("q", "k", "v", "out", *mlp)


def recomputed_share(config: LlmConfig) -> dict[str, float]:
    """Per parsim GEMM part, the share of its columns the policy computes again (absent: none)."""
    again = set(matmul_order(config)[1::2])  # the 2nd, 4th, 6th... call
    width = {"q": config.heads, "k": config.kv_heads, "v": config.kv_heads}
    qkv = sum(width[p] for p in ("q", "k", "v") if p in again) / sum(width.values())
    # the eager code (``code=eager``) runs q, k and v as three GEMMs: each its own part
    shares: dict[str, float] = {part: 1.0 for part in matmul_order(config) if part in again}
    if qkv:
        shares["qkv"] = qkv
    return shares


def _share_of(kernel: Kernel, share: float) -> Kernel:
    """``kernel`` (a GEMM) over ``share`` of its output columns."""
    if share == 1.0:
        return kernel
    work, m_n = kernel.work, kernel.library.gemm_mn
    changes = {}
    if m_n is not None:
        changes["gemm_mn"] = (m_n[0], max(1, round(m_n[1] * share)))
    return kernel.but(
        flops=work.flops * share,
        bytes_read=work.bytes_read * share,
        bytes_written=work.bytes_written * share,
        work_items=max(1, int(work.work_items * share)),
        cold_bytes=kernel.access.cold_bytes * share,
        **changes,
    )


def replayed(forward: list[Kernel], config: LlmConfig, suffix: str, phase: str) -> list[Kernel]:
    """The forward kernels the policy runs again, renamed with ``suffix`` and in ``phase``: each
    block's non-matmul ops (not the attention core, whose output is kept, nor autocast's weight
    casts, which FSDP's bf16 parameters do not need) and its recomputed matmuls' shares."""
    shares = recomputed_share(config)
    blocks = {layer for i in range(config.layers) for layer in block_layers(i)}
    again: list[Kernel] = []
    for kernel in forward:
        if kernel.layer not in blocks:  # embedding, final norm, head: outside the blocks
            continue
        if kernel.part in (ATTENTION_CORE, CAST_WEIGHTS):
            continue
        if kernel.work.matrix:
            if kernel.part not in shares:
                continue
            kernel = _share_of(kernel, shares[kernel.part])
        again.append(attrs.evolve(kernel, name=kernel.name + suffix, phase=phase))
    return again


def kept_per_token(config: LlmConfig, tp: int = 1) -> float:
    """Elements per token a block keeps for its backward under the policy: its input and the
    outputs of the kept matmuls (q and v, the gate or up, the down) and of the attention core."""
    heads, kv, hd = config.heads / tp, config.kv_heads / tp, config.head_dim
    width = config.mlp_hidden / tp
    size_of = {"q": heads * hd, "k": kv * hd, "v": kv * hd, "out": config.hidden, "gate": width}
    size_of |= {"up": width, "down": config.hidden}
    kept = matmul_order(config)[0::2]
    return config.hidden + sum(size_of[p] for p in kept) + heads * hd
