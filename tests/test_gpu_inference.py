"""GPU inference mechanisms of issue 26 round 3: 16-bit NCHW transposes as passes of their own, batch
norm in eval mode as one pass, a resident input batch (timm's benchmark.py), and the one-GPU scaling
reference lowered as the G-GPU step is."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parsim
from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.model.kernel import closed_form_s
from parsim.model.library import lower, transposes_on_tensor_cores
from parsim.workloads.base import Kernel, Transfer
from parsim.workloads.conv import ConvShape
from parsim.workloads.registry import make_workload

RESNET50 = {"model": "resnet50", "batch": 8, "train": False, "dtype": "float16", "framework": "eager"}


def _system(device: str = "rtx-4090"):
    return registry.system(device, None, None, 1, None)


def _lowered(params: dict, device: str = "rtx-4090") -> list[Kernel]:
    return lower(make_workload("network", params), _system(device)).kernels


def _conv(kernel: int, stride: int, pass_: str = "fwd", dtype: str = "float16", math: str = "") -> Kernel:
    shape = ConvShape(8, 64, 56, 56, 64, kernel, stride, kernel // 2, pass_)
    n_in, n_out = 8 * 64 * 56 * 56, 8 * 64 * shape.out_height * shape.out_width
    return Kernel.of(
        f"conv {pass_}",
        2.0 * n_out * 64 * kernel**2,
        n_in * 2,
        n_out * 2,
        n_out,
        dtype=dtype,
        matrix=True,
        math=math,
        conv=shape,
        nchw_B=float((n_in + n_out) * 2),
        gemm_mn=(8 * shape.out_height * shape.out_width, 64),
    )


def test_which_nchw_passes_are_transposed():
    spec = _system().compute
    assert transposes_on_tensor_cores(spec, _conv(3, 1))  # a 3x3 convolution on tensor cores
    assert transposes_on_tensor_cores(spec, _conv(1, 2))  # a strided 1x1 (ResNet's downsample)
    assert not transposes_on_tensor_cores(spec, _conv(1, 1))  # one GEMM per image on NCHW
    assert transposes_on_tensor_cores(spec, _conv(1, 1, "dgrad"))  # the backward passes are
    assert not transposes_on_tensor_cores(spec, _conv(3, 1, dtype="float32"))  # no float32 tensor cores
    assert not transposes_on_tensor_cores(spec, _conv(3, 1, dtype="float32", math="tf32"))  # kept inside
    cpu = registry.processor("xeon-8480")
    assert not transposes_on_tensor_cores(cpu, _conv(3, 1))  # oneDNN's reorders are its own rule


def test_nchw_convolution_runs_transposes_around_it_hand_computed():
    kernels = _lowered(RESNET50)
    names = [k.name for k in kernels]
    at = names.index("layer1.0.conv2 fwd")  # 64 -> 64 channels, 3x3 on 56x56, batch 8, float16
    assert names[at - 1 : at + 2] == [
        "layer1.0.conv2 fwd transpose to NHWC",
        "layer1.0.conv2 fwd",
        "layer1.0.conv2 fwd transpose back",
    ]
    source, conv, back = kernels[at - 1 : at + 2]
    plane = 8 * 64 * 56 * 56 * 2  # bytes of the source, and of the destination
    assert source.work.bytes_read == source.work.bytes_written == pytest.approx(plane)
    assert back.work.bytes_read == back.work.bytes_written == pytest.approx(plane)
    assert conv.library.nchw_B == 0 and conv.work.flops == 2 * 8 * 56 * 56 * 64 * 64 * 9
    # the 1x1 convolutions around it stay single GEMMs
    assert "layer1.0.conv1 fwd transpose to NHWC" not in names and "layer1.0.conv3 fwd" in names
    # ResNet-50's 3x3 convolutions, the stem and the three strided downsamples: 16 + 1 + 3
    assert sum(name.endswith("transpose to NHWC") for name in names) == 20
    assert not any("transpose" in k.name for k in _lowered({**RESNET50, "layout": "nhwc"}))


def test_a_transposes_index_arithmetic_is_priced_on_the_integer_pipes_hand_computed():
    """cuDNN's transposes issue 60 integer instructions per element (``transpose_int_ops``) at 64
    results per SM per clock: on an A100 (108 SMs at 1.41 GHz: 9.75e12/s) that is 6.2e-12 s per
    element, 1.5e-12 s per byte moved, slower than its 1.75 TB/s memory (5.7e-13 s per byte read or
    written): the pipes bound the transpose. An RTX 4090's 128 SMs at 2.52 GHz (2.06e13/s) issue them
    faster than its memory streams them, so there the bytes do (a batch of 256: 103 MB, more than
    either L2 holds)."""
    from parsim.model.kernel import closed_form
    from parsim.stack import library_of

    assert library_of(_system("a100-80gb").compute, "").transpose_int_ops == 60
    for device, bound in (("a100-80gb", "compute"), ("rtx-4090", "memory")):
        kernels = _lowered({**RESNET50, "batch": 256}, device)
        source = next(k for k in kernels if k.name == "layer1.0.conv2 fwd transpose to NHWC")
        elements = 256 * 64 * 56 * 56
        assert source.work.int_ops == pytest.approx(60 * elements)
        spec = _system(device).compute
        seconds, leg = closed_form(source, spec, "simt", "roofline")
        rate = spec.cores * 64 * spec.compute_clock_Hz
        assert leg == bound
        assert seconds >= 60 * elements / rate
        if bound == "compute":
            assert seconds == pytest.approx(60 * elements / rate, rel=0.01)
    assert all(k.work.int_ops == 0 for k in _lowered(RESNET50) if "transpose" not in k.name)


def test_the_integer_pipes_add_to_a_kernels_compute_leg():
    from parsim.model.kernel import compute_s
    from parsim.model.rates import execution

    spec = _system("a100-80gb").compute
    kernel = Kernel.of("index arithmetic", 1e9, 0.0, 0.0, 10**6, int_ops=3e9)
    ex = execution(spec, "simt", kernel)
    assert ex.core_int_per_s == pytest.approx(64 * 1.41e9)
    alone = compute_s(ex, 1e9, 0.0, 10**6, 1.0, ex.cores)
    pipes = 108 * 64 * 1.41e9  # the A100's integer results per second
    assert compute_s(ex, 1e9, 0.0, 10**6, 1.0, ex.cores, 3e9) == pytest.approx(alone + 3e9 / pipes)
    older = registry.processor("gtx-1080")  # no integer rate modelled there: the work costs nothing
    assert execution(older, "simt", kernel).core_int_per_s == float("inf")


def test_transposes_add_to_the_convolution_instead_of_hiding_under_it():
    """VGG-16's compute-bound 3x3 convolutions in NCHW take at least the NHWC time plus the
    transposes' memory time ([CL]: 472.9 ms against 352.5 ms per 1,024 images on an RTX 4090)."""
    params = {**RESNET50, "model": "vgg16", "batch": 64, "input": "resident"}
    spec = _system().compute
    transposes = sum(
        closed_form_s(k, spec, "simt", "roofline") for k in _lowered(params) if "transpose" in k.name
    )
    nchw = parsim.predict("network", params, device="rtx-4090").latency_s
    nhwc = parsim.predict("network", {**params, "layout": "nhwc"}, device="rtx-4090").latency_s
    assert transposes > 0.1 * nhwc
    assert nchw >= nhwc + 0.95 * transposes


@settings(max_examples=10, deadline=None)
@given(batch=st.integers(1, 64), model=st.sampled_from(["resnet18", "resnet50", "vgg16"]))
def test_transposes_never_make_nchw_faster(batch, model):
    """Whatever the network and batch, its NCHW program on tensor cores never runs faster than its
    NHWC program: the transposes only add passes."""
    params = {**RESNET50, "batch": batch, "model": model, "input": "resident"}
    nchw = parsim.predict("network", params, device="a100-80gb").latency_s
    nhwc = parsim.predict("network", {**params, "layout": "nhwc"}, device="a100-80gb").latency_s
    assert nchw >= nhwc


def test_batch_norm_in_eval_mode_is_one_pass_hand_computed():
    def bn(train: bool) -> Kernel:
        kernels = make_workload("network", {**RESNET50, "train": train}).kernels
        return next(k for k in kernels if k.name == "bn1 fwd")

    elements = 8 * 64 * 112 * 112  # the stem's output, float16
    inference, training = bn(False), bn(True)
    assert inference.work.bytes_read == inference.work.bytes_written == elements * 2
    assert inference.work.flops == 2 * elements  # x * scale + shift
    assert training.work.bytes_read == 2 * elements * 2  # the statistics pass reads x once more


def test_resident_input_crosses_no_link():
    copied = make_workload("network", RESNET50)
    resident = make_workload("network", {**RESNET50, "input": "resident"})
    h2d = [op for op in copied.ops if isinstance(op, Transfer) and op.direction == "h2d"]
    assert [op.name for op in h2d] == ["h2d input"] and h2d[0].nbytes == 8 * 3 * 224 * 224 * 2
    assert not any(isinstance(op, Transfer) and op.direction == "h2d" for op in resident.ops)
    assert len(resident.ops) == len(copied.ops) - 1
    with pytest.raises(ParsimError, match="input"):
        parsim.predict("network", {**RESNET50, "input": "pinned"}, device="t4")


def test_resident_input_saves_exactly_the_copy_when_the_link_sets_the_pace():
    params = {**RESNET50, "batch": 256, "model": "resnet18"}
    copied = parsim.predict("network", params, device="rtx-4090")
    resident = parsim.predict("network", {**params, "input": "resident"}, device="rtx-4090")
    assert resident.latency_s < copied.latency_s
    assert copied.latency_s - resident.latency_s == pytest.approx(copied.breakdown["transfer"], rel=0.05)


def test_scaling_reference_is_lowered_as_the_step():
    """A data-parallel step whose kernels gain transposes at lowering is compared with one GPU running
    the same lowered kernels: weak scaling over NVLink stays near 1, as it was without them."""
    params = {"model": "resnet50", "batch": 256, "gpus": 2, "sync": "ring", "scaling": "weak"}
    p = parsim.predict("data_parallel", {**params, "dtype": "float16"}, device="a100-80gb", link="nvlink3")
    assert 0.9 < p.metrics["efficiency"] <= 1.0


def test_a_transposed_pass_in_a_step_with_waits_stays_in_its_streams_chain():
    """A data-parallel step waits on its gradients, so its ops carry waits; the transposes around a
    16-bit NCHW pass follow it on the same stream, which orders them: they wait for nothing of their
    own and run in the stream's chain (before: a wait each, and 40x the events for the same times)."""
    base = {"model": "resnet18", "batch": 16, "gpus": 2, "dtype": "float16", "sync": "ring"}
    nchw = parsim.predict("data_parallel", {**base, "layout": "nchw"}, device="a100-80gb")
    nhwc = parsim.predict("data_parallel", {**base, "layout": "nhwc"}, device="a100-80gb")
    assert nchw.events == nhwc.events
    assert nchw.latency_s > nhwc.latency_s  # the transposes still take their time


def test_a_hardware_file_keeps_or_refuses_the_integer_rate():
    from parsim.hardware.tomlio import dumps_hardware, loads_hardware

    text = dumps_hardware(registry.processor("a100-80gb"))
    assert "int_per_core_per_cycle = 64" in text
    assert loads_hardware(text).int_per_core_per_cycle == 64
    with pytest.raises(ParsimError, match=r"'int_per_core_per_cycle' must be in \[0.001, 100000\]: 0"):
        loads_hardware(text.replace("int_per_core_per_cycle = 64", "int_per_core_per_cycle = 0"))
    older = dumps_hardware(registry.processor("gtx-1080"))  # not modelled: left out, read back as None
    assert "int_per_core_per_cycle" not in older and loads_hardware(older).int_per_core_per_cycle is None


def test_flashattention_1_runs_at_hoppers_legacy_share_hand_computed():
    """FlashAttention 1 issues Ampere's mma.sync: on an H100 its products run at 0.48 of the share it
    reaches elsewhere ([FA3]: FlashAttention-2's 35 % of an H100's peak against [FA2]'s 73 % of an
    A100's); FlashAttention-2 and cuDNN's fused attention ("flash") have Hopper kernels."""
    from parsim.model.rates import execution

    def rate(device: str, kind: str) -> float:
        spec = registry.processor(device)
        product = Kernel.of(
            "attention", 1e12, 1e6, 1e6, 10**6, dtype="bfloat16", matrix=True, fused_attention=kind
        )
        return execution(spec, "simt", product).core_flops_per_s

    h100, a100 = registry.processor("h100-sxm"), registry.processor("a100-80gb")
    assert h100.legacy_mma_share == 0.48 and a100.legacy_mma_share == 1.0
    # a fused attention kernel is no cuBLAS product: its share is of the tensor peak per SM
    assert rate("h100-sxm", "flash-v1") == pytest.approx(989.4e12 / 132 * 0.22 * 0.48)
    assert rate("h100-sxm", "flash") == pytest.approx(989.4e12 / 132 * 0.44)
    assert rate("a100-80gb", "flash-v1") == pytest.approx(312e12 / 108 * 0.22)


def test_a_network_served_over_two_gpus_splits_each_pass_and_its_transposes():
    """``serve ... --gpus 2`` gives each GPU half of every op, its main-memory bytes and its
    convolution's images (it was refused: a weight cast's cold bytes stayed whole)."""
    from parsim.workloads.multi import split_over_gpus

    params = {"model": "resnet50", "batch": 64, "dtype": "float16"}
    assert parsim.predict("serve", params, device="a100-80gb", gpus=2).gpus == 2
    whole = make_workload("serve", params)
    halves = split_over_gpus(whole, 2, "batch")
    conv = next(k for k in whole.kernels if k.library.conv is not None and k.library.nchw_B)
    split = [k for k in halves.kernels if k.name == conv.name]
    assert [k.device for k in split] == [0, 1]
    for half in split:
        assert half.library.conv.batch == conv.library.conv.batch // 2
        assert half.library.nchw_B == conv.library.nchw_B / 2
        assert half.access.cold_bytes == conv.access.cold_bytes / 2 <= half.bytes
    on_each = lower(halves, registry.system("a100-80gb", None, None, 2, None)).kernels
    name = f"{conv.name} transpose to NHWC"
    transposes = [k for k in on_each if k.name == name]
    (alone,) = [k for k in lower(whole, _system("a100-80gb")).kernels if k.name == name]
    assert len(transposes) == 2 and all(k.work.int_ops == alone.work.int_ops / 2 for k in transposes)
