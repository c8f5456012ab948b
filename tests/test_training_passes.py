"""A training step's convolution passes as cuDNN runs them (issue 26, training class): the backward
passes' own share of the forward's rate ([DBENCH]) and a 16-bit NCHW pass's transposes as kernels of
their own around it ([NSYS-NCHW])."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsim import stack
from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.methods.predict import predict
from parsim.model.kernel import closed_form_s
from parsim.model.library import lower, transposes_on_tensor_cores
from parsim.model.rates import execution
from parsim.workloads.base import Kernel
from parsim.workloads.layers import Numerics, layer_kernels
from parsim.workloads.net import Layer
from parsim.workloads.registry import make_workload

RESNET50_AMP = {"model": "resnet50", "batch": 32, "train": True, "dtype": "float16", "framework": "eager"}


def _gpu_system(device: str = "a100-80gb"):
    return registry.system(registry.processor(device), None, None, 1, None)


def _conv_passes(dtype: str, layout: str, batch: int = 8) -> dict[str, Kernel]:
    """A 64 -> 64 channel 3x3 convolution on 56 x 56 pixels: its fwd, bwd-data and bwd-weight kernels."""
    layer = Layer(
        "c",
        "conv",
        (64, 56, 56),
        (64, 56, 56),
        params=64 * 64 * 9,
        macs=56 * 56 * 64 * 64 * 9,
        window=3,
        padding=1,
    )
    numerics = Numerics(dtype=dtype, mixed=dtype != "float32", layout=layout, conv_math="tf32")
    forward, backward = layer_kernels(layer, batch, numerics, True, update=False)
    return {k.name.split(" ", 1)[1]: k for k in forward + backward}


def test_backward_share_hand_computed():
    cudnn = attrs.evolve(stack.presets.CUDNN, backward_conv_efficiency=(("dgrad", 0.8), ("wgrad", 0.5)))
    assert cudnn.conv_share("float16", 3136, 8) == 1.0  # the forward at the full rate
    assert cudnn.conv_share("float16", 3136, 8, "dgrad") == 0.8
    assert cudnn.conv_share("tf32", 3136, 8, "wgrad") == pytest.approx(0.40 * 0.5)  # times the TF32 share


def test_backward_passes_run_at_their_share_of_the_forward_rate():
    spec = registry.processor("a100-80gb")
    passes = _conv_passes("float16", "nhwc")
    forward = execution(spec, "simt", passes["fwd"]).core_flops_per_s
    shares = dict(stack.presets.CUDNN.backward_conv_efficiency)
    assert execution(spec, "simt", passes["bwd-data"]).core_flops_per_s == pytest.approx(
        forward * shares["dgrad"]
    )
    assert execution(spec, "simt", passes["bwd-weight"]).core_flops_per_s == pytest.approx(
        forward * shares["wgrad"]
    )


@pytest.mark.parametrize(("pass_", "share"), [("fwd", 0.5), ("dgrad", 0.0), ("wgrad", 1.5)])
def test_backward_share_refuses_bad_values(pass_, share):
    with pytest.raises(ParsimError, match="backward_conv_efficiency"):
        attrs.evolve(stack.presets.CUDNN, backward_conv_efficiency=((pass_, share),))


def test_float16_nchw_pass_runs_between_its_transposes_hand_computed():
    kernels = lower(make_workload("network", {**RESNET50_AMP, "layout": "nchw"}), _gpu_system()).kernels
    names = [k.name for k in kernels]
    at = names.index("layer1.0.conv2 fwd")
    assert names[at - 1 : at + 2] == [
        "layer1.0.conv2 fwd transpose to NHWC",
        "layer1.0.conv2 fwd",
        "layer1.0.conv2 fwd transpose back",
    ]
    there, conv, back = kernels[at - 1 : at + 2]
    # 64 -> 64 channels, 3x3, on 56x56 float16 at batch 32: input and output 32*64*56*56*2 B each
    feature_map = 32 * 64 * 56 * 56 * 2
    assert there.work.bytes_read == there.work.bytes_written == pytest.approx(feature_map)
    assert back.work.bytes_read == back.work.bytes_written == pytest.approx(feature_map)
    assert there.work.flops == back.work.flops == 0
    assert conv.library.nchw_B == 0 and conv.work.flops == 2 * 32 * 56 * 56 * 64 * 64 * 9
    # every pass, less the stem's data gradient and the 33 forward 1x1 stride-1 passes (two per
    # bottleneck, and layer1's downsample), which read NCHW as one GEMM per image
    assert sum("transpose to NHWC" in name for name in names) == 53 * 3 - 1 - 33


def test_channels_last_and_tf32_passes_run_no_transpose_kernels():
    system = _gpu_system()
    nhwc = lower(make_workload("network", {**RESNET50_AMP, "layout": "nhwc"}), system).kernels
    tf32 = {**RESNET50_AMP, "dtype": "float32", "math": "tf32", "layout": "nchw"}
    assert not any("transpose to NHWC" in k.name for k in nhwc)
    assert not any(
        "transpose to NHWC" in k.name for k in lower(make_workload("network", tf32), system).kernels
    )
    cpu = registry.system(registry.processor("xeon-8480"), None, None, 1, None)
    assert not transposes_on_tensor_cores(cpu.compute, _conv_passes("float16", "nchw")["fwd"])


def test_transposes_add_to_the_step_instead_of_hiding_under_the_products():
    """At a batch where the GPU sets the pace, the NCHW step is longer than the channels-last one by
    its transposes' own time: they cannot overlap the products they feed."""
    step = {**RESNET50_AMP, "batch": 256}
    nchw = predict("network", {**step, "layout": "nchw"}, device="a100-80gb").latency_s
    nhwc = predict("network", {**step, "layout": "nhwc"}, device="a100-80gb").latency_s
    spec = registry.processor("a100-80gb")
    kernels = lower(make_workload("network", {**step, "layout": "nchw"}), _gpu_system()).kernels
    transposes = [k for k in kernels if "transpose" in k.name]
    assert all(k.issue.in_library_call for k in transposes)  # launched inside cuDNN's call
    seconds = sum(closed_form_s(k, spec, "simt", "roofline") for k in transposes)
    assert nchw - nhwc == pytest.approx(seconds, rel=0.05)


@settings(max_examples=25, deadline=None)
@given(
    batch=st.integers(1, 64),
    layout=st.sampled_from(["nchw", "nhwc"]),
    dtype=st.sampled_from(["float16", "bfloat16"]),
)
def test_lowering_keeps_every_products_work_and_only_adds_transposes(batch, layout, dtype):
    """Whatever the batch and layout, the lowered passes keep each product's FLOPs and bytes, and the
    transposes move each NCHW activation of the pass once more (read and written)."""
    passes = _conv_passes(dtype, layout, batch)
    spec = registry.processor("h100-sxm")
    for kernel in passes.values():
        lowered = lower(make_workload_of(kernel), registry.system(spec, None, None, 1, None)).kernels
        (kept,) = [k for k in lowered if k.work.flops > 0]
        assert kept.work == kernel.work
        moved = sum(k.work.bytes_read for k in lowered if k is not kept)
        assert moved == pytest.approx(kernel.library.nchw_B if layout == "nchw" else 0.0)


def make_workload_of(kernel: Kernel):
    from parsim.workloads.base import Workload

    return Workload("k", (), (kernel,))
