"""Mixture of experts: the union of experts a step reads, the grouped GEMMs, expert parallelism.

Known answers are computed by hand in the comments; the properties (hypothesis) are the union's
bounds and the decode step's place between k experts' bytes and all experts' bytes.
"""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.methods.predict import predict
from parsim.model.collectives import traffic
from parsim.results.serving_figures import serve_metrics
from parsim.workloads.base import AllReduce, Kernel, Workload
from parsim.workloads.layers import Numerics
from parsim.workloads.llms import LLMS
from parsim.workloads.moe import Routing, expected_experts
from parsim.workloads.serving import NAME, LlmServeParams, check_llm_serve, llm_serve
from parsim.workloads.transformer import transformer_kernels
from tests.systems import TINY_MOE

# a tiny MoE: 1 layer, hidden 8, 4 experts of inner width 16 (SwiGLU), 2 per token
TINY = attrs.evolve(
    TINY_MOE, layers=1, hidden=8, heads=2, kv_heads=2, mlp_hidden=16, vocab=32, context=64, experts=4
)
# published totals and active parameters per token
ACTIVE = {
    "mixtral-8x7b": (46.7e9, 12.9e9),  # Mistral AI, "Mixtral of experts" (2023-12-11)
    "mixtral-8x22b": (141e9, 39e9),  # Mistral AI, "Cheaper, Better, Faster, Stronger" (2024-04-17)
    "dbrx": (132e9, 36e9),  # Databricks, "Introducing DBRX" (2024-03-27)
}


def build(**given: object) -> Workload:
    params = LlmServeParams(**given).model_dump()
    return llm_serve(check_llm_serve(NAME, given, params))


def mlp_kernels(batch: int, routing: Routing | None = None) -> dict[str, Kernel]:
    forward, _ = transformer_kernels(TINY, batch, 3, Numerics(), False, past=2, new_tokens=1, routing=routing)
    return {k.name.removeprefix("h.0.mlp "): k for k in forward if k.layer == "h.0.mlp"}


@pytest.mark.parametrize("name", sorted(ACTIVE))
def test_total_and_active_parameters_match_the_published_ones(name):
    total, active = ACTIVE[name]
    config = LLMS[name]
    assert config.params == pytest.approx(total, rel=0.01)
    assert config.active_params == pytest.approx(active, rel=0.015)


def test_mixtral_8x7b_counts_by_hand():
    # per layer: attention 2 x 4096^2 + 2 x 4096 x 1024 = 41,943,040; 8 experts of 3 x 4096 x 14336
    # = 176,160,768 each; router 4096 x 8; two RMSNorms 2 x 4096; plus 2 x 32000 x 4096 and a norm
    config = LLMS["mixtral-8x7b"]
    layer = 41_943_040 + 8 * 176_160_768 + 4096 * 8 + 2 * 4096
    assert config.params == 32 * layer + 2 * 32000 * 4096 + 4096 == 46_702_792_704
    assert config.expert_params == 32 * 8 * 176_160_768
    assert config.active_params == 46_702_792_704 - 32 * 6 * 176_160_768 == 12_879_925_248


@pytest.mark.parametrize(
    ("name", "total", "active"),
    [("qwen3-30b-a3b", 30.5e9, 3.3e9), ("qwen3-235b-a22b", 235e9, 22e9)],  # Qwen3 report, Table 2
)
def test_qwen3_totals_and_active_parameters_match_the_published_ones(name, total, active):
    # the exact active count of Qwen3-30B-A3B, 3.353B, is 1.6 % above the published 3.3B (not a
    # rounding of it: 53M parameters we cannot attribute, 0.2 % of the total)
    config = LLMS[name]
    assert config.params == pytest.approx(total, rel=0.01)
    assert config.active_params == pytest.approx(active, rel=0.02)


def test_qwen3_30b_a3b_counts_by_hand():
    # heads of 128 beside a hidden size of 2048: q and o 2048 x 4096 each, k and v 2048 x 512 each,
    # the query and key norms 2 x 128; 128 experts of 3 x 2048 x 768; router 2048 x 128; two norms
    config = LLMS["qwen3-30b-a3b"]
    assert (config.head_dim, config.query_width) == (128, 4096)
    attention = 2 * 2048 * 4096 + 2 * 2048 * 512 + 2 * 128
    layer = attention + 128 * 3 * 2048 * 768 + 2048 * 128 + 2 * 2048
    assert config.params == 48 * layer + 2 * 151_936 * 2048 + 2048 == 30_532_122_624


def test_union_of_experts_known_values():
    assert expected_experts(1, 8, 2) == pytest.approx(2.0)  # n = 1: exactly k
    assert expected_experts(2, 8, 2) == pytest.approx(8 * (1 - 0.75**2))  # 3.5
    assert expected_experts(10_000, 8, 2) == pytest.approx(8.0)  # large n: all E
    assert expected_experts(1, 16, 4) == pytest.approx(4.0)
    # skewed: two experts take every token (k = 1): 2 x (1 - 0.5^2) = 1.5 of them in two tokens
    assert expected_experts(2, 4, 1, [0.5, 0.5, 0.0, 0.0]) == pytest.approx(1.5)
    assert expected_experts(0, 8, 2) == 0.0


@given(
    st.integers(1, 64),
    st.integers(1, 8),
    st.integers(1, 4096),
    st.integers(1, 4096),
)
@settings(max_examples=200, deadline=None)
def test_union_grows_with_tokens_between_k_and_e(experts, top_k, n1, n2):
    top_k = min(top_k, experts)
    low, high = sorted((n1, n2))
    u_low, u_high = expected_experts(low, experts, top_k), expected_experts(high, experts, top_k)
    assert u_low <= u_high + 1e-9
    assert top_k - 1e-9 <= u_low and u_high <= experts + 1e-9


def test_tiny_moe_decode_step_flops_and_bytes_by_hand():
    # batch 1, float32: 1 token x 2 experts = 2 rows; U(1) = 2 experts' weights read
    k = mlp_kernels(1)
    assert k["router fwd"].work.flops == 2 * 1 * 4 * 8  # tokens x experts x hidden
    gate = k["experts gate fwd"]
    assert gate.work.flops == 2 * 2 * 16 * 8  # 2 rows x 16 x 8
    assert gate.work.bytes_read == 2 * 8 * 4 + 2 * 8 * 16 * 4  # rows' inputs + 2 experts' weights
    down = k["experts down fwd"]
    assert down.work.flops == 2 * 2 * 8 * 16
    assert down.work.bytes_read == 2 * 16 * 4 + 2 * 16 * 8 * 4
    assert "up fwd" not in k and "down fwd" not in k  # no dense MLP beside the experts
    # batch 4: 8 rows; U(4) = 4 x (1 - 0.5^4) = 3.75 experts' weights
    gate = mlp_kernels(4)["experts gate fwd"]
    assert gate.work.flops == 2 * 8 * 16 * 8
    assert gate.work.bytes_read == pytest.approx(8 * 8 * 4 + 3.75 * 8 * 16 * 4)


def test_imbalance_and_capacity_set_the_rows_of_the_grouped_gemm():
    # batch 4: mean rows per expert 4 x 2 / 4 = 2; imbalance 2 capped at capacity 1.5: 3 rows per
    # expert, 4 experts: 12 rows; dropless, imbalance 2: 16 rows
    capped = mlp_kernels(4, Routing(imbalance=2.0, capacity_factor=1.5))["experts gate fwd"]
    assert capped.work.flops == 2 * 12 * 16 * 8
    dropless = mlp_kernels(4, Routing(imbalance=2.0))["experts gate fwd"]
    assert dropless.work.flops == 2 * 16 * 16 * 8


def test_expert_parallel_all_to_all_bytes_by_hand():
    # mixtral-8x7b, 8 GPUs, ep=8, batch 8: one sequence per GPU; prefill of 4 tokens: 4 tokens x
    # 2 experts x 4096 x 2 B = 65,536 B per GPU, 7/8 of it leaves: 57,344 B per dispatch and combine
    workload = build(model="mixtral-8x7b", batch=8, prompt=4, output=2, gpus=8, ep=8)
    a2a = [op for op in workload.ops if isinstance(op, AllReduce) and op.kind == "all_to_all"]
    assert len(a2a) == 2 * 32 * 2  # dispatch and combine, 32 layers, prefill and decode
    prefill = [op for op in a2a if "(prefill)" in op.name]
    assert {op.nbytes for op in prefill} == {4 * 2 * 4096 * 2}
    assert traffic("all_to_all", prefill[0].nbytes, 8, "direct").per_gpu_B == 65_536 * 7 / 8
    decode = {op.nbytes for op in a2a if "(decode)" in op.name}
    assert decode == {1 * 2 * 4096 * 2}
    assert not [op for op in workload.ops if isinstance(op, AllReduce) and op.kind == "all_reduce"]


def test_expert_parallelism_shards_only_the_experts():
    one = build(model="mixtral-8x7b", gpus=8)
    sharded = build(model="mixtral-8x7b", gpus=8, ep=8)
    config = LLMS["mixtral-8x7b"]
    assert one.memory.weights_B == pytest.approx(2 * config.params / 8)
    # ep=8 (tp 1): every GPU keeps the attention, embeddings and head, 1/8 of the experts
    dense = config.params - config.expert_params
    assert sharded.memory.weights_B == pytest.approx(2 * (dense + config.expert_params / 8))


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"gpus": 8, "ep": 3}, r"'ep' must divide mixtral-8x7b's 8 experts: 3"),
        ({"gpus": 4, "ep": 8}, r"'ep' must divide gpus=4: 8"),
        ({"gpus": 6, "ep": 4}, r"'ep' must divide gpus=6: 4"),
    ],
)
def test_bad_expert_parallelism_is_refused_in_one_line(given, message):
    with pytest.raises(ParsimError, match=message):
        build(model="mixtral-8x7b", **given)


def test_a_dense_model_takes_no_ep_and_moe_training_is_priced():
    with pytest.raises(ParsimError, match=r"'ep' must be 1 for llama-2-7b, a dense model: 2"):
        build(model="llama-2-7b", gpus=2, ep=2)
    # training a mixture of experts is no longer refused: one GPU holds its weights, not its state
    with pytest.raises(ParsimError, match="network needs .* GiB, h100-sxm has 80.0 GiB"):
        predict("network", {"model": "mixtral-8x7b", "batch": 1, "seq": 64}, device="h100-sxm")


def _decode_s(model: str, gpus: int, batch: int = 1, prompt: int = 64) -> float:
    workload = build(model=model, batch=batch, prompt=prompt, output=16, gpus=gpus, dtype="bfloat16")
    system = registry.system("h100-sxm", None, None, gpus, None)
    return serve_metrics(workload, system, predict(workload, device="h100-sxm", method="analytic")).as_dict()[
        "time_per_output_token_s"
    ]


@pytest.mark.parametrize(("model", "gpus"), [("mixtral-8x7b", 2), ("dbrx", 4)])
def test_batch_1_decode_reads_k_experts_not_all(model, gpus):
    config = LLMS[model]
    memory = registry.system("h100-sxm", None, None, gpus, None).device.memory
    one_expert_B = 2 * config.expert_params / config.experts / gpus  # every layer's, bfloat16
    tpot = _decode_s(model, gpus)
    assert tpot >= config.experts_per_token * one_expert_B / memory.peak_bandwidth_Bps
    assert tpot < config.experts * one_expert_B / memory.bandwidth_Bps


@given(st.sampled_from([2, 4]), st.integers(1, 4096))
@settings(max_examples=8, deadline=None)
def test_batch_1_decode_is_between_k_and_all_experts_bytes(gpus, prompt):
    # (on 8 GPUs a step's fixed costs, launches and 64 all-reduces, rival all experts' bytes)
    config = LLMS["mixtral-8x7b"]
    memory = registry.system("h100-sxm", None, None, gpus, None).device.memory
    one_expert_B = 2 * config.expert_params / config.experts / gpus
    tpot = _decode_s("mixtral-8x7b", gpus, prompt=prompt)
    assert config.experts_per_token * one_expert_B / memory.peak_bandwidth_Bps <= tpot
    assert tpot < config.experts * one_expert_B / memory.bandwidth_Bps


def test_decode_reads_more_experts_as_the_batch_grows():
    # U(n) grows from k = 2 to E = 8: the decode step's expert bytes grow, its time with them
    steps = [_decode_s("mixtral-8x7b", 2, batch) for batch in (1, 4, 64)]
    assert steps[0] < steps[1] < steps[2]


@pytest.mark.parametrize("given", [{"gpus": 8, "ep": 8, "batch": 64}, {"gpus": 8, "ep": 2, "batch": 16}])
def test_engine_and_analytic_agree_with_expert_parallelism(given):
    workload = build(model="mixtral-8x7b", prompt=128, output=32, dtype="bfloat16", **given)
    system = registry.system("h100-sxm", None, None, workload.gpus, None)
    engine, analytic = (
        serve_metrics(workload, system, predict(workload, device="h100-sxm", method=method)).as_dict()
        for method in ("engine", "analytic")
    )
    assert engine["e2e_latency_s"] == pytest.approx(analytic["e2e_latency_s"], rel=0.02)


def test_the_all_to_alls_are_on_the_critical_path():
    # the same ep=8 request with every dispatch and combine emptied: the prefill gets faster by
    # exactly their bandwidth time (64 ops of 8 x 128 tokens x 2 x 4096 x 2 B, 7/8 of each over
    # NVLink, one after another; their latency stays)
    workload = build(model="mixtral-8x7b", batch=64, prompt=128, output=8, gpus=8, ep=8, dtype="bfloat16")
    empty = attrs.evolve(
        workload,
        ops=tuple(
            attrs.evolve(op, nbytes=0.0) if isinstance(op, AllReduce) and op.kind == "all_to_all" else op
            for op in workload.ops
        ),
    )
    system = registry.system("h100-sxm", None, None, 8, None)
    ttft = [
        serve_metrics(w, system, predict(w, device="h100-sxm", method="analytic")).as_dict()[
            "time_to_first_token_s"
        ]
        for w in (workload, empty)
    ]
    moved = 64 * 8 * 128 * 2 * 4096 * 2 * 7 / 8
    assert ttft[0] - ttft[1] == pytest.approx(moved / system.ring_link.bandwidth_Bps, rel=0.01)
