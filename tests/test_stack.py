"""The software stack: framework host cost, the library's convolution algorithm and GEMM tiling,
TF32, mixed precision, framework memory footprints and sustained clocks."""

from __future__ import annotations

import re

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parsim
from parsim import stack
from parsim.base.errors import ParsimError
from parsim.hardware.presets import PROCESSORS
from parsim.hardware.specs import SystemSpec
from parsim.model.issue import issue_s
from parsim.model.kernel import choose, closed_form_s
from parsim.model.library import GEMM, GEMV_ROWS, IMPLICIT_GEMM, WINOGRAD, candidates, gemm_tiling
from parsim.model.rates import execution
from parsim.stack.array_library import CUPY
from parsim.workloads.base import Kernel
from parsim.workloads.conv import ConvShape
from parsim.workloads.ops import gemm_kernel
from parsim.workloads.registry import make_workload
from tests.systems import TINY_CPU, TINY_GPU, TINY_LINK


def conv_kernel(shape: ConvShape, dtype: str = "float32", math: str = "") -> Kernel:
    m, n, k = shape.gemm_dims()
    size = 2 if dtype == "float16" else 4
    return Kernel.of(
        "conv",
        2.0 * m * n * k,
        (m * k // (shape.kernel**2) + n * k) * size,
        m * n * size,
        m * n,
        dtype=dtype,
        matrix=True,
        gemm_mn=(m, n),
        math=math,
        conv=shape,
    )


LAYER = ConvShape(32, 64, 56, 56, 64, 3, 1, 1)  # a ResNet conv3x3 at batch 32


# --- issuing ops -------------------------------------------------------------------------------


def test_issue_cost_per_framework_hand_computed():
    system = SystemSpec(host=TINY_CPU, device=TINY_GPU, link=TINY_LINK)  # host at 1 GHz, launches of 1 us
    assert issue_s(system, None, on_host=False) == pytest.approx(1e-6)
    eager, graph, replay = (stack.framework(name) for name in ("eager", "graph", "cuda-graph"))
    assert issue_s(system, eager, on_host=False) == pytest.approx(eager.op_cycles / 1e9 + 1e-6)
    assert issue_s(system, graph, on_host=False) == pytest.approx(graph.op_cycles / 1e9 + 1e-6)
    assert issue_s(system, replay, on_host=False) == pytest.approx(0.2e-6)
    assert issue_s(system, stack.framework("mxnet"), on_host=False) == pytest.approx(33_000 / 1e9 + 1e-6)
    # host work beside GPUs (averaging gradients) is a plain NumPy call
    assert issue_s(system, eager, on_host=True) == pytest.approx(1e-6)


def test_a_primitive_op_pays_the_dispatcher_not_a_module_call_hand_computed():
    system = SystemSpec(host=TINY_CPU, device=TINY_GPU, link=TINY_LINK)  # host at 1 GHz, launches of 1 us
    eager = stack.framework("eager")
    mul = Kernel.of("mul", 1.0, 8.0, 4.0, 1, dtype="float32", primitive=True)
    assert issue_s(system, eager, False, mul) == pytest.approx(8_000 / 1e9 + 1e-6)
    # raw calls (no framework): a CuPy elementwise call, whatever the op is inside a model
    assert issue_s(system, None, False, mul) == pytest.approx(CUPY.call_s("elementwise", 1e-6))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("kernel_floor_s", -1e-6, "'kernel_floor_s' must be in [0, 0.001]"),
        ("kernel_floor_s", 1.0, "'kernel_floor_s' must be in [0, 0.001]"),
        ("primitive_cycles", -5.0, "'primitive_cycles'"),
        ("kv_cache_concat", "yes", "'kv_cache_concat'"),
        ("serve_request_pool", (2048,), "'serve_request_pool' must be () or (least, most)"),
        ("serve_request_pool", (4096, 2048), "0 < least <= most: (4096, 2048)"),
    ],
)
def test_bad_framework_fields_are_one_line_errors(field, value, message):
    with pytest.raises(ParsimError, match=re.escape(message)):
        attrs.evolve(stack.framework("eager"), **{field: value})


def test_a_faster_host_issues_faster():
    eager = stack.framework("eager")
    slow = SystemSpec(host=TINY_CPU, device=TINY_GPU, link=TINY_LINK)
    fast = SystemSpec(host=attrs.evolve(TINY_CPU, clock_Hz=2e9), device=TINY_GPU, link=TINY_LINK)
    assert issue_s(fast, eager, False) - 1e-6 == pytest.approx((issue_s(slow, eager, False) - 1e-6) / 2)


def test_unknown_framework_is_one_line():
    with pytest.raises(
        ParsimError,
        match="'framework' must be one of eager, graph, tf1, cuda-graph, torch7, xla, mxnet, "
        "mxnet-cuda-graph, hf, .*: 'jax'",
    ):
        stack.framework("jax")
    with pytest.raises(ParsimError, match="framework"):
        parsim.predict("network", {"model": "resnet50", "framework": "jax"}, device="t4")


def test_batch_one_inference_waits_on_the_host():
    # ResNet-50 at batch 1 in eager PyTorch: the GPU idles behind the host, so the A100, V100 and
    # T4 are within 15 % of each other and a CUDA graph is several times faster.
    rates = {
        device: parsim.predict("network", {"model": "resnet50", "batch": 1, "train": False}, device=device)
        for device in ("t4", "v100-sxm2", "a100-80gb")
    }
    assert all(p.bottleneck == "overhead" for p in rates.values())
    latencies = [p.latency_s for p in rates.values()]
    assert max(latencies) < 1.15 * min(latencies)
    sm = [e for e in rates["a100-80gb"].trace if e.resource.kind == "cores" and e.resource.on_gpu]
    assert sum(e.duration_s for e in sm) < 0.5 * rates["a100-80gb"].latency_s  # the gaps
    graph = parsim.predict(
        "network",
        {"model": "resnet50", "batch": 1, "train": False, "framework": "cuda-graph"},
        device="a100-80gb",
    )
    assert graph.latency_s < rates["a100-80gb"].latency_s / 3


def test_hybridized_mxnet_issues_between_a_tf1_graph_and_a_cuda_graph():
    # DeepLearningExamples' MXNet ResNet-50 on a V100 (mxnet-20.12, float16): 3.48, 3.84, 4.39 and
    # 4.87 ms at batch 1, 2, 4 and 8, a least-squares intercept of 3.43 ms of host time per step
    def latency(framework):
        params = {"model": "resnet50", "batch": 1, "train": False, "dtype": "float16", "framework": framework}
        return parsim.predict("network", params, device="v100-sxm2").latency_s

    mxnet = latency("mxnet")
    assert mxnet == pytest.approx(3.43e-3, rel=0.10)
    assert latency("cuda-graph") < mxnet < latency("graph")


def test_mxnet_with_cuda_graphs_pays_one_step_and_a_replay_share_hand_computed():
    # DeepLearningExamples' 22.10 runner (MXNET_ENABLE_CUDA_GRAPHS=1): no host cost per operator, a
    # fifth of a launch per replayed node, one Python step of 500k cycles (0.5 ms on a 1 GHz host)
    from parsim.model.issue import step_issue_s

    system = SystemSpec(host=TINY_CPU, device=TINY_GPU, link=TINY_LINK)  # host at 1 GHz, launches of 1 us
    replayed = stack.framework("mxnet-cuda-graph")
    assert issue_s(system, replayed, on_host=False) == pytest.approx(0.2e-6)
    assert step_issue_s(system, replayed, index=0, per_instance=10) == pytest.approx(0.5e-3)
    assert step_issue_s(system, replayed, index=3, per_instance=10) == 0.0
    assert replayed.floor(1e-7) == pytest.approx(2.8e-6)  # a tiny kernel still ramps up and drains


def test_cuda_graphs_cut_mxnet_batch_one_on_an_a100_as_published():
    # DeepLearningExamples' MXNet ResNet-50 on an A100 80GB, float16, batch 1: 2.15 ms in mxnet-20.12
    # (no CUDA graphs) and 0.70 ms in mxnet-22.10 (CUDA graphs): a factor of 3.1
    def prediction(framework):
        params = {"model": "resnet50", "batch": 1, "train": False, "dtype": "float16", "framework": framework}
        return parsim.predict("network", params, device="a100-80gb")

    replayed, per_op = prediction("mxnet-cuda-graph"), prediction("mxnet")
    assert replayed.latency_s < per_op.latency_s / 2.5
    # every GPU kernel holds the GPU for at least the floor, after the step's host work
    kernels = {e.op.name for e in replayed.trace if e.resource.kind == "cores" and e.resource.on_gpu}
    step_s = 500_000 / PROCESSORS["xeon-e5-2630v3"].clock_Hz  # the default host, 2.6 GHz
    assert len(kernels) > 150  # ResNet-50's convolutions, batch norms, ReLUs, adds, pool and fc
    assert replayed.latency_s >= step_s + len(kernels) * 2.8e-6


def test_mixed_precision_is_slower_at_batch_one_and_faster_at_256():
    def latency(batch, dtype):
        return parsim.predict(
            "network",
            {"model": "resnet50", "batch": batch, "train": False, "dtype": dtype},
            device="v100-sxm2",
        ).latency_s

    assert latency(1, "float16") > latency(1, "float32")  # autocast's cast kernels, nothing to gain
    assert latency(256, "float16") < latency(256, "float32") / 2  # tensor cores


def test_autocast_adds_casts_and_float32_master_weights():
    mixed = make_workload("network", {"model": "resnet18", "batch": 2, "dtype": "float16"})
    casts = [k for k in mixed.kernels if "cast" in k.name]
    convs_and_linears = 21  # 20 convolutions + the classifier
    assert len(casts) == 2 * convs_and_linears  # weights down before the forward, gradients up after
    updates = [k for k in mixed.kernels if k.name.endswith("update")]
    assert all(k.work.dtype == "float32" for k in updates)


# --- convolution algorithms ----------------------------------------------------------------------


def test_winograd_for_float32_3x3_on_cuda_cores():
    v100 = PROCESSORS["v100-sxm2"]
    name, runs = choose(v100, "simt", "roofline", conv_kernel(LAYER))
    assert name == WINOGRAD
    assert runs.work.flops == pytest.approx(
        conv_kernel(LAYER).work.flops / 2.25
    )  # [LG16] 36 -> 16 multiplies
    offered = dict(candidates(v100, conv_kernel(LAYER)))
    assert closed_form_s(runs, v100, "simt", "roofline") < closed_form_s(
        offered[IMPLICIT_GEMM], v100, "simt", "roofline"
    )


def test_tensor_cores_beat_winograd():
    # float16 on a V100 and TF32 on an A100: the implicit GEMM on tensor cores is fastest
    assert (
        choose(PROCESSORS["v100-sxm2"], "simt", "roofline", conv_kernel(LAYER, "float16"))[0] == IMPLICIT_GEMM
    )
    a100 = PROCESSORS["a100-80gb"]
    assert choose(a100, "simt", "roofline", conv_kernel(LAYER, math="tf32"))[0] == IMPLICIT_GEMM
    assert choose(a100, "simt", "roofline", conv_kernel(LAYER))[0] == WINOGRAD  # IEEE float32


def test_which_shapes_offer_which_algorithms():
    v100 = PROCESSORS["v100-sxm2"]
    one_by_one = ConvShape(32, 256, 56, 56, 64, 1)
    assert [n for n, _ in candidates(v100, conv_kernel(one_by_one))] == [GEMM]
    strided = ConvShape(32, 3, 224, 224, 64, 7, 2, 3)
    assert [n for n, _ in candidates(v100, conv_kernel(strided))] == [IMPLICIT_GEMM]
    five = ConvShape(32, 64, 28, 28, 64, 5, 1, 2)
    assert [n for n, _ in candidates(v100, conv_kernel(five))] == [IMPLICIT_GEMM, "fft"]
    # CPUs: oneDNN offers no Winograd here
    assert [n for n, _ in candidates(PROCESSORS["xeon-8480"], conv_kernel(LAYER))] == [IMPLICIT_GEMM]


def test_json_names_each_layers_algorithm(cli):
    import json

    code, out, _ = cli("predict", "network", "model=vgg16", "batch=8", "--device", "v100-sxm2", "--json")
    data = json.loads(out)
    assert code == 0
    convs = [row for row in data["layers"] if row["kind"] == "conv"]
    # every 3x3 layer but the first's forward (3 input channels: too little work per tile to pay the
    # transforms; a tie on memory keeps implicit GEMM); its weight gradient, at the backward passes'
    # share of the rate (cuDNN's backward_conv_efficiency), is cheaper with Winograd's fewer multiplies
    assert convs[0]["algorithms"] == {"fwd": IMPLICIT_GEMM, "wgrad": WINOGRAD}
    assert all(row["algorithms"] == dict.fromkeys(("fwd", "dgrad", "wgrad"), WINOGRAD) for row in convs[1:])
    assert any("winograd" in note for note in data["notes"])


# --- GEMM tiling ----------------------------------------------------------------------------------


def tiling(device: str, m: int, n: int, k: int, dtype: str = "float32"):
    spec = PROCESSORS[device]
    kernel = gemm_kernel(m, n, k, dtype, "g")
    return gemm_tiling(spec, execution(spec, "simt", kernel), kernel)


def test_large_gemms_take_the_largest_tile():
    chosen = tiling("a100-80gb", 8192, 8192, 8192)
    assert max(chosen.rows, chosen.columns) == 256 and chosen.split == 1


def test_small_gemms_take_small_tiles_or_split_k():
    small = tiling("a100-80gb", 256, 256, 256)
    assert small.rows * small.columns <= 64 * 64  # enough tiles to reach many of the 108 SMs
    skinny = tiling("a100-80gb", 64, 147, 1_000_000)  # a weight gradient reduced over many pixels
    assert skinny.split > 1


@given(rows=st.integers(1, 600), columns=st.integers(64, 20_000))
@settings(max_examples=40, deadline=None)
def test_a_matrix_vector_tile_serves_only_products_thinner_than_a_gemm_tile(rows, columns):
    # cuBLAS's gemv-like kernel (8-row tile) runs a product of a few rows; 32 rows or more run the
    # GEMM tiles (a 35-row product is not five matrix-vector passes)
    chosen = tiling("v100-sxm2", rows, columns, 2048)
    if rows >= GEMV_ROWS:
        assert chosen.rows >= GEMV_ROWS


def test_a_35_row_product_pads_to_a_32_row_tile_on_a_v100():
    # hand count: 35 rows in 32x32 tiles are 2 row tiles (64 padded rows) x ceil(8457/32) = 265
    # column tiles = 530 outputs, as DeepBench's DeepSpeech 35x8457x2048 sgemm runs
    chosen = tiling("v100-sxm2", 35, 8457, 2048)
    assert (chosen.rows, chosen.columns, chosen.outputs) == (32, 32, 530)
    assert (tiling("v100-sxm2", 8, 8457, 2048).rows, tiling("v100-sxm2", 8, 8457, 2048).columns) == (8, 128)


def test_small_fp32_gemm_on_an_a100_takes_microseconds():
    # 128^3 and 256^3 float32: single-digit microseconds of kernel time on an A100 (no plateau of
    # padded 128x128 tiles); 512^3 within 1.5x of the FP32 datasheet peak (19.5 TFLOP/s)
    def kernel_s(edge):
        p = parsim.predict("matmul", {"m": edge, "n": edge, "k": edge}, device="a100-80gb")
        return p.latency_s - p.breakdown["overhead"]

    assert kernel_s(128) < kernel_s(256) < 10e-6
    assert kernel_s(512) < 1.5 * 2 * 512**3 / 19.5e12


# --- TF32 ------------------------------------------------------------------------------------------


def test_tf32_speeds_up_float32_training_on_ampere_only():
    def step(device, math):
        params = {"model": "resnet50", "batch": 64, "math": math}
        return parsim.predict("network", params, device=device).latency_s

    assert step("a100-80gb", "default") < 0.75 * step("a100-80gb", "ieee")
    assert step("v100-sxm2", "default") == pytest.approx(step("v100-sxm2", "ieee"))  # no TF32 on Volta


def test_plain_matmul_keeps_ieee_float32_unless_asked():
    params = {"m": 4096, "n": 4096, "k": 4096}
    ieee = parsim.predict("matmul", params, device="a100-80gb")
    tf32 = parsim.predict("matmul", {**params, "math": "tf32"}, device="a100-80gb")
    assert ieee.flops_per_s < 19.5e12  # the FP32 datasheet peak
    assert tf32.flops_per_s > 5 * ieee.flops_per_s / 2  # 156 TFLOP/s TF32 tensor cores


# --- memory as frameworks allocate it --------------------------------------------------------------


@pytest.mark.parametrize(
    ("device", "batch", "dtype"),
    [("v100-sxm2", 256, "float16"), ("a100-80gb", 640, "float32"), ("a100-80gb", 1280, "float16")],
)
def test_published_large_batches_fit(device, batch, dtype):
    # ResNet-50 training runs people published: AMP 256 on a 16 GB V100, TF32 640 / AMP 1280 on 80 GB
    p = parsim.predict("network", {"model": "resnet50", "batch": batch, "dtype": dtype}, device=device)
    assert p.latency_s > 0


def test_host_memory_holds_what_crosses_the_link_not_every_gpus_footprint():
    params = {"model": "resnet50", "batch": 256, "gpus": 8, "sync": "ring", "scaling": "weak"}
    p = parsim.predict("data_parallel", params, device="a100-80gb", host="xeon-8480")
    assert p.gpus == 8


# --- sustained clocks ------------------------------------------------------------------------------


def test_a_power_capped_t4_runs_long_gemms_below_boost():
    t4 = PROCESSORS["t4"]
    assert t4.sustained_clock_Hz is not None and t4.sustained_clock_Hz < t4.clock_Hz
    p = parsim.predict("matmul", {"m": 4096, "n": 4096, "k": 4096}, device="t4")
    peak = t4.cores * t4.lanes_per_core * 2 * t4.clock_Hz
    expected = peak * t4.matmul_efficiency * t4.sustained_clock_Hz / t4.clock_Hz
    assert p.flops_per_s == pytest.approx(expected, rel=0.05)


def test_the_250_w_a100_pcie_holds_948_mhz_on_gemms_and_full_hbm_bandwidth():
    # The PCIe board is the SXM4 die at 250 W: a long FP16 GEMM runs at 948/1410 = 0.672 of the
    # SXM4's rate (cutlass issue 956: 158 of 235 TFLOP/s), a large copy at the same HBM2 speed.
    gemm = {"m": 8192, "n": 8192, "k": 8192, "dtype": "float16"}
    pcie = parsim.predict("matmul", gemm, device="a100-pcie-40gb")
    sxm = parsim.predict("matmul", gemm, device="a100-40gb")
    assert pcie.flops_per_s / sxm.flops_per_s == pytest.approx(948 / 1410, rel=0.02)
    copy = {"n": 2**28, "dtype": "float32"}
    pcie_copy = parsim.predict("vector_add", copy, device="a100-pcie-40gb")
    sxm_copy = parsim.predict("vector_add", copy, device="a100-40gb")
    assert pcie_copy.latency_s == pytest.approx(sxm_copy.latency_s, rel=0.02)


def test_tf32_on_a_gpu_without_it_says_so():
    p = parsim.predict("matmul", {"m": 1024, "n": 1024, "k": 1024, "math": "tf32"}, device="v100-sxm2")
    ieee = parsim.predict("matmul", {"m": 1024, "n": 1024, "k": 1024}, device="v100-sxm2")
    assert p.latency_s == pytest.approx(ieee.latency_s)
    assert any("no TF32 tensor cores" in note for note in p.notes)
    assert not any("TF32" in note for note in ieee.notes)


def test_bad_framework_and_math_are_usage_errors(cli):
    code, _, err = cli("predict", "network", "model=resnet50", "framework=jax", "--device", "t4")
    assert code == 2 and "framework" in err and "jax" in err
    code, _, err = cli("predict", "matmul", "m=8", "n=8", "k=8", "math=default", "--device", "t4")
    assert code == 2 and "'math'" in err and "'ieee' or 'tf32'" in err


def test_pytorchs_default_math_on_volta_adds_no_tf32_note():
    p = parsim.predict("network", {"model": "resnet18", "batch": 8}, device="v100-sxm2")
    assert not any("TF32" in note for note in p.notes)


# --- a library that runs one GEMM per image (Torch7's THNN) ------------------------------------


def test_conv_share_falls_with_one_images_pixels_hand_computed():
    thnn = attrs.evolve(stack.presets.THNN, conv_efficiency=0.2, per_image_half_pixels=320.0)
    assert thnn.conv_share(None, 49) == pytest.approx(0.2 * 49 / (49 + 320))  # a 7x7 stage: 0.027
    assert thnn.conv_share(None, 3136) == pytest.approx(0.2 * 3136 / 3456)  # a 56x56 stage: 0.181
    assert thnn.conv_share(None) == 0.2  # pixels not known: the flat share
    onednn = stack.presets.ONEDNN  # one call over the whole batch: images x pixels, not one image's
    assert onednn.per_image_half_pixels == 0 and onednn.batch_half_pixels > 0
    assert onednn.conv_share(None, 49, 64) > onednn.conv_share(None, 49, 1)


def test_thnn_runs_late_resnet_stages_slower_per_flop_than_early_ones():
    def rate(shape: ConvShape, library: str) -> float:
        kernel = conv_kernel(shape).but(cpu_library=library)
        return execution(PROCESSORS["dual-xeon-e5-2630v3"], "mimd+simd", kernel).core_flops_per_s

    early, late = ConvShape(16, 64, 56, 56, 64, 3, 1, 1), ConvShape(16, 512, 7, 7, 512, 3, 1, 1)
    thnn = stack.presets.THNN
    share = thnn.per_image_half_pixels
    assert rate(late, "thnn") / rate(early, "thnn") == pytest.approx(
        (49 / (49 + share)) / (3136 / (3136 + share))
    )
    half = stack.presets.ONEDNN.batch_half_pixels  # oneDNN: one call over the batch's 16 images
    assert rate(late, "onednn") / rate(early, "onednn") == pytest.approx(
        (16 * 49 / (16 * 49 + half)) / (16 * 3136 / (16 * 3136 + half))
    )


@given(
    pixels=st.floats(1.0, 1e6),
    more=st.floats(0.0, 1e6),
    half=st.floats(0.0, 1e4),
    share=st.floats(0.01, 1.0),
)
def test_conv_share_grows_with_pixels_and_never_exceeds_the_flat_share(pixels, more, half, share):
    library = attrs.evolve(stack.presets.THNN, conv_efficiency=share, per_image_half_pixels=half)
    small, large = library.conv_share(None, pixels), library.conv_share(None, pixels + more)
    assert 0.0 < small <= large <= share


@pytest.mark.parametrize("device", ["xeon-e5-2630v3", "v100-pcie"])
def test_a_sisd_convolution_is_the_direct_loop_and_says_so(device):
    # Before: a SISD loop was said to run "implicit-gemm (the library's fastest)" (issue 27, 11).
    import parsim

    sisd = parsim.predict("conv2d", {"channels": 64, "filters": 64}, device=device, mode="sisd")
    (note,) = [n for n in sisd.notes if n.startswith("conv3x3 64->64 224x224: ")]
    assert "direct convolution as one scalar loop, 576 multiply-adds per output" in note  # 64 x 3 x 3
    assert "no GEMM" in note and "library's fastest" not in note
    # the loop does the direct convolution's FLOPs: 2 x (224 x 224) x 64 x 576
    assert sisd.flops == 2 * 224 * 224 * 64 * 576
    simd = parsim.predict("conv2d", {"channels": 64, "filters": 64}, device=device, mode="simd")
    assert any("(the library's fastest)" in n for n in simd.notes)


def test_effective_and_executed_flops_are_told_apart_where_winograd_runs():
    # Before: a V100 "achieved" 21 TFLOP/s in float32, above its 14.1 TFLOP/s peak, unexplained.
    import parsim
    from parsim.plots.timelines import roofline
    from parsim.report.text import prediction_text

    p = parsim.predict("conv2d", {"channels": 64, "filters": 64}, device="v100-pcie", method="analytic")
    assert p.flops == 2 * 224 * 224 * 64 * 576 and p.flops / p.executed_flops == pytest.approx(2.25)
    assert p.executed_flops_per_s == pytest.approx(p.flops_per_s / 2.25)
    assert p.to_dict()["executed_flops"] == p.executed_flops
    achieved = next(line for line in prediction_text(p).splitlines() if "achieved" in line)
    assert " TFLOP/s effective (" in achieved and " TFLOP/s executed), " in achieved
    legend = roofline(p, PROCESSORS["v100-pcie"]).axes[0].get_legend()
    labels = [t.get_text() for t in legend.get_texts()]
    assert any(label.endswith(" effective") for label in labels)
    assert any(label.startswith("executed (fewer multiplications): ") for label in labels)


# --- issue 26, round 3: the 2016 Torch7 stack's cuDNN and the H100 PCIe's power cap -------------


def test_torch7_on_a_gpu_calls_cudnn_5_and_every_other_stack_the_current_cudnn():
    assert stack.library_for("gpu", "thnn") is stack.presets.CUDNN5
    assert stack.library_for("gpu") is stack.presets.CUDNN
    assert stack.library_for("gpu", "onednn") is stack.presets.CUDNN
    assert stack.library_for("gpu", "thnn", "rocm") is stack.presets.ROCM  # no Torch7 era on ROCm
    assert stack.library_for("cpu", "thnn") is stack.presets.THNN  # its CPU library is unchanged


@pytest.mark.parametrize("shape", [LAYER, ConvShape(16, 512, 7, 7, 512, 3, 1, 1)])
def test_cudnn_5_runs_a_convolution_at_half_the_current_rate_hand_computed(shape):
    gtx = PROCESSORS["gtx-1080"]
    kernel = conv_kernel(shape)
    torch7 = execution(gtx, "simt", kernel.but(cpu_library="thnn")).core_flops_per_s
    current = execution(gtx, "simt", kernel).core_flops_per_s
    # 128 lanes x 2 FLOP x 1733 MHz per SM, x 0.8 (cuBLAS SGEMM on Pascal), x 0.5 (cuDNN 5.1)
    assert torch7 == pytest.approx(128 * 2 * 1733e6 * 0.8 * 0.5)
    assert torch7 / current == pytest.approx(0.5)
    plain = Kernel.of("gemm", 1e9, 1e6, 1e6, 1000, matrix=True, gemm_mn=(1000, 1000), cpu_library="thnn")
    assert execution(gtx, "simt", plain).core_flops_per_s == pytest.approx(128 * 2 * 1733e6 * 0.8)  # cuBLAS


def test_a_torch7_network_on_a_gpu_is_slower_than_the_same_network_under_another_stack():
    params = {"model": "vgg16", "batch": 16, "train": True}
    torch7 = parsim.predict("network", {**params, "framework": "torch7"}, device="gtx-1080")
    graph = parsim.predict("network", {**params, "framework": "graph"}, device="gtx-1080")
    assert torch7.latency_s > 1.3 * graph.latency_s  # VGG-16 is mostly convolutions


def test_the_350_w_h100_pcie_runs_tensor_gemms_at_0_62_and_cuda_core_gemms_at_0_75_hand_computed():
    h100 = PROCESSORS["h100-pcie"]
    half = Kernel.of("gemm", 1e12, 1e6, 1e6, 10**6, dtype="float16", matrix=True, gemm_mn=(1000, 1000))
    single = half.but(dtype="float32")
    assert execution(h100, "simt", half).flops_per_s == pytest.approx(756e12 * 0.62)
    # 114 SMs x 128 lanes x 2 FLOP x 1755 MHz = 51.2 TFLOP/s on the CUDA cores
    assert execution(h100, "simt", single).flops_per_s == pytest.approx(114 * 128 * 2 * 1755e6 * 0.75)
    sxm = PROCESSORS["h100-sxm"]
    assert execution(sxm, "simt", half).flops_per_s == pytest.approx(989.4e12 * 0.75)  # 700 W: not capped
