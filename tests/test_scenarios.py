"""Scenario files: each shipped lesson loads, runs and plots; bad files get one clear line."""

import functools
import math
from pathlib import Path

import pandas
import pytest

import parsim
from parsim import plots
from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.methods.predict import make_workload, predict
from parsim.model.collectives import collective
from parsim.studies.scenarios import (
    case_labels,
    load_scenario,
    loads_scenario,
    parse_values,
    resolve,
    retarget,
    run_scenario,
    scenario_paths,
)
from parsim.studies.teaching import ridge_intensity
from parsim.workloads.llms import LLMS
from tests.test_lessons_stack import (
    claims_cpu_latency_vs_gpu_throughput,
    claims_mlp_sgd_vs_adam,
    claims_software_stack,
)

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "parsim" / "lessons"
REQUIRED = {
    "flynn_vector_add",
    "gpu_offload_crossover",
    "pcie_pinned_vs_pageable",
    "streams_overlap",
    "matmul_roofline",
    "conv3x3",
}


def test_required_scenarios_exist():
    assert {p.stem for p in scenario_paths(ROOT / "parsim" / "lessons")} >= REQUIRED | HEAVY_LESSONS


@functools.cache
def lesson(stem: str):
    """The shipped lesson's run (cached: several claims read one run)."""
    return run_scenario(load_scenario(SCENARIOS / f"{stem}.toml"))


def by_label(stem: str) -> dict[str, list]:
    result = lesson(stem)
    return {label: [r.prediction for r in result.series(label)] for label in result.labels}


def claims_batching():
    # Batching: each request waits longer, throughput climbs, then a bigger batch only adds waiting;
    # tensor cores move the whole curve.
    for series in by_label("batching_latency_vs_throughput").values():
        latencies = [p.latency_s for p in series]
        rates = [p.metrics["samples_per_s"] for p in series]
        assert latencies == sorted(latencies)
        assert max(rates) > 1.1 * rates[0]
        assert rates[-1] < 1.1 * rates[-2] and latencies[-1] > 1.8 * latencies[-2]  # past the knee
    fp32, fp16, a100 = by_label("batching_latency_vs_throughput").values()
    # once the batch fills the GPU, tensor cores more than double the rate ...
    assert all(
        h.metrics["samples_per_s"] > 2 * f.metrics["samples_per_s"]
        for f, h in zip(fp32[-3:], fp16[-3:], strict=False)
    )
    # ... but at batch 1 the framework's host time sets the pace: the same rate everywhere, and
    # mixed precision pays its cast kernels
    assert all(series[0].bottleneck == "overhead" for series in (fp32, fp16, a100))
    assert fp16[0].latency_s > fp32[0].latency_s
    assert a100[0].latency_s == pytest.approx(fp16[0].latency_s, rel=0.05)


def claims_conv3x3():
    # Embarrassingly parallel: time falls in proportion to the lanes and cores put to work.
    sisd, simd, cores, gpu32, gpu16 = (p[0] for p in by_label("conv3x3").values())
    assert sisd.latency_s > simd.latency_s > cores.latency_s > gpu32.latency_s > gpu16.latency_s
    assert simd.latency_s / cores.latency_s == pytest.approx(8, rel=0.1)  # the 8 cores of the label
    assert sisd.flops == pytest.approx(3.7e9, rel=0.01)
    # effective vs executed (issue 27, 15): Winograd's 16 multiplications per 2x2 tile instead of 36
    peak = registry.processor("v100-pcie").peak_flops_per_s("float32")
    assert peak == pytest.approx(14.1e12, rel=0.005)
    assert gpu32.flops_per_s == pytest.approx(21e12, rel=0.03) and gpu32.flops_per_s > peak  # effective
    assert gpu32.flops / gpu32.executed_flops == pytest.approx(36 / 16)
    assert gpu32.executed_flops == pytest.approx(1.6e9, rel=0.03)
    assert gpu32.executed_flops_per_s == pytest.approx(9.4e12, rel=0.01) and gpu32.executed_flops_per_s < peak
    assert any(n.startswith("effective vs executed FLOPs: ") for n in gpu32.notes)
    assert gpu16.executed_flops is None and sisd.executed_flops is None  # the direct count is the work


def claims_cpu_vs_gpu_training():
    old_cpu, new_cpu, *gpus = (p[0] for p in by_label("cpu_vs_gpu_training").values())
    assert old_cpu.flops == pytest.approx(700e9, rel=0.03)
    # hundreds of GFLOP/s to a few TFLOP/s (0.84 and 5.0 since the 8480+ vector units run at its 3.0 GHz
    # all-core turbo, issue 26 item 8)
    assert all(0.1e12 < cpu.flops_per_s < 6e12 for cpu in (old_cpu, new_cpu))
    assert all(gpu.latency_s < old_cpu.latency_s for gpu in gpus)
    # tensor cores: 9.6x faster than the 8480+ at its 3.0 GHz all-core turbo, 57x than the 2014 Xeons
    assert gpus[-1].latency_s * 8 < min(old_cpu.latency_s, new_cpu.latency_s)
    a100 = gpus[-1]  # the host busy with the framework; the GPU waits on it a quarter of the step
    assert a100.utilization["host"] > 0.8 and a100.breakdown["overhead"] > 0.25 * a100.latency_s
    assert a100.bottleneck == "compute"  # the products, and the NCHW transposes' index arithmetic
    nhwc = parsim.predict("network", {**a100.params, "layout": "nhwc"}, device="a100-80gb")
    transposes = a100.breakdown["compute"] - nhwc.breakdown["compute"]
    assert transposes > nhwc.breakdown["compute"]  # as much as the multiplications, and more
    for gpu in gpus:  # the batch crosses PCIe, a small cost next to the arithmetic it saves
        assert gpu.breakdown["transfer"] < 0.1 * (old_cpu.latency_s - gpu.latency_s)


def claims_data_parallel_scaling():
    host, ring = by_label("data_parallel_scaling").values()
    for series in (host, ring):
        speedups = [p.metrics["speedup"] for p in series]
        assert speedups == sorted(speedups) and speedups[0] == pytest.approx(1)
    assert all(r.metrics["speedup"] > h.metrics["speedup"] for h, r in zip(host[1:], ring[1:], strict=True))
    assert (
        host[-1].metrics["serial_fraction"] > 3 * ring[-1].metrics["serial_fraction"]
    )  # the CPU does not shrink
    assert 0.85 < ring[-1].metrics["efficiency"] < 0.98  # the host's per-operator cost does not shrink


def claims_flynn():
    sisd, simd, mimd, both, simt = (p[0] for p in by_label("flynn_vector_add").values())
    assert sisd.latency_s > simd.latency_s > both.latency_s > simt.latency_s
    assert sisd.bottleneck == "compute" and sisd.latency_s == pytest.approx(
        1e6 * 50e-9, rel=0.05
    )  # interpreter
    assert simd.bottleneck == both.bottleneck == "memory"  # then memory is the wall
    assert simd.latency_s / both.latency_s < 4  # four cores stop helping once DRAM is saturated
    assert mimd.latency_s == pytest.approx(both.latency_s, rel=0.01)  # the lanes do not matter either


def claims_gpu_offload_crossover():
    result = lesson("gpu_offload_crossover")
    cpu, offload, resident = result.labels
    first, last = result.results[0].value, result.results[-1].value
    at = {(r.label, r.value): r.prediction.latency_s for r in result.results}
    assert at[(cpu, first)] < min(at[(offload, first)], at[(resident, first)])  # small tasks: the CPU
    assert at[(resident, last)] < at[(cpu, last)]  # resident data wins eventually
    assert result.never_faster() == [offload]  # an elementwise op never pays for its copies
    assert [(winner, loser) for _, winner, loser in result.crossovers()] == [(resident, cpu)]


def claims_matmul_roofline():
    for series in by_label("matmul_roofline").values():
        assert series[-1].bottleneck == "compute"
    fp32, fp16, cpu = (series[-1] for series in by_label("matmul_roofline").values())
    assert fp32.latency_s > 10 * fp16.latency_s  # tensor cores lift the ceiling
    fp32_4096 = by_label("matmul_roofline")["A100 float32 (CUDA cores)"][-2]
    assert fp32.latency_s / fp32_4096.latency_s == pytest.approx(8, rel=0.1)  # slope 3 when compute-bound
    assert by_label("matmul_roofline")["A100 float16 (tensor cores)"][0].bottleneck == "overhead"


def claims_systolic_vs_simt():
    # 512 -> 513 is padded to 640 in k and n on the TPU's 128x128 MXUs (compute-bound: 1.56x the
    # work), a few per cent on the GPUs; 128 -> 129 is hidden by memory on the TPU
    result = lesson("systolic_vs_simt")
    at = {(r.label.split(" ")[0], r.value): r.prediction for r in result.results}
    assert at[("TPU", 513)].latency_s / at[("TPU", 512)].latency_s == pytest.approx((640 / 512) ** 2, rel=0.1)
    for gpu in ("A100", "H100"):
        assert at[(gpu, 513)].latency_s / at[(gpu, 512)].latency_s < 1.1
    assert at[("TPU", 128)].bottleneck == "memory"
    assert at[("TPU", 129)].latency_s / at[("TPU", 128)].latency_s < 1.2
    assert any("25% of the array used" in note for note in at[("TPU", 129)].notes)
    big = at[("TPU", 4097)].latency_s / at[("TPU", 4096)].latency_s
    assert big == pytest.approx((4224 / 4096) ** 2, rel=0.03)


def test_matmul_lesson_shows_no_memory_bound_stretch_but_a_skinny_product_has_one():
    # The lesson (issue 13 bug 5) says: flat, then compute; the ridge is crossed under the launch
    # overhead; a skinny product (m = n = 8192, k = 16) is memory-bound at about 8 FLOPs per byte.
    series = by_label("matmul_roofline")
    assert not any(p.bottleneck == "memory" for s in series.values() for p in s)
    fp32, fp16, cpu = series.values()
    assert [p.bottleneck for p in fp16[:4]] == ["overhead"] * 4  # n = 64..512, across the fp16 ridge
    assert [p.bottleneck for p in fp32[:3]] == ["overhead"] * 3
    assert [p.bottleneck for p in cpu[:3]] == ["compute"] * 3  # the tail effect on the Xeon
    assert all(p.latency_s < 8.5e-6 for p in cpu[:3])  # flat near 6-8 us on the Xeon
    assert all(23e-6 < p.latency_s < 27.5e-6 for p in fp32[:3] + fp16[:3])  # near 25 us: a CuPy GEMM call
    for s in series.values():  # from n = 2048: about x5 to x8 per doubling
        assert all(5.0 <= b.latency_s / a.latency_s <= 8.2 for a, b in zip(s[5:], s[6:], strict=False))
    skinny = parsim.predict("matmul", {"m": 8192, "n": 8192, "k": 16}, device="a100-80gb")
    assert skinny.bottleneck == "memory"
    assert skinny.flops / skinny.bytes == pytest.approx(8, rel=0.01)


def claims_mlp_training():
    (copied,), (resident,) = by_label("mlp_training").values()
    assert copied.latency_s > 1.1 * resident.latency_s  # (the framework's host time is common to both)
    # two 100,000-float matrices cross PCIe twice per step: the weights there, the gradients back
    assert copied.transfer_bytes - resident.transfer_bytes == 2 * 2 * 100_000 * 4
    assert any(
        e.resource.kind == "cores" and not e.resource.on_gpu for e in copied.trace
    )  # the update on the CPU
    assert not any(e.resource.kind == "cores" and not e.resource.on_gpu for e in resident.trace)


def claims_pcie():
    series = by_label("pcie_pinned_vs_pageable")
    pinned, pageable = series["H2D pinned"], series["H2D pageable"]
    assert pinned[0].latency_s == pytest.approx(pinned[2].latency_s, rel=0.05)  # tiny copies: the latency
    assert pinned[-1].transfer_bytes / pinned[-1].latency_s == pytest.approx(
        12.3e9, rel=0.02
    )  # effective, not 15.75
    assert pageable[-1].latency_s > 2 * pinned[-1].latency_s
    # the GPU writes 256-B packets (26 B around each) and reads 128-B completions (22 B around each)
    d2h_over_h2d = (256 / 282) / (128 / 150)
    d2h = series["D2H pinned"][-1]
    assert d2h.transfer_bytes / d2h.latency_s == pytest.approx(12.3e9 * d2h_over_h2d, rel=0.02)


def claims_streams():
    one, two, four, eight = (p[0].latency_s for p in by_label("streams_overlap").values())
    assert one > two > four > eight
    assert one - two > 2 * (four - eight)  # the gain flattens
    slowest_stage = 2e7 * 4 / 12.3e9  # the input crossing PCIe 3.0 at 12.3 GB/s
    assert eight > slowest_stage


def claims_flash_attention():
    flash, unfused = by_label("flash_attention").values()
    short, long = 0, -1
    assert unfused[short].latency_s < 1.05 * flash[short].latency_s  # together at 256 tokens
    assert unfused[long].bytes > 2 * flash[long].bytes  # more than twice the bytes at 4,096
    assert 1.1 < unfused[long].latency_s / flash[long].latency_s < 1.2  # about 15 % longer
    assert flash[long].bottleneck == "compute"
    # the extra traffic grows as S^2: 16x from 1,024 to 4,096 tokens (within the softmax's rounding)
    extra = [u.bytes - f.bytes for u, f in zip(unfused, flash, strict=True)]
    assert extra[-1] / extra[2] == pytest.approx(16, rel=0.1)


def claims_gpt2_training():
    xeon, a100_fp32, t4, a100_bf16 = (series[0] for series in by_label("gpt2_training_cpu_vs_gpu").values())
    assert 0.8 < xeon.latency_s < 1.0  # about 0.9 s per step (the 8480+ at its 3.0 GHz all-core turbo)
    assert 1.5 < xeon.latency_s / a100_fp32.latency_s < 2.5  # about twice as fast
    assert a100_fp32.latency_s / a100_bf16.latency_s > 10  # more than ten times again
    assert a100_bf16.latency_s < t4.latency_s < a100_fp32.latency_s  # the T4 lands between
    assert 5e12 < xeon.flops < 8e12  # some 6 TFLOPs
    slowest = max(a100_fp32.layers, key=lambda row: row["latency_s"])
    assert slowest["name"] == "lm_head"


def claims_llm_prefill_vs_decode():
    prefill, decode = (series[0] for series in by_label("llm_prefill_vs_decode").values())
    assert LLMS["llama-2-7b"].params == pytest.approx(6.7e9, rel=0.01)  # 6.7 B weights, 13.5 GB
    assert 2 * LLMS["llama-2-7b"].params == pytest.approx(13.5e9, rel=0.01)
    ridge = ridge_intensity(registry.processor("a100-80gb"), "float16")
    assert ridge == pytest.approx(178, abs=0.5)
    # prefill: some 6.7 TFLOPs on about 20 GB, over 300 FLOP/byte, compute-bound, about 35 ms
    assert prefill.flops == pytest.approx(6.7e12, rel=0.01)
    assert prefill.bytes == pytest.approx(20e9, rel=0.05)
    assert prefill.flops / prefill.bytes > 300 > ridge
    assert prefill.bottleneck == "compute"
    assert prefill.latency_s == pytest.approx(35e-3, rel=0.02)
    # one decode step: 1 FLOP per byte, memory-bound, about 8 ms streaming 13.2 GB (no embedding table)
    assert decode.flops / decode.bytes == pytest.approx(1, rel=0.01)
    assert decode.bottleneck == "memory"
    assert decode.latency_s == pytest.approx(8e-3, rel=0.05)
    assert decode.bytes == pytest.approx(13.2e9, rel=0.01)
    embedding = LLMS["llama-2-7b"].vocab * LLMS["llama-2-7b"].hidden * 2
    assert decode.bytes == pytest.approx(2 * LLMS["llama-2-7b"].params - embedding, rel=0.01)
    # 512 times the work in about 4.5 times the time
    assert prefill.flops / decode.flops == pytest.approx(512, rel=0.02)
    assert prefill.latency_s / decode.latency_s == pytest.approx(4.5, abs=0.1)
    # a real request: first token = the prefill bar; 7.9 ms per token, within 3 % above the decode bar
    real = predict("llm_serve", {"model": "llama-2-7b", "prompt": 512, "output": 128}, device="a100-80gb")
    assert real.metrics["time_to_first_token_s"] == pytest.approx(prefill.latency_s, rel=0.01)
    per_token = real.metrics["time_per_output_token_s"]
    assert per_token == pytest.approx(7.9e-3, rel=0.01)
    assert decode.latency_s < per_token < 1.03 * decode.latency_s
    # the cached tokens add 0.3 GB to the step's reads (the request's program: prefill + mean step)
    step_bytes = real.bytes - prefill.bytes
    assert step_bytes - decode.bytes == pytest.approx(0.3e9, rel=0.05)


def claims_llm_batching_decode():
    result = lesson("llm_batching_decode")
    a100, h100 = by_label("llm_batching_decode").values()
    batches = [r.value for r in result.series("A100 80 GB")]
    at = dict(zip(batches, range(len(batches)), strict=True))
    tokens = {  # tokens/s in total: every step gives each sequence one token
        name: [p.metrics["tokens_per_s"] for p in series] for name, series in (("a100", a100), ("h100", h100))
    }
    # memory-bound up to the last batch below each ridge (A100 128, H100 256), compute-bound beyond
    for series, rate, flat in zip((a100, h100), tokens.values(), (128, 256), strict=True):
        for batch, p in zip(batches, series, strict=True):
            if batch <= 128:  # about B FLOPs per byte (the activations' traffic counts beyond)
                assert p.flops / p.bytes == pytest.approx(batch, rel=0.15)
            assert p.metrics["tokens_per_s"] == pytest.approx(batch / p.latency_s, rel=1e-9)
            assert p.bottleneck == ("memory" if batch <= flat else "compute")
        assert rate[: at[256] + 1] == sorted(rate[: at[256] + 1])
    assert ridge_intensity(registry.processor("a100-80gb"), "float16") == pytest.approx(178, abs=0.5)
    assert ridge_intensity(registry.processor("h100-sxm"), "float16") == pytest.approx(341, abs=0.5)
    assert a100[at[128]].flops / a100[at[128]].bytes < 178 < a100[at[256]].flops / a100[at[256]].bytes
    assert a100[at[256]].flops / a100[at[256]].bytes == pytest.approx(206, abs=1)
    # A100: 7.7 ms at 1, 8.1 ms at 32 (about 5 % more), 129 -> about 3,900 tokens/s; then 8.9 ms at 64
    # and 11.4 ms at 128 (still memory-bound, 11,200 tokens/s)
    assert a100[0].latency_s == pytest.approx(7.7e-3, rel=0.01)
    assert a100[at[32]].latency_s == pytest.approx(8.1e-3, rel=0.01)
    assert a100[at[32]].latency_s / a100[0].latency_s == pytest.approx(1.05, abs=0.01)
    assert round(tokens["a100"][0]) == 129
    assert tokens["a100"][at[32]] == pytest.approx(3_900, rel=0.02)
    assert a100[at[64]].latency_s == pytest.approx(8.9e-3, rel=0.01)
    assert a100[at[128]].latency_s == pytest.approx(11.4e-3, rel=0.01)
    assert tokens["a100"][at[128]] == pytest.approx(11_200, rel=0.02)
    # the shadow thins near the ridge: batch 1 is within 3 % of max(FLOPs at peak, bytes at the
    # bandwidth), batch 128 pays over 1.3 x that (cuBLAS's smooth roofline pays both legs)
    a100_spec = registry.processor("a100-80gb")
    bandwidth_a100 = a100_spec.memory.bandwidth_Bps
    peak = ridge_intensity(a100_spec, "float16") * bandwidth_a100

    def over_roofline(p) -> float:
        return p.latency_s / max(p.flops / peak, p.bytes / bandwidth_a100)

    assert over_roofline(a100[0]) < 1.03
    assert over_roofline(a100[at[128]]) > 1.3
    # at 256: compute-bound, 18 ms (1.6 x the step at 128), 14,300 tokens/s, 2.3 x batch 1's wait
    assert a100[at[256]].latency_s == pytest.approx(18e-3, rel=0.02)
    assert a100[at[256]].latency_s / a100[at[128]].latency_s == pytest.approx(1.6, abs=0.05)
    assert tokens["a100"][at[256]] == pytest.approx(14_300, rel=0.02)
    assert a100[at[256]].latency_s / a100[0].latency_s == pytest.approx(2.3, abs=0.05)
    # at 512 the step doubles to 35 ms and the total barely moves (14,600): the A100 is full
    assert a100[at[512]].latency_s == pytest.approx(35e-3, rel=0.02)
    assert a100[at[512]].latency_s / a100[at[256]].latency_s == pytest.approx(2, abs=0.05)
    assert tokens["a100"][at[512]] == pytest.approx(14_600, rel=0.02)
    assert tokens["a100"][at[512]] < 1.05 * tokens["a100"][at[256]]
    # H100: 1.66 x the bandwidth, 1.6 x faster up to batch 16 (4.7 ms); 1.2 x its batch-1 step at 128
    # (5.6 ms, 2 x faster than the A100); still memory-bound at 256 (206 FLOP/byte, below its ridge:
    # its 256-row products share their last wave, stream-K), 1.3 x the step at 128, 35,500 tokens/s
    bandwidth = [registry.processor(d).memory.bandwidth_Bps for d in ("a100-80gb", "h100-sxm")]
    assert bandwidth[1] / bandwidth[0] == pytest.approx(1.66, abs=0.01)
    for a, h in zip(a100[: at[16] + 1], h100[: at[16] + 1], strict=True):
        assert a.latency_s / h.latency_s == pytest.approx(1.6, abs=0.05)
    assert h100[0].latency_s == pytest.approx(4.7e-3, rel=0.01)
    assert h100[at[128]].latency_s == pytest.approx(5.6e-3, rel=0.01)
    assert h100[at[128]].latency_s / h100[0].latency_s == pytest.approx(1.2, abs=0.02)
    assert a100[at[128]].latency_s / h100[at[128]].latency_s == pytest.approx(2, abs=0.05)
    assert h100[at[256]].latency_s / h100[at[128]].latency_s == pytest.approx(1.3, abs=0.05)
    assert tokens["h100"][at[256]] == pytest.approx(35_500, rel=0.02)
    # real conversations: 512-token prompts, 128-token answers on the A100
    chat = {"model": "llama-2-7b", "prompt": 512, "output": 128}
    real = {b: predict("llm_serve", {**chat, "batch": b}, device="a100-80gb").metrics for b in (1, 64, 128)}
    assert real[64]["kv_cache_bytes"] == 64 * 640 * 2 * 32 * 4096 * 2 == 20 * 2**30  # 0.5 MiB per token
    assert real[64]["kv_cache_bytes"] > 2 * LLMS["llama-2-7b"].params  # more than the weights
    assert real[1]["time_per_output_token_s"] == pytest.approx(7.9e-3, rel=0.02)  # "8"
    assert real[64]["time_per_output_token_s"] == pytest.approx(20e-3, rel=0.02)
    assert real[128]["time_per_output_token_s"] == pytest.approx(33e-3, rel=0.02)
    assert 128 / real[128]["time_per_output_token_s"] == pytest.approx(3_800, rel=0.02)
    assert real[128]["max_batch"] == 188


def claims_llm_kv_cache():
    result = lesson("llm_kv_cache")
    fp16, int8, gqa = result.labels
    half, quarter = by_label("llm_kv_cache")[fp16], by_label("llm_kv_cache")[gqa]
    eighth = by_label("llm_kv_cache")[int8]
    outputs = [r.value for r in result.series(fp16)]
    assert outputs[0] == 256 and outputs[-1] == 2048
    # 2 x 32 layers x 4,096 x 2 bytes = 0.5 MiB per token; int8 half, GQA (8 of 32 heads) a quarter
    llama3 = LLMS["llama-3-8b"]
    assert (llama3.heads, llama3.kv_heads, llama3.context, llama3.vocab) == (32, 8, 8192, 128_256)
    assert llama3.params == pytest.approx(8.0e9, rel=0.01)
    for series, per_token in ((half, 2**19), (eighth, 2**18), (quarter, 2**17)):
        for output, p in zip(outputs, series, strict=True):
            assert p.metrics["kv_cache_bytes"] == 64 * (1 + output) * per_token  # linear in the context
            assert p.bottleneck == "memory"
    gib = 2**30
    weights = 2 * LLMS["llama-2-7b"].params
    assert weights / gib == pytest.approx(12.6, abs=0.05)
    assert half[0].metrics["kv_cache_bytes"] / gib == pytest.approx(8, rel=0.01)
    assert half[-1].metrics["kv_cache_bytes"] / gib == pytest.approx(64, rel=0.01)
    assert half[-1].metrics["kv_cache_bytes"] / weights == pytest.approx(5, rel=0.05)
    tpot = {
        label: [p.metrics["time_per_output_token_s"] for p in series]
        for label, series in ((fp16, half), (int8, eighth), (gqa, quarter))
    }
    assert tpot[fp16][0] == pytest.approx(11.4e-3, rel=0.01)
    assert tpot[fp16][-1] == pytest.approx(28.5e-3, rel=0.01)
    assert tpot[fp16][-1] > 2.5 * tpot[fp16][0]
    # each point: time to first token + one average step
    for p in (*half, *eighth, *quarter):
        assert p.latency_s == pytest.approx(
            p.metrics["time_to_first_token_s"] + p.metrics["time_per_output_token_s"], rel=1e-6
        )
    # the float16 cache stops fitting just past 2,100 tokens per sequence: 2,126 refused
    at = {"model": "llama-2-7b", "batch": 64, "prompt": 1}
    assert predict("llm_serve", {**at, "output": 2125}, device="a100-80gb").metrics["max_batch"] == 64
    with pytest.raises(ParsimError, match=r"needs 66\.5 GiB for the KV cache at batch 64 .* batch 63 fits"):
        predict("llm_serve", {**at, "output": 2126}, device="a100-80gb")
    # int8: half the growth, 18.7 ms per token at 2,048, and 64 sequences fit the full 4,096 tokens
    rise = {label: series[-1] - series[0] for label, series in tpot.items()}
    assert rise[int8] / rise[fp16] == pytest.approx(0.5, rel=0.02)
    assert tpot[int8][-1] == pytest.approx(18.7e-3, rel=0.01)
    full = predict("llm_serve", {**at, "output": 4095, "kv_dtype": "int8"}, device="a100-80gb")
    assert full.metrics["max_batch"] >= 64
    # GQA: starts slower, rises four times less steeply, overtakes float16 Llama-2-7B from 1,024
    assert quarter[0].latency_s > half[0].latency_s
    assert rise[fp16] / rise[gqa] == pytest.approx(4, rel=0.05)
    assert result.crossovers() == [(1024, gqa, fp16)]
    longest = predict("llm_serve", {**at, "model": "llama-3-8b", "output": 8191}, device="a100-80gb")
    assert longest.metrics["kv_cache_bytes"] == 64 * gib


def _union_s(events) -> float:
    """Time covered by at least one of the events (overlapping all-reduce ports counted once)."""
    covered, end = 0.0, float("-inf")
    for event in sorted(events, key=lambda e: e.start_s):
        covered += max(0.0, event.end_s - max(event.start_s, end))
        end = max(end, event.end_s)
    return covered


def claims_llm_70b_gpus():
    h100, a100 = by_label("llm_70b_gpus").values()
    config = LLMS["llama-2-70b"]
    assert config.params == pytest.approx(69e9, rel=0.01)
    assert 2 * config.params / 2**30 == pytest.approx(128.5, abs=0.05)
    assert config.params / 2**30 == pytest.approx(64, rel=0.01)  # per GPU on 2 (float16: 2 bytes / 2)
    request = {"model": "llama-2-70b", "batch": 1, "prompt": 512, "output": 128}
    for device in ("h100-sxm", "a100-80gb"):  # 1 GPU: not even the weights fit in 80 GiB
        assert registry.processor(device).memory.capacity_B == 80 * 2**30
        with pytest.raises(ParsimError, match="not even the weights fit"):
            predict("llm_serve", {**request, "gpus": 1}, device=device)
    # the points: 88, 53, 34 ms on H100s (the prefill's products share their last wave: stream-K)
    assert [round(p.latency_s * 1e3) for p in h100] == [88, 53, 34]
    # room for the cache: 95, 551, 1,251 conversations of 640 tokens
    for series in (h100, a100):
        assert [p.metrics["max_batch"] for p in series] == [95, 551, 1251]
    tpot = {name: [p.metrics["time_per_output_token_s"] for p in s] for name, s in (("h", h100), ("a", a100))}
    assert [round(t * 1e3) for t in tpot["h"]] == [25, 14, 9]
    assert [round(t * 1e3) for t in tpot["a"]] == [48, 23, 16]
    assert tpot["h"][0] / tpot["h"][1] == pytest.approx(1.8, abs=0.05)
    assert tpot["h"][0] / tpot["h"][2] == pytest.approx(2.9, abs=0.05)
    assert tpot["a"][0] / tpot["a"][2] > tpot["h"][0] / tpot["h"][2]  # the A100s gain more
    # 160 all-reduces per decode step of 16 KB; 1.3 ms per token on 2 GPUs, 2.4 ms (over a quarter of
    # the step) on 8: NCCL's LL ring, 6.6 us + 14 x 0.6 us each on 8 H100
    assert 2 * config.layers == 160 and config.hidden * 2 == 16_384
    reduces = [[e for e in p.trace if e.label.startswith("all-reduce")] for p in h100]
    decode_reduces = [[e for e in events if e.label.endswith("(decode)")] for events in reduces]
    assert all(len({e.label for e in events}) == 160 for events in decode_reduces)
    reduce_s = [_union_s(events) for events in decode_reduces]
    assert reduce_s == sorted(reduce_s)
    assert reduce_s[0] == pytest.approx(1.3e-3, rel=0.05)
    assert reduce_s[-1] == pytest.approx(2.4e-3, rel=0.02)
    assert reduce_s[-1] / tpot["h"][-1] == pytest.approx(0.28, abs=0.02)
    assert [p.bottleneck for p in h100] == ["compute", "compute", "compute"]  # the prefill's


def _ddp_phases(p) -> tuple[float, float, float, float]:
    """GPU 0's backward pass (start, end), its first all-reduce's start, and the all-reduce time."""
    gpu0 = [e for e in p.trace if e.resource.on_gpu and e.resource.device == 0 and e.resource.kind == "cores"]
    backward = [e for e in gpu0 if "bwd" in e.label]
    reduces = [e for e in p.trace if e.label.startswith("all-reduce") and e.resource.device == 0]
    return (
        min(e.start_s for e in backward),
        max(e.end_s for e in backward),
        min(e.start_s for e in reduces),
        _union_s(reduces),
    )


def claims_cluster_allreduce_overlap():
    result = lesson("cluster_allreduce_overlap")
    assert [r.value for r in result.series(result.labels[0])] == [1, 2, 8, 64]
    dgx, dgx_after, roce, roce_after, eth, eth_after = by_label("cluster_allreduce_overlap").values()
    ms = {
        name: [round(p.latency_s * 1e3, 1) for p in series]
        for name, series in (
            ("dgx", dgx),
            ("dgx_after", dgx_after),
            ("roce", roce),
            ("roce_after", roce_after),
            ("eth", eth),
            ("eth_after", eth_after),
        )
    }
    # 25.6 M gradients summed in float32: 102 MB in 4 buckets
    first = dgx[1]
    step = make_workload("data_parallel", {**first.params, "gpus": 8})
    reduces = [op for op in step.ops if getattr(op, "kind", None) == "all_reduce"]
    assert len(reduces) == 4
    assert sum(op.nbytes for op in reduces) == 4 * 25_557_032 == pytest.approx(102e6, rel=0.005)
    # backward 60.6 ms, the first bucket ready 1.8 ms into it: 58.8 ms can hide
    start, end, first_reduce, _ = _ddp_phases(first)
    hideable = (end - first_reduce) * 1e3
    assert (end - start) * 1e3 == pytest.approx(60.6, abs=0.05)
    assert (first_reduce - start) * 1e3 == pytest.approx(1.8, abs=0.05)
    assert hideable == pytest.approx(58.8, abs=0.1)
    # 1 node: NVLink only, 1.0 ms; 87.6 ms with overlap and 88.5 ms without, on every cluster
    assert _ddp_phases(dgx[0])[3] * 1e3 == pytest.approx(1.0, abs=0.05)
    for name in ("dgx", "roce", "eth"):
        assert ms[name][0] == 87.6 and ms[f"{name}_after"][0] == 88.5
    # DGX A100: 1.4 ms across 2 nodes, almost all hidden (87.7 ms, 0.1 ms over one node; 88.8 ms after)
    assert _ddp_phases(dgx[1])[3] * 1e3 == pytest.approx(1.4, abs=0.05)
    assert ms["dgx"][1] == 87.7 and ms["dgx_after"][1] == 88.8
    assert (dgx[1].latency_s - dgx[0].latency_s) * 1e3 == pytest.approx(0.1, abs=0.05)
    # 100 Gb/s RoCE: 17.3 ms of all-reduce, less than can hide; 90.4 ms overlapped (the last bucket
    # shows), 104.8 ms after
    roce_s = _ddp_phases(roce[1])[3] * 1e3
    assert roce_s == pytest.approx(17.3, abs=0.05) and roce_s < hideable
    assert ms["roce"][1] == 90.4 and ms["roce_after"][1] == 104.8
    shown = (roce_after[1].latency_s - roce[0].latency_s) * 1e3
    assert shown == pytest.approx(roce_s, abs=0.2)  # all of it shows
    last = [e for e in roce[1].trace if e.label.startswith("all-reduce bucket 3") and e.resource.device == 0]
    assert min(e.start_s for e in last) >= _ddp_phases(roce[1])[1] - 1e-9  # ready when backward ends
    assert roce[1].latency_s - _ddp_phases(roce[1])[1] == pytest.approx(
        max(e.end_s for e in last) - min(e.start_s for e in last), abs=0.4e-3
    )
    # 25 Gb/s Ethernet: 69 ms, 1.1 times the backward pass and more than the 58.8 ms that can hide;
    # 57 ms hidden, 99.2 ms (156.6 ms after): waiting 12 %
    eth_s, (start, end, first_reduce, _) = _ddp_phases(eth[1])[3] * 1e3, _ddp_phases(eth[1])
    assert eth_s == pytest.approx(69, abs=0.5)
    assert eth_s / ((end - start) * 1e3) == pytest.approx(1.1, abs=0.05)
    assert (end - first_reduce) * 1e3 == pytest.approx(hideable, abs=0.05) and eth_s > hideable
    assert ms["eth"][1] == 99.2 and ms["eth_after"][1] == 156.6
    hidden = eth_s - (ms["eth"][1] - end * 1e3)
    assert hidden == pytest.approx(57.2, abs=0.5)
    assert (ms["eth"][1] - ms["eth"][0]) / ms["eth"][1] == pytest.approx(0.12, abs=0.005)
    assert eth[1].bottleneck == "transfer"
    # more nodes change almost nothing: 64 nodes 87.8, 90.7, 102.6 ms; a tree from 8 nodes on
    assert (ms["dgx"][-1], ms["roce"][-1], ms["eth"][-1]) == (87.8, 90.7, 102.6)
    for series in ms.values():
        assert max(series[1:]) - min(series[1:]) < 0.06 * min(series[1:])  # within 6 %
    for cluster in (
        "dgx-a100",
        SCENARIOS / "hardware/a100_100g_roce.toml",
        SCENARIOS / "hardware/a100_25gbe.toml",
    ):
        for nodes in (8, 64):
            system = registry.cluster_system(registry.cluster(cluster), nodes)
            assert collective(system, "all_reduce", 25 * 2**20).algorithm == "tree"
    assert result.crossovers() == []


def claims_cluster_ring_vs_tree():
    result = lesson("cluster_ring_vs_tree")
    nodes = [r.value for r in result.series("ring, 1 GB")]
    assert nodes[0] == 1 and nodes[-1] == 4096
    at = {n: i for i, n in enumerate(nodes)}
    ring_gb, tree_gb, ring_mb, tree_mb = by_label("cluster_ring_vs_tree").values()
    spec = registry.cluster("dgx-a100")
    assert spec.network.nic.latency_s == 5e-6  # the NIC's own; NCCL prices a step between nodes at 2.7-14 us
    assert spec.network.gpu_share_Bps(8) * 8 == pytest.approx(192e9)  # eight cards, 192 GB/s per node
    assert ring_gb[-1].metrics["ranks"] == 32_768

    def ms(p):
        return p.latency_s * 1e3

    def busbw(p):
        return p.metrics["bus_bandwidth_Bps"] / 1e9

    # 1 GB, 1 node: ring 7.4 ms (238 GB/s), tree 8.4 ms
    assert ms(ring_gb[0]) == pytest.approx(7.4, abs=0.05) and busbw(ring_gb[0]) == pytest.approx(238, abs=1)
    assert ms(tree_gb[0]) == pytest.approx(8.4, abs=0.05)
    # 2 nodes: ring 9.9 ms against the tree's 10.5
    assert ms(ring_gb[at[2]]) == pytest.approx(9.9, abs=0.05)
    assert ms(tree_gb[at[2]]) == pytest.approx(10.5, abs=0.05)
    ring_share = 2 * (16 - 1) / 16  # what each GPU sends on 2 nodes, in buffers
    assert ring_share == pytest.approx(1.9, abs=0.05)
    # the tree wins from 8 nodes and stays at 10.5 to 10.9 ms (185 GB/s) up to 4,096 nodes
    assert result.crossovers() == [(8, "tree, 1 GB", "ring, 1 GB")]
    assert all(10.5 <= ms(p) < 10.9 for p in tree_gb[1:])
    assert busbw(tree_gb[-1]) == pytest.approx(185, abs=1)
    # the ring's latency: 14.8 ms on 64 nodes, 39 on 512, 158 on 4,096 (12.6 GB/s)
    assert ms(ring_gb[at[64]]) == pytest.approx(14.8, abs=0.05)
    assert ms(ring_gb[at[512]]) == pytest.approx(39, abs=0.5)
    assert ms(ring_gb[-1]) == pytest.approx(158, abs=0.5)
    assert busbw(ring_gb[-1]) == pytest.approx(12.6, abs=0.05)
    # 1 MB: the tree wins from 2 nodes (0.073 ms against 0.094 ms)
    assert ms(tree_mb[at[2]]) == pytest.approx(0.073, abs=0.0005)
    assert ms(ring_mb[at[2]]) == pytest.approx(0.094, abs=0.0005)
    assert all(t.latency_s < r.latency_s for t, r in zip(tree_mb[1:], ring_mb[1:], strict=True))
    # 4,096 nodes: the ring's 65,534 steps (NCCL's LL: 57,344 inside the nodes at 0.6 + 1.375 us,
    # 8,190 between them at 2.7 us) take 135 ms; the tree's 12 levels 0.15 ms, 0.18 in all
    system = registry.cluster_system(spec, 4096)
    ring = collective(system, "all_reduce", 1e6, algorithm="ring")
    tree = collective(system, "all_reduce", 1e6, algorithm="tree")
    assert ring.latency_s == pytest.approx((6.6 + 57_344 * (0.6 + 1.375) + 8_190 * 2.7) * 1e-6)
    assert ms(ring_mb[-1]) == pytest.approx(135, abs=0.5)
    assert ms(ring_mb[-1]) / ms(ring_gb[-1]) == pytest.approx(0.86, abs=0.01)  # most of the 1 GB ring's
    assert math.ceil(math.log2(4096)) == 12
    assert tree.latency_s * 1e3 == pytest.approx(0.15, abs=0.005)
    assert ms(tree_mb[-1]) == pytest.approx(0.18, abs=0.005)
    # from 512 nodes on, a 1 MB ring takes longer than a 1 GB tree (not yet at 256)
    assert ring_mb[at[256]].latency_s < tree_gb[at[256]].latency_s
    assert all(r.latency_s > t.latency_s for r, t in zip(ring_mb[at[512] :], tree_gb[at[512] :], strict=True))
    # auto takes the faster: the lower of each pair
    for n in (1, 2, 8, 4096):
        for size, pair in ((1e9, (ring_gb, tree_gb)), (1e6, (ring_mb, tree_mb))):
            auto = predict("allreduce", {"bytes": size, "nodes": n}, cluster="dgx-a100")
            assert auto.latency_s == pytest.approx(min(p[at[n]].latency_s for p in pair), rel=1e-9)


def claims_cluster_pipeline_bubble():
    result = lesson("cluster_pipeline_bubble")
    deep, shallow = by_label("cluster_pipeline_bubble").values()
    micro = [r.value for r in result.series(result.labels[0])]
    assert micro == [16, 24, 32, 48, 96]
    at = {m: i for i, m in enumerate(micro)}
    for series, p, d in ((deep, 16, 8), (shallow, 8, 16)):
        for m, x in zip(micro, series, strict=True):
            assert (x.metrics["tp"], x.metrics["pp"], x.metrics["dp"]) == (8, p, d)
            assert x.metrics["bubble_ideal"] == pytest.approx((p - 1) / (m + p - 1))
            assert x.metrics["idle_share"] >= x.metrics["bubble_ideal"] - 0.005
            assert x.metrics["micro_batch"] == 1536 / d / m
        steps = [x.latency_s for x in series]
        assert steps == sorted(steps, reverse=True)
    assert deep[0].gpus == 1024 and deep[0].metrics["tokens_per_s"] * deep[0].latency_s == pytest.approx(
        1536 * 2048
    )
    # 16 stages, 16 micro-batches: bubble 48 %, idle 49 %, 41.8 s, 104 TFLOP/s (a third of 312)
    first = deep[0].metrics
    assert first["bubble_ideal"] == pytest.approx(0.48, abs=0.005)
    assert first["idle_share"] == pytest.approx(0.49, abs=0.005)
    assert first["step_s"] == pytest.approx(41.8, abs=0.05)
    assert first["tflops_per_gpu"] == pytest.approx(104, abs=0.5)
    peak = dict(registry.processor("a100-80gb").matrix_flops_per_s)["float16"]
    assert peak == pytest.approx(312e12) and first["tflops_per_gpu"] * 1e12 / peak == pytest.approx(
        1 / 3, abs=0.01
    )
    # 96 micro-batches of 2: bubble 13.5 %, 26.9 s, 162 TFLOP/s, idle 16.5 %; the computing 5 % longer
    last = deep[at[96]].metrics
    assert last["micro_batch"] == 2
    assert last["bubble_ideal"] == pytest.approx(0.135, abs=0.0005)
    assert last["step_s"] == pytest.approx(26.85, abs=0.05)
    assert last["tflops_per_gpu"] == pytest.approx(162, abs=0.5)
    assert last["idle_share"] == pytest.approx(0.165, abs=0.0005)
    computing = [x.metrics["compute_share"] * x.latency_s for x in (deep[0], deep[at[96]])]
    assert computing[1] / computing[0] == pytest.approx(1.05, abs=0.005)
    # 8 stages: 30 % at 16 micro-batches, 31.6 s, 1.32 times faster; 96 of one sequence: 26.4 s, 8.3 % (6.8)
    assert shallow[0].metrics["bubble_ideal"] == pytest.approx(0.30, abs=0.005)
    assert shallow[0].metrics["step_s"] == pytest.approx(31.6, abs=0.05)
    assert deep[0].latency_s / shallow[0].latency_s == pytest.approx(1.32, abs=0.005)
    end = shallow[at[96]].metrics
    assert end["micro_batch"] == 1
    assert end["step_s"] == pytest.approx(26.4, abs=0.05)
    assert end["idle_share"] == pytest.approx(0.083, abs=0.0005)
    assert end["bubble_ideal"] == pytest.approx(0.068, abs=0.0005)
    # fewer than 16 micro-batches do not fit on 8 stages: 12 need 84.1 GiB (with the 1 GiB runtime)
    with pytest.raises(ParsimError, match=r"needs 84\.1 GiB per GPU with tp=8 pp=8"):
        predict("network", {**dict(shallow[0].params), "microbatches": 12}, cluster="dgx-a100")
    # within 2 % at 96; the data-parallel share 3.2 % against 1.5 %
    assert deep[at[96]].latency_s / shallow[at[96]].latency_s == pytest.approx(1.02, abs=0.005)
    assert end["dp_comm_share"] == pytest.approx(0.032, abs=0.0005)
    assert last["dp_comm_share"] == pytest.approx(0.015, abs=0.0005)


def claims_cluster_amdahl_gustafson():
    result = lesson("cluster_amdahl_gustafson")
    strong, weak = by_label("cluster_amdahl_gustafson").values()
    nodes = [r.value for r in result.series(result.labels[0])]
    assert nodes == [1, 2, 4, 8, 16, 32, 64, 128]
    at = {n: i for i, n in enumerate(nodes)}
    assert strong[-1].gpus == weak[-1].gpus == 1024
    # both start from the same step: 1,024 images per GPU on one node, 696 ms
    assert round(strong[0].latency_s * 1e3) == round(weak[0].latency_s * 1e3) == 696
    # strong: in proportion up to 16 nodes (94 % efficient), 87.7 ms and 60.0 x at 8 nodes, 43.8 ms
    # and 120 x at 16; then 193 x on 32, 64, 128 nodes, a step every 27.3 ms
    for p in strong[: at[16] + 1]:
        assert p.metrics["efficiency"] == pytest.approx(0.94, abs=0.005)
    assert strong[at[8]].latency_s * 1e3 == pytest.approx(87.7, abs=0.05)
    assert strong[at[8]].metrics["speedup"] == pytest.approx(60.0, abs=0.05)
    assert strong[at[16]].latency_s * 1e3 == pytest.approx(43.8, abs=0.05)
    assert round(strong[at[16]].metrics["speedup"]) == 120
    for p in strong[at[32] :]:
        assert round(p.metrics["speedup"]) == 193
        assert 8192 / p.metrics["samples_per_s"] * 1e3 == pytest.approx(27.3, abs=0.05)
    # one step alone: 31.1 ms on 32 nodes (its GPUs still computing 19.8 ms), 29.0-29.1 ms on 64, 128
    assert strong[at[32]].latency_s * 1e3 == pytest.approx(31.1, abs=0.05)
    busy32 = [
        e
        for e in strong[at[32]].trace
        if e.resource.on_gpu and e.resource.device == 0 and e.resource.kind == "cores"
    ]
    assert sum(e.end_s - e.start_s for e in busy32) * 1e3 == pytest.approx(19.8, abs=0.15)
    for p in strong[at[64] :]:
        assert p.latency_s * 1e3 == pytest.approx(29.04, abs=0.1)
        assert p.bottleneck == "overhead"
    assert [p.bottleneck for p in strong[: at[32] + 1]] == ["compute"] * 6
    # the host (2x EPYC 7742): 27.1 ms per step, 25.7 ms of it launching 513 operations per GPU (50 us
    # apiece) and 1.4 ms the 250 layout transposes cuDNN launches inside them; a GPU computes 4.9 ms
    end = strong[-1]
    threads = {}
    for e in end.trace:
        if e.resource.kind == "thread":
            threads.setdefault(e.resource.first, []).append(e)
    launches = threads[1]
    operations = [e for e in launches if "transpose" not in e.label]
    assert len(operations) == 513 and len(launches) == 513 + 250
    assert sum(e.end_s - e.start_s for e in launches) * 1e3 == pytest.approx(27.1, abs=0.05)
    assert sum(e.end_s - e.start_s for e in operations) * 1e3 == pytest.approx(25.7, abs=0.05)
    assert sum(e.end_s - e.start_s for e in operations) / 513 * 1e6 == pytest.approx(50, abs=0.5)
    gpu0 = [
        e for e in end.trace if e.resource.on_gpu and e.resource.device == 0 and e.resource.kind == "cores"
    ]
    assert sum(e.end_s - e.start_s for e in gpu0) * 1e3 == pytest.approx(4.9, abs=0.15)
    # Amdahl's serial fraction there: 0.42 %, a cap of 237 times
    serial = end.metrics["serial_fraction"]
    assert serial == pytest.approx(0.0042, abs=0.00005)
    assert round(1 / serial) == 237
    # weak: 696 ms at every size, a million images, 969 x, 94.6 % efficient everywhere
    for p in weak:
        assert round(p.latency_s * 1e3) == 696
        assert p.metrics["efficiency"] == pytest.approx(0.946, abs=0.001)
    assert 1024 * 1024 == 1_048_576  # the global batch at 128 nodes
    assert round(weak[-1].metrics["speedup"]) == 969
    # lost inside each node: the 8 GPUs share PCIe switches for their input copies
    copies = [
        [e for e in p.trace if e.label == "h2d input" and e.resource.device == 0]
        for p in (
            weak[0],
            predict(
                "network",
                {"model": "resnet50", "batch": 1024, "dtype": "float16", "train": True},
                device="a100-80gb",
            ),
        )
    ]
    shared, alone = (sum(e.end_s - e.start_s for e in c) for c in copies)
    assert shared > 3.5 * alone
    # Gustafson: s = (N - S) / (N - 1) = 5.4 %, 12.7 times 0.42 %, a speed-up four times 237
    gustafson = (1024 - weak[-1].metrics["speedup"]) / 1023
    assert gustafson == pytest.approx(0.054, abs=0.0005)
    assert gustafson / serial == pytest.approx(12.7, abs=0.3)
    assert weak[-1].metrics["speedup"] / (1 / serial) == pytest.approx(4, abs=0.15)


def _load(stem: str) -> dict[str, dict[float, dict]]:
    """Each case's figures (``LoadMetrics`` by name) by request rate."""
    result = lesson(stem)
    return {label: {r.value: r.prediction.metrics for r in result.series(label)} for label in result.labels}


def claims_llm_load_queueing_knee():
    one, batched = _load("llm_load_queueing_knee").values()
    low = one[0.1]
    service = low["ttft_p50_s"] + 127 * low["tpot_p50_s"]  # D: a prefill and 127 decode steps
    assert (low["ttft_p50_s"], low["tpot_p50_s"]) == (
        pytest.approx(35.1e-3, abs=5e-5),
        pytest.approx(7.92e-3, abs=5e-6),
    )
    assert service == pytest.approx(1.04, abs=0.005) and 1 / service == pytest.approx(0.96, abs=0.005)
    assert low["e2e_p50_s"] == pytest.approx(1.04, abs=0.005)
    said = {0.5: 0.586, 0.8: 2.79, 0.9: 7.57}
    for rate, wait in said.items():
        assert one[rate]["queue_mean_s"] == pytest.approx(wait, rel=0.005)
    mdl = {0.5: 0.563, 0.8: 2.58, 0.9: 7.7}  # M/D/1's rho D / (2 (1 - rho)), rho = rate x D
    for rate in (0.5, 0.7, 0.8, 0.9):
        rho = rate * service
        formula = rho * service / (2 * (1 - rho))
        assert one[rate]["queue_mean_s"] == pytest.approx(formula, rel=0.12)  # "within about 10 %"
        if rate in mdl:
            assert formula == pytest.approx(mdl[rate], rel=0.01)
    assert one[0.1]["ttft_p99_s"] == pytest.approx(1.03, abs=0.005)
    assert one[0.9]["ttft_p99_s"] == pytest.approx(28.8, abs=0.05)
    top = batched[0.9]
    assert top["e2e_p50_s"] == pytest.approx(1.09, abs=0.005) and top["queue_mean_s"] == pytest.approx(
        2.9e-3, abs=5e-5
    )
    assert top["ttft_p99_s"] == pytest.approx(65.8e-3, abs=5e-5)


def claims_llm_load_continuous_batching():
    static, continuous = _load("llm_load_continuous_batching").values()
    assert [static[r]["requests_per_s"] for r in (2, 4, 8, 16)] == [pytest.approx(1.5, abs=0.04)] * 4
    assert static[2]["requests_per_s"] == pytest.approx(1.53, abs=0.005)
    assert static[2]["e2e_p50_s"] == pytest.approx(54, abs=0.5)
    slow = static[1]
    assert (slow["e2e_p50_s"], slow["ttft_p50_s"]) == (
        pytest.approx(2.91, abs=0.005),
        pytest.approx(1.43, abs=0.005),
    )
    fast = continuous[8]
    assert (fast["requests_per_s"], fast["e2e_p50_s"]) == (
        pytest.approx(7.54, abs=0.005),
        pytest.approx(2.49, abs=0.005),
    )
    assert fast["ttft_p50_s"] == pytest.approx(48.2e-3, abs=5e-5)
    # the bar: >= 2x the requests/s at the same (here a lower) median latency
    assert fast["e2e_p50_s"] < slow["e2e_p50_s"]
    assert fast["requests_per_s"] / slow["requests_per_s"] == pytest.approx(7.7, abs=0.05)
    assert continuous[12]["requests_per_s"] == pytest.approx(9.66, abs=0.005)
    assert continuous[16]["requests_per_s"] == pytest.approx(9.7, abs=0.1)


def claims_llm_load_chunked_prefill():
    whole, chunked = _load("llm_load_chunked_prefill").values()
    a, b = whole[6], chunked[6]
    assert (a["ttft_p50_s"], a["tpot_p99_s"]) == (
        pytest.approx(75.7e-3, abs=5e-5),
        pytest.approx(34.8e-3, abs=5e-5),
    )
    assert (b["ttft_p50_s"], b["tpot_p99_s"]) == (
        pytest.approx(128e-3, abs=5e-4),
        pytest.approx(27.9e-3, abs=5e-5),
    )
    assert 1 - b["tpot_p99_s"] / a["tpot_p99_s"] == pytest.approx(0.20, abs=0.005)
    assert (b["tpot_p50_s"], a["tpot_p50_s"]) == (
        pytest.approx(19.5e-3, abs=5e-5),
        pytest.approx(22e-3, abs=5e-5),
    )
    assert (whole[2]["ttft_p50_s"], chunked[2]["ttft_p50_s"]) == (
        pytest.approx(69.0e-3, abs=5e-5),
        pytest.approx(86e-3, abs=5e-4),
    )
    assert (chunked[8]["e2e_p99_s"], whole[8]["e2e_p99_s"]) == (
        pytest.approx(8.2, abs=0.005),
        pytest.approx(9.53, abs=0.005),
    )
    # the trade at every rate: chunking delays the first token and steadies the tokens after it
    for rate in (2, 4, 6, 8):
        assert chunked[rate]["ttft_p50_s"] > whole[rate]["ttft_p50_s"]
        assert chunked[rate]["tpot_p99_s"] < whole[rate]["tpot_p99_s"]


CLAIMS = {
    "batching_latency_vs_throughput": claims_batching,
    "cluster_allreduce_overlap": claims_cluster_allreduce_overlap,
    "cluster_amdahl_gustafson": claims_cluster_amdahl_gustafson,
    "cluster_pipeline_bubble": claims_cluster_pipeline_bubble,
    "cluster_ring_vs_tree": claims_cluster_ring_vs_tree,
    "conv3x3": claims_conv3x3,
    "cpu_latency_vs_gpu_throughput": claims_cpu_latency_vs_gpu_throughput,
    "cpu_vs_gpu_training": claims_cpu_vs_gpu_training,
    "data_parallel_scaling": claims_data_parallel_scaling,
    "flash_attention": claims_flash_attention,
    "flynn_vector_add": claims_flynn,
    "gpu_offload_crossover": claims_gpu_offload_crossover,
    "gpt2_training_cpu_vs_gpu": claims_gpt2_training,
    "llm_70b_gpus": claims_llm_70b_gpus,
    "llm_batching_decode": claims_llm_batching_decode,
    "llm_kv_cache": claims_llm_kv_cache,
    "llm_load_chunked_prefill": claims_llm_load_chunked_prefill,
    "llm_load_continuous_batching": claims_llm_load_continuous_batching,
    "llm_load_queueing_knee": claims_llm_load_queueing_knee,
    "llm_prefill_vs_decode": claims_llm_prefill_vs_decode,
    "matmul_roofline": claims_matmul_roofline,
    "mlp_sgd_vs_adam": claims_mlp_sgd_vs_adam,
    "mlp_training": claims_mlp_training,
    "pcie_pinned_vs_pageable": claims_pcie,
    "streams_overlap": claims_streams,
    "software_stack": claims_software_stack,
    "systolic_vs_simt": claims_systolic_vs_simt,
}


HEAVY_LESSONS = {
    # lessons that simulate clusters, serving under load or whole models (seconds each): in the
    # full suite, outside the inner loop
    "cluster_allreduce_overlap",
    "llm_load_queueing_knee",
    "cluster_amdahl_gustafson",
    "llm_load_chunked_prefill",
    "cluster_pipeline_bubble",
    "llm_70b_gpus",
    "cpu_vs_gpu_training",
    "llm_load_continuous_batching",
    "llm_kv_cache",
    "llm_batching_decode",
    "data_parallel_scaling",
}


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(path, marks=pytest.mark.slow) if path.stem in HEAVY_LESSONS else path
        for path in scenario_paths(SCENARIOS)
    ],
    ids=lambda p: p.stem,
)
def test_every_lesson_holds_what_it_claims(path):
    scenario = load_scenario(path)
    assert scenario.title and len(scenario.lesson) > 200
    assert path.stem in CLAIMS, "a shipped lesson needs a test of its claims"
    CLAIMS[path.stem]()
    result = lesson(path.stem)
    assert len(result.labels) == len(scenario.cases) >= 2
    assert plots.scenario(result).axes


def test_parse_values():
    assert parse_values("linspace:1:3:3") == [1, 2, 3]
    assert parse_values("linspace:0.5:1.5:3") == [0.5, 1.0, 1.5]
    assert parse_values("logspace:1e3:1e5:3") == [1000, 10000, 100000]
    assert parse_values("logspace:1e3:1e4:3")[1] == 3162
    assert parse_values("range:1:4") == [1, 2, 3]
    assert parse_values("a,b") == ["a", "b"]
    assert parse_values([1, 2]) == [1, 2]
    for bad in ("logspace:1e9:1e3:x", "linspace:1:2", "range:1", "logspace:0:10:3"):
        with pytest.raises(ParsimError, match="malformed values"):
            parse_values(bad)


GOOD = """
title = "t"
lesson = "l"
[defaults]
workload = "vector_add"
device = "laptop-4c-avx2"
[[cases]]
mode = "sisd"
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (GOOD + "colour = 3\n", "'cases.0.colour' extra inputs are not permitted: 3"),
        ("colour = 3\n" + GOOD, "'colour' extra inputs are not permitted"),
        (GOOD.replace('mode = "sisd"', 'mode = "sisd"\ndevise = "x"'), "'cases.0.devise'"),
        (GOOD.replace('title = "t"', "title = = 3"), "malformed TOML"),
        (GOOD.replace('workload = "vector_add"', ""), "'cases.0.workload' is not set"),
        ('title = "t"\nlesson = "l"\ncases = []\n', "'cases'"),
    ],
)
def test_bad_scenarios(text, expected):
    with pytest.raises(ParsimError) as info:
        loads_scenario(text, source="s.toml")
    assert expected in str(info.value) and str(info.value).startswith("s.toml: ")


def test_crossovers_name_overtaking_and_falling_behind():
    # Before: plots had a second crossovers() that dropped "falls behind"; there is one now.
    from parsim.studies.scenarios import crossovers

    series = {"cpu": ([1, 2, 3, 4], [5, 5, 5, 5]), "gpu": ([1, 2, 3, 4], [9, 4, 4, 6])}
    assert crossovers(series) == [(2, "gpu", "cpu"), (4, "cpu", "gpu")]
    assert crossovers({"only": ([1], [1])}) == []
    frame = pandas.DataFrame(
        {"case": ["cpu"] * 4 + ["gpu"] * 4, "x": [1, 2, 3, 4] * 2, "latency_s": [5] * 4 + [9, 4, 4, 6]}
    )
    frame.attrs["grid"] = ["x"]
    marked = [" ".join(t.get_text().split()) for t in parsim.plots.sweep(frame, x="x").axes[0].texts]
    assert marked == ["gpu wins from 2", "cpu wins from 4"]


def test_labels_name_their_cases_fields():
    text = """
title = "t"
lesson = "l"
[defaults]
workload = "data_parallel"
params = { model = "mlp", batch = 64, gpus = 2 }
device = "a100-80gb"
[[cases]]
label = "host over {link}, {model} x{gpus} on {device} with {host}"
[[cases]]
label = "ring over {link} {unknown} {"
params = { sync = "ring" }
link = "nvlink3"
"""
    scenario = loads_scenario(text)
    assert case_labels(scenario) == [
        "host over PCIe 4.0 x16, mlp x2 on A100 SXM4 80 GB with Xeon E5-2630 v3",
        "ring over NVLink 3 {unknown} {",  # unknown names and stray braces stay as written
    ]


def test_retarget_moves_a_lesson_to_other_hardware_sizes_and_ops():
    lesson = load_scenario(SCENARIOS / "gpu_offload_crossover.toml")
    moved = retarget(
        lesson,
        cpu="xeon-8480",
        gpu="h100-pcie",
        host="epyc-9654",
        params={"op": "sigmoid", "streams": 2},
        workloads={"relu": "sigmoid"},
        values=[10, 20],
    )
    cases = [resolve(moved, case) for case in moved.cases]
    assert [(c.workload, c.device, c.host) for c in cases] == [
        ("sigmoid", "xeon-8480", None),
        ("offload", "h100-pcie", "epyc-9654"),
        ("sigmoid", "h100-pcie", "epyc-9654"),
    ]
    assert cases[1].params == {"op": "sigmoid", "streams": 2}  # only the offload takes op and streams
    assert cases[0].params == {} and moved.sweep.values == [10, 20]
    assert case_labels(moved)[1] == "GPU: H2D + sigmoid + D2H (H100 PCIe 80 GB)"
    # the NVLink of a ring case follows the GPU; cases that became identical are kept once
    scaling = load_scenario(SCENARIOS / "data_parallel_scaling.toml")
    assert [resolve(s, c).link for s in [retarget(scaling, gpu="h100-sxm")] for c in s.cases] == [
        None,
        "nvlink4",
    ]
    assert [resolve(s, c).link for s in [retarget(scaling, gpu="t4")] for c in s.cases] == [None, None]
    serving = retarget(load_scenario(SCENARIOS / "batching_latency_vs_throughput.toml"), gpu="t4")
    assert case_labels(serving) == ["Tesla T4, float32", "Tesla T4, float16 tensor cores"]
