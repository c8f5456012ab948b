"""The shape of a decoder-only transformer, and its exact parameter count.

A decoder-only transformer is fully described by a handful of numbers from its ``config.json``:
layers, hidden size, attention heads (and key/value heads, fewer under grouped-query or multi-query
attention), the MLP's inner size, the vocabulary and the context length, plus a few architectural
choices (an ungated MLP with GELU or ReLU, or a gated SwiGLU one; LayerNorm with or without its
shift, or RMSNorm; learned, rotary or ALiBi positions; tied embeddings; biases). ``LlmConfig.params``
counts the parameters exactly from those numbers; ``hf_config`` reads them from a Hugging Face
``config.json`` and the tests check the count against the published one.
"""

from __future__ import annotations

from typing import Literal

import attrs


@attrs.frozen
class LlmConfig:
    """The shape of a decoder-only transformer, as its ``config.json`` gives it.

    Attributes:
        name: the id users type (``llama-2-7b``), or the path of the file it was read from.
        layers: transformer blocks.
        hidden: model width (d_model).
        heads: query heads.
        kv_heads: key/value heads (= heads, or fewer under grouped-query attention; 1: multi-query).
        mlp_hidden: the MLP's inner width (one expert's, under mixture of experts).
        vocab: vocabulary size (rows of the embedding, columns of the LM head).
        context: the longest sequence it was trained for (tokens).
        mlp: ``gelu`` (ungated: up, activation, down) or ``swiglu`` (gate and up, SiLU x up, down).
        norm: ``layernorm`` (scale and shift) or ``rmsnorm`` (scale only).
        position: ``learned`` (a position-embedding table), ``rotary`` (RoPE on q and k) or
            ``alibi`` (a bias on the attention scores: no parameters, BLOOM and MPT).
        tied_embeddings: the LM head reuses the token embedding matrix.
        bias: linear layers have biases.
        published_params: the published parameter count (0: none, a user's file).
        source: where the configuration and the count come from.
        fused_qkv: the checkpoint keeps q, k and v as one matrix (GPT-2's ``c_attn``, GPT-NeoX's and
            Falcon's ``query_key_value``), not three (Llama's ``q_proj``, ``k_proj``, ``v_proj``): what
            an eager framework then runs as one GEMM or three.
        activation: the ungated MLP's activation as the config names it (``gelu_new``, ``relu``).
        norm_bias: a LayerNorm has its shift (MPT's ``no_bias`` drops it).
        qkv_bias: q, k and v have biases though the other linears do not (Qwen2).
        layer_norms: norms per block: 2, or 1 where attention and MLP read one norm in parallel
            (Falcon-7B's ``parallel_attn``).
        embedding_norm: a LayerNorm right after the token embedding (BLOOM).
        extra_positions: rows of the position table beyond ``context`` (OPT keeps 2 more).
        sliding_window: tokens a query attends to at most (Mistral: 4096); 0: the whole context.
        experts: MLP experts per block (mixture of experts; 1: a dense MLP).
        experts_per_token: experts each token is routed to (top-k).
        rope_theta: RoPE's base (0: not given or no RoPE); stored, it does not change the cost.
        rope_scaling: RoPE's scaling type (``llama3``, ``linear``, ...; empty: none); stored.
        head_size: one head's width when it is not ``hidden / heads`` (Qwen3's 128 beside a hidden
            size of 2048 and 32 heads: queries 4096 wide); 0: ``hidden / heads``.
        qk_norm: an RMSNorm over each head's queries and keys (Qwen3): a scale of ``head_dim``
            each, per block.
    """

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    mlp_hidden: int
    vocab: int
    context: int
    mlp: Literal["gelu", "swiglu"]
    norm: Literal["layernorm", "rmsnorm"]
    position: Literal["learned", "rotary", "alibi"]
    tied_embeddings: bool
    bias: bool
    published_params: int
    source: str
    fused_qkv: bool = False
    activation: str = "silu"
    norm_bias: bool = True
    qkv_bias: bool = False
    layer_norms: int = 2
    embedding_norm: bool = False
    extra_positions: int = 0
    sliding_window: int = 0
    experts: int = 1
    experts_per_token: int = 1
    rope_theta: float = 0.0
    rope_scaling: str = ""
    head_size: int = 0
    qk_norm: bool = False

    @property
    def head_dim(self) -> int:
        return self.head_size or self.hidden // self.heads

    @property
    def query_width(self) -> int:
        """Width of one token's queries (and of the attention output): heads x head size."""
        return self.heads * self.head_dim

    @property
    def kv_width(self) -> int:
        """Width of the keys (or the values) of one token: KV heads x head size."""
        return self.kv_heads * self.head_dim

    @property
    def moe(self) -> bool:
        """A mixture of experts (more than one MLP expert per block)."""
        return self.experts > 1

    @property
    def norm_params(self) -> int:
        """Parameters of one norm: LayerNorm has a scale and a shift, RMSNorm a scale."""
        return 2 * self.hidden if self.norm == "layernorm" and self.norm_bias else self.hidden

    @property
    def attention_params(self) -> int:
        """Q (hidden x query_width), K and V (hidden x kv_width each), the output projection and
        Qwen3's query and key norms."""
        d, q = self.hidden, self.query_width
        weights = 2 * d * q + 2 * d * self.kv_width
        qkv = q + 2 * self.kv_width
        biases = (qkv + d) if self.bias else qkv if self.qkv_bias else 0
        return weights + biases + (2 * self.head_dim if self.qk_norm else 0)

    @property
    def mlp_matrices(self) -> int:
        """Weight matrices of the MLP: up and down for GELU; gate, up and down for SwiGLU."""
        return 2 if self.mlp == "gelu" else 3

    @property
    def mlp_params(self) -> int:
        """Every expert's MLP and, under mixture of experts, the router (hidden x experts)."""
        biases = ((self.mlp_matrices - 1) * self.mlp_hidden + self.hidden) if self.bias else 0
        one = self.mlp_matrices * self.hidden * self.mlp_hidden + biases
        return self.experts * one + (self.hidden * self.experts if self.moe else 0)

    @property
    def expert_params(self) -> int:
        """Every expert of every block (0 for a dense model): what expert parallelism shards."""
        if not self.moe:
            return 0
        return self.layers * (self.mlp_params - self.hidden * self.experts)

    @property
    def active_params(self) -> int:
        """Parameters one token uses: all but the ``experts - experts_per_token`` it is not routed to."""
        unused = self.experts - self.experts_per_token
        return self.params - self.expert_params // self.experts * unused

    @property
    def layer_params(self) -> int:
        """One block: its norms, attention and MLP."""
        return self.layer_norms * self.norm_params + self.attention_params + self.mlp_params

    @property
    def position_rows(self) -> int:
        """Rows of the learned position table (none for rotary or ALiBi positions)."""
        return self.context + self.extra_positions if self.position == "learned" else 0

    @property
    def embedding_params(self) -> int:
        norm = self.norm_params if self.embedding_norm else 0
        return (self.vocab + self.position_rows) * self.hidden + norm

    @property
    def head_params(self) -> int:
        """The LM head's own weights (none when tied to the token embedding)."""
        return 0 if self.tied_embeddings else self.vocab * self.hidden

    @property
    def params(self) -> int:
        """Exact parameter count from the architecture."""
        return self.embedding_params + self.layers * self.layer_params + self.norm_params + self.head_params

    def summary(self) -> str:
        """One line for reports: the derived parameter count and the shape it comes from."""
        window = f", window {self.sliding_window:,}" if self.sliding_window else ""
        experts = (
            f" x {self.experts} experts, {self.experts_per_token} per token: {self.active_params:,} active"
            if self.moe
            else ""
        )
        return (
            f"{self.name}: {self.params:,} parameters ({self.layers} layers, hidden {self.hidden}, "
            f"{self.heads} heads / {self.kv_heads} KV, {self.mlp} MLP {self.mlp_hidden}{experts}, "
            f"vocab {self.vocab:,}, "
            f"context {self.context:,}, {self.position} positions{window})"
        )
