"""Serving engines as frameworks (``stack.engines``): their decode kernels' bandwidth share and bytes
in flight, weight-only GEMVs with their dequantisation, and the host work per step and request."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsim import stack
from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.methods.predict import predict
from parsim.methods.serving.steps import ModelSteps
from parsim.model.kernel import closed_form_s
from parsim.model.memory import in_flight_bound_s
from parsim.studies.published import Compared, Row, summary
from parsim.workloads.base import Kernel
from parsim.workloads.quantised import DEQUANT_OPS, WEIGHT_B, quantised
from parsim.workloads.serving import NAME, LlmServeParams, check_llm_serve, weight_B
from tests.systems import TINY_GPU


def gemv(**access: float) -> Kernel:
    """8,000 bytes of weights streamed once, no arithmetic: the memory leg alone."""
    return Kernel.of("gemv", 0.0, 8000.0, 0.0, 1, dtype="float16", cold_bytes=8000.0, **access)


def test_in_flight_bound_by_hand():
    # 2 cores x 1,000 B in flight per 1 us of latency: 2e9 B/s, so 8,000 B take 4 us
    assert in_flight_bound_s(TINY_GPU, 8000.0, 1000.0) == pytest.approx(4e-6)
    assert in_flight_bound_s(TINY_GPU, 8000.0, 0.0) == 0.0


@pytest.mark.parametrize(
    "access, seconds",
    [
        ({}, 1e-6 + 8000 / 1e9),  # latency + bytes at the 1 GB/s bandwidth
        ({"core_in_flight_B": 1000.0}, 1e-6 + 8000 / 1e9),  # 2 GB/s in flight: the bandwidth binds
        ({"core_in_flight_B": 250.0}, 1e-6 + 8000 / 5e8),  # 2 x 250 B per us: 0.5 GB/s binds
        ({"bandwidth_share": 0.5}, 1e-6 + 8000 / 5e8),  # half the bandwidth
    ],
)
def test_a_kernels_share_and_bytes_in_flight_set_its_memory_time(access, seconds):
    assert closed_form_s(gemv(**access), TINY_GPU, "simt", "roofline") == pytest.approx(seconds)


def test_bad_access_values_are_refused_naming_the_field():
    with pytest.raises(Exception, match="bandwidth_share"):
        gemv(bandwidth_share=0.0)
    with pytest.raises(Exception, match="core_in_flight_B"):
        gemv(core_in_flight_B=-1.0)


def test_engine_shares_multiply_by_hand():
    gpt_fast = stack.framework("gpt-fast")
    assert gpt_fast.decode_bandwidth_share(False, "dtype") == pytest.approx(0.8)
    assert gpt_fast.decode_bandwidth_share(True, "int4") == pytest.approx(0.8 * 0.65 * 0.65)
    assert stack.framework("vllm").decode_bandwidth_share(True, "int4") == 1.0
    sglang_03 = stack.framework("sglang-0.3")
    assert sglang_03.serve_step_s(2.6e9, 4) == pytest.approx((5e6 + 4 * 2e5) / 2.6e9)
    assert sglang_03.request_s(2.6e9) == pytest.approx(2.5e7 / 2.6e9)
    # its overlap scheduler hides the step's fixed host work, not the per-sequence work (4 x 77 us)
    sglang = stack.framework("sglang")
    assert sglang.serve_step_s(2.6e9, 4) == pytest.approx(4 * 2e5 / 2.6e9)
    assert sglang.overlap_schedule and not sglang_03.overlap_schedule
    assert sglang.serve_max_running == 4096 and stack.framework("vllm").serve_max_running == 0


def test_a_weight_only_decode_product_is_a_dequantising_gemv_by_hand():
    # one row x 8 inputs -> 4 outputs in float16: 32 weights (64 B), 8 B in, 8 B out
    product = Kernel.of(
        "up",
        64.0,
        80.0,
        8.0,
        4,
        dtype="float16",
        matrix=True,
        gemm_mn=(1, 4),
        cold_bytes=72.0,
    )
    less = 64 * (1 - (18 / 32) / 2)  # Q4_0: 18 bytes per 32 weights instead of 64
    gemm = quantised(product, "q4_0", 2, gemv=False)
    assert (gemm.work.bytes_read, gemm.work.flops, gemm.work.matrix) == (80 - less, 64.0, True)
    row = quantised(product, "q4_0", 2, gemv=True)
    assert row.work.bytes_read == pytest.approx(80 - less)
    assert row.access.cold_bytes == pytest.approx(72 - less)
    assert row.work.flops == pytest.approx(64 + 32 * DEQUANT_OPS["q4_0"])  # 4 operations per weight
    assert (row.work.matrix, row.library.gemm_mn) == (False, None)
    w8a8 = quantised(product, "int8", 2, gemv=True)  # W8A8 stays on the matrix units
    assert (w8a8.work.matrix, w8a8.library.math) == (True, "int8")


def test_gguf_weights_by_hand():
    given = {"model": "llama-2-7b", "weights": "q4_0"}
    params = check_llm_serve(NAME, given, LlmServeParams(**given).model_dump())
    from parsim.workloads.llms import llm

    config = llm("llama-2-7b")
    linear = config.layers * (config.attention_params + config.mlp_params)
    assert weight_B(config, params) == pytest.approx(linear * 18 / 32 + (config.params - linear) * 2)
    assert WEIGHT_B["q8_0"] == 34 / 32


def serve(framework: str, device: str = "a100-80gb", **given: object) -> dict:
    params = {"model": "llama-2-7b", "batch": 1, "prompt": 16, "output": 8, "framework": framework, **given}
    return predict("llm_serve", params, device=device).metrics


@pytest.mark.slow
@settings(max_examples=6, deadline=None)
@given(
    batch=st.integers(1, 8),
    device=st.sampled_from(["a100-pcie-80gb", "h100-pcie", "rtx-4090", "rtx-3090"]),
    weights=st.sampled_from(["dtype", "q4_0"]),
)
def test_an_engine_never_decodes_faster_than_the_librarys_streaming_kernels(batch, device, weights):
    for engine in ("llama.cpp", "gpt-fast"):
        if engine == "gpt-fast" and weights == "q4_0":
            continue
        slower = serve(engine, device, batch=batch, weights=weights)["time_per_output_token_s"]
        assert slower >= serve("cuda-graph", device, batch=batch, weights=weights)["time_per_output_token_s"]


def test_llamacpp_reaches_half_an_hbm_gpus_bandwidth_and_most_of_a_gddr_cards():
    # float16 7B at batch 1: llama.cpp's GEMVs keep 3.7 KB in flight per SM (stack.engines)
    hbm = serve("llama.cpp", "a100-pcie-80gb")["time_per_output_token_s"]
    assert hbm > 1.5 * serve("cuda-graph", "a100-pcie-80gb")["time_per_output_token_s"]
    gddr = serve("llama.cpp", "rtx-4090")["time_per_output_token_s"]
    assert gddr < 1.1 * serve("cuda-graph", "rtx-4090")["time_per_output_token_s"]


def test_the_engines_step_work_adds_to_every_decode_step_by_hand():
    clock = registry.system("a100-80gb").host.clock_Hz
    step = stack.framework("sglang-0.3").serve_step_s(clock, 4)
    plain = serve("cuda-graph", batch=4)["time_per_output_token_s"]
    # the compiled twin: the same host work, no kernel floor (the uncompiled engine's is tested below)
    compiled = serve("sglang-0.3+compile", batch=4)["time_per_output_token_s"]
    assert compiled == pytest.approx(plain + step, rel=1e-9)


def test_the_engines_request_work_adds_to_each_time_to_first_token_by_hand():
    # a handful of requests far apart: no queueing, so the front end's time adds as it is
    load = {"model": "llama-2-7b", "rate": 0.001, "requests": 4, "prompt": 64, "output": 8, "gpus": 1}
    clock = registry.system("a100-80gb").host.clock_Hz
    plain = predict("llm_load", {**load, "framework": "cuda-graph"}, device="a100-80gb").metrics
    # the compiled twin: the uncompiled engine's kernel floor would lengthen the prefill's small kernels
    sglang = predict("llm_load", {**load, "framework": "sglang+compile"}, device="a100-80gb").metrics
    engine = stack.framework("sglang+compile")
    request, step = engine.request_s(clock), engine.serve_step_s(clock, 1)  # one sequence per step
    # the prefill's scheduling is one more host op (its dispatch too); each decode step waits for
    # the one sequence's host work (under the 5 ms switch interval: all of it), and its attention
    # reads the cache at the engine's share: the two priced decode steps at the request's mean
    # context (7 steps over 64..70 cached tokens, affine in the context) differ by both
    dispatch = registry.system("a100-80gb").host.dispatch_s
    assert sglang["ttft_p50_s"] == pytest.approx(plain["ttft_p50_s"] + request + step + dispatch, rel=1e-5)

    def decode_step(framework: str) -> float:
        return ModelSteps({"model": "llama-2-7b", "framework": framework}, "a100-80gb")(0, 1, 67)

    per_step = decode_step("sglang+compile") - decode_step("cuda-graph")
    assert per_step > step
    assert sglang["tpot_p50_s"] == pytest.approx(plain["tpot_p50_s"] + per_step, rel=1e-6)


@pytest.mark.parametrize(
    "args, message",
    [
        (["framework=llamacpp"], "framework"),
        (["weights=q5_0"], "weights"),
    ],
)
def test_an_unknown_engine_or_format_is_one_line_and_exit_2(cli, args, message):
    code, _out, err = cli("predict", "llm_serve", "model=llama-2-7b", *args, "--device", "a100-80gb")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_decode_mape_is_reported_per_engine_by_hand():
    def compared(engine: str, value: float, predicted: float) -> Compared:
        row = Row(
            "r", "llm-decode", "llm_serve", {"framework": engine}, "a100-80gb", None, None, "x", value, "s"
        )
        return Compared(row, predicted)

    rows = [compared("llama.cpp", 100, 110), compared("llama.cpp", 100, 70), compared("vllm", 50, 55)]
    by_engine = summary(rows)["llm-decode"]["by_engine"]
    assert by_engine == {
        "llama.cpp": {"mape": pytest.approx(0.2), "rows": 2},
        "vllm": {"mape": pytest.approx(0.1), "rows": 1},
    }


def test_every_engine_framework_takes_is_a_preset_and_every_preset_is_taken():
    import typing

    from parsim.stack.engines import SERVING_ENGINES, ServeFramework, engines

    taken = set(typing.get_args(ServeFramework))
    assert taken == {"eager", "graph", "cuda-graph", "xla", *SERVING_ENGINES}
    assert all(stack.framework(name).id == name for name in taken)
    # and every engine preset is one framework= takes (a new +compile twin included)
    built = engines(stack.framework("eager"), stack.framework("cuda-graph"))
    assert {spec.id for spec in built} == set(SERVING_ENGINES)


def test_a_published_row_names_a_compiled_engine_exactly_when_its_run_compiled():
    """``--enable-torch-compile`` in a row's quoted setup <-> a ``+compile`` engine in its parameters."""
    from parsim.studies.published import load_rows

    engines_rows = [row for row in load_rows() if str(row.params.get("framework", "")).startswith("sglang")]
    assert len(engines_rows) >= 50
    for row in engines_rows:
        compiled = str(row.params["framework"]).endswith("+compile")
        assert compiled == ("--enable-torch-compile" in row.detail), row.id


@pytest.mark.parametrize("engine", ["vllm-v0", "sglang", "sglang-0.3"])
def test_an_uncompiled_engine_holds_each_small_kernel_for_the_floor_and_compile_drops_it(engine):
    import attrs

    plain = stack.framework(engine)
    assert plain.floor(1e-7) == pytest.approx(2.8e-6)  # the eager preset's floor, measured on an H100
    if engine == "vllm-v0":  # vLLM's V0 engine had no torch.compile
        with pytest.raises(ParsimError, match="vllm-v0\\+compile"):
            stack.framework("vllm-v0+compile")
        return
    compiled = stack.framework(f"{engine}+compile")
    assert compiled.floor(1e-7) == pytest.approx(1e-7)  # Inductor fused it: its bytes alone
    # nothing else differs: the engine's host work, shares and KV rule are the same engine's
    differs = {
        name for name, value in attrs.asdict(plain, recurse=False).items() if getattr(compiled, name) != value
    }
    assert differs == {"id", "name", "kernel_floor_s"}


def test_the_floor_adds_what_each_small_decode_kernel_lacks_by_hand():
    """A Llama-2 7B decode step on an H100: 7 small kernels a layer (two norms, rotary, the cache
    write, two residual adds, SiLU x up) and the final norm and sampling take under 2.8 us at their
    bytes; the uncompiled engine's step is longer by what they lack of it, the GPU's serial chain
    (within 1 %: the event engine's waves end a little apart from the closed forms)."""
    from parsim.methods.analytic import gpu_kernel_s
    from tests.test_eager import H100, decode_kernels, per_token_s

    plain, compiled = stack.framework("sglang-0.3"), stack.framework("sglang-0.3+compile")
    kernels = decode_kernels("sglang-0.3")
    small = [k for k in kernels if gpu_kernel_s([k], H100, compiled) < plain.kernel_floor_s]
    assert len(small) == 7 * 32 + 2
    lacking = sum(plain.kernel_floor_s - gpu_kernel_s([k], H100, compiled) for k in small)
    floored = gpu_kernel_s(kernels, H100, plain) - gpu_kernel_s(kernels, H100, compiled)
    assert floored == pytest.approx(lacking)
    longer = per_token_s("sglang-0.3", 1, 512) - per_token_s("sglang-0.3+compile", 1, 512)
    assert longer == pytest.approx(lacking, rel=0.01)
