"""Quantised weights of a served language model: bytes per weight, the units a format needs, and how a
block linear runs on them.

W8A8 formats (``int8``, ``float8``) multiply on the matrix units' int8/FP8 rate. Weight-only formats
(``int8-weight-only``, ``int4``; GGUF's ``q4_0`` and ``q8_0``) keep the activations in ``dtype``: every
weight is loaded quantised and dequantised in registers before its multiply-add. A prefill's GEMM
dequantises a tile into shared memory and runs on the tensor cores (AWQ's GEMM, Marlin); a decode
step of a few rows is a matrix-vector product, which no tensor core helps: its kernels (llama.cpp's
``mul_mat_vec_q``, AWQ's and tinygemm's GEMVs) stream the quantised bytes and spend a few CUDA-core
instructions per weight unpacking it. So a weight-only decode is bandwidth-bound on the quantised
bytes plus a dequantisation cost, not priced like a padded tensor-core tile.
"""

from __future__ import annotations

from typing import Literal

from parsim.base.dtypes import QUANTISED_FORMATS
from parsim.workloads.base import Kernel

# GGUF's block formats (ggml-org/llama.cpp ggml/src/ggml-common.h, block_q4_0 and block_q8_0): 32
# weights share one float16 scale, so Q4_0 takes 16 + 2 bytes per 32 weights and Q8_0 32 + 2
WEIGHT_B = {
    "int8": 1.0,
    "float8": 1.0,
    "int8-weight-only": 1.0,
    "int4": 0.5,
    "q4_0": 18 / 32,
    "q8_0": 34 / 32,
}
"""Bytes per quantised weight (int4: two per byte; its per-group scales are under 3 % and left out;
GGUF's Q4_0 and Q8_0 with their block scales)."""
WeightFormat = Literal["dtype", "int8", "int8-weight-only", "int4", "float8", "q4_0", "q8_0"]
"""What ``weights=`` takes: W8A8 formats (int8, float8) and weight-only ones (int8-weight-only, int4,
GGUF's q4_0 and q8_0: dequantised to ``dtype`` inside the kernel)."""

WEIGHT_ONLY = ("int8-weight-only", "int4", "q4_0", "q8_0")
"""Formats whose activations stay in ``dtype`` (dequantised inside the kernel)."""
DEQUANT_OPS = {"int8-weight-only": 2.0, "q8_0": 2.0, "int4": 4.0, "q4_0": 4.0}
"""CUDA-core operations to dequantise one weight before its multiply-add, counted in the kernels'
code: ggml-org/llama.cpp ggml/src/ggml-cuda/dequantize.cuh ``dequantize_q4_0`` (a mask or a shift
out of the byte, the conversion to float, ``- 8``, ``* d``: 4) and ``dequantize_q8_0`` (the
conversion and ``* d``: 2); int4 and int8 weight-only kernels (AWQ, gpt-fast's tinygemm and
``weight.to(dtype) * scales``) do the same work per weight."""
GEMV_ROWS = 8
"""Rows (sequences x new tokens) up to which a weight-only product runs as a matrix-vector kernel on
the CUDA cores: the row tile below which cuBLAS also switches to its gemv (``stack.presets.CUDNN``)."""


# Devices with the unit each quantised format needs, from the datasheets the GPU presets cite
# ([WP-*] in parsim/hardware/presets_gpu.py): INT8 tensor cores on Turing (T4: 130 TOPS), Ampere
# (A100: 624 TOPS), Ada (RTX 4090: 660.6 TOPS) and Hopper (H100 SXM5: 1979 TOPS); FP8 tensor cores
# on Ada (RTX 4090: 330.3 TFLOP/s) and Hopper (H100 SXM5: 1979 TFLOP/s), none on Ampere or Volta.
# int4 weight-only kernels (AWQ's GEMM, Marlin) need Turing (compute capability 7.5) or later.
# The current GPUs of parsim/hardware/presets_gpu_current.py: every one is Ampere or later (INT8);
# FP8 on Blackwell (B200: 4.5 PFLOP/s dense), Hopper (H100 NVL) and Ada (L40S, L4). AMD Instinct
# ([DS-*] in parsim/hardware/presets_amd.py): INT8 matrix cores on CDNA 2 (MI250X: 383 TOPS) and
# CDNA 3 (MI300X: 2614.9 TOPS), FP8 on CDNA 3 only (MI300X: 2614.9 TFLOP/s).
_FP8 = ("h100-pcie", "h100-sxm", "h200", "rtx-4090", "b200", "gb200", "h100-nvl", "l40s", "l4", "mi300x")
_AMPERE = ("a100-pcie-40gb", "a100-pcie-80gb", "a10g", "rtx-3090", "rtx-a6000")
_AMD_INT8 = ("mi250x", "mi250x-module")
_INT8 = ("t4", "a100-40gb", "a100-80gb", *_FP8, *_AMPERE, *_AMD_INT8)
UNITS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "int8": ("INT8 tensor cores", _INT8, "Turing and later"),
    "int4": ("int4 weight-only GEMM kernels", _INT8, "Turing and later"),
    "int8-weight-only": ("int8 weight-only GEMM kernels", _INT8, "Turing and later"),
    "q4_0": ("GGUF Q4_0 kernels", _INT8, "Turing and later"),
    "q8_0": ("GGUF Q8_0 kernels", _INT8, "Turing and later"),
    "float8": ("FP8 tensor cores", _FP8, "H100 and later, Ada, MI300X"),
}


def quantised(kernel: Kernel, weights: str, size: int, gemv: bool) -> Kernel:
    """A block linear's forward product reading its weights at ``weights``' bytes per element.

    int8 and float8 (W8A8) multiply at the matrix units' int8/FP8 rate where the device has one; the
    weight-only formats dequantise to ``dtype`` (``size`` bytes) and multiply at its rate, on the
    tensor cores for a GEMM, or (``gemv``: a decode step of at most ``GEMV_ROWS`` rows) on the CUDA
    cores with ``DEQUANT_OPS`` more operations per weight.
    """
    held = kernel.access.cold_bytes - kernel.work.bytes_written  # the weights: the GEMM's cold reads
    less = held * (1 - WEIGHT_B[weights] / size)
    math = weights if weights in QUANTISED_FORMATS else kernel.library.math
    streamed = kernel.but(
        bytes_read=kernel.work.bytes_read - less, cold_bytes=kernel.access.cold_bytes - less, math=math
    )
    if not gemv or weights not in WEIGHT_ONLY:
        return streamed
    dequantise = held / size * DEQUANT_OPS[weights]  # one per weight the kernel holds
    return streamed.but(flops=kernel.work.flops + dequantise, matrix=False, gemm_mn=None)
