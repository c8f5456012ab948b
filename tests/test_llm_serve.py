"""``llm_serve``: prefill and decode of a language model, against hand-computed bytes and times.

Workloads are built with ``serving.llm_serve`` and predicted with ``parsim.methods.predict.predict``;
the serving metrics come from ``serving_figures.serve_metrics`` on that prediction.
"""

from __future__ import annotations

import pytest

from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.methods.predict import predict
from parsim.model.kernel import kernel_time_s
from parsim.results.serving_figures import check_system, serve_metrics
from parsim.workloads.base import AllReduce, Kernel, Workload
from parsim.workloads.llms import LLMS
from parsim.workloads.serving import NAME, LlmServeParams, check_llm_serve, llm_serve, weight_B

MiB, GiB = 2**20, 2**30


def build(**given: object) -> Workload:
    params = LlmServeParams(**given).model_dump()
    return llm_serve(check_llm_serve(NAME, given, params))


def metrics(workload: Workload, device: str, method: str = "engine") -> dict:
    prediction = predict(workload, device=device, method=method)
    system = registry.system(device, None, None, workload.gpus, None)
    return serve_metrics(workload, system, prediction).as_dict()


def phase(workload: Workload, name: str, device: int = 0) -> list[Kernel]:
    """The kernels of one phase (``prefill`` or ``decode``) on one GPU, sampling excluded."""
    kernels, current = {"prefill": [], "decode": []}, "prefill"
    for op in workload.ops:
        if isinstance(op, Kernel) and op.name.startswith("sample tokens"):
            current = "decode"
        elif isinstance(op, Kernel) and op.device == device:
            kernels[current].append(op)
    return kernels[name]


def test_decode_step_reads_the_weights_and_the_kv_cache_at_the_bandwidth():
    # llama-2-7b, float16, batch 1: a decode step reads every weight but the embedding table
    # (one row is gathered) once: 2 B x (6,738,415,616 - 32000 x 4096), plus the KV cache of the
    # mean step, 512 + 63 cached tokens x 0.5 MiB (2 x 32 layers x 4096 x 2 B).
    workload = build(model="llama-2-7b", batch=1, prompt=512, output=128)
    weights = 2 * (6_738_415_616 - 32000 * 4096)
    cache = (512 + 63) * 0.5 * MiB
    read = sum(k.work.bytes_read for k in phase(workload, "decode"))
    assert read == pytest.approx(weights + cache, rel=0.005)
    # a100-80gb streams 1.75 TB/s: 13.47 GB per token is 7.7 ms
    tpot = metrics(workload, "a100-80gb")["time_per_output_token_s"]
    assert tpot == pytest.approx((weights + cache) / 1.75e12, rel=0.05)


def test_prefill_is_compute_bound_and_decode_memory_bound():
    workload = build(model="llama-2-7b", batch=4, prompt=1024, output=64)
    spec = registry.processor("a100-80gb")
    for name, bound in (("prefill", "compute"), ("decode", "memory")):
        seconds = {"compute": 0.0, "memory": 0.0}
        for kernel in phase(workload, name):
            time_s, leg = kernel_time_s(kernel, spec, "simt")
            seconds[leg] += time_s
        assert seconds[bound] > 0.9 * sum(seconds.values()), (name, seconds)


def test_batching_raises_total_tokens_per_s_and_each_users_latency():
    one = metrics(build(model="llama-2-7b", batch=1, prompt=512, output=128), "a100-80gb")
    many = metrics(build(model="llama-2-7b", batch=32, prompt=512, output=128), "a100-80gb")
    assert many["tokens_per_s"] > 10 * one["tokens_per_s"]
    assert many["tokens_per_s_per_user"] < one["tokens_per_s_per_user"]
    assert many["e2e_latency_s"] > one["e2e_latency_s"]
    assert many["time_to_first_token_s"] > 10 * one["time_to_first_token_s"]  # the prefill is compute
    assert one["tokens_per_s"] == pytest.approx(128 / one["e2e_latency_s"])
    e2e = one["time_to_first_token_s"] + 127 * one["time_per_output_token_s"]
    assert one["e2e_latency_s"] == pytest.approx(e2e)


def test_kv_cache_bytes_by_hand():
    # llama-2-7b: 2 (k and v) x 32 layers x 32 heads x 128 x 2 B = 0.5 MiB per token
    seven = metrics(build(model="llama-2-7b", batch=2, prompt=1000, output=24), "a100-80gb")
    assert seven["kv_cache_bytes"] == 2 * 1024 * 0.5 * MiB
    # llama-2-70b (GQA): 2 x 80 layers x 8 KV heads x 128 x 2 B = 327,680 B per token
    config = LLMS["llama-2-70b"]
    assert 2 * config.layers * config.kv_heads * config.head_dim * 2 == 327_680
    seventy = metrics(build(model="llama-2-70b", batch=4, prompt=100, output=28, gpus=2), "h100-sxm")
    assert seventy["kv_cache_bytes"] == 4 * 128 * 327_680
    # int8 KV cache: one byte per element
    eight = metrics(build(model="llama-2-7b", batch=2, prompt=1000, output=24, kv_dtype="int8"), "a100-80gb")
    assert eight["kv_cache_bytes"] == 1024 * 0.5 * MiB


def test_max_batch_fills_the_memory_left_by_the_weights():
    workload = build(model="llama-2-7b", batch=1, prompt=2048, output=2048)
    most = metrics(workload, "a100-80gb")["max_batch"]
    # 80 GiB - 1 GiB CUDA context - 12.6 GiB of weights leave ~66 GiB for 2 GiB of cache per sequence
    assert 30 <= most <= 33
    fits = build(model="llama-2-7b", batch=most, prompt=2048, output=2048)
    check_system(fits, registry.system("a100-80gb", None, None, 1, None))
    too_many = build(model="llama-2-7b", batch=most + 1, prompt=2048, output=2048)
    with pytest.raises(ParsimError, match=f"batch {most} fits"):
        check_system(too_many, registry.system("a100-80gb", None, None, 1, None))


def test_int4_weights_make_a_memory_bound_decode_faster():
    def tpot(weights: str, method: str) -> float:
        workload = build(model="llama-2-7b", batch=1, prompt=256, output=64, weights=weights)
        return metrics(workload, "a100-80gb", method)["time_per_output_token_s"]

    # the blocks' linears are 6.47 of 6.74 G weights: 2 B -> 0.5 B each cuts the bytes to ~0.28
    assert tpot("int4", "analytic") < 0.35 * tpot("dtype", "analytic")
    assert tpot("int4", "analytic") < tpot("int8", "analytic") < 0.6 * tpot("dtype", "analytic")
    # the engine pads a one-row GEMM to the library's smallest tile, whose multiply-adds then
    # outlast the quarter-size weight reads: still faster, by less
    assert tpot("int4", "engine") < 0.75 * tpot("dtype", "engine")
    config = LLMS["llama-2-7b"]
    linear = config.layers * (config.attention_params + config.mlp_params)
    params = LlmServeParams(weights="int4").model_dump()
    assert weight_B(config, params) == linear * 0.5 + (config.params - linear) * 2


def test_tensor_parallelism_halves_the_weights_and_adds_two_all_reduces_per_layer():
    one = build(model="llama-2-13b", batch=8, prompt=256, output=32)
    two = build(model="llama-2-13b", batch=8, prompt=256, output=32, gpus=2)
    layers = LLMS["llama-2-13b"].layers
    assert two.gpus == 2
    reduces = [op for op in two.ops if isinstance(op, AllReduce)]
    assert len(reduces) == 2 * 2 * layers  # two per layer, in the prefill and the decode step
    assert not any(isinstance(op, AllReduce) for op in one.ops)
    # decode: batch x 1 token x 5120 x 2 B summed after the attention and the MLP
    decode = [op for op in reduces if "(decode)" in op.name]
    assert {op.nbytes for op in decode} == {8 * 5120 * 2}
    assert [op.name for op in decode[:2]] == ["all-reduce h.0.attn (decode)", "all-reduce h.0.mlp (decode)"]
    # each GPU reads half the weights per decode step (norms and attention's cache halve too);
    # the GPUs are symmetric, so GPU 0 is simulated as the representative of both
    read_one = sum(k.work.bytes_read for k in phase(one, "decode"))
    read_two = sum(k.work.bytes_read for k in phase(two, "decode"))
    assert read_two == pytest.approx(read_one / 2, rel=0.01)
    assert not phase(two, "decode", device=1)
    assert len(two.ops) == len(one.ops) + len(reduces)  # ops grow with layers, not with GPUs
    # the all-reduces show in the timeline, on the ring rows
    prediction = predict(two, device="h100-sxm")
    labels = {event.label for event in prediction.trace if event.kind == "transfer"}
    assert "all-reduce h.39.mlp (decode)" in labels
    assert prediction.peer_link == "nvlink4"
    faster = metrics(two, "h100-sxm")["time_per_output_token_s"]
    assert faster < 0.75 * metrics(one, "h100-sxm")["time_per_output_token_s"]


def test_events_grow_with_layers_not_tokens():
    short = build(model="llama-2-7b", batch=4, prompt=128, output=16)
    long = build(model="llama-2-7b", batch=4, prompt=128, output=1024)
    assert len(short.ops) == len(long.ops)
    assert len(build(model="llama-2-13b", batch=4, prompt=128, output=16).ops) > len(short.ops)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["analytic", "engine"])
def test_mean_step_times_steps_equals_the_exact_sum_of_every_step(method):
    # gpt2, batch 32: the KV cache (36 KiB per token) outgrows the weights as the context grows,
    # so the step time grows 3x over the run; the mean step x steps must still be the sum of
    # every step, each predicted alone (its one decode step after a prefill of the tokens before).
    batch, prompt, output = 32, 64, 512
    workload = build(model="gpt2", batch=batch, prompt=prompt, output=output)
    total = metrics(workload, "a100-80gb", method)["time_per_output_token_s"] * (output - 1)
    stride = 7 if method == "analytic" else 73  # the middle step of each run of `stride`, times `stride`
    exact = 0.0
    for step in range(1 + stride // 2, output, stride):
        alone = build(model="gpt2", batch=batch, prompt=prompt + step - 1, output=2)
        exact += stride * metrics(alone, "a100-80gb", method)["time_per_output_token_s"]
    assert total == pytest.approx(exact, rel=0.01)
    first = metrics(build(model="gpt2", batch=batch, prompt=prompt, output=2), "a100-80gb", method)
    assert total / (output - 1) > 1.5 * first["time_per_output_token_s"]  # the steps really grow


def test_engine_and_analytic_agree():
    for workload, device in (
        (build(model="llama-2-7b", batch=16, prompt=512, output=256), "a100-80gb"),
        (build(model="llama-2-13b", batch=8, prompt=1024, output=128, gpus=2), "h100-sxm"),
    ):
        engine, analytic = metrics(workload, device), metrics(workload, device, "analytic")
        for key in ("e2e_latency_s", "time_per_output_token_s", "tokens_per_s"):
            assert engine[key] == pytest.approx(analytic[key], rel=0.05), key


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"model": "llama-2-7"}, "llm_serve: unknown model 'llama-2-7'; did you mean llama-2-7b"),
        (
            {"model": "llama-2-7b", "prompt": 4000, "output": 200},
            "llm_serve: prompt 4000 + output 200 = 4200 tokens are above llama-2-7b's context of 4096 tokens",
        ),
        (
            {"model": "llama-2-70b", "gpus": 3},
            "llm_serve: gpus=3 does not divide llama-2-70b's 64 heads / 8 KV heads",
        ),
    ],
)
def test_bad_parameters_are_refused_in_one_line(given, message):
    with pytest.raises(ParsimError) as error:
        build(**given)
    assert str(error.value).startswith(message)
    assert "\n" not in str(error.value)


def test_a_kv_cache_that_does_not_fit_is_refused_with_the_need():
    # 64 x (2048 + 2048) tokens x 0.5 MiB = 128 GiB of KV cache
    workload = build(model="llama-2-7b", batch=64, prompt=2048, output=2048)
    with pytest.raises(ParsimError) as error:
        check_system(workload, registry.system("h100-sxm", None, None, 1, None))
    assert str(error.value).startswith(
        "llm_serve: needs 128.0 GiB for the KV cache at batch 64 beside 12.6 GiB of weights, "
        "h100-sxm has 80.0 GiB; batch "
    )
    with pytest.raises(ParsimError, match="^llm_serve: needs 128.0 GiB for the KV cache at batch 64"):
        predict(workload, device="h100-sxm")  # predict asks the workload's own check first
    with pytest.raises(ParsimError, match="^llm_serve: needs 128.0 GiB for the KV cache at batch 64"):
        predict(
            "llm_serve",
            {"model": "llama-2-7b", "batch": 64, "prompt": 2048, "output": 2048},
            device="h100-sxm",
        )


@pytest.mark.parametrize(
    ("weights", "device", "message"),
    [
        (
            "float8",
            "a100-80gb",
            "llm_serve: weights=float8 needs FP8 tensor cores; a100-80gb has none "
            "(H100 and later, Ada, MI300X)",
        ),
        ("int8", "v100-sxm2", "llm_serve: weights=int8 needs INT8 tensor cores; v100-sxm2 has none"),
        ("int4", "gtx-1080", "llm_serve: weights=int4 needs int4 weight-only GEMM kernels"),
    ],
)
def test_quantised_weights_need_their_unit(weights, device, message):
    workload = build(model="gpt2", batch=1, prompt=64, output=8, weights=weights)
    with pytest.raises(ParsimError) as error:
        check_system(workload, registry.system(device, None, None, 1, None))
    assert str(error.value).startswith(message)
    check_system(workload, registry.system("h100-sxm", None, None, 1, None))  # Hopper has them all


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["model=lama-2-70b"], "llm_serve: unknown 'model' 'lama-2-70b'; did you mean llama-2-70b"),
        (["model=gpt2", "prompt=1000", "output=100"], "above gpt2's context of 1024 tokens"),
        (["model=llama-2-70b", "gpus=3"], "gpus=3 does not divide llama-2-70b's 64 heads / 8 KV heads"),
        (
            ["model=llama-2-7b", "batch=64", "prompt=2048", "output=2048"],
            "needs 128.0 GiB for the KV cache at batch 64",
        ),
        (
            ["model=llama-2-7b", "weights=float8", "--device", "a100-80gb"],
            "needs FP8 tensor cores; a100-80gb has none",
        ),
        (
            ["model=llama-2-7b", "weights=int4", "--device", "k80"],
            "needs int4 weight-only GEMM kernels; k80 has none",
        ),
    ],
)
def test_bad_input_on_the_command_line_is_one_line_and_exit_2(cli, args, message):
    device = [] if "--device" in args else ["--device", "h100-sxm"]
    code, out, err = cli("predict", "llm_serve", *args, *device)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_the_command_line_reports_the_request_figures_and_sweeps_them(cli):
    code, out, _ = cli(
        "predict",
        "llm_serve",
        "model=llama-2-70b",
        "batch=64",
        "prompt=2048",
        "output=256",
        "gpus=8",
        "--device",
        "h100-sxm",
    )
    assert code == 0
    for label in ("first token", "per output token", "end to end", "tokens/s, all", "KV cache", "max batch"):
        assert label in out
    code, out, _ = cli(
        "sweep",
        "--set",
        "workload=llm_serve",
        "--set",
        "workload.model=llama-2-7b",
        "--set",
        "device=a100-80gb",
        "--grid",
        "workload.batch=1,8,64",
    )
    assert code == 0 and "tokens_per_s" in out and "time_to_first_token_s" in out


def test_quantised_products_run_at_the_devices_int8_and_fp8_rates_where_it_has_them():
    # the issue: int8/float8 change the bytes and, where the device has the unit, the compute
    def first_token(device: str, weights: str) -> float:
        request = {"model": "llama-2-7b", "batch": 8, "prompt": 2048, "output": 2, "weights": weights}
        return predict("llm_serve", request, device=device).metrics["time_to_first_token_s"]

    fp16 = first_token("a100-80gb", "dtype")
    assert fp16 / first_token("a100-80gb", "int8") > 1.4  # 624 INT8 TOPS against 312 FP16 TFLOP/s
    assert first_token("a100-80gb", "int4") == pytest.approx(fp16, rel=0.02)  # weight-only: fp16 products
    assert first_token("a100-80gb", "int8-weight-only") == pytest.approx(fp16, rel=0.02)
    h100 = first_token("h100-sxm", "dtype")
    assert h100 / first_token("h100-sxm", "float8") > 1.4  # 1979 FP8 TFLOP/s against 989
    # an FP8-capable device without a listed FP8 rate multiplies at its float16 rate (bytes only)
    ada = first_token("rtx-4090", "dtype")
    assert first_token("rtx-4090", "float8") == pytest.approx(ada, rel=0.02)


# -- issue 24: the bottleneck of each phase, and the weights' reads on the device-memory row ------


def test_each_phase_is_judged_on_its_own_prefill_compute_decode_memory():
    """The whole program is 78 % compute (the 35 ms prefill outweighs a 7.9 ms step); by phase, a
    512-token prefill on an A100 is compute-bound and a batch-1 decode step memory-bound."""
    from parsim.report.text import bottleneck_sentence, prediction_text
    from parsim.results.serving_figures import phase_bounds

    p = predict(build(model="llama-2-7b"), device="a100-80gb")
    assert p.bottleneck == "compute"
    bounds = {b.phase: b for b in phase_bounds(p)}
    assert set(bounds) == {"prefill", "decode"}
    assert bounds["prefill"].kind == "compute" and bounds["prefill"].share > 0.9
    assert bounds["decode"].kind == "memory" and bounds["decode"].share > 0.95
    # the decode step's busy time is (about) TPOT, the prefill's (about) TTFT
    m = metrics(build(model="llama-2-7b"), "a100-80gb")
    assert bounds["decode"].busy_s == pytest.approx(m["time_per_output_token_s"], rel=0.05)
    assert bounds["prefill"].busy_s == pytest.approx(m["time_to_first_token_s"], rel=0.05)
    sentence = bottleneck_sentence(p)
    assert sentence.startswith("by phase: prefill compute-bound") and "decode memory-bound" in sentence
    assert "phases       prefill compute-bound" in prediction_text(p)


def test_a_workload_of_one_phase_keeps_its_single_bottleneck_sentence():
    from parsim.report.text import bottleneck_sentence
    from parsim.results.serving_figures import phase_bounds
    from parsim.workloads.registry import make_workload

    p = predict(make_workload("vector_add", {"n": 10**8}), device="a100-80gb")
    assert phase_bounds(p) == [] and bottleneck_sentence(p).startswith("memory-bound")


def test_decode_weight_reads_are_drawn_on_the_device_memory_row_not_l2():
    """A decode GEMM's weights are cold bytes from HBM; only its few warm bytes fit in L2."""
    p = predict(build(model="llama-2-7b"), device="a100-80gb")
    rows: dict[str, float] = {}
    for event in p.trace:
        if event.resource.kind == "memory" and getattr(event.op, "phase", "") == "decode":
            rows[event.resource.unit] = rows.get(event.resource.unit, 0.0) + event.end_s - event.start_s
    assert rows["device memory"] > 10 * rows.get("L2", 0.0)
    # 13.5 GB of weights at the A100's ~2 TB/s: several ms on the device-memory row per step
    assert rows["device memory"] > 5e-3
