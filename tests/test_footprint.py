"""One memory model: the parts hand-computed, one figure for gpt3-1.3b on every path, one fits rule.

Every path that asks "does it fit" (predict, the serving and 3D checks, the splits search, the sweep
fast path, the app's cached predict) goes through ``model.footprint.breakdown``: the tests count its
calls, and check that a transformer's footprint is the same number wherever it is computed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import parsim
from parsim.base.errors import ParsimError
from parsim.cli.main import app as cli
from parsim.hardware import registry
from parsim.model import footprint
from parsim.studies.splits import split_table
from parsim.studies.sweeps.fast import fast_rows
from parsim.workloads.layers import Numerics
from parsim.workloads.llms import LLMS
from parsim.workloads.needs import MemoryNeeds
from parsim.workloads.optimizers import parameter_needs
from parsim.workloads.registry import make_workload
from parsim.workloads.transformer_memory import layer_activation_B, transformer_needs

GPT = LLMS["gpt3-1.3b"]
BF16 = Numerics(dtype="bfloat16", mixed=True)
TRAIN = {"model": "gpt3-1.3b", "batch": 8, "seq": 1024, "dtype": "bfloat16", "optimizer": "adam"}
GiB = 2**30


def test_mixed_precision_adam_holds_18_bytes_a_parameter():
    # 4 B float32 master + 2 B bfloat16 copy, a 4 B float32 gradient, Adam's two 4 B moments
    state = parameter_needs(1000, "bfloat16", True, True, "adam")
    assert (state.weights_B, state.gradients_B, state.optimizer_B) == (6000, 4000, 8000)
    assert parameter_needs(1000, "float32", False, True, "sgd").total_B == 8000
    assert parameter_needs(1000, "float16", False, False, "adam").total_B == 2000  # serving: weights only


def test_gpt3_1_3b_training_step_hand_computed():
    tokens, h, ffn, vocab = 8 * 1024, 2048, 8192, 50257
    needs = transformer_needs(GPT, 8, 1024, BF16, True, "adam")
    layer = tokens * (4 * h + 4 * h + 2 * ffn) * 2 + tokens * 16 * 4  # saved tensors + flash's LSE
    last = 2 * tokens * h * 2 + tokens * vocab * (2 + 4)  # final norm, logits + float32 log-probs
    assert needs.weights_B == 6 * GPT.params and needs.gradients_B == 4 * GPT.params
    assert needs.optimizer_B == 8 * GPT.params
    assert needs.activations_B == 24 * layer + last
    assert needs.workspace_B == tokens * vocab * 2  # the logits' gradient in flight
    assert needs.total_B / GiB == pytest.approx(37.2, abs=0.05)


def test_grouped_query_attention_and_swiglu_count_their_own_tensors():
    llama = LLMS["llama-3-8b"]  # 32 heads, 8 KV heads of 128; SwiGLU over 14336
    tokens = 2048
    saved = tokens * (4 * 4096 + (2 * 32 + 2 * 8) * 128 + 3 * 14336) * 2 + tokens * 32 * 4
    assert layer_activation_B(llama, 1, 2048, "bfloat16") == saved


def test_fp8_keeps_each_linears_saved_input_as_its_one_byte_cast():
    llama = LLMS["llama-3-8b"]  # 32 heads, 8 KV heads of 128; SwiGLU over 14336
    tokens, t = 2048, 2
    # 16 bits, tp=2 with sequence parallelism: norms 4h/t, q k v o (2x16 + 2x4) x 128, SwiGLU 3 x 7168
    saved = tokens * (4 * 4096 / t + (2 * 16 + 2 * 4) * 128 + 3 * 7168) * 2 + tokens * 16 * 4
    bf16 = layer_activation_B(llama, 1, 2048, "bfloat16", t, sequence_parallel=True)
    assert bf16 == saved
    # FP8: QKV's input (norm 1's output, h/t) and the MLP's two (norm 2's output h/t, the activation
    # 7168) are kept as one-byte casts: one byte less each; the attention output (16 x 128) stays in
    # 16 bits for flash attention's backward and gains the projection's one-byte cast
    fp8 = layer_activation_B(llama, 1, 2048, "bfloat16", t, sequence_parallel=True, fp8=True)
    assert bf16 - fp8 == tokens * (4096 / t + 4096 / t + 7168 - 16 * 128)
    # float16 alike (the one-byte cast saves size - 1 = 1 byte of each)
    assert layer_activation_B(llama, 1, 2048, "float16", t, sequence_parallel=True, fp8=True) == fp8


def test_fp8_in_a_mixture_of_experts_casts_the_experts_inputs_not_the_routers():
    qwen = LLMS["qwen3-30b-a3b"]  # hidden 2048, 32 heads of 128, 128 experts of 768, 8 per token
    tokens = 4096
    bf16 = layer_activation_B(qwen, 1, 4096, "bfloat16")
    fp8 = layer_activation_B(qwen, 1, 4096, "bfloat16", fp8=True)
    # one byte less: norm 1's output (2048) and the 8 experts' inputs (8 x 2048 dispatched copies,
    # 8 x 768 down-projection inputs); one more: the projection's cast of the attention output
    # (32 x 128); norm 2's output stays 16-bit (the router's input)
    assert bf16 - fp8 == tokens * (2048 + 8 * (2048 + 768) - 32 * 128)


def test_megatron_bridges_405b_fp8_run_on_128_b200_fits():
    # NVIDIA-NeMo/Megatron-Bridge 25.11: Llama 3.1 405B, FP8, TP 4, PP 8, CP 2, VP 8 on DGX-B200 ran;
    # with its linears' inputs saved in 16 bits it would need 170.5 GiB of the B200's 167.6
    params = {
        "model": "llama-3.1-405b", "batch": 64, "tp": 4, "pp": 8, "cp": 2, "virtual_stages": 8,
        "microbatches": 32, "nodes": 16, "seq": 8192, "train": True, "dtype": "bfloat16",
        "optimizer": "adam", "attention": "flash", "fp8": True, "sequence_parallel": True,
        "distributed_optimizer": True,
    }  # fmt: skip
    assert parsim.predict("network", params, cluster="dgx-b200").latency_s > 0


def test_the_first_pipeline_stage_holds_pp_micro_batches():
    per_layer = layer_activation_B(GPT, 2, 1024, "bfloat16")
    needs = transformer_needs(GPT, 2, 1024, BF16, True, "adam", pp=4, microbatches=8)
    assert needs.activations_B == 4 * 6 * per_layer  # stage 0: 4 in flight x its 6 layers
    few = transformer_needs(GPT, 2, 1024, BF16, True, "adam", pp=4, microbatches=2)
    assert few.activations_B == 2 * 6 * per_layer  # never more than there are
    full = transformer_needs(GPT, 2, 1024, BF16, True, "adam", pp=4, microbatches=8, recompute="full")
    # each layer's input only: now the last stage, one micro-batch with the logits, is the fullest
    inputs, logits = 6 * 2 * 1024 * 2048 * 2, 2 * 2048 * 2048 * 2 + 2048 * 50257 * (2 + 4)
    assert full.activations_B == inputs + logits > 4 * inputs


def test_zero_shards_optimizer_then_gradients_then_weights():
    needs = MemoryNeeds(weights_B=6.0, gradients_B=4.0, optimizer_B=8.0, activations_B=1.0)
    assert needs.zero_sharded(1, 4) == MemoryNeeds(6.0, 4.0, 2.0, 1.0)
    assert needs.zero_sharded(3, 4) == MemoryNeeds(1.5, 1.0, 2.0, 1.0)


def test_the_fits_rule_keeps_the_runtime_reserve():
    system = registry.system("h100-sxm", None, None, 1, None)
    room = system.compute.memory.capacity_B - 2**30  # PyTorch's CUDA context and handles
    assert footprint.breakdown(MemoryNeeds(activations_B=room), system, True).fits
    assert not footprint.breakdown(MemoryNeeds(activations_B=room + 1), system, True).fits
    assert footprint.breakdown(MemoryNeeds(data_B=room + 1), system, False).fits  # raw kernels: none


@pytest.mark.slow
def test_gpt3_1_3b_is_one_number_on_every_path():
    one_gpu = make_workload("network", TRAIN)  # the single-GPU program
    # the 3D path: 8 data-parallel GPUs with the same micro-batch of 8 sequences
    split = make_workload("network", {**TRAIN, "batch": 64, "gpus": 8})
    predicted = parsim.predict("network", TRAIN, device="h100-sxm", method="analytic")
    rows = split_table({**TRAIN, "batch": 64, "nodes": 1}, "dgx-a100", micro_batch=8, method="analytic")
    row = next(r for r in rows if (r.tp, r.pp) == (1, 1))
    expected = transformer_needs(GPT, 8, 1024, BF16, True, "adam").total_B
    assert one_gpu.footprint_B == split.footprint_B == row.memory_per_gpu_B == expected
    assert predicted.memory is not None and predicted.memory.needs.total_B == expected


class _Counter:
    def __init__(self, monkeypatch):
        self.calls = 0
        original = footprint.breakdown

        def counted(*args, **kwargs):
            self.calls += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(footprint, "breakdown", counted)


@pytest.mark.slow
def test_every_fits_question_goes_through_the_one_rule(monkeypatch):
    from parsim.methods.predict import clear_caches

    clear_caches()  # a prediction cached by an earlier test would answer without asking
    count = _Counter(monkeypatch)
    parsim.predict("network", TRAIN, device="h100-sxm", method="analytic")
    assert count.calls >= 1  # predict's check
    before = count.calls
    serve = {"model": "llama-2-7b", "batch": 1, "prompt": 128, "output": 8}
    assert parsim.predict("llm_serve", serve, device="h100-sxm", method="analytic").metrics["max_batch"] > 1
    assert count.calls >= before + 3  # the serving check, max batch, predict's check
    before = count.calls
    split_table({**TRAIN, "batch": 64, "nodes": 1}, "dgx-a100", micro_batch=16, method="analytic")
    assert count.calls > before  # one per split candidate
    before = count.calls
    big = {"model": "gpt3-175b", "batch": 1536, "nodes": 128, "tp": 8, "pp": 1, "microbatches": 12}
    with pytest.raises(ParsimError, match="smallest split that fits"):
        parsim.predict("network", {**big, "recompute": "full"}, cluster="dgx-a100")
    assert count.calls > before + 1  # the 3D check: this split, then every candidate split
    before = count.calls
    base = {"workload": "vector_add", "params": {}, "device": "h100-sxm", "method": "analytic"}
    frames = fast_rows("", base, [{"workload.n": 1e6}, {"workload.n": 1e12}])
    assert frames is not None and count.calls > before  # the sweep's fast path
    assert "needs" in frames[0]["error"].iloc[1]


def test_the_apps_cached_predict_reports_the_same_breakdown(monkeypatch):
    from parsim.app.cache import cached_predict

    count = _Counter(monkeypatch)
    cached_predict.clear()
    p = cached_predict("network", tuple(sorted(TRAIN.items())), "h100-sxm", None, None, None, "analytic")
    assert count.calls >= 1
    assert p.memory.needs.total_B == transformer_needs(GPT, 8, 1024, BF16, True, "adam").total_B


def test_the_refusal_names_every_part():
    with pytest.raises(ParsimError) as error:
        parsim.predict("network", {**TRAIN, "batch": 64}, device="h100-sxm", method="analytic")
    message = str(error.value)
    assert message.startswith("network needs ")
    assert ", h100-sxm has 80.0 GiB: weights 7.4, gradients 4.9, " in message
    assert "optimizer 9.8, activations " in message and message.endswith("runtime 1.0 GiB")


def test_predict_json_has_the_memory_record_and_the_text_a_line():
    args = ["predict", "network", *[f"{k}={v}" for k, v in TRAIN.items()], "--device", "h100-sxm"]
    args += ["--method", "analytic"]
    record = json.loads(CliRunner().invoke(cli, [*args, "--json"]).stdout)["memory"]
    expected = transformer_needs(GPT, 8, 1024, BF16, True, "adam")
    assert record["weights_B"] == expected.weights_B and record["optimizer_B"] == expected.optimizer_B
    assert record["runtime_B"] == 2**30 and record["capacity_B"] == 80 * 2**30
    assert record["total_B"] == expected.total_B + 2**30 and record["fits"] is True
    text = CliRunner().invoke(cli, args).stdout
    line = next(line for line in text.splitlines() if line.strip().startswith("memory "))
    assert "38.2 GiB of 80.0 GiB: weights 7.4, gradients 4.9, optimizer 9.8, activations 14.4" in line


def test_a_kernel_without_parts_keeps_its_one_line_refusal():
    with pytest.raises(ParsimError, match=r"^vector_add needs 134\.1 GiB, h100-pcie has 80\.0 GiB$"):
        parsim.predict("vector_add", {"n": 1.2e10}, device="h100-pcie")


def test_no_module_rewrites_the_runtime_reserve():
    # the reserve (and so the room) is taken in one place: model/footprint.py, from model/capacity.py
    package = Path(parsim.__file__).parent
    callers = sorted(
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if "runtime_B(" in path.read_text() and path.parts[-2] != "stack"
    )
    assert callers == ["model/capacity.py", "model/footprint.py"]


def test_offload_and_a_fused_loss_drop_the_checkpoints_and_the_log_probs_by_hand():
    # gpt3-1.3b, 8 x 1024 tokens, full recompute: 24 layer inputs of tokens x 2048 x 2 B; the last
    # stage adds the final norm (2 x tokens x 2048 x 2 B) and the logits (tokens x 50257 x 2 B) with
    # float32 log-probabilities (x 4 B) unless XLA fuses the log-softmax into the loss
    tokens, h, vocab = 8 * 1024, 2048, 50257
    full = transformer_needs(GPT, 8, 1024, BF16, True, "adam", recompute="full")
    assert full.activations_B == 24 * tokens * h * 2 + 2 * tokens * h * 2 + tokens * vocab * (2 + 4)
    offloaded = transformer_needs(GPT, 8, 1024, BF16, True, "adam", recompute="full", offload=True)
    assert offloaded.activations_B == 2 * tokens * h * 2 + tokens * vocab * (2 + 4)
    fused = transformer_needs(
        GPT, 8, 1024, BF16, True, "adam", recompute="full", offload=True, fused_loss=True
    )
    assert fused.activations_B == 2 * tokens * h * 2 + tokens * vocab * 2
    assert fused.weights_B == full.weights_B and fused.workspace_B == full.workspace_B


@pytest.mark.parametrize("recompute", ["none", "selective"])
def test_offload_needs_full_recompute(recompute):
    with pytest.raises(ParsimError, match=f"'offload'.*recompute={recompute}"):
        transformer_needs(GPT, 8, 1024, BF16, True, "adam", recompute=recompute, offload=True)


@given(batch=st.integers(1, 8), seq=st.sampled_from([128, 512, 2048]))
@settings(max_examples=20, deadline=None)
def test_offload_never_needs_more_device_memory(batch, seq):
    kept = transformer_needs(GPT, batch, seq, BF16, True, "adam", recompute="full")
    moved = transformer_needs(GPT, batch, seq, BF16, True, "adam", recompute="full", offload=True)
    assert moved.total_B < kept.total_B
    assert kept.total_B - moved.total_B == GPT.layers * batch * seq * GPT.hidden * 2
