"""Any JSON a user names or uploads as a model is a model or one line (hypothesis).

The reader's contract under hostile input (issue 25's red team): whatever object a file holds —
any of the fields an architecture reads set to any JSON value, nested ``attn_config`` and
``rope_scaling`` objects of any shape, or not an object at all — ``parse_config`` returns a model
whose shape is consistent, or raises a ``ParsimError`` of one short printable line naming the
file; never a TypeError, a KeyError or an overflow.
"""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsim.base.errors import ParsimError
from parsim.workloads.hf_config import ARCHITECTURES, LIMITS, parse_config
from parsim.workloads.llms import register_upload

FIELDS = (
    "architectures",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "intermediate_size",
    "vocab_size",
    "max_position_embeddings",
    "n_embd",
    "n_embed",
    "n_head",
    "n_layer",
    "n_positions",
    "n_ctx",
    "n_inner",
    "ffn_dim",
    "head_dim",
    "hidden_act",
    "activation_function",
    "tie_word_embeddings",
    "attention_bias",
    "mlp_bias",
    "rope_theta",
    "rope_scaling",
    "sliding_window",
    "use_sliding_window",
    "num_local_experts",
    "num_experts_per_tok",
    "word_embed_proj_dim",
    "do_layer_norm_before",
    "enable_bias",
    "new_decoder_architecture",
    "num_kv_heads",
    "n_head_kv",
    "multi_query",
    "parallel_attn",
    "ffn_hidden_size",
    "alibi",
    "bias",
    "seq_length",
    "d_model",
    "n_heads",
    "n_layers",
    "max_seq_len",
    "attn_config",
    "expansion_ratio",
    "no_bias",
    "_published_params",
    "_source",
)
# a valid shape under every architecture's names, so that one changed field is what is tested
BASE = {
    "hidden_size": 768,
    "num_hidden_layers": 2,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "vocab_size": 1000,
    "max_position_embeddings": 1024,
    "n_embd": 768,
    "n_head": 12,
    "n_layer": 2,
    "n_positions": 1024,
    "ffn_dim": 3072,
    "d_model": 768,
    "n_heads": 12,
    "n_layers": 2,
    "max_seq_len": 1024,
}
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.sampled_from([0, 1, 2, 3, 4, 8, 12, 768, 10**6, 10**400])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([1e308, -0.0, 0.5, 12.0])
    | st.text(max_size=20)
    | st.sampled_from(["silu", "gelu", "relu", "\x1b[31m", "\u202e", "multihead_attention", "linear"])
    | st.sampled_from(sorted(ARCHITECTURES))
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["type", "rope_type", "attn_type", "kv_n_heads", "alibi"]) | st.text(max_size=5),
            inner,
            max_size=3,
        )
    ),
    max_leaves=6,
)


def _one_line(error: ParsimError, where: str) -> None:
    text = str(error)
    assert text.startswith(f"{where}: ") and text.isprintable() and len(text) < 400, text


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(
    architecture=st.sampled_from(sorted(ARCHITECTURES)) | _JSON,
    changes=st.dictionaries(st.sampled_from(FIELDS), _JSON, max_size=4),
)
def test_any_object_is_a_consistent_model_or_one_line(architecture, changes):
    data = {**BASE, "architectures": [architecture], **changes}
    try:
        config = parse_config(json.dumps(data), "fuzz.json")
    except ParsimError as error:
        _one_line(error, "fuzz.json")
        return
    for field in ("layers", "hidden", "heads", "kv_heads", "mlp_hidden", "vocab", "context"):
        value = getattr(config, field)
        assert type(value) is int and value >= 1, (field, value)
    assert config.layers <= LIMITS["layers"]
    assert config.hidden % config.heads == 0 and config.heads % config.kv_heads == 0
    assert config.params > 0


@settings(max_examples=100, deadline=None)
@given(document=_JSON)
def test_any_json_document_is_refused_or_read_as_an_upload(document):
    # the app's upload: bytes of any JSON document, under a name with control characters
    try:
        register_upload(json.dumps(document).encode(), "up\x1b[2J.json")
    except ParsimError as error:
        _one_line(error, "up\\x1b[2J.json")
