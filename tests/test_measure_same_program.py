"""A measurement and the prediction beside it are the same program (issue #30, items 2, 3 and 6).

Without a GPU the CuPy path runs on the recording stand-in (``tests/cupy_standin.py``): it records
the cuBLAS compute type every matrix product ran under, so the tests see whether ``math=tf32``
really reached cuBLAS, and that a measurement's ``params`` say what ran.
"""

from __future__ import annotations

import warnings

import pytest

from parsim.errors import ParsimError
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
