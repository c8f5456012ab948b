"""Torch7's ReLU on a CPU is THNN's serial Threshold loop (issue 26 item 8, the Torch7 CPU rows).

THNN's ``Threshold`` is a ``TH_TENSOR_APPLY`` of ``if (x <= 0) x = 0``: one thread, one element
at a time, a branch on each sign. Its library preset prices that as ``serial_sign_test_cycles``
per element on one core; a library that vectorises and threads ReLU (oneDNN, cuDNN) is not
touched by the kernel's ``sign_test`` hint. Answers are hand-computed from the presets' figures.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsim.hardware.registry import processor
from parsim.methods.predict import predict
from parsim.model.kernel import kernel_time_s
from parsim.model.rates import execution
from parsim.stack import presets
from parsim.workloads.base import Kernel

E5 = processor("dual-xeon-e5-2630v3")  # 16 cores at 2.6 GHz, 20 GB/s from one core


def relu(n: int, library: str, sign_test: bool = True) -> Kernel:
    """An in-place ReLU forward over ``n`` float32 elements (reads and writes each once)."""
    return Kernel.of("relu fwd", n, 4.0 * n, 4.0 * n, n, cpu_library=library, sign_test=sign_test)


def test_the_thnn_relu_runs_on_one_core_one_lane_at_the_sign_tests_rate():
    ex = execution(E5, "mimd+simd", relu(10**6, "thnn"))
    assert (ex.cores, ex.lanes) == (1, 1)
    assert ex.core_op_rate == pytest.approx(2.6e9 / presets.THNN.serial_sign_test_cycles)


def test_a_million_elements_take_twelve_cycles_each_by_hand():
    # compute: 1e6 x 12 cycles / 2.6 GHz = 4.615 ms; memory: 8 MB from one core at 20 GB/s = 0.4 ms
    seconds, bound = kernel_time_s(relu(10**6, "thnn"), E5, "mimd+simd")
    assert presets.THNN.serial_sign_test_cycles == 12.0
    assert bound == "compute" and seconds == pytest.approx(1e6 * 12 / 2.6e9, rel=1e-9)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 10**8), library=st.sampled_from(["", "onednn"]))
def test_a_vectorised_relu_is_not_moved_by_the_hint(n, library):
    assert kernel_time_s(relu(n, library), E5, "mimd+simd") == kernel_time_s(
        relu(n, library, sign_test=False), E5, "mimd+simd"
    )


def test_on_a_gpu_torch7s_relu_is_cudnns():
    gpu = processor("gtx-1080")
    assert kernel_time_s(relu(10**6, "thnn"), gpu, "simt") == kernel_time_s(
        relu(10**6, "thnn", sign_test=False), gpu, "simt"
    )


def test_every_relu_layer_of_a_torch7_network_on_the_cpu_is_serial():
    params = {"model": "resnet18", "batch": 16, "train": False, "framework": "torch7"}
    layers = predict("network", params, device=E5).layers
    stem = next(layer for layer in layers if layer["name"] == "relu")  # 16 x 64 x 112 x 112 outputs
    assert stem["latency_s"] == pytest.approx(16 * 64 * 112 * 112 * 12 / 2.6e9, rel=1e-9)
    elements = sum(layer["bytes"] / 8 for layer in layers if layer["kind"] == "relu")  # read + write
    relu_s = sum(layer["latency_s"] for layer in layers if layer["kind"] == "relu")
    assert relu_s == pytest.approx(elements * 12 / 2.6e9, rel=1e-9)
