"""Transformer language models from their published configurations.

A decoder-only transformer is fully described by a handful of numbers from its ``config.json``:
layers, hidden size, attention heads (and key/value heads, fewer under grouped-query attention),
the MLP's inner size, the vocabulary and the context length, plus a few architectural choices
(GELU or SwiGLU MLP, LayerNorm or RMSNorm, learned or rotary positions, tied embeddings, biases).
``LlmConfig.params`` counts the parameters exactly from those numbers; the tests check the count
against the published one (the parameter totals Hugging Face reports for the checkpoints):

| model | params | source |
|---|---|---|
| gpt2 | 124,439,808 | openai-community/gpt2 config.json; Radford et al. 2019 |
| gpt2-medium | 354,823,168 | openai-community/gpt2-medium config.json |
| gpt2-xl | 1,557,611,200 | openai-community/gpt2-xl config.json |
| llama-2-7b | 6,738,415,616 | meta-llama/Llama-2-7b-hf config.json; Touvron et al. 2023 Table 1 |
| llama-2-13b | 13,015,864,320 | meta-llama/Llama-2-13b-hf config.json; Touvron et al. 2023 Table 1 |
| llama-2-70b | 68,976,648,192 | meta-llama/Llama-2-70b-hf config.json (GQA, 8 KV heads) |
| llama-3-8b | 8,030,261,248 | meta-llama/Meta-Llama-3-8B config.json (GQA, 8 KV heads) |
| llama-3-70b | 70,553,706,496 | meta-llama/Meta-Llama-3-70B config.json (GQA, 8 KV heads) |
| llama-3.1-8b, llama-3.1-70b | as Llama 3 | meta-llama/Llama-3.1-*: Llama 3's shapes, context 131,072 |

The memory a model needs follows from the same numbers: ``kv_cache_bytes`` (keys and values of
every layer for every token kept) here, the rest part by part in ``transformer_memory``.
"""

from __future__ import annotations

from typing import Literal

import attrs

from parsim.base.dtypes import DTYPES
from parsim.base.errors import ParsimError, closest

_QUANTISED = {"int8": 1.0, "float8": 1.0, "int4": 0.5}  # KV-cache element types below 16 bits


@attrs.frozen
class LlmConfig:
    """The shape of a decoder-only transformer, as its ``config.json`` gives it.

    Attributes:
        name: the id users type (``llama-2-7b``).
        layers: transformer blocks.
        hidden: model width (d_model).
        heads: query heads.
        kv_heads: key/value heads (= heads, or fewer under grouped-query attention).
        mlp_hidden: the MLP's inner width.
        vocab: vocabulary size (rows of the embedding, columns of the LM head).
        context: the longest sequence it was trained for (tokens).
        mlp: ``gelu`` (up, GELU, down) or ``swiglu`` (gate and up, SiLU x up, down).
        norm: ``layernorm`` (scale and shift) or ``rmsnorm`` (scale only).
        position: ``learned`` (a position-embedding table) or ``rotary`` (RoPE on q and k).
        tied_embeddings: the LM head reuses the token embedding matrix.
        bias: linear layers have biases.
        published_params: the published parameter count.
        source: where the configuration and the count come from.
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
    position: Literal["learned", "rotary"]
    tied_embeddings: bool
    bias: bool
    published_params: int
    source: str

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def fused_qkv(self) -> bool:
        """The checkpoint keeps q, k and v as one matrix (GPT-2's ``c_attn``), not three (Llama's
        ``q_proj``, ``k_proj``, ``v_proj``): what an eager framework then runs as one GEMM or three."""
        return self.position == "learned"

    @property
    def kv_width(self) -> int:
        """Width of the keys (or the values) of one token: KV heads x head size."""
        return self.kv_heads * self.head_dim

    @property
    def norm_params(self) -> int:
        """Parameters of one norm: LayerNorm has a scale and a shift, RMSNorm a scale."""
        return 2 * self.hidden if self.norm == "layernorm" else self.hidden

    @property
    def attention_params(self) -> int:
        """Q (hidden x hidden), K and V (hidden x kv_width each) and the output projection."""
        d = self.hidden
        weights = 2 * d * d + 2 * d * self.kv_width
        biases = (2 * d + 2 * self.kv_width) if self.bias else 0
        return weights + biases

    @property
    def mlp_matrices(self) -> int:
        """Weight matrices of the MLP: up and down for GELU; gate, up and down for SwiGLU."""
        return 2 if self.mlp == "gelu" else 3

    @property
    def mlp_params(self) -> int:
        biases = ((self.mlp_matrices - 1) * self.mlp_hidden + self.hidden) if self.bias else 0
        return self.mlp_matrices * self.hidden * self.mlp_hidden + biases

    @property
    def layer_params(self) -> int:
        """One block: two norms, attention and MLP."""
        return 2 * self.norm_params + self.attention_params + self.mlp_params

    @property
    def embedding_params(self) -> int:
        positions = self.context * self.hidden if self.position == "learned" else 0
        return self.vocab * self.hidden + positions

    @property
    def head_params(self) -> int:
        """The LM head's own weights (none when tied to the token embedding)."""
        return 0 if self.tied_embeddings else self.vocab * self.hidden

    @property
    def params(self) -> int:
        """Exact parameter count from the architecture."""
        return self.embedding_params + self.layers * self.layer_params + self.norm_params + self.head_params


def _gpt2(
    name: str, layers: int, hidden: int, heads: int, published: int, source: str, context: int = 1024
) -> LlmConfig:
    return LlmConfig(
        name,
        layers,
        hidden,
        heads,
        heads,
        4 * hidden,
        50257,
        context,
        "gelu",
        "layernorm",
        "learned",
        tied_embeddings=True,
        bias=True,
        published_params=published,
        source=source,
    )


def _llama(
    name: str,
    layers: int,
    hidden: int,
    heads: int,
    kv_heads: int,
    mlp_hidden: int,
    vocab: int,
    context: int,
    published: int,
    source: str,
) -> LlmConfig:
    return LlmConfig(
        name,
        layers,
        hidden,
        heads,
        kv_heads,
        mlp_hidden,
        vocab,
        context,
        "swiglu",
        "rmsnorm",
        "rotary",
        tied_embeddings=False,
        bias=False,
        published_params=published,
        source=source,
    )


def _megatron(name: str, layers: int, hidden: int, heads: int, billions: float, source: str) -> LlmConfig:
    """A GPT of Megatron-LM's papers: GPT-2's architecture, a 2048-token context, its 51,200-token
    padded vocabulary and tied embeddings."""
    return attrs.evolve(
        _gpt2(name, layers, hidden, heads, round(billions * 1e9), source, context=2048), vocab=51200
    )


_SC21 = "Narayanan et al. 2021 (SC21) Table 1; NVIDIA/Megatron-LM examples/sc21/run_table_1.sh"
_HF = " config.json on Hugging Face"
_GPT3 = (
    "Brown et al. 2020 Table 2.1 (rounded sizes); Dao-AILab/flash-attention training/configs/experiment/pile"
)
LLMS: dict[str, LlmConfig] = {
    config.name: config
    for config in (
        _gpt2("gpt2", 12, 768, 12, 124_439_808, f"openai-community/gpt2{_HF}; Radford et al. 2019"),
        _gpt2("gpt2-medium", 24, 1024, 16, 354_823_168, f"openai-community/gpt2-medium{_HF}"),
        _gpt2("gpt2-xl", 48, 1600, 25, 1_557_611_200, f"openai-community/gpt2-xl{_HF}"),
        # GPT-3's sizes as FlashAttention's training/ configs build them: GPT-2's architecture with
        # a 2048-token context and heads of 64 (125M, 355M) or 96/128 dimensions (Brown et al.
        # 2020 Table 2.1 gives the rounded sizes; its 1.3B row's 24 heads of 128 do not multiply
        # to its d_model of 2048, so 16 heads of 128 as in Megatron-LM and FlashAttention)
        _gpt2("gpt3-125m", 12, 768, 12, 125_000_000, _GPT3, context=2048),
        _gpt2("gpt3-355m", 24, 1024, 16, 350_000_000, _GPT3, context=2048),
        _gpt2("gpt3-760m", 24, 1536, 16, 760_000_000, _GPT3, context=2048),
        _gpt2("gpt3-1.3b", 24, 2048, 16, 1_300_000_000, _GPT3, context=2048),
        _gpt2("gpt3-2.7b", 32, 2560, 20, 2_700_000_000, _GPT3, context=2048),
        _llama(
            "llama-2-7b",
            32,
            4096,
            32,
            32,
            11008,
            32000,
            4096,
            6_738_415_616,
            f"meta-llama/Llama-2-7b-hf{_HF}; Touvron et al. 2023 Table 1",
        ),
        _llama(
            "llama-2-13b",
            40,
            5120,
            40,
            40,
            13824,
            32000,
            4096,
            13_015_864_320,
            f"meta-llama/Llama-2-13b-hf{_HF}; Touvron et al. 2023 Table 1",
        ),
        _llama(
            "llama-2-70b",
            80,
            8192,
            64,
            8,
            28672,
            32000,
            4096,
            68_976_648_192,
            f"meta-llama/Llama-2-70b-hf{_HF}; Touvron et al. 2023 Table 1 (GQA)",
        ),
        _llama(
            "llama-3-8b",
            32,
            4096,
            32,
            8,
            14336,
            128256,
            8192,
            8_030_261_248,
            f"meta-llama/Meta-Llama-3-8B{_HF}; Meta Llama 3 model card",
        ),
        _llama(
            "llama-3-70b",
            80,
            8192,
            64,
            8,
            28672,
            128256,
            8192,
            70_553_706_496,
            f"meta-llama/Meta-Llama-3-70B{_HF}; Meta Llama 3 model card",
        ),
        # Llama 3.1: Llama 3's shapes with a 131,072-token context (RoPE scaled), as served
        _llama(
            "llama-3.1-8b",
            32,
            4096,
            32,
            8,
            14336,
            128256,
            131072,
            8_030_261_248,
            f"meta-llama/Llama-3.1-8B{_HF}; Llama 3.1 model card (context 128K)",
        ),
        _llama(
            "llama-3.1-70b",
            80,
            8192,
            64,
            8,
            28672,
            128256,
            131072,
            70_553_706_496,
            f"meta-llama/Llama-3.1-70B{_HF}; Llama 3.1 model card (context 128K)",
        ),
        # the weak-scaling family of Megatron-LM's SC21 paper (layers, hidden size, heads, and
        # the parameter count the paper prints) and GPT-3 175B as its Table 2 trains it
        _megatron("megatron-1.7b", 24, 2304, 24, 1.7, _SC21),
        _megatron("megatron-3.6b", 30, 3072, 32, 3.6, _SC21),
        _megatron("megatron-7.5b", 36, 4096, 32, 7.5, _SC21),
        _megatron("megatron-18b", 40, 6144, 48, 18.4, _SC21),
        _megatron("megatron-39b", 48, 8192, 64, 39.1, _SC21),
        _megatron("megatron-76b", 60, 10240, 80, 76.1, _SC21),
        _megatron("megatron-145b", 80, 12288, 96, 145.6, _SC21),
        _megatron("megatron-310b", 96, 16384, 128, 310.1, _SC21),
        _megatron("megatron-530b", 105, 20480, 128, 529.6, _SC21),
        _megatron("megatron-1t", 128, 25600, 160, 1008.0, _SC21),
        _megatron("gpt3-175b", 96, 12288, 96, 174.6, f"Brown et al. 2020 Table 2.1; {_SC21[:26]} Table 2"),
    )
}
"""The language models parsim knows, by name."""


def llm(name: str) -> LlmConfig:
    """The configuration of language model ``name``, or a ParsimError suggesting the closest names."""
    if name not in LLMS:
        raise ParsimError(f"unknown model {name!r}; {closest(name, LLMS)}")
    return LLMS[name]


def kv_itemsize(dtype: str) -> float:
    """Bytes per KV-cache element: a float type's size, or a quantised type's (int8, float8, int4)."""
    return float(DTYPES[dtype]) if dtype in DTYPES else _QUANTISED[dtype]


def kv_cache_bytes(config: LlmConfig, batch: int, tokens: int, kv_dtype: str) -> float:
    """Keys and values of ``tokens`` tokens for ``batch`` sequences over every layer."""
    return 2.0 * config.layers * config.kv_width * tokens * batch * kv_itemsize(kv_dtype)
