"""A measurement and the prediction beside it are the same program (issue #30, items 2, 3 and 6).

Without a GPU the CuPy path runs on the recording stand-in (``tests/cupy_standin.py``): it records
the cuBLAS compute type every matrix product ran under, so the tests see whether ``math=tf32``
really reached cuBLAS, and that a measurement's ``params`` say what ran.
"""

from __future__ import annotations

import warnings

import pytest

from parsim.base.errors import ParsimError
from parsim.measure.run import measure
from tests import cupy_standin

TF32, FP32, DEFAULT = 7, 4, 1  # CuPy's COMPUTE_TYPE_* (cupy/_core/_routines_linalg.pyx)


@pytest.fixture
def standin(monkeypatch):
    monkeypatch.delenv("CUPY_TF32", raising=False)
    monkeypatch.delenv("NVIDIA_TF32_OVERRIDE", raising=False)
    return cupy_standin.install(monkeypatch)


def matmul(math: str, dtype: str = "float32"):
    return measure("matmul", {"m": 8, "n": 8, "k": 8, "dtype": dtype, "math": math}, "cupy", budget_s=0.001)


# --- item 2: the math mode of float32 products ------------------------------------------------------


def test_tf32_is_applied_to_every_product_and_recorded(standin):
    result = matmul("tf32")
    assert standin.products and {ct for _, ct in standin.products} == {TF32}
    assert result.params["math"] == "tf32"
    assert "TF32 tensor cores" in result.implementation


def test_ieee_is_applied_even_where_cupy_tf32_is_set(standin, monkeypatch):
    monkeypatch.setenv("CUPY_TF32", "1")  # CuPy alone would run every float32 product in TF32
    result = matmul("ieee")
    assert {ct for _, ct in standin.products} == {FP32}
    assert result.params["math"] == "ieee" and "IEEE" in result.implementation


def test_the_process_setting_is_put_back(standin, monkeypatch):
    monkeypatch.setenv("CUPY_TF32", "1")
    matmul("ieee")
    # CuPy's own choice from the environment (TF32) is back for the user's next product
    assert standin.compute_types["float32"] == TF32
    assert [value for kind, value in standin.events if kind == "compute_type"] == [FP32, TF32]


def test_tf32_switched_off_by_the_driver_is_recorded_as_ieee(standin, monkeypatch):
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "0")
    result = matmul("tf32")
    assert result.params["math"] == "ieee"
    assert "NVIDIA_TF32_OVERRIDE=0" in result.implementation


def test_tf32_refused_by_the_gpu_is_recorded_as_ieee(standin, monkeypatch):
    cupy = __import__("sys").modules["cupy"]

    def before_ampere(dtype, compute_type):  # CuPy's behaviour on compute capability < 8.0
        if compute_type == TF32:
            warnings.warn("TF32 is only available on compute capability 8.0 or higher", stacklevel=1)
            compute_type = DEFAULT
        standin.compute_types["float32"] = compute_type

    monkeypatch.setattr(cupy._core, "set_compute_type", before_ampere)
    result = matmul("tf32")
    assert result.params["math"] == "ieee" and "compute capability 8.0" in result.implementation


def test_tf32_on_half_precision_is_recorded_as_what_ran(standin):
    result = matmul("tf32", dtype="float16")
    assert result.params["math"] == "ieee" and "only to float32" in result.implementation
    assert standin.events.count(("compute_type", TF32)) == 0


def test_the_convolution_and_the_mlp_run_in_the_math_asked(standin):
    conv = {"batch": 1, "channels": 2, "height": 5, "width": 5, "filters": 3, "kernel": 3}
    result = measure("conv2d", {**conv, "math": "tf32", "algorithm": "tap-gemm"}, "cupy", budget_s=0.001)
    assert result.params["math"] == "tf32" and {ct for _, ct in standin.products} == {TF32}
    mlp = {"batch": 4, "d_in": 8, "hidden": 4, "d_out": 2}
    result = measure("mlp_train_step", mlp, "cupy", budget_s=0.001)
    assert result.params["math"] == "default"  # PyTorch's default: IEEE matrix products
    assert standin.compute_types["float32"] == DEFAULT  # put back


def test_unknown_math_is_one_line():
    with pytest.raises(ParsimError, match=r"matmul.*'math'.*ieee.*tf32.*'fast'"):
        measure("matmul", {"m": 8, "n": 8, "k": 8, "math": "fast"}, "cupy")


# --- item 3: which convolution ran ------------------------------------------------------------------

SHAPE = {"batch": 2, "channels": 3, "height": 6, "width": 5, "filters": 4, "kernel": 3, "dtype": "float32"}


def test_tap_gemm_is_the_kernels_the_measurement_runs():
    from parsim.workloads.registry import make_workload

    program = make_workload("conv2d", {**SHAPE, "algorithm": "tap-gemm"})
    names = [op.name for op in program.ops]
    # a fill, then per tap (9) in CuPy's order (tensordot_core reshapes the window before it makes
    # the weights cuBLAS-contiguous): copy window, copy weights, product, add
    assert len(names) == 1 + 9 * 4 and names[0] == "out = 0"
    assert names[1:5] == ["tap 0,0: copy window", "tap 0,0: copy weights", "tap 0,0: window @ weights",
                          "tap 0,0: out += product"]  # fmt: skip
    # the products do the convolution's multiply-adds, 2 b h w f c per tap; the adds one per output
    outputs, taps = 2 * 6 * 5 * 4, 9
    assert sum(op.work.flops for op in program.ops if op.work.matrix) == 2 * (2 * 6 * 5) * 4 * 3 * taps
    assert sum(op.work.flops for op in program.ops if not op.work.matrix) == outputs * taps
    # bytes: the fill writes the output; each tap copies 4x3 weights and the 2x3x6x5 window (read and
    # written), the product reads the window and weights and writes the output, the add reads two
    # outputs and writes one (float32)
    per_tap = 2 * 12 + 2 * 180 + (180 + 12 + outputs) + 3 * outputs
    assert sum(op.bytes for op in program.ops) == 4 * (outputs + taps * per_tap)


@pytest.mark.parametrize(("batch", "kernels"), [(1, 1 + 2), (2, 1 + 3)])
def test_a_1x1_tap_copies_only_what_cupy_copies(batch, kernels):
    from parsim.workloads.registry import make_workload

    # a 1x1 weight slice is column-major already; over one image the window is the matrix itself
    program = make_workload("conv2d", {**SHAPE, "kernel": 1, "batch": batch, "algorithm": "tap-gemm"})
    assert len(program.ops) == kernels


def test_a_pinned_algorithm_is_what_runs_and_auto_is_the_fastest():
    import parsim

    shape = {**SHAPE, "batch": 16, "channels": 64, "height": 56, "width": 56, "filters": 64}
    times = {
        algorithm: parsim.predict("conv2d", {**shape, "algorithm": algorithm}, device="v100-sxm2").latency_s
        for algorithm in ("auto", "implicit-gemm", "winograd")
    }
    assert times["auto"] == min(times["implicit-gemm"], times["winograd"])
    assert times["implicit-gemm"] != times["winograd"]


def test_an_algorithm_the_shape_does_not_allow_is_one_line():
    import parsim

    with pytest.raises(ParsimError, match=r"^'algorithm' winograd is not offered by cuDNN .* 1x1 filter .*: "
                       r"choose auto or one of implicit-gemm$"):  # fmt: skip
        parsim.predict("conv2d", {**SHAPE, "kernel": 1, "algorithm": "winograd"}, device="h100-sxm")
    with pytest.raises(ParsimError, match=r"conv2d.*'algorithm'.*auto.*tap-gemm.*'direct'"):
        parsim.predict("conv2d", {**SHAPE, "algorithm": "direct"})


def test_the_measurement_says_tap_gemm_and_predicts_that_program(standin):
    import parsim

    result = measure("conv2d", {**SHAPE, "algorithm": "tap-gemm"}, "cupy", budget_s=0.001)
    assert result.params["algorithm"] == "tap-gemm" and "per filter tap" in result.implementation
    assert len(standin.products) >= 9  # one product per tap at least
    predicted = parsim.predict(result.workload, result.params, device="h100-sxm")
    labels = {event.label for event in predicted.trace}
    assert "issue tap 2,2: out += product" in labels and "issue out = 0" in labels


def test_auto_on_cupy_without_pytorch_is_one_line(standin, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "torch", None)
    with pytest.raises(ParsimError, match=r"^conv2d algorithm=auto .* CuPy 14 has no cuDNN: .*tap-gemm"):
        measure("conv2d", SHAPE, "cupy")
    assert not standin.products  # refused before anything ran


def test_numpy_runs_auto_as_tap_gemm_and_says_so():
    # NumPy has no convolution library: what runs is tap-gemm, and the measurement says so
    measured = measure("conv2d", SHAPE, budget_s=0.001)
    assert measured.params["algorithm"] == "tap-gemm" and "no convolution library" in measured.implementation
    with pytest.raises(ParsimError, match=r"^conv2d algorithm=winograd cannot be measured"):
        measure("conv2d", {**SHAPE, "algorithm": "winograd"})


def fake_torch(calls: list):
    """Just what ``torch_conv`` uses of PyTorch: cuDNN's switches, random tensors, conv2d, synchronize."""
    import types

    import numpy

    cudnn = types.SimpleNamespace(benchmark=False, allow_tf32=True)

    def conv2d(images, weights, padding=0):
        calls.append((cudnn.benchmark, cudnn.allow_tf32, images.shape, weights.shape, padding))
        return images

    return types.SimpleNamespace(
        float32="float32",
        float16="float16",
        backends=types.SimpleNamespace(cudnn=cudnn),
        cuda=types.SimpleNamespace(is_available=lambda: True, synchronize=lambda: calls.append("sync")),
        randn=lambda *shape, device=None, dtype=None: numpy.ones(shape, dtype=dtype),
        nn=types.SimpleNamespace(functional=types.SimpleNamespace(conv2d=conv2d)),
    )


def test_auto_measures_cudnn_through_pytorch(standin, monkeypatch):
    import sys

    calls: list = []
    torch = fake_torch(calls)
    monkeypatch.setitem(sys.modules, "torch", torch)
    result = measure("conv2d", {**SHAPE, "math": "ieee"}, "cupy", budget_s=0.001)
    assert result.params["algorithm"] == "auto" and result.params["math"] == "ieee"
    assert result.implementation.startswith("cuDNN through PyTorch")
    convs = [call for call in calls if call != "sync"]
    # the first call (cuDNN's search) comes before the host waits; then timed calls
    assert calls.index("sync") == 1 and len(convs) > 1
    assert set(convs) == {(True, False, (2, 3, 6, 5), (4, 3, 3, 3), 1)}  # benchmark on, TF32 off, NCHW
    assert (torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32) == (False, True)  # put back
    calls.clear()
    assert measure("conv2d", {**SHAPE, "math": "tf32"}, "cupy", budget_s=0.001).params["math"] == "tf32"
    assert {call[1] for call in calls if call != "sync"} == {True}


# --- item 6: the MLP step measured is the step modelled ---------------------------------------------

MLP = {"batch": 8, "d_in": 16, "hidden": 12, "d_out": 4}


def modelled(params: dict) -> dict:
    """Kernels on the GPU and copies each way in the model's program for ``params``."""
    from parsim.workloads.base import HOST, Kernel, Transfer
    from parsim.workloads.registry import make_workload

    ops = make_workload("mlp_train_step", params).ops
    return {
        "kernel": sum(isinstance(op, Kernel) and op.device != HOST for op in ops),
        "h2d": sum(isinstance(op, Transfer) and op.direction == "h2d" for op in ops),
        "d2h": sum(isinstance(op, Transfer) and op.direction == "d2h" for op in ops),
    }


def one_step(standin, params: dict) -> tuple[dict, list]:
    """What one measured step issues on the GPU, counted by kind, and the host waits."""
    from parsim.measure import backends, gpu, kernels
    from parsim.workloads.registry import validate_params

    checked = validate_params("mlp_train_step", params)
    step = kernels.mlp_train_step(
        backends.CupyBackend(), checked, staging=gpu.HostStaging(backends.CupyBackend(), checked["pinned"])
    )
    standin.events.clear()
    pinned = standin.pinned_live
    step()
    counts = {kind: sum(k == kind for k, _ in standin.events) for kind in ("kernel", "h2d", "d2h")}
    assert standin.pinned_live == pinned  # the host buffers were made once, before the step
    return counts, [kind for kind, _ in standin.events if kind in ("block", "sync")]


@pytest.mark.parametrize("weights", ["resident", "copied"])
def test_the_measured_step_issues_what_the_model_describes(standin, weights):
    params = {**MLP, "weights": weights}
    counts, waits = one_step(standin, params)
    assert counts == modelled(params)
    # resident: 16 kernels (5 products, ReLU, diff, square, sum, 2*diff, mask, mask multiply, 2x2
    # update passes), x and y in, the loss back; copied: the updates run on the host instead
    expected = (
        {"kernel": 16, "h2d": 2, "d2h": 1} if weights == "resident" else {"kernel": 12, "h2d": 4, "d2h": 3}
    )
    assert counts == expected
    # the host waits once, at the end (the loss), never in the middle of the step
    assert waits in (["block"], ["block", "sync"])


def test_a_step_allocates_no_host_memory(standin):
    from parsim.measure import backends, gpu, kernels
    from parsim.workloads.registry import validate_params

    checked = validate_params("mlp_train_step", {**MLP, "weights": "copied"})
    step = kernels.mlp_train_step(
        backends.CupyBackend(), checked, staging=gpu.HostStaging(backends.CupyBackend())
    )
    step()
    pinned = standin.pinned_live
    assert pinned == 4 * (8 * (16 + 4) + 2 * (16 * 12 + 12 * 4))  # x, y, weights, gradients: float32
    for _ in range(3):
        step()
    assert standin.pinned_live == pinned


def test_pageable_copies_are_measured_and_modelled_as_pageable(standin):
    from parsim.workloads.base import Transfer
    from parsim.workloads.registry import make_workload

    result = measure("mlp_train_step", {**MLP, "pinned": False}, "cupy", budget_s=0.001)
    assert result.params["pinned"] is False and "pageable" in result.implementation
    assert standin.pinned_peak == 0
    copies = [op for op in make_workload("mlp_train_step", result.params).ops if isinstance(op, Transfer)]
    assert [op.pinned for op in copies if op.name in ("h2d x", "h2d y")] == [False, False]


def test_the_relu_mask_and_the_update_are_modelled_byte_for_byte():
    from parsim.workloads.registry import make_workload

    ops = {op.name: op for op in make_workload("mlp_train_step", {**MLP, "dtype": "float32"}).ops}
    n = 8 * 12  # batch x hidden
    assert (ops["mask = h > 0"].work.bytes_read, ops["mask = h > 0"].work.bytes_written) == (4 * n, n)
    assert (ops["grad_h *= mask"].work.bytes_read, ops["grad_h *= mask"].work.bytes_written) == (5 * n, 4 * n)
    w1 = 16 * 12
    assert (ops["grad_w1 *= lr"].work.bytes_read, ops["w1 -= grad_w1"].work.bytes_read) == (4 * w1, 8 * w1)
    assert ops["loss = sum(square)"].work.bytes_read == 4 * 8 * 4


def test_adam_is_predicted_but_not_measured():
    with pytest.raises(ParsimError, match=r"^mlp_train_step is measured with SGD .*optimizer=adam"):
        measure("mlp_train_step", {**MLP, "optimizer": "adam"})


def test_the_step_is_recorded_as_numpy_or_cupy_calls_and_predicted_so(standin):
    import parsim

    result = measure("mlp_train_step", {**MLP, "framework": "eager"}, "cupy", budget_s=0.001)
    assert result.params["framework"] == "none"  # CuPy ran it, not PyTorch
    raw = parsim.predict("mlp_train_step", result.params, device="h100-sxm")
    eager = parsim.predict("mlp_train_step", {**result.params, "framework": "eager"}, device="h100-sxm")
    # no framework: each of the 20 ops costs the host one CUDA launch, not PyTorch's dispatch
    assert raw.latency_s < eager.latency_s
    assert measure("mlp_train_step", MLP, budget_s=0.001).params["framework"] == "none"  # NumPy too


def test_every_algorithm_the_library_knows_is_a_choice():
    import typing

    from parsim.workloads.conv import LIBRARY_ALGORITHMS
    from parsim.workloads.standard import Conv2dParams

    choices = typing.get_args(Conv2dParams.model_fields["algorithm"].annotation)
    assert choices == ("auto", *LIBRARY_ALGORITHMS, "tap-gemm")
    assert Conv2dParams.model_fields["algorithm"].default == "auto"  # the library's fastest, as before
