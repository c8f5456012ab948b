"""Transformers: published parameter counts, hand-computed FLOPs and bytes, attention's S x S traffic,
Adam's memory and traffic, event counts that grow with layers only, and one-line refusals."""

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import parsim
from parsim.base.errors import ParsimError
from parsim.workloads import make_workload
from parsim.workloads.base import Transfer
from parsim.workloads.layers import Numerics
from parsim.workloads.llms import LLMS, llm
from parsim.workloads.models import MODELS
from parsim.workloads.network_needs import network_needs
from parsim.workloads.transformer import _causal_pairs, kv_cache_bytes, transformer_kernels
from parsim.workloads.transformer_memory import transformer_needs

# Parameter totals as Hugging Face reports them for the checkpoints (the model cards' "Model size",
# from the safetensors headers); configurations from each model's config.json.
PUBLISHED = {
    "gpt2": 124.4e6,
    "gpt2-medium": 354.8e6,
    "gpt2-xl": 1557.6e6,
    "llama-2-7b": 6738.4e6,
    "llama-3-8b": 8030.3e6,
    "llama-2-13b": 13015.9e6,
    "llama-2-70b": 68976.6e6,
    "llama-3-70b": 70553.7e6,
    "llama-3.1-8b": 8030.3e6,
    "llama-3.1-70b": 70553.7e6,
    # issue 25's presets: the papers' and model cards' figures
    "llama-1-65b": 65.2e9,  # Touvron et al. 2023 (LLaMA) Table 2
    "llama-3.1-405b": 405e9,  # The Llama 3 Herd of Models, Table 3
    "mistral-7b": 7.3e9,  # Jiang et al. 2023 (Mistral 7B)
    "bloom-176b": 176_247e6,  # BLOOM paper Table 1: 176,247M
    "mpt-7b": 6.7e9,  # MosaicML, Introducing MPT-7B
    "mpt-30b": 30e9,  # MosaicML, MPT-30B
    "opt-66b": 66e9,  # Zhang et al. 2022 (OPT) Table 1
    "opt-175b": 175e9,  # Zhang et al. 2022 (OPT) Table 1
    "gpt-neox-20b": 20_554_567_680,  # Black et al. 2022, the model card's exact count
}
FP32 = Numerics()
GPT2 = LLMS["gpt2"]


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_parameter_counts_match_published_ones(name):
    assert LLMS[name].params == pytest.approx(PUBLISHED[name], rel=0.01)
    assert LLMS[name].params == pytest.approx(LLMS[name].published_params, rel=0.01)


@pytest.mark.parametrize("name", ["gpt3-125m", "gpt3-355m", "gpt3-760m", "gpt3-1.3b", "gpt3-2.7b"])
def test_gpt3_sizes_match_the_papers_rounded_counts(name):
    # Brown et al. 2020 round to two significant digits (350M, 1.3B, 2.7B): within that rounding
    config = LLMS[name]
    assert config.params == pytest.approx(config.published_params, rel=0.02)
    assert config.context == 2048 and config.head_dim in (64, 96, 128)


def test_counts_whose_published_figure_is_a_rounded_name():
    # OPT-13B: Table 1's "13B" rounds 12.85B (two significant digits, as GPT-3's sizes above)
    assert LLMS["opt-13b"].params == pytest.approx(13e9, rel=0.02)
    # Falcon-40B: "40B" is the name; its config (60 layers of 8192, 128 heads in 8 KV groups of 64,
    # a 4 x 8192 MLP without biases, two LayerNorms, tied 65,024-token embedding) counts 41.3B
    d, qkv = 8192, (128 + 2 * 8) * 64
    layer = d * qkv + d * d + 2 * d * 4 * d + 2 * 2 * d
    assert LLMS["falcon-40b"].params == 60 * layer + 65024 * d + 2 * d == 41_303_293_952


@pytest.mark.parametrize(
    ("name", "position", "kv_heads", "extra"),
    [
        ("bloom-176b", "alibi", 112, {"embedding_norm": True, "fused_qkv": True}),
        ("mpt-7b", "alibi", 32, {"norm_bias": False, "bias": False, "tied_embeddings": True}),
        ("falcon-40b", "rotary", 8, {"layer_norms": 2, "bias": False, "tied_embeddings": True}),
        ("opt-66b", "learned", 72, {"extra_positions": 2, "activation": "relu", "fused_qkv": False}),
        ("gpt-neox-20b", "rotary", 64, {"tied_embeddings": False, "fused_qkv": True}),
        ("mistral-7b", "rotary", 8, {"sliding_window": 4096, "context": 32768}),
    ],
)
def test_presets_keep_their_architecture(name, position, kv_heads, extra):
    config = LLMS[name]
    assert (config.position, config.kv_heads) == (position, kv_heads)
    assert {key: getattr(config, key) for key in extra} == extra


def test_gqa_shrinks_keys_and_values():
    # Llama-2-70B: 64 query heads of 128, 8 KV heads: K and V are 8192 x 1024 each
    config = llm("llama-2-70b")
    assert config.head_dim == 128 and config.kv_width == 1024
    assert config.attention_params == 2 * 8192 * 8192 + 2 * 8192 * 1024


def test_unknown_llm_suggests_the_closest():
    with pytest.raises(ParsimError, match=r"unknown model 'lama-2-7b'; did you mean llama-2-7b"):
        llm("lama-2-7b")


def _flops(kernels, prefix, matrix_only=False):
    return sum(
        k.work.flops for k in kernels if k.layer.startswith(prefix) and (k.work.matrix or not matrix_only)
    )


def test_one_gpt2_layer_forward_hand_computed():
    forward, _ = transformer_kernels(GPT2, 1, 1024, FP32, train=False)
    s, d = 1024, 768
    qkv, out, mlp = 2 * s * d * 3 * d, 2 * s * d * d, 2 * 2 * s * d * 4 * d
    attention = 2 * 2 * s * s * d * (s + 1) / (2 * s)  # QK^T and xV, causal: s(s+1)/2 pairs
    assert _flops(forward, "h.0.", matrix_only=True) == pytest.approx(qkv + out + mlp + attention, rel=1e-12)
    # the norms, GELU and adds are a fraction of a percent on top
    assert _flops(forward, "h.0.") == pytest.approx(qkv + out + mlp + attention, rel=0.01)


def _attention_flops(kind, seq):
    forward, _ = transformer_kernels(GPT2, 1, seq, FP32, train=False, attention=kind)
    return sum(
        k.work.flops for k in forward if k.layer == "h.0.attn" and ("attention" in k.name or "@" in k.name)
    )


def test_causal_mask_halves_flash_attention():
    # unfused computes the whole S x S square (the mask zeroes half); flash skips the masked tiles
    full = 2 * 2 * 1024 * 1024 * 768
    assert _attention_flops("unfused", 1024) == pytest.approx(full)
    assert _attention_flops("flash", 1024) == pytest.approx(full / 2, rel=0.001)


def _bytes(kind, seq, batch=2):
    forward, backward = transformer_kernels(llm("llama-2-7b"), batch, seq, FP32, train=True, attention=kind)
    return sum(k.bytes for k in forward + backward if k.layer == "h.0.attn")


def test_unfused_attention_moves_the_score_matrix_and_it_grows_as_s_squared():
    batch, heads, size = 2, 32, 4
    extra = {seq: _bytes("unfused", seq) - _bytes("flash", seq) for seq in (512, 2048)}
    for seq, moved in extra.items():
        assert moved >= batch * heads * seq * seq * size
    assert extra[2048] / extra[512] == pytest.approx(16, rel=0.02)


def test_flash_attention_traffic_stays_linear_in_seq():
    def flash_bytes(seq):
        forward, _ = transformer_kernels(GPT2, 1, seq, FP32, train=False)
        return next(k.bytes for k in forward if k.name == "h.0.attn flash attention fwd")

    assert flash_bytes(1024) == pytest.approx(2 * flash_bytes(512))


def test_training_step_is_about_three_forward_passes_and_six_n_per_token():
    forward, backward = transformer_kernels(GPT2, 1, 1024, FP32, train=True)
    fwd = sum(k.work.flops for k in forward if k.work.matrix)
    assert 1.9 < sum(k.work.flops for k in backward if k.work.matrix) / fwd < 2.2
    total = sum(k.work.flops for k in forward + backward)
    assert total == pytest.approx(6 * GPT2.params * 1024, rel=0.15)


@pytest.mark.parametrize(
    ("framework", "bytes_per_param"),
    [
        ("cuda-graph", 28),  # fused Adam: reads w, g, m, v; writes w, m, v
        ("graph", 28),
        # PyTorch's default foreach AdamW: mul_ (decay) 1r 1w, lerp_ (m) 2r 1w, mul_ (v) 1r 1w,
        # addcmul_ (v) 2r 1w, sqrt 1r 1w, div_ 1r 1w, add_ (eps) 1r 1w, addcdiv_ (w) 3r 1w: 12r 8w
        ("eager", 80),
    ],
)
def test_adam_adds_two_float32_moments_and_moves_its_bytes_a_parameter(framework, bytes_per_param):
    params = {"model": "gpt2", "batch": 1, "seq": 256, "train": True, "framework": framework}
    sgd = make_workload("network", params)
    adam = make_workload("network", {**params, "optimizer": "adam"})
    assert adam.footprint_B - sgd.footprint_B == pytest.approx(8 * GPT2.params)
    updates = [k for k in adam.kernels if k.name.endswith("update")]
    assert sum(k.bytes for k in updates) == pytest.approx(bytes_per_param * GPT2.params, rel=1e-9)
    assert sum(k.work.work_items for k in updates) == GPT2.params


def test_adam_for_cnns_and_the_mlp():
    layers = MODELS["resnet18"]()
    weights = sum(layer.params for layer in layers)
    adam, sgd = network_needs(layers, 4, FP32, True, "adam"), network_needs(layers, 4, FP32, True)
    assert adam.total_B - sgd.total_B == pytest.approx(8 * weights)
    assert adam.optimizer_B == pytest.approx(8 * weights) and sgd.optimizer_B == 0
    for framework, per_weight in (("graph", 28), ("eager", 80)):  # fused; PyTorch's foreach passes
        resnet = make_workload(
            "network", {"model": "resnet18", "batch": 2, "optimizer": "adam", "framework": framework}
        )
        updates = sum(k.bytes for k in resnet.kernels if k.name.endswith("update"))
        assert updates == pytest.approx(per_weight * weights)
    mlp = make_workload("mlp_train_step", {"optimizer": "adam"})
    assert sum(k.bytes for k in mlp.kernels if k.name.startswith("w")) == pytest.approx(28 * 200_000)


def test_events_grow_with_layers_not_with_tokens_or_batch():
    def count(name, batch, seq):
        forward, backward = transformer_kernels(LLMS[name], batch, seq, FP32, train=True)
        return len(forward) + len(backward)

    assert count("gpt2", 1, 1024) == count("gpt2", 64, 1024) == count("gpt2", 1, 128)
    forward, backward = transformer_kernels(GPT2, 1, 128, FP32, train=True)
    per_layer = sum(1 for k in forward + backward if k.layer.startswith("h.0."))
    assert count("gpt2-medium", 1, 128) - count("gpt2", 1, 128) == 12 * per_layer


def test_kv_cache_hand_computed():
    # Llama-2-7B, 4096 tokens in float16: 2 x 32 layers x 4096 x 4096 x 2 B = 2 GiB; Llama-3-8B's
    # 8 KV heads of 32 (GQA) keep a quarter of that
    assert kv_cache_bytes(llm("llama-2-7b"), 1, 4096, "float16") == 2 * 2**30
    assert kv_cache_bytes(llm("llama-3-8b"), 1, 4096, "float16") == 2**30 / 2
    assert kv_cache_bytes(llm("llama-2-7b"), 1, 4096, "int8") == 2**30


def test_decode_step_reads_the_whole_cache_and_computes_one_token():
    config = llm("llama-2-7b")
    f16 = Numerics(dtype="float16", mixed=True)
    forward, backward = transformer_kernels(config, 4, 1, f16, False, past=999)
    assert backward == []
    attention = next(k for k in forward if k.name == "h.0.attn flash attention fwd")
    keys = 4 * 1000 * 4096 * 2  # 4 sequences x 1000 keys x 32 heads x 128 x 2 B
    assert attention.work.bytes_read == pytest.approx(2 * keys + 4 * 4096 * 2)
    assert attention.work.flops == pytest.approx(4 * 128 * 4 * 32 * 1000)
    qkv = next(k for k in forward if k.name == "h.0.attn qkv fwd")
    assert qkv.work.flops == 2 * 4 * 4096 * 3 * 4096


def test_tensor_parallel_gives_each_gpu_its_share():
    config = llm("llama-2-7b")
    one, _ = transformer_kernels(config, 1, 512, FP32, False)
    two, _ = transformer_kernels(config, 1, 512, FP32, False, tp=2)
    assert _flops(two, "h.", True) == pytest.approx(_flops(one, "h.", True) / 2)
    half = transformer_needs(config, 1, 512, FP32, False, "sgd", tp=2).total_B
    assert half < 0.51 * transformer_needs(config, 1, 512, FP32, False, "sgd").total_B
    with pytest.raises(ParsimError, match="over 3 GPUs must divide its 32 heads"):
        transformer_kernels(config, 1, 512, FP32, False, tp=3)


def test_network_step_copies_token_ids_and_names_layers():
    step = make_workload("network", {"model": "gpt2", "batch": 8, "seq": 1024})
    copy = next(op for op in step.ops if isinstance(op, Transfer))
    assert copy.nbytes == 8 * 1024 * 8
    names = [name for name, _ in step.layers]
    assert names[:4] == ["data", "embed", "h.0.attn", "h.0.mlp"] and names[-3:] == ["ln_f", "lm_head", "loss"]
    assert dict(step.params)["seq"] == 1024
    assert dict(make_workload("network", {"model": "gpt2"}).params)["seq"] == 1024  # its context


def test_gpt2_step_engine_and_analytic_agree():
    params = {"model": "gpt2", "batch": 8, "seq": 1024, "train": True}
    engine = parsim.predict("network", params, device="a100-80gb")
    analytic = parsim.predict("network", params, device="a100-80gb", method="analytic")
    assert analytic.latency_s == pytest.approx(engine.latency_s, rel=0.05)
    rows = {row["name"]: row for row in engine.layers}
    assert rows["h.11.mlp"]["latency_s"] > 0 and rows["lm_head"]["flops"] > 0


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"model": "gpt3", "batch": 8}, "network: unknown 'model' 'gpt3'; did you mean gpt2"),
        ({"model": "gpt2", "seq": 4096}, "network: 'seq' 4096 is above gpt2's context of 1024 tokens"),
        ({"model": "resnet18", "seq": 128}, "network: 'seq' applies only to the language models"),
        ({"model": "llama-2-70b", "batch": 1, "seq": 4096, "optimizer": "adam"}, "h100-sxm has 80.0 GiB"),
    ],
)
def test_bad_input_one_line(params, expected):
    with pytest.raises(ParsimError) as info:
        parsim.predict("network", params, device="h100-sxm")
    assert expected in str(info.value) and "\n" not in str(info.value)


def test_cli_refuses_unknown_model_in_one_line(cli):
    code, _, err = cli("predict", "network", "model=gpt3", "batch=8")
    assert code == 2 and "did you mean gpt2" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_data_parallel_and_serve_take_language_models():
    step = make_workload(
        "data_parallel",
        {"model": "gpt2", "batch": 16, "seq": 256, "gpus": 2, "sync": "ring", "optimizer": "adam"},
    )
    updates = [k for k in step.kernels if k.layer == "sync"]
    assert [k.device for k in updates] == [0, 1]
    assert all(k.work.work_items == GPT2.params and k.bytes == 28 * GPT2.params for k in updates)
    one = make_workload("network", {"model": "gpt2", "batch": 8, "seq": 256})
    per_gpu = [k for k in step.kernels if k.device == 1 and k.layer != "sync"]
    assert len(per_gpu) == len([k for k in one.kernels if not k.name.endswith("update")])
    serve = make_workload("serve", {"model": "gpt2", "batch": 4, "seq": 512})
    assert not any("bwd" in k.name for k in serve.kernels)
    assert sum(1 for k in serve.kernels if "kv cache write" in k.name) == GPT2.layers


MEGATRON = ["megatron-1.7b", "megatron-3.6b", "megatron-7.5b", "megatron-18b", "megatron-39b", "megatron-76b"]
MEGATRON += ["megatron-145b", "megatron-310b", "megatron-530b", "megatron-1t", "gpt3-175b"]


@pytest.mark.parametrize("name", MEGATRON)
def test_megatron_sizes_match_the_papers_counts(name):
    # Narayanan et al. 2021 print one decimal of billions (1.7 for 1.65 B): within that rounding
    config = LLMS[name]
    assert abs(config.params - config.published_params) <= 0.05e9
    assert config.vocab == 51200 and config.context == 2048 and config.tied_embeddings


def _flash_fwd(config, batch, new, past):
    numerics = Numerics(dtype="float16")
    forward, _ = transformer_kernels(config, batch, past + new, numerics, False, past=past, new_tokens=new)
    return next(k for k in forward if k.name == "h.0.attn flash attention fwd")


def test_sliding_window_caps_flash_attention_work_and_reads():
    # Mistral-7B: 32 heads of 128, 8 KV heads, window 4096. A prefill of 8192 tokens: query p sees
    # min(p, 4096) keys: 4096 x 4097 / 2 for the first 4096, 4096 each for the rest
    mistral = LLMS["mistral-7b"]
    pairs = 32 * (4096 * 4097 / 2 + 4096 * 4096)
    assert _flash_fwd(mistral, 1, 8192, 0).work.flops == 4 * 128 * pairs
    unwindowed = _flash_fwd(attrs.evolve(mistral, sliding_window=0), 1, 8192, 0)
    assert unwindowed.work.flops == 4 * 128 * 32 * 8192 * 8193 / 2
    # decoding one token: 4096 keys (and their cache reads) however long the context
    late, later = _flash_fwd(mistral, 1, 1, 20_000), _flash_fwd(mistral, 1, 1, 30_000)
    assert late.work.flops == later.work.flops == 4 * 128 * 32 * 4096
    assert late.bytes == later.bytes < _flash_fwd(attrs.evolve(mistral, sliding_window=0), 1, 1, 20_000).bytes


@given(past=st.integers(0, 300), new=st.integers(1, 300), window=st.integers(0, 400))
def test_causal_pairs_closed_form_is_the_sum(past, new, window):
    expected = sum(min(p + 1, window) if window else p + 1 for p in range(past, past + new))
    assert _causal_pairs(past, new, window) == expected
