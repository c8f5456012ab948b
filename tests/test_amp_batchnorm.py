"""ResNet-50 under PyTorch AMP on NCHW tensors: batch norm as the framework really runs it.

Known answers are the issue's measurements: measured on an H100 SXM, 2026-11-25, issue #30 (PyTorch
eager, torchvision ResNet-50, autocast, SGD with momentum, batch 256, NCHW, the sum of the
profiler's kernel times): 92 ms per step in float16, 114 ms in bfloat16. Two mechanisms, one per
dtype (``stack.presets`` [CUDNNBN], [PTBN]):

- float16 goes to cuDNN, whose training batch norm on NCHW half-precision tensors transposes them
  to NHWC and back (``LibrarySpec.nhwc_norm_formats``: ``Kernel.nchw_B`` read and written once more);
- bfloat16 never goes to cuDNN: PyTorch's native kernels reduce each channel in one block of 512
  threads, too few to keep device memory busy (Little's law over ``Kernel.threads``).
"""

from __future__ import annotations

import pytest

from parsim import stack
from parsim.analytic import gpu_kernel_s
from parsim.hardware import registry
from parsim.model.kernel import kernel_time_s
from parsim.model.library import choose
from parsim.predict import predict
from parsim.workloads import make_workload
from parsim.workloads.layers import NATIVE_NORM_BLOCK, Layer, layer_kernels
from parsim.workloads.training import numerics_of

H100 = registry.system("h100-sxm", None, None, 1, None)
GPU = H100.gpu
BATCH, CHANNELS, SIDE = 256, 64, 56  # layer1's batch norms of ResNet-50
ELEMENTS = BATCH * CHANNELS * SIDE * SIDE
BN = Layer("bn1", "bn", (CHANNELS, SIDE, SIDE), (CHANNELS, SIDE, SIDE), params=2 * CHANNELS)


def numerics(dtype: str, layout: str = "default", framework: str = "eager"):
    return numerics_of({"dtype": dtype, "math": "default", "framework": framework, "layout": layout})


def norm_kernels(dtype: str, layout: str = "default", train: bool = True):
    forward, backward = layer_kernels(BN, BATCH, numerics(dtype, layout), train, update=False)
    return forward, backward


def as_run(kernel):
    return choose(GPU, "simt", "roofline", kernel)[1]


def test_cudnn_transposes_a_half_precision_nchw_batch_norm_by_hand():
    """Forward: reads x twice, writes y (3 elements of 2 bytes), plus x and y transposed (read and
    written once more: 4 more); backward: 4 elements plus dy, x and dx transposed (6 more)."""
    (forward,), (backward,) = norm_kernels("float16")
    assert as_run(forward).bytes == pytest.approx(7 * 2 * ELEMENTS)
    assert as_run(backward).bytes == pytest.approx(10 * 2 * ELEMENTS)


@pytest.mark.parametrize(
    ("dtype", "layout", "train"),
    [("float32", "default", True), ("float16", "nhwc", True), ("float16", "default", False)],
)
def test_no_transposes_for_float32_channels_last_or_inference(dtype, layout, train):
    forward, backward = norm_kernels(dtype, layout, train)
    for kernel in forward + backward:
        assert as_run(kernel).bytes == kernel.bytes  # as the layer wrote it
        assert kernel.threads == 0


def test_bfloat16_statistics_run_one_block_per_channel_by_hand():
    """64 channels x 512 threads = 32,768 threads, each waiting 1.3 us (the H100's loaded latency)
    for 2 elements at a time: 51.4 M elements / 2 x 1.3 us / 32,768 = 1.02 ms, 29x the 35 us the
    same bytes take at the 2.9 TB/s of device memory."""
    forward, _ = norm_kernels("bfloat16")
    statistics = next(k for k in forward if k.name.endswith("fwd stats"))
    assert statistics.threads == CHANNELS * NATIVE_NORM_BLOCK == 32_768
    by_hand = ELEMENTS / 2 * GPU.memory.loaded_latency_s / 32_768 + GPU.memory.latency_s
    assert by_hand == pytest.approx(1.02e-3, rel=0.01)
    assert kernel_time_s(statistics, GPU, "simt")[0] == pytest.approx(by_hand, rel=1e-6)


def test_the_native_kernels_are_not_transposed_but_the_per_channel_grid_is_slower():
    """bfloat16's native kernels take NCHW as it is, yet at 64 channels they take longer than cuDNN's
    float16 kernels with their transposes."""
    native = [k for ks in norm_kernels("bfloat16") for k in ks]
    library = [k for ks in norm_kernels("float16") for k in ks]
    assert all(as_run(k).bytes == k.bytes for k in native)
    assert gpu_kernel_s(native, H100, None) > 3 * gpu_kernel_s(library, H100, None)


def step_kernel_s(dtype: str) -> float:
    step = make_workload(
        "network",
        {"model": "resnet50", "batch": 256, "train": True, "dtype": dtype, "framework": "eager"},
    )
    return gpu_kernel_s(step.kernels, H100, stack.framework("eager"))


@pytest.mark.parametrize(
    ("dtype", "measured_ms"),
    [("float16", 92.0), ("bfloat16", 114.0)],  # measured on an H100 SXM, 2026-11-25, issue #30
)
def test_resnet50_amp_training_kernel_time_as_measured(dtype, measured_ms):
    """Within 15 % (the model gives 82.8 ms in float16, 114.7 ms in bfloat16, whose native batch
    norm's in-flight elements, ``FrameworkSpec.native_norm_loads``, are fitted to this row; before
    these mechanisms both were 63 ms)."""
    assert step_kernel_s(dtype) * 1e3 == pytest.approx(measured_ms, rel=0.15)


def test_bfloat16_is_slower_than_float16_as_measured():
    """22 ms apart on the H100 (92 and 114 ms): the batch norms alone differ."""
    assert 1.15 <= step_kernel_s("bfloat16") / step_kernel_s("float16") <= 1.5


def test_engine_and_analytic_agree_on_the_per_channel_kernels():
    step = make_workload(
        "network",
        {"model": "resnet50", "batch": 32, "train": True, "dtype": "bfloat16", "framework": "eager"},
    )
    engine, analytic = (predict(step, device="h100-sxm", method=m).latency_s for m in ("engine", "analytic"))
    assert engine == pytest.approx(analytic, rel=0.05)
