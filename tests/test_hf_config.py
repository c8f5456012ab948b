"""Any Hugging Face model: config.json files read into the same models as the built-in ones.

A Llama-2-7B config.json (its real field values) predicts exactly what ``llama-2-7b`` predicts;
other architectures' counts are hand-computed from their published configs; a bad file, an unknown
architecture or field value, a link or an oversized file is refused in one line; a mixture of
experts is read but refused by the workloads."""

import json
import os
from importlib import resources

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsim import predict
from parsim.base.errors import ParsimError
from parsim.workloads.hf_config import MAX_CONFIG_BYTES, parse_config
from parsim.workloads.llms import BUILT_IN, LLMS, is_llm, llm, register_upload

# meta-llama/Llama-2-7b-hf config.json as published on Hugging Face
LLAMA_2_7B = {
    "architectures": ["LlamaForCausalLM"],
    "bos_token_id": 1,
    "eos_token_id": 2,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 11008,
    "max_position_embeddings": 4096,
    "model_type": "llama",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 32,
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-05,
    "rope_scaling": None,
    "tie_word_embeddings": False,
    "torch_dtype": "float16",
    "transformers_version": "4.31.0.dev0",
    "use_cache": True,
    "vocab_size": 32000,
}
# mistralai/Mixtral-8x7B-v0.1 config.json (the fields parsim reads)
MIXTRAL = {
    "architectures": ["MixtralForCausalLM"],
    "hidden_act": "silu",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "max_position_embeddings": 32768,
    "num_attention_heads": 32,
    "num_experts_per_tok": 2,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "num_local_experts": 8,
    "rope_theta": 1e6,
    "sliding_window": None,
    "tie_word_embeddings": False,
    "vocab_size": 32000,
}
# Qwen/Qwen2-7B config.json (the fields parsim reads)
QWEN2_7B = {
    "architectures": ["Qwen2ForCausalLM"],
    "hidden_act": "silu",
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "max_position_embeddings": 131072,
    "num_attention_heads": 28,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "rope_theta": 1000000.0,
    "sliding_window": 131072,
    "use_sliding_window": False,
    "tie_word_embeddings": False,
    "vocab_size": 152064,
}


def _write(tmp_path, data, name="config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def test_every_built_in_model_is_a_config_file_with_its_source():
    folder = resources.files("parsim").joinpath("models")
    files = sorted(p.name[: -len(".json")] for p in folder.iterdir() if p.name.endswith(".json"))
    assert files == sorted(BUILT_IN) == sorted(LLMS)
    for name, config in LLMS.items():
        assert config.name == name and config.source and config.published_params > 0


def test_llama_2_7b_config_json_is_exactly_the_built_in(tmp_path):
    path = _write(tmp_path, LLAMA_2_7B)
    mine = llm(str(path))
    assert attrs.evolve(mine, name="llama-2-7b", source="", published_params=0) == attrs.evolve(
        LLMS["llama-2-7b"], source="", published_params=0
    )
    assert mine.params == 6_738_415_616
    for workload, params in (
        ("llm_serve", {"prompt": 512, "output": 128, "batch": 4}),
        ("network", {"batch": 2, "seq": 1024, "train": False}),
    ):
        built_in = predict(workload, {**params, "model": "llama-2-7b"}, device="h100-sxm")
        from_file = predict(workload, {**params, "model": str(path)}, device="h100-sxm")
        assert from_file.latency_s == built_in.latency_s
        assert from_file.metrics == built_in.metrics


def test_the_model_line_prints_the_derived_count(cli, tmp_path):
    path = _write(tmp_path, LLAMA_2_7B)
    code, out, _ = cli("predict", "llm_serve", f"model={path}", "--device", "h100-sxm")
    assert code == 0
    assert f"model        {path}: 6,738,415,616 parameters (32 layers, hidden 4096" in out


def test_qwen2_counts_its_qkv_biases_and_ignores_an_unused_window():
    # hand-computed: attention 2 d^2 + 2 d (4 x 128) + biases d + 2 x 512; SwiGLU 3 d x 18944
    config = parse_config(json.dumps(QWEN2_7B), "qwen2.json")
    d = 3584
    layer = 2 * d * d + 2 * d * 512 + (d + 1024) + 3 * d * 18944 + 2 * d
    assert config.params == 28 * layer + 2 * 152064 * d + d == 7_615_616_512  # Qwen2-7B's published count
    assert config.sliding_window == 0 and config.rope_theta == 1e6


def test_mixtral_is_read_counted_and_served(tmp_path):
    config = parse_config(json.dumps(MIXTRAL), "mixtral.json")
    assert (config.experts, config.experts_per_token) == (8, 2)
    assert config.params == 46_702_792_704  # Mixtral-8x7B: 46.7B (Jiang et al. 2024)
    path = _write(tmp_path, MIXTRAL)
    assert attrs.evolve(llm(str(path)), name="m", source="", published_params=0) == attrs.evolve(
        LLMS["mixtral-8x7b"], name="m", source="", published_params=0
    )
    with pytest.raises(ParsimError, match="network needs .* GiB, h100-sxm has 80.0 GiB"):  # trains, too big
        predict("network", {"model": str(path), "batch": 1, "seq": 64}, device="h100-sxm")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"architectures": ["BertModel"]}, r"'architectures' must be one of LlamaForCausalLM.*: 'BertModel'"),
        ({"architectures": None}, r"'architectures' must be a list of one class name: None"),
        ({"hidden_size": -4096}, r"'hidden_size' must be a whole number in 1\.\.1,000,000: -4096"),
        ({"num_hidden_layers": 2.5}, r"'num_hidden_layers' must be a whole number .*: 2\.5"),
        ({"num_key_value_heads": 5}, r"'num_key_value_heads' must be a divisor of the 32 attention heads: 5"),
        ({"hidden_act": "relu"}, r"'hidden_act' must be one of silu, swish: 'relu'"),
        ({"tie_word_embeddings": "no"}, r"'tie_word_embeddings' must be true or false: 'no'"),
        ({"rope_scaling": {"type": "magic"}}, r"'rope_scaling.rope_type' must be one of default.*: 'magic'"),
        ({"head_dim": 64}, r"'head_dim' must be hidden size / heads = 128 .*: 64"),
        ({"vocab_size": None}, r"missing 'vocab_size'"),
    ],
)
def test_a_bad_field_is_one_line_naming_file_field_and_value(tmp_path, change, message):
    path = _write(tmp_path, {**LLAMA_2_7B, **change})
    with pytest.raises(ParsimError, match=message) as error:
        llm(str(path))
    assert str(error.value).startswith(f"{path}: ") and "\n" not in str(error.value)


def test_a_long_value_is_not_echoed_whole(tmp_path):
    path = _write(tmp_path, {**LLAMA_2_7B, "architectures": ["X" * 10_000]})
    with pytest.raises(ParsimError) as error:
        llm(str(path))
    assert len(str(error.value)) < 400


@pytest.mark.parametrize("text", ["{", "[1, 2]", '{"a": NaN}', "[" * 100_000])
def test_not_a_config_object_is_refused(tmp_path, text):
    path = _write(tmp_path, text)
    with pytest.raises(ParsimError, match=f"{path}: (not JSON|a config.json holds an object)"):
        llm(str(path))


def test_a_symlinked_config_is_refused_not_followed(tmp_path):
    real = _write(tmp_path, LLAMA_2_7B, "real.json")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with pytest.raises(ParsimError, match="is a symbolic link; parsim does not read through links"):
        llm(str(link))


def test_an_oversized_or_special_config_is_refused_before_reading(tmp_path):
    path = _write(tmp_path, json.dumps(LLAMA_2_7B) + " " * MAX_CONFIG_BYTES)
    with pytest.raises(ParsimError, match=r"bytes, above the 1,000,000 parsim reads"):
        llm(str(path))
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(ParsimError, match="is not a regular file"):
        llm(str(fifo))
    with pytest.raises(ParsimError, match="above the 1,000,000 parsim reads"):
        register_upload(b" " * (MAX_CONFIG_BYTES + 1), "big.json")


def test_an_edited_file_is_read_again(tmp_path):
    path = _write(tmp_path, LLAMA_2_7B)
    assert llm(str(path)).layers == 32
    _write(tmp_path, {**LLAMA_2_7B, "num_hidden_layers": 16})
    os.utime(path, ns=(1, 1))  # a new modification time, whatever the clock's resolution
    assert llm(str(path)).layers == 16


def test_an_upload_is_the_same_model_as_the_file(tmp_path):
    data = json.dumps(LLAMA_2_7B).encode()
    name = register_upload(data, "config.json")
    assert name.startswith("uploaded-") and is_llm(name) and register_upload(data, "again.json") == name
    assert llm(name).params == LLMS["llama-2-7b"].params
    assert predict("llm_serve", {"model": name}, device="h100-sxm").latency_s == pytest.approx(
        predict("llm_serve", {"model": "llama-2-7b"}, device="h100-sxm").latency_s, rel=0
    )
    with pytest.raises(ParsimError, match=r"bad\.json: not UTF-8 text"):
        register_upload(b"\xff\xfe{", "bad.json")


def test_the_cli_refuses_a_bad_config_with_exit_2(cli, tmp_path):
    path = _write(tmp_path, {**LLAMA_2_7B, "architectures": ["T5ForConditionalGeneration"]})
    code, _, err = cli("predict", "network", f"model={path}", "--device", "h100-sxm")
    assert code == 2
    assert "'architectures' must be one of" in err and "'T5ForConditionalGeneration'" in err
    code, _, err = cli("predict", "network", "model=llama-9b", "--device", "h100-sxm")
    assert code == 2 and "or a path to a config.json" in err


@settings(max_examples=40, deadline=None)
@given(
    layers=st.integers(1, 96),
    heads=st.integers(1, 64),
    head_dim=st.sampled_from([32, 64, 128]),
    vocab=st.integers(1, 300_000),
    positions=st.integers(1, 65_536),
)
def test_a_gpt2_config_counts_12_l_d2_plus_13_l_d(layers, heads, head_dim, vocab, positions):
    # GPT-2's block: qkv 3d^2+3d, proj d^2+d, MLP 8d^2+5d, two LayerNorms 4d: 12 d^2 + 13 d
    d = heads * head_dim
    data = {
        "architectures": ["GPT2LMHeadModel"],
        "n_embd": d,
        "n_head": heads,
        "n_layer": layers,
        "n_positions": positions,
        "vocab_size": vocab,
    }
    config = parse_config(json.dumps(data), "gpt2.json")
    assert config.params == layers * (12 * d * d + 13 * d) + (vocab + positions) * d + 2 * d


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(
    architecture=st.sampled_from(
        ["LlamaForCausalLM", "MistralForCausalLM", "GPT2LMHeadModel", "OPTForCausalLM"]
    ),
    field=st.sampled_from(
        [
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "num_key_value_heads",
            "vocab_size",
            "n_embd",
            "n_head",
            "ffn_dim",
            "tie_word_embeddings",
            "rope_scaling",
            "sliding_window",
            "hidden_act",
        ]
    ),
    value=_JSON,
)
def test_any_value_of_any_field_is_a_model_or_one_line(architecture, field, value):
    data = {**LLAMA_2_7B, "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024, "ffn_dim": 3072}
    data = {**data, "architectures": [architecture], field: value}
    try:
        config = parse_config(json.dumps(data), "fuzz.json")
    except ParsimError as error:
        assert str(error).startswith("fuzz.json: ") and "\n" not in str(error) and len(str(error)) < 600
    else:
        assert config.params > 0 and config.hidden % config.heads == 0 and config.heads % config.kv_heads == 0


# --- red team (issue 25): values a careless or hostile file gives, each one line, never a crash ---

MPT = {
    "architectures": ["MPTForCausalLM"],
    "d_model": 4096,
    "n_heads": 32,
    "n_layers": 2,
    "max_seq_len": 2048,
    "vocab_size": 50432,
}


@pytest.mark.parametrize("architectures", [[[1]], [{"a": 1}], [None], [7]])
def test_an_architecture_that_is_not_a_name_is_one_line(architectures):
    with pytest.raises(ParsimError, match=r"^x\.json: 'architectures' must be one of LlamaForCausalLM"):
        parse_config(json.dumps({**LLAMA_2_7B, "architectures": architectures}), "x.json")


@pytest.mark.parametrize(
    ("attention", "message"),
    [
        ({"attn_type": "grouped_query_attention", "kv_n_heads": [1]}, r"'attn_config.kv_n_heads' .*: \[1\]"),
        ({"attn_type": "grouped_query_attention", "kv_n_heads": -8}, r"'attn_config.kv_n_heads' .*: -8"),
        ({"attn_type": "grouped_query_attention", "kv_n_heads": 8.5}, r"'attn_config.kv_n_heads' .*: 8\.5"),
        ({"attn_type": "grouped_query_attention", "kv_n_heads": 5}, r"'attn_config.kv_n_heads' must be a d"),
        ({"attn_type": ["x"]}, r"'attn_config.attn_type' must be one of multihead_attention.*: \['x'\]"),
        ({"alibi": "no"}, r"'attn_config.alibi' must be true or false: 'no'"),
    ],
)
def test_a_bad_mpt_attention_field_is_one_line_naming_it(attention, message):
    with pytest.raises(ParsimError, match=message):
        parse_config(json.dumps({**MPT, "attn_config": attention}), "mpt.json")


def test_mpt_kv_heads_follow_the_attention_class():
    # llm-foundry's MultiheadAttention passes kv_n_heads = n_heads whatever attn_config says (its
    # defaults hold kv_n_heads 1); MultiQueryAttention one KV head; GroupedQueryAttention kv_n_heads
    def kv(attention):
        return parse_config(json.dumps({**MPT, "attn_config": attention}), "mpt.json").kv_heads

    assert kv({"attn_type": "multihead_attention", "kv_n_heads": 1}) == 32
    assert kv({"attn_type": "multiquery_attention"}) == 1
    assert kv({"attn_type": "grouped_query_attention", "kv_n_heads": 8}) == 8


def test_a_model_deeper_than_the_layer_bound_is_refused_before_any_op_is_built(cli, tmp_path):
    # 100,000 layers of width 64 passed the reader and took 3 minutes and 4 GB in llm_serve (8 ops
    # a layer, every op an event): the bound is what a prediction may cost, not a typo guard
    tiny = {**LLAMA_2_7B, "hidden_size": 64, "num_attention_heads": 1, "num_key_value_heads": 1}
    tiny = {**tiny, "intermediate_size": 64, "vocab_size": 100}
    assert parse_config(json.dumps({**tiny, "num_hidden_layers": 1024}), "deep.json").layers == 1024
    path = _write(tmp_path, {**tiny, "num_hidden_layers": 100_000})
    code, out, err = cli("predict", "llm_serve", f"model={path}", "prompt=16", "--device", "h100-sxm")
    assert code == 2 and out == ""
    bound = "'num_hidden_layers' must be a whole number in 1..1,024: 100000"
    assert err == f"error: llm_serve: {path}: {bound}\n"
