"""CPU kernel libraries (issue 26 item 8): an eager convolution's oneDNN reorders as passes of their own,
oneDNN's batch-1 share over a call's output pixels, and the Xeon 8480+'s vector clock."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsim import stack
from parsim.hardware import registry
from parsim.hardware.slices import slice_of
from parsim.methods.predict import predict
from parsim.model.kernel import closed_form_s
from parsim.model.library import lower, reorder_passes
from parsim.workloads.base import Kernel
from parsim.workloads.registry import make_workload

RESNET18 = {"model": "resnet18", "batch": 1, "train": False, "dtype": "float32"}


def _cpu_system(cores: int = 4):
    return registry.system(slice_of(registry.processor("xeon-8480"), cores), None, None, 1, None)


def _lowered(framework: str) -> list[Kernel]:
    workload = make_workload("network", {**RESNET18, "framework": framework})
    return lower(workload, _cpu_system()).kernels


def test_eager_convolution_runs_reorders_around_it_hand_computed():
    kernels = _lowered("eager")
    names = [k.name for k in kernels]
    at = names.index("layer1.0.conv1 fwd")
    assert names[at - 2 : at + 2] == [
        "layer1.0.conv1 fwd reorder weights",
        "layer1.0.conv1 fwd reorder source",
        "layer1.0.conv1 fwd",
        "layer1.0.conv1 fwd reorder back",
    ]
    weights, source, conv, back = kernels[at - 2 : at + 2]
    # 64 -> 64 channels, 3x3, on 56x56 float32: weights 64*64*9*4 B; source and destination 64*56*56*4 B
    assert weights.work.bytes_read == weights.work.bytes_written == 64 * 64 * 9 * 4
    assert weights.access.cold_bytes == 2 * 64 * 64 * 9 * 4  # plain weights from memory, blocked back
    assert source.work.bytes_read == source.work.bytes_written == pytest.approx(64 * 56 * 56 * 4)
    assert back.work.bytes_read == pytest.approx(64 * 56 * 56 * 4)
    assert conv.library.reorder_B == 0 and conv.library.nchw_B == 0  # nothing hidden under the compute
    assert conv.work.flops == 2 * 56 * 56 * 64 * 64 * 9


def test_compiled_graph_runs_no_reorders():
    assert not any("reorder" in k.name for k in _lowered("graph"))
    assert sum("reorder weights" in k.name for k in _lowered("eager")) == 20  # ResNet-18's 20 convolutions


def test_reorders_add_to_the_convolution_instead_of_hiding_under_it():
    """The eager ResNet-18's time grows by at least its reorders' memory time over the graph's
    convolutions: a reorder pass cannot overlap the convolution it feeds."""
    spec = _cpu_system().compute
    eager = _lowered("eager")
    reorders = sum(closed_form_s(k, spec, "mimd+simd", "roofline") for k in eager if "reorder" in k.name)
    convs = [k for k in eager if k.library.conv is not None]
    assert all(k.library.reorder_B == 0 for k in convs)
    assert reorders > 0
    device = slice_of(registry.processor("xeon-8480"), 4)
    with_reorders = predict("network", {**RESNET18, "framework": "eager"}, device=device).latency_s
    assert with_reorders > reorders


@settings(max_examples=25, deadline=None)
@given(
    channels=st.integers(1, 512),
    filters=st.integers(1, 512),
    side=st.integers(7, 112),
    images=st.integers(1, 8),
)
def test_reorder_passes_move_exactly_the_plain_bytes(channels, filters, side, images):
    """Whatever the shape, the reorders move the weights once and every NCHW activation once, and the
    convolution keeps its own FLOPs and bytes."""
    from parsim.workloads.conv import ConvShape

    shape = ConvShape(images, channels, side, side, filters, 3, 1, 1)
    size = 4
    n_in, n_out = images * channels * side * side, images * filters * side * side
    weights = filters * channels * 9 * size
    conv = Kernel.of(
        "conv fwd",
        2.0 * n_out * channels * 9,
        n_in * size + weights,
        n_out * size,
        n_out,
        conv=shape,
        reorder_B=float(weights),
        nchw_B=float((n_in + n_out) * size),
        gemm_mn=(images * side * side, filters),
        matrix=True,
    )
    passes = reorder_passes(conv)
    moved = sum(p.work.bytes_read for p in passes if p.name != "conv fwd")
    assert moved == pytest.approx(weights + (n_in + n_out) * size)
    (kept,) = [p for p in passes if p.name == "conv fwd"]
    assert kept.work == conv.work


def test_onednn_batch_share_hand_computed():
    onednn = attrs.evolve(stack.presets.ONEDNN, batch_half_pixels=100.0)
    assert onednn.conv_share(None, 49, 1) == pytest.approx(49 / 149)  # ResNet's 7x7 stage at batch 1
    assert onednn.conv_share(None, 49, 64) == pytest.approx(3136 / 3236)  # the same stage at batch 64
    assert onednn.conv_share(None) == 1.0  # pixels not known


def test_eager_pays_more_than_the_compiled_graph_on_a_cpu():
    device = slice_of(registry.processor("xeon-8480"), 4)
    eager = predict("network", {**RESNET18, "framework": "eager"}, device=device)
    graph = predict("network", {**RESNET18, "framework": "graph"}, device=device)
    assert eager.latency_s > 1.5 * graph.latency_s  # reorders, batch norms and per-op Python


def test_xeon_8480_vector_clock_is_the_all_core_turbo():
    spec = registry.processor("xeon-8480")
    assert spec.vector_clock_Hz == 3.0e9  # [ARK] all-core turbo: the vector rates
    assert spec.clock_Hz == 2.0e9  # base: what its host work (DGX presets) was fitted at
    # 56 cores x 32 lanes x 2 (FMA) x 3.0 GHz = 10.75 TFLOP/s of float32 vector peak
    assert spec.lane_flops_per_s("float32") * spec.lanes_per_core * spec.cores == pytest.approx(10.752e12)
    assert dict(spec.matrix_flops_per_s)["bfloat16"] == 56 * 1024 * 2.0e9  # AMX stays at the base clock


def test_vector_clock_round_trips_through_a_hardware_toml_and_sets_only_the_vector_rate():
    from parsim.hardware.tomlio import dumps_hardware, loads_hardware

    spec = registry.processor("xeon-8480")
    assert loads_hardware(dumps_hardware(spec)) == spec
    base = attrs.evolve(spec, vector_clock_Hz=None)
    assert spec.lane_flops_per_s() == pytest.approx(1.5 * base.lane_flops_per_s())  # 3.0 / 2.0 GHz
    assert spec.clock_Hz == base.clock_Hz  # the host's issue rate is untouched


def test_bad_vector_clock_is_refused_naming_the_field():
    from parsim.base.errors import ParsimError

    with pytest.raises((ParsimError, ValueError, TypeError)) as info:
        attrs.evolve(registry.processor("xeon-8480"), vector_clock_Hz=-1.0)
    assert "vector_clock_Hz" in str(info.value)
