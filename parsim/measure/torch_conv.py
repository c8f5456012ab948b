"""cuDNN's convolution, measured through PyTorch: what ``conv2d algorithm=auto`` predicts.

CuPy 14 has no cuDNN module, so on CuPy alone a convolution can only be written as one matrix
product per filter tap (``algorithm=tap-gemm``). Where PyTorch is installed, it calls cuDNN as
every framework does: NCHW tensors, ``torch.backends.cudnn.benchmark = True`` (cuDNN times its
algorithms on the first call for the shape and keeps the fastest, as the model's ``auto`` does),
``torch.backends.cudnn.allow_tf32`` set from ``math``. The first call is made before timing, so the
search is not timed. PyTorch issues on the legacy default stream, the stream CuPy's CUDA events are
recorded on, so the same event timer times it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from parsim.base.errors import ParsimError
from parsim.measure.gpu import TF32_OFF

IMPLEMENTATION = "cuDNN through PyTorch (NCHW, cudnn.benchmark: its fastest algorithm for the shape)"


def import_torch():
    """PyTorch with CUDA, or None where it is missing or has no GPU."""
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def refusal() -> str:
    """Why ``conv2d algorithm=auto`` cannot be measured on CuPy alone, and what to measure instead."""
    return (
        "conv2d algorithm=auto is cuDNN's fastest algorithm, and CuPy 14 has no cuDNN: install PyTorch "
        "with CUDA to measure cuDNN through it, or measure algorithm=tap-gemm (one cuBLAS product per "
        "filter tap, what CuPy runs)"
    )


@contextlib.contextmanager
def _cudnn_settings(torch, tf32: bool) -> Iterator[None]:
    """cuDNN's benchmark mode and TF32 switch for the block, put back afterwards."""
    cudnn = torch.backends.cudnn
    before = (cudnn.benchmark, cudnn.allow_tf32)
    cudnn.benchmark, cudnn.allow_tf32 = True, tf32
    try:
        yield
    finally:
        cudnn.benchmark, cudnn.allow_tf32 = before


def measure(backend, params: dict, budget_s: float):
    """Time cuDNN's convolution: ``(timing, stages, implementation, params as they ran)``.

    Raises:
        ParsimError: PyTorch (with CUDA) is not importable.
    """
    torch = import_torch()
    if torch is None:
        raise ParsimError(refusal())
    b, c, h, w = params["batch"], params["channels"], params["height"], params["width"]
    f, r = params["filters"], params["kernel"]
    dtype = getattr(torch, params["dtype"])
    float32 = params["dtype"] == "float32"
    tf32 = float32 and params["math"] == "tf32" and os.environ.get(TF32_OFF) != "0"
    with _cudnn_settings(torch, tf32):
        images = torch.randn(b, c, h, w, device="cuda", dtype=dtype)
        weights = torch.randn(f, c, r, r, device="cuda", dtype=dtype)

        def run():
            return torch.nn.functional.conv2d(images, weights, padding=r // 2)

        run()  # cuDNN's search for the shape happens here, untimed
        torch.cuda.synchronize()
        timing = backend.time(run, budget_s=budget_s)
    math = "tf32" if tf32 else "ieee"
    how = IMPLEMENTATION + ("; float32 on TF32 tensor cores" if tf32 else "")
    if params["math"] == "tf32" and not tf32:
        how += f" (TF32 not used: {'only float32 has it' if not float32 else TF32_OFF + '=0'})"
    return timing, {}, how, {**params, "math": math}
