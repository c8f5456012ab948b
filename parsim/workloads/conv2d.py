"""The convolution workload: one same-padded stride-1 convolution, as the kernel library runs it.

A framework hands the library a convolution and the library picks how to compute it (implicit
GEMM, Winograd, FFT: ``model.library``); parsim's own CuPy measurement instead runs one matrix
product per filter tap (``tap_gemm``). This module builds either program from the parameters.
"""

from __future__ import annotations

from parsim.base.dtypes import itemsize
from parsim.workloads.base import Kernel, Params, Workload
from parsim.workloads.conv import ConvShape
from parsim.workloads.ops import _items, _math
from parsim.workloads.tap_gemm import tap_gemm_footprint_B, tap_gemm_kernels


def conv2d(params: Params) -> Workload:
    """Same-padded stride-1 convolution: as an implicit GEMM, or Winograd or FFT where the library
    finds them faster for the shape and device.

    Every output pixel of every filter is independent ("embarrassingly parallel"): M = batch x
    height x width output pixels, N = filters, K = channels x kernel x kernel. ``algorithm`` pins
    one of the library's algorithms, or ``tap-gemm``: one product per filter tap, as parsim's CuPy
    measurement runs it (``tap_gemm``).
    """
    algorithm = params.get("algorithm", "auto")
    if algorithm == "tap-gemm":
        kernels = tap_gemm_kernels(params, _math(params))
        return Workload(
            name="conv2d", params=_items(params), ops=kernels, footprint_B=tap_gemm_footprint_B(params)
        )
    b, c, h, w = params["batch"], params["channels"], params["height"], params["width"]
    f, r, dtype = params["filters"], params["kernel"], params["dtype"]
    size = itemsize(dtype)
    m, n, k = b * h * w, f, c * r * r
    kernel = Kernel.of(
        name=f"conv{r}x{r} {c}->{f} {h}x{w}",
        flops=2.0 * m * n * k,
        bytes_read=(b * c * h * w + f * c * r * r) * size,
        bytes_written=b * f * h * w * size,
        work_items=m * n,
        dtype=dtype,
        matrix=True,
        python_ops_per_item=k,
        gemm_mn=(m, n),
        math=_math(params),
        conv=ConvShape(b, c, h, w, f, r, 1, (r - 1) // 2, algorithm="" if algorithm == "auto" else algorithm),
    )
    return Workload(name="conv2d", params=_items(params), ops=(kernel,), footprint_B=kernel.bytes)
