"""A convolution as one matrix product per filter tap: what ``parsim measure conv2d`` runs on CuPy.

CuPy 14 has no cuDNN, so the measurement writes the convolution with ``tensordot``: for each of the
``kernel**2`` taps ``(i, j)`` it multiplies the filters' weights at that tap (``filters x
channels``) with the input shifted by ``(i, j)`` and adds the product into the output. Each tap is
a handful of kernels, exactly as CuPy runs them (``cupy/linalg/_product.py`` ``tensordot`` and
``_core/_routines_linalg.pyx`` ``tensordot_core``):

1. the shifted window, moved to ``(channels, batch, height, width)``, cannot be reshaped to the
   ``channels x (batch height width)`` operand without a copy (``_reshape``): one copy of the whole
   input (not when a 1x1 window over one image or one channel is already that matrix);
2. the tap's weights ``w[:, :, i, j]`` are strided (every ``kernel**2``-th value): cuBLAS needs a
   contiguous operand, so CuPy copies them (``_mat_to_cublas_contiguous``: ``filters x channels``
   values; not for a 1x1 filter, whose slice is already column-major);
3. the product itself, ``2 (b h w) f c`` FLOPs through cuBLAS (``gemmEx``), written to a new array;
4. ``out += product``: an elementwise add reading two outputs' worth and writing one.

Before the taps the output is zeroed (``fill(0)`` on a contiguous array is ``cudaMemsetAsync``:
stores only, no CuPy kernel). So a 3x3 layer is 37 kernels where cuDNN runs one, and it moves the
output ``3 x 9`` times through memory: that, and the host's calls, not the FLOPs, is its time.

Three things decide that time, each modelled where it belongs:

- the host: ``tensordot`` is a Python routine around ``tensordot_core`` (axes, two transposes, the
  reshape, the contiguity checks, the copies' arrays, then cuBLAS), a kind of CuPy call of its own
  (``stack.array_library``: ``tensordot``); the product is issued as one (``op="tensordot"``);
- the copies are CuPy's ``elementwise_copy``, a ufunc: one element per thread, one load each, so
  Little's law caps them from device memory as it caps the add (``thread_loads_B``);
- the cache: a kernel alone may fit an H100's 50 MiB L2 (the window's copy of 32x64x56x56 float16
  moves 26 MB), but a tap touches the input, the window's copy, the product and the output before
  it comes back to the input and the output. Every kernel carries that loop's bytes as its
  ``reuse_B``, so a cache serves them warm only where the whole loop fits. (The product reads the
  copy just written, which a cache would still hold; its stores go back to memory all the same.)
"""

from __future__ import annotations

from parsim.base.dtypes import itemsize
from parsim.stack.array_library import CUPY
from parsim.workloads.base import Kernel, Params
from parsim.workloads.ops import elementwise_parts, gemm_kernel


def _copy(name: str, n: int, dtype: str, reuse_B: float) -> Kernel:
    """CuPy's ``elementwise_copy`` of ``n`` values: a ufunc, one element per thread, one load each."""
    size = itemsize(dtype)
    loads = CUPY.thread_loads_B(1, size)
    return Kernel.of(
        name, 0.0, n * size, n * size, max(1, n), dtype=dtype, thread_loads_B=loads, reuse_B=reuse_B
    )


def tap_gemm_kernels(params: Params, math: str) -> tuple[Kernel, ...]:
    """The kernels of a same-padded stride-1 convolution computed tap by tap (module docstring)."""
    b, c, h, w = params["batch"], params["channels"], params["height"], params["width"]
    f, r, dtype = params["filters"], params["kernel"], params["dtype"]
    pixels, outputs = b * h * w, f * b * h * w
    window_is_matrix = r == 1 and min(b, c) == 1
    loop_B = tap_gemm_footprint_B(params)  # what every tap touches before its data is used again
    add = elementwise_parts("vector_add", outputs, dtype)[0]
    size = itemsize(dtype)
    # out.fill(0) on a contiguous array is cudaMemsetAsync: stores only, no CuPy kernel
    kernels = [Kernel.of("out = 0", 0.0, 0.0, outputs * size, max(1, outputs), dtype=dtype, reuse_B=loop_B)]
    for i in range(r):
        for j in range(r):
            tap = f"tap {i},{j}"
            if not window_is_matrix:  # tensordot_core reshapes the window first...
                kernels.append(_copy(f"{tap}: copy window", b * c * h * w, dtype, loop_B))
            if r > 1:  # ...then makes the weights cuBLAS-contiguous
                kernels.append(_copy(f"{tap}: copy weights", f * c, dtype, loop_B))
            product = gemm_kernel(pixels, f, c, dtype, f"{tap}: window @ weights", math=math)
            kernels.append(product.but(op="tensordot", reuse_B=loop_B))
            kernels.append(
                Kernel.of(**{**add, "name": f"{tap}: out += product", "op": ""}, dtype=dtype, reuse_B=loop_B)
            )
    return tuple(kernels)


def tap_gemm_footprint_B(params: Params) -> float:
    """The padded input, the weights, the output, one product and one copied window."""
    b, c, h, w = params["batch"], params["channels"], params["height"], params["width"]
    f, r = params["filters"], params["kernel"]
    pad = r // 2
    values = b * c * (h + 2 * pad) * (w + 2 * pad) + f * c * r * r + 2 * f * b * h * w + b * c * h * w
    return float(values * itemsize(params["dtype"]))
