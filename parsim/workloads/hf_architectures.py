"""The architectures a Hugging Face ``config.json`` may name, and how each one's fields are read.

Each ``architectures`` class builds its transformer from the numbers the file gives and from
choices its code makes without a field: Llama's gated SiLU MLP and RMSNorm, OPT's two extra
position rows, Qwen2's q/k/v biases, GPT-2's and BLOOM's own spellings (``n_embd``, ``n_layer``),
MPT's ``d_model``. ``ARCHITECTURES`` maps each class parsim reads to the reader of its fields;
``Fields`` reads one field at a time, within a generous bound (``LIMITS``), and refuses a value it
cannot model in one line naming the file, the field and a short value. ``hf_config`` opens the
file and picks the reader.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from parsim.base.errors import ParsimError

LIMITS = {  # generous bounds, so a typo is refused before it costs memory or time
    # layers cost work: every layer is ops (events) of every prediction and of every step a load
    # simulation prices (measured on 2 cores: 1,000 layers ~2 s in llm_serve, ~23 s in llm_load
    # at requests=5000; 100,000 layers took 181 s and 4.3 GB in llm_serve). 1,024 is above the
    # deepest published transformer (DeepNet: 1,000 layers, Wang et al. 2022, arXiv:2203.00555)
    "layers": 1_024,
    "hidden": 10**6,
    "heads": 10**5,
    "mlp_hidden": 10**7,
    "vocab": 10**8,
    "context": 10**8,
    "experts": 10**5,
}
ROPE_SCALINGS = ("default", "linear", "dynamic", "yarn", "longrope", "su", "llama3")
"""RoPE scaling types of ``rope_scaling`` (``type`` or ``rope_type``): stored, not costed."""
MPT_ATTENTIONS = ("multihead_attention", "multiquery_attention", "grouped_query_attention")
"""MPT's ``attn_config.attn_type`` values (llm-foundry's attention classes)."""
GELUS = ("gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh", "gelu_accurate", "quick_gelu")


class Fields:
    """The fields of one parsed file, each read with its bound and refused in one line."""

    def __init__(self, data: dict[str, Any], where: str, prefix: str = "") -> None:
        self.data, self.where, self.prefix = data, where, prefix  # prefix: a nested object's name

    def error(self, field: str, bound: str, value: object) -> ParsimError:
        shown = repr(value)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        return ParsimError(f"{self.where}: '{self.prefix}{field}' must be {bound}: {shown}")

    def get(self, *names: str, default: Any = None) -> tuple[str, Any]:
        """The first of ``names`` the file gives (its name and value), else the first name and ``default``."""
        for name in names:
            if self.data.get(name) is not None:
                return name, self.data[name]
        return names[0], default

    def whole(self, *names: str, default: int | None = None, limit: str = "") -> int:
        name, value = self.get(*names, default=default)
        if value is None:
            raise ParsimError(f"{self.where}: missing '{self.prefix}{name}' (a whole number)")
        high = LIMITS.get(limit or name, 10**8)
        if type(value) is float and value.is_integer():
            value = int(value)
        if type(value) is not int or not 1 <= value <= high:
            raise self.error(name, f"a whole number in 1..{high:,}", value)
        return value

    def flag(self, name: str, default: bool) -> bool:
        value = self.data.get(name, default)
        value = default if value is None else value
        if type(value) is not bool:
            raise self.error(name, "true or false", value)
        return value

    def choice(self, name: str, known: tuple[str, ...], default: str) -> str:
        value = self.data.get(name, default)
        value = default if value is None else value
        if value not in known:
            raise self.error(name, f"one of {', '.join(known)}", value)
        return str(value)


def _rope(fields: Fields) -> dict[str, Any]:
    theta = fields.data.get("rope_theta", 10000.0)
    if type(theta) not in (int, float) or not 0 < theta < 1e12:
        raise fields.error("rope_theta", "a positive number", theta)
    scaling = fields.data.get("rope_scaling") or {}
    if not isinstance(scaling, dict):
        raise fields.error("rope_scaling", "an object or null", scaling)
    kind = scaling.get("rope_type", scaling.get("type", "")) if scaling else ""
    if scaling and kind not in ROPE_SCALINGS:
        raise fields.error("rope_scaling.rope_type", f"one of {', '.join(ROPE_SCALINGS)}", kind)
    return {"rope_theta": float(theta), "rope_scaling": str(kind)}


def _heads(
    fields: Fields, hidden: int, heads: int, kv_heads: int, kv_field: str = "num_key_value_heads"
) -> None:
    if hidden % heads:
        raise fields.error("num_attention_heads", f"a divisor of the hidden size {hidden}", heads)
    if heads % kv_heads:
        raise fields.error(kv_field, f"a divisor of the {heads} attention heads", kv_heads)
    given = fields.data.get("head_dim")
    if given is not None and given != hidden // heads:
        raise fields.error("head_dim", f"hidden size / heads = {hidden // heads} (parsim's attention)", given)


def _hidden_and_heads(fields: Fields) -> tuple[int, int]:
    """The model width and its attention heads under Hugging Face's usual names (in that order, so
    a file with both wrong names the width first)."""
    return fields.whole("hidden_size", limit="hidden"), fields.whole("num_attention_heads", limit="heads")


def _llama_block(fields: Fields, hidden: int, heads: int, kv_heads: int, mlp_field: str) -> dict[str, Any]:
    """The fields every Llama-style block reads alike (Llama, Mistral, Mixtral, Qwen2, Qwen3-MoE):
    its depth, widths, vocabulary and context, a gated SiLU MLP of ``mlp_field``'s width, RMSNorm,
    rotary positions, untied embeddings unless the file ties them."""
    return {
        "layers": fields.whole("num_hidden_layers", limit="layers"),
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "mlp_hidden": fields.whole(mlp_field, limit="mlp_hidden"),
        "vocab": fields.whole("vocab_size", limit="vocab"),
        "context": fields.whole("max_position_embeddings", limit="context"),
        "mlp": "swiglu",
        "norm": "rmsnorm",
        "position": "rotary",
        "tied_embeddings": fields.flag("tie_word_embeddings", False),
    }


def _llama(fields: Fields, family: str) -> dict[str, Any]:
    """Llama, Mistral, Mixtral and Qwen2: gated MLP, RMSNorm, rotary positions, untied by default."""
    hidden, heads = _hidden_and_heads(fields)
    kv_heads = fields.whole("num_key_value_heads", default=heads, limit="heads")
    _heads(fields, hidden, heads, kv_heads)
    fields.choice("hidden_act", ("silu", "swish"), "silu")  # the gate's SiLU: SwiGLU
    windowed = family in ("mistral", "mixtral") or fields.flag("use_sliding_window", False)  # Qwen2's
    given = fields.data.get("sliding_window") is not None  # null: the whole context
    window = fields.whole("sliding_window", limit="context") if windowed and given else 0
    experts, top = 1, 1
    if family == "mixtral":
        experts = fields.whole("num_local_experts", default=8, limit="experts")
        top = fields.whole("num_experts_per_tok", default=2, limit="experts")
        if top > experts:
            raise fields.error("num_experts_per_tok", f"at most num_local_experts ({experts})", top)
    bias = fields.flag("attention_bias", False)
    if fields.flag("mlp_bias", False) != bias:
        raise fields.error("mlp_bias", f"as attention_bias ({str(bias).lower()}) in parsim", not bias)
    return {
        **_llama_block(fields, hidden, heads, kv_heads, "intermediate_size"),
        "bias": bias,
        "qkv_bias": family == "qwen2",  # Qwen2Attention: q, k and v with biases, o_proj without
        "sliding_window": window,
        "experts": experts,
        "experts_per_token": top,
        **_rope(fields),
    }


def _qwen3_moe(fields: Fields) -> dict[str, Any]:
    """Qwen3's mixture of experts: Llama's block with a per-head RMSNorm on queries and keys, heads
    of ``head_dim`` (128, whatever the hidden size), and ``num_experts`` SwiGLU experts of
    ``moe_intermediate_size`` in every block (``decoder_sparse_step`` 1, no ``mlp_only_layers``)."""
    hidden, heads = _hidden_and_heads(fields)
    kv_heads = fields.whole("num_key_value_heads", default=heads, limit="heads")
    if heads % kv_heads:
        raise fields.error("num_key_value_heads", f"a divisor of the {heads} attention heads", kv_heads)
    fields.choice("hidden_act", ("silu", "swish"), "silu")
    experts = fields.whole("num_experts", limit="experts")
    top = fields.whole("num_experts_per_tok", limit="experts")
    if top > experts:
        raise fields.error("num_experts_per_tok", f"at most num_experts ({experts})", top)
    if fields.whole("decoder_sparse_step", default=1, limit="layers") != 1:
        raise fields.error("decoder_sparse_step", "1 (every block a mixture of experts, in parsim)", 0)
    if fields.data.get("mlp_only_layers") not in (None, []):
        raise fields.error("mlp_only_layers", "empty (every block a mixture of experts, in parsim)", 1)
    return {
        **_llama_block(fields, hidden, heads, kv_heads, "moe_intermediate_size"),
        "bias": fields.flag("attention_bias", False),
        "experts": experts,
        "experts_per_token": top,
        "head_size": fields.whole("head_dim", default=hidden // heads, limit="hidden"),
        "qk_norm": True,
        **_rope(fields),
    }


def _gpt2(fields: Fields) -> dict[str, Any]:
    """GPT-2: learned positions, LayerNorm, GELU MLP of 4 x n_embd unless n_inner, one QKV matrix."""
    hidden, heads = fields.whole("n_embd", limit="hidden"), fields.whole("n_head", limit="heads")
    _heads(fields, hidden, heads, heads)
    inner = fields.data.get("n_inner")
    return {
        "layers": fields.whole("n_layer", limit="layers"),
        "hidden": hidden,
        "heads": heads,
        "kv_heads": heads,
        "mlp_hidden": 4 * hidden if inner is None else fields.whole("n_inner", limit="mlp_hidden"),
        "vocab": fields.whole("vocab_size", limit="vocab"),
        "context": fields.whole("n_positions", "n_ctx", limit="context"),
        "mlp": "gelu",
        "activation": fields.choice("activation_function", (*GELUS, "relu"), "gelu_new"),
        "norm": "layernorm",
        "position": "learned",
        "tied_embeddings": fields.flag("tie_word_embeddings", True),
        "bias": True,
        "fused_qkv": True,
    }


def _neox(fields: Fields) -> dict[str, Any]:
    """GPT-NeoX (Pythia): rotary positions, LayerNorm, GELU MLP, biases, one QKV matrix, untied."""
    hidden, heads = _hidden_and_heads(fields)
    _heads(fields, hidden, heads, heads)
    return {
        "layers": fields.whole("num_hidden_layers", limit="layers"),
        "hidden": hidden,
        "heads": heads,
        "kv_heads": heads,
        "mlp_hidden": fields.whole("intermediate_size", limit="mlp_hidden"),
        "vocab": fields.whole("vocab_size", limit="vocab"),
        "context": fields.whole("max_position_embeddings", limit="context"),
        "mlp": "gelu",
        "activation": fields.choice("hidden_act", (*GELUS, "relu"), "gelu"),
        "norm": "layernorm",
        "position": "rotary",
        "tied_embeddings": fields.flag("tie_word_embeddings", False),
        "bias": fields.flag("attention_bias", True),
        "fused_qkv": True,
        **_rope(fields),
    }


def _opt(fields: Fields) -> dict[str, Any]:
    """OPT: learned positions with 2 extra rows (OPTLearnedPositionalEmbedding's offset), ReLU MLP."""
    hidden, heads = _hidden_and_heads(fields)
    _heads(fields, hidden, heads, heads)
    projected = fields.data.get("word_embed_proj_dim", hidden)
    if projected != hidden:
        raise fields.error(
            "word_embed_proj_dim", f"the hidden size {hidden} (no projected embeddings)", projected
        )
    if not fields.flag("do_layer_norm_before", True):
        raise fields.error(
            "do_layer_norm_before", "true (pre-norm; OPT-350M's post-norm is not modelled)", False
        )
    return {
        "layers": fields.whole("num_hidden_layers", limit="layers"),
        "hidden": hidden,
        "heads": heads,
        "kv_heads": heads,
        "mlp_hidden": fields.whole("ffn_dim", limit="mlp_hidden"),
        "vocab": fields.whole("vocab_size", limit="vocab"),
        "context": fields.whole("max_position_embeddings", limit="context"),
        "mlp": "gelu",
        "activation": fields.choice("activation_function", ("relu", *GELUS), "relu"),
        "norm": "layernorm",
        "position": "learned",
        "extra_positions": 2,
        "tied_embeddings": fields.flag("tie_word_embeddings", True),
        "bias": fields.flag("enable_bias", True),
    }


def _falcon(fields: Fields) -> dict[str, Any]:
    """Falcon: rotary (or ALiBi) positions, GELU MLP of 4 x hidden, one QKV matrix, tied; multi-query
    (one KV head) or, in the new decoder architecture, ``num_kv_heads`` groups and two norms."""
    hidden = fields.whole("hidden_size", limit="hidden")
    heads = fields.whole("num_attention_heads", "n_head", limit="heads")
    new = fields.flag("new_decoder_architecture", False)
    if new:
        kv_heads = fields.whole("num_kv_heads", "n_head_kv", default=heads, limit="heads")
    else:
        kv_heads = 1 if fields.flag("multi_query", True) else heads
    _heads(fields, hidden, heads, kv_heads)
    parallel = fields.flag("parallel_attn", True)
    return {
        "layers": fields.whole("num_hidden_layers", "n_layer", limit="layers"),
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "mlp_hidden": fields.whole("ffn_hidden_size", default=4 * hidden, limit="mlp_hidden"),
        "vocab": fields.whole("vocab_size", limit="vocab"),
        "context": fields.whole("max_position_embeddings", default=2048, limit="context"),
        "mlp": "gelu",
        "activation": "gelu",
        "norm": "layernorm",
        "position": "alibi" if fields.flag("alibi", False) else "rotary",
        "tied_embeddings": fields.flag("tie_word_embeddings", True),
        "bias": fields.flag("bias", False),
        "fused_qkv": True,
        "layer_norms": 2 if new or not parallel else 1,  # parallel_attn: one input_layernorm
        **_rope(fields),
    }


def _bloom(fields: Fields) -> dict[str, Any]:
    """BLOOM: ALiBi (no position table), a LayerNorm after the embedding, GELU MLP of 4 x hidden,
    biases, tied; its config gives no context: ``seq_length``, else the 2,048 tokens it was trained on
    (BigScience Workshop 2022, "BLOOM", Section 3.4: sequence length 2048)."""
    hidden = fields.whole("hidden_size", "n_embed", limit="hidden")
    heads = fields.whole("n_head", "num_attention_heads", limit="heads")
    _heads(fields, hidden, heads, heads)
    return {
        "layers": fields.whole("n_layer", "num_hidden_layers", limit="layers"),
        "hidden": hidden,
        "heads": heads,
        "kv_heads": heads,
        "mlp_hidden": 4 * hidden,
        "vocab": fields.whole("vocab_size", limit="vocab"),
        "context": fields.whole("seq_length", default=2048, limit="context"),
        "mlp": "gelu",
        "activation": "gelu",
        "norm": "layernorm",
        "position": "alibi",
        "embedding_norm": True,
        "tied_embeddings": fields.flag("tie_word_embeddings", True),
        "bias": True,
        "fused_qkv": True,
    }


def _mpt(fields: Fields) -> dict[str, Any]:
    """MPT: ALiBi, LayerNorm and linears without biases (``no_bias``), GELU MLP of
    ``expansion_ratio`` x d_model, one QKV matrix, tied."""
    hidden, heads = fields.whole("d_model", limit="hidden"), fields.whole("n_heads", limit="heads")
    attention = fields.data.get("attn_config") or {}
    if not isinstance(attention, dict):
        raise fields.error("attn_config", "an object", attention)
    inner = Fields(attention, fields.where, "attn_config.")
    kind = inner.choice("attn_type", MPT_ATTENTIONS, "multihead_attention")
    # llm-foundry's attention classes: MultiheadAttention passes kv_n_heads = n_heads (a kv_n_heads
    # in attn_config is ignored), MultiQueryAttention 1, GroupedQueryAttention attn_config's
    kv_heads = {"multihead_attention": heads, "multiquery_attention": 1}.get(kind)
    kv_heads = kv_heads or inner.whole("kv_n_heads", limit="heads")
    _heads(fields, hidden, heads, kv_heads, "attn_config.kv_n_heads")
    ratio = fields.data.get("expansion_ratio", 4)
    if type(ratio) not in (int, float) or not 0 < ratio <= 64 or (ratio * hidden) % 1:
        raise fields.error("expansion_ratio", "a positive number (x d_model whole)", ratio)
    no_bias = fields.flag("no_bias", True)
    alibi = inner.flag("alibi", True)
    return {
        "layers": fields.whole("n_layers", limit="layers"),
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "mlp_hidden": int(ratio * hidden),
        "vocab": fields.whole("vocab_size", limit="vocab"),
        "context": fields.whole("max_seq_len", limit="context"),
        "mlp": "gelu",
        "activation": "gelu",
        "norm": "layernorm",
        "norm_bias": not no_bias,
        "position": "alibi" if alibi else "learned",
        "tied_embeddings": fields.flag("tie_word_embeddings", True),
        "bias": not no_bias,
        "fused_qkv": True,
    }


def _dbrx(fields: Fields) -> dict[str, Any]:
    """DBRX: a mixture of ``moe_num_experts`` gated-SiLU experts (``ffn_config``), LayerNorm without
    bias, rotary positions, grouped-query attention in one Wqkv matrix (``attn_config``), no biases,
    untied; ``clip_qkv`` clamps q, k, v elementwise (a streaming op, not costed)."""
    hidden, heads = fields.whole("d_model", limit="hidden"), fields.whole("n_heads", limit="heads")
    parts = {}
    for part in ("attn_config", "ffn_config"):
        value = fields.data.get(part) or {}
        if not isinstance(value, dict):
            raise fields.error(part, "an object", value)
        parts[part] = Fields(value, f"{fields.where}: {part}")
    attention, ffn = parts["attn_config"], parts["ffn_config"]
    kv_heads = attention.whole("kv_n_heads", default=heads, limit="heads")
    _heads(fields, hidden, heads, kv_heads)
    experts = ffn.whole("moe_num_experts", default=4, limit="experts")
    top = ffn.whole("moe_top_k", default=1, limit="experts")
    if top > experts:
        raise ffn.error("moe_top_k", f"at most moe_num_experts ({experts})", top)
    return {
        "layers": fields.whole("n_layers", limit="layers"),
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "mlp_hidden": ffn.whole("ffn_hidden_size", default=3584, limit="mlp_hidden"),
        "vocab": fields.whole("vocab_size", limit="vocab"),
        "context": fields.whole("max_seq_len", limit="context"),
        "mlp": "swiglu",
        "norm": "layernorm",
        "norm_bias": False,
        "position": "rotary",
        "tied_embeddings": fields.flag("tie_word_embeddings", False),
        "bias": False,
        "fused_qkv": True,
        "experts": experts,
        "experts_per_token": top,
        **_rope(attention),
    }


ARCHITECTURES: dict[str, Callable[[Fields], dict[str, Any]]] = {
    "LlamaForCausalLM": lambda f: _llama(f, "llama"),
    "MistralForCausalLM": lambda f: _llama(f, "mistral"),
    "MixtralForCausalLM": lambda f: _llama(f, "mixtral"),
    "Qwen2ForCausalLM": lambda f: _llama(f, "qwen2"),
    "Qwen3MoeForCausalLM": _qwen3_moe,
    "GPT2LMHeadModel": _gpt2,
    "GPTNeoXForCausalLM": _neox,
    "OPTForCausalLM": _opt,
    "FalconForCausalLM": _falcon,
    "BloomForCausalLM": _bloom,
    "MPTForCausalLM": _mpt,
    "DbrxForCausalLM": _dbrx,
}
"""The classes of ``architectures`` parsim reads, each with the reader of its fields."""
