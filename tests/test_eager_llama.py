"""The reference Llama trained op by op (``code=eager``): torchtitan's A100 runs with compile = false.

Kernel counts and bytes are counted by hand from torchtitan@0413364's ``model.py`` (``Attention``,
``FeedForward``, ``apply_rotary_emb``, ``repeat_kv``), ``norms.py`` (``RMSNorm``, ``FusedRMSNorm``) and
PyTorch's autograd formulas, as ``transformer_titan``'s docstring walks them.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parsim import stack
from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.methods.analytic import gpu_kernel_s
from parsim.methods.predict import predict
from parsim.workloads.base import Kernel, Workload
from parsim.workloads.registry import make_workload

A100 = registry.system("a100-80gb", None, None, 1, None)
EAGER = stack.framework("eager")
STEP = {"model": "llama-2-7b", "batch": 1, "seq": 512, "train": True, "dtype": "bfloat16"}
STEP["optimizer"] = "adam"
DP = {
    "model": "llama-2-7b",
    "batch": 1,
    "seq": 1024,
    "gpus": 2,
    "sync": "ring",
    "scaling": "weak",
    "dtype": "bfloat16",
    "optimizer": "adam",
    "zero": 3,
}


def build(**given: object) -> Workload:
    return make_workload("network", {**STEP, "code": "eager-fused-norm", **given})


def kernels(workload: Workload) -> list[Kernel]:
    return [op for op in workload.ops if isinstance(op, Kernel)]


def per_layer(workload: Workload, layer: str) -> tuple[int, int]:
    """(forward, backward) kernels of one layer group, the optimizer's update left out."""
    ks = kernels(workload)
    last_forward = max(i for i, k in enumerate(ks) if k.name == "loss nll_loss fwd")
    mine = [(i, k) for i, k in enumerate(ks) if k.layer == layer and not k.name.endswith("update")]
    forward = sum(1 for i, _ in mine if i <= last_forward)
    return forward, len(mine) - forward


def traffic(workload: Workload, layer: str, word: str, forward: bool = True) -> float:
    ks = kernels(workload)
    last_forward = max(i for i, k in enumerate(ks) if k.name == "loss nll_loss fwd")
    return sum(
        k.work.bytes_read + k.work.bytes_written
        for i, k in enumerate(ks)
        if k.layer == layer and word in k.name and (i <= last_forward) == forward
    )


def test_a_block_launches_the_hand_counted_kernels():
    """bfloat16 under autocast (each projection casts its float32 weight first, and its gradient back).
    Attention forward 17: the fused norm; wq, wk, wv (cast + GEMM each); rotary's .float(), product
    and type_as for q and for k; SDPA; wo (cast + GEMM); the residual add. Backward 25: the fork sum;
    wo's two GEMMs and its gradient's cast; SDPA's dot(dO, O), main kernel and dQ conversion; rotary's
    three for k and for q; wv, wk, wq (three each); the three input gradients' two sums; the norm.
    MLP forward 10: norm; w1 (2); SiLU; w3 (2); the product; w2 (2); the residual add. Backward 15:
    the fork sum, w2 (3), the product's two, w3 (3), SiLU's, w1 (3), the two input gradients' sum, the norm.
    The eager RMSNorm is 8 kernels forward and 14 backward where the fused one is one and one."""
    step = build()
    assert per_layer(step, "h.3.attn") == (17, 25)
    assert per_layer(step, "h.3.mlp") == (10, 15)
    eager = build(code="eager")
    assert per_layer(eager, "h.3.attn") == (17 + 7, 25 + 13)
    assert per_layer(eager, "h.3.mlp") == (10 + 7, 15 + 13)


def test_grouped_query_attention_copies_keys_and_values_to_every_head():
    """repeat_kv: two copies forward (k and v, kv_heads -> heads), two sums backward."""
    gqa = make_workload("network", {**STEP, "model": "llama-3-8b", "code": "eager-fused-norm"})
    assert per_layer(gqa, "h.3.attn") == (17 + 2, 25 + 2)
    tokens, hd = 512, 128
    copy = next(k for k in kernels(gqa) if k.name == "h.3.attn repeat_kv keys copy")
    assert copy.work.bytes_read == tokens * 8 * hd * 2  # 8 KV heads of bfloat16 in
    assert copy.work.bytes_written == tokens * 32 * hd * 2  # 32 query heads out


def test_rotary_goes_through_float32_three_times():
    """Per element of q or k: .float() reads 2 B and writes 4, the complex product reads 4 (and the
    seq x head_dim / 2 complex64 table) and writes 4, type_as reads 4 and writes 2: 20 B, where the
    fused rotary kernel moves 4 B. Backward the same."""
    step = build()
    n = 512 * 4096  # llama-2-7b: 32 heads x 128 = 4096 per token, for q and again for k
    table = 512 * 64 * 8
    assert traffic(step, "h.3.attn", "rotary q") == 20 * n + table
    assert traffic(step, "h.3.attn", "rotary k") == 20 * n + table
    assert traffic(step, "h.3.attn", "rotary q", forward=False) == 20 * n + table
    fused = make_workload("network", STEP)
    (rotary,) = (k for k in kernels(fused) if k.name == "h.3.attn rotary fwd")
    assert rotary.work.bytes_read + rotary.work.bytes_written == 4 * 2 * n


def test_the_eager_norm_streams_float32_five_times():
    """x.float() 2 + 4 B, pow 4 + 4, mean 4 (and a float per token out), x * r 4 + 4, type_as 4 + 2,
    * weight 2 + 2: 36 B per element; per token the mean, + eps, rsqrt and x * r's r: 24 B; the
    weight 2 B per hidden unit."""
    t, d = 512, 4096
    eager = build(code="eager")
    assert traffic(eager, "h.3.attn", "attention_norm") == 36 * t * d + 24 * t + 2 * d
    fused = build()
    assert traffic(fused, "h.3.attn", "attention_norm") == 4 * t * d + 4 * t + 2 * d


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.integers(1, 8), seq=st.sampled_from([64, 256, 1024]))
def test_eager_code_never_runs_faster_than_fused_code(batch, seq):
    """The same GEMMs and attention, plus float32 round trips and more kernels."""
    given_ = {**STEP, "batch": batch, "seq": seq, "framework": "eager"}
    fused = make_workload("network", given_)
    fused_norm = make_workload("network", {**given_, "code": "eager-fused-norm"})
    eager = make_workload("network", {**given_, "code": "eager"})
    times = [gpu_kernel_s(kernels(w), A100, EAGER) for w in (fused, fused_norm, eager)]
    assert times[0] < times[1] < times[2]
    assert len(kernels(fused)) < len(kernels(fused_norm)) < len(kernels(eager))


def test_engine_and_analytic_agree():
    # Adam's state would not fit beside 7B weights; at 512 tokens the engine's waves of small GEMMs
    # add ~10 % over the analytic form, fused code alike
    step = build(code="eager", optimizer="sgd", seq=2048)
    engine, analytic = (predict(step, device="a100-80gb", method=m).latency_s for m in ("engine", "analytic"))
    assert engine == pytest.approx(analytic, rel=0.05)


def test_fsdp_runs_the_eager_step_and_selective_op_replays_wk_whole():
    """torchtitan's per-op policy runs the 2nd, 4th and 6th matmul again: wk, wo, w3 (up); with three
    projections the k GEMM again whole (the fused code's qkv GEMM: its k columns)."""
    fused = make_workload("data_parallel", {**DP, "recompute": "selective-op"})
    eager = make_workload("data_parallel", {**DP, "recompute": "selective-op", "code": "eager-fused-norm"})

    def replayed(workload: Workload) -> set[str]:
        ks = (k for op in workload.ops for k in getattr(op, "kernels", (op,)))
        names = {k.name for k in ks if isinstance(k, Kernel)}
        return {n.split(" ")[1] for n in names if n.startswith("h.0.") and n.endswith("fwd (recomputed)")}

    assert {"k", "out", "up"} <= replayed(eager)
    assert not {"q", "v", "gate", "down"} & replayed(eager)
    assert "qkv" in replayed(fused)

    def gpu0_s(workload: Workload) -> float:
        ks = [k for op in workload.ops for k in getattr(op, "kernels", (op,)) if isinstance(k, Kernel)]
        return gpu_kernel_s([k for k in ks if k.device == 0], A100, EAGER)

    assert gpu0_s(eager) > gpu0_s(fused)


@pytest.mark.parametrize(
    ("workload", "given", "message"),
    [
        ("network", {"framework": "graph"}, "code=eager-fused-norm .* needs framework=eager, not graph"),
        ("network", {"gpus": 2, "tp": 2}, "code=eager-fused-norm is modelled for one GPU's step"),
        ("network", {"model": "gpt2", "seq": 512}, "reference Llama's code .* not gpt2"),
        ("network", {"train": False}, "modelled for training"),
        ("network", {"attention": "unfused"}, "calls SDPA's fused kernel"),
        ("data_parallel", {**DP, "tp": 2}, "tp=2 runs code=fused"),
        ("data_parallel", {**DP, "model": "gpt2", "code": "hf"}, "code=hf .* one GPU's step"),
    ],
)
def test_bad_code_is_a_one_line_error(workload, given, message):
    base = STEP if workload == "network" else DP
    with pytest.raises(ParsimError, match=message):
        make_workload(workload, {**base, "code": "eager-fused-norm", **given})
