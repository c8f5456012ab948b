"""A convolution as one matrix product per filter tap: what ``parsim measure conv2d`` runs on CuPy.

CuPy 14 has no cuDNN, so the measurement writes the convolution with ``tensordot``: for each of the
``kernel**2`` taps ``(i, j)`` it multiplies the filters' weights at that tap (``filters x
channels``) with the input shifted by ``(i, j)`` and adds the product into the output. Each tap is
a handful of kernels, exactly as CuPy runs them (``cupy/linalg/_product.py`` ``tensordot`` and
``_core/_routines_linalg.pyx`` ``tensordot_core``):

1. the tap's weights ``w[:, :, i, j]`` are strided (every ``kernel**2``-th value): cuBLAS needs a
   contiguous operand, so CuPy copies them (``filters x channels`` values; not for a 1x1 filter,
   whose slice is already column-major);
2. the shifted window, moved to ``(channels, batch, height, width)``, cannot be reshaped to the
   ``channels x (batch height width)`` operand without a copy: one elementwise copy of the whole
   input (not when a 1x1 window over one image or one channel is already that matrix);
3. the product itself, ``2 (b h w) f c`` FLOPs through cuBLAS, written to a new array;
4. ``out += product``: an elementwise add reading two outputs' worth and writing one.

Before the taps the output is zeroed (``fill(0)`` on a contiguous array is a memset: stores
only). So a 3x3 layer is 37 kernels where cuDNN runs one, and it moves the output ``3 x 9``
times through memory: that, and the host's calls, not the FLOPs, is its time.
"""

from __future__ import annotations

from parsim.dtypes import itemsize
from parsim.workloads.base import Kernel, Params
from parsim.workloads.ops import elementwise_parts, gemm_kernel


def _copy(name: str, n: int, dtype: str, written: bool = True) -> Kernel:
    """An elementwise copy of ``n`` values (a fill when nothing is read)."""
    size = itemsize(dtype)
    read = n * size if written else 0.0
    return Kernel(name, 0.0, read, n * size, max(1, n), dtype=dtype)


def tap_gemm_kernels(params: Params, math: str) -> tuple[Kernel, ...]:
    """The kernels of a same-padded stride-1 convolution computed tap by tap (module docstring)."""
    b, c, h, w = params["batch"], params["channels"], params["height"], params["width"]
    f, r, dtype = params["filters"], params["kernel"], params["dtype"]
    pixels, outputs = b * h * w, f * b * h * w
    window_is_matrix = r == 1 and min(b, c) == 1
    add = elementwise_parts("vector_add", outputs, dtype)[0]
    kernels = [_copy("out = 0", outputs, dtype, written=False)]  # a memset: nothing read
    for i in range(r):
        for j in range(r):
            tap = f"tap {i},{j}"
            if r > 1:
                kernels.append(_copy(f"{tap}: copy weights", f * c, dtype))
            if not window_is_matrix:
                kernels.append(_copy(f"{tap}: copy window", b * c * h * w, dtype))
            kernels.append(gemm_kernel(pixels, f, c, dtype, f"{tap}: window @ weights", math=math))
            kernels.append(Kernel(**{**add, "name": f"{tap}: out += product", "op": ""}, dtype=dtype))
    return tuple(kernels)


def tap_gemm_footprint_B(params: Params) -> float:
    """The padded input, the weights, the output, one product and one copied window."""
    b, c, h, w = params["batch"], params["channels"], params["height"], params["width"]
    f, r = params["filters"], params["kernel"]
    pad = r // 2
    values = b * c * (h + 2 * pad) * (w + 2 * pad) + f * c * r * r + 2 * f * b * h * w + b * c * h * w
    return values * itemsize(params["dtype"])
