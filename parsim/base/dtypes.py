"""Element types: the one vocabulary that hardware (rates per dtype) and workloads (bytes per element) share.

It sits below both, so that neither has to import the other to know that a ``float16`` is two
bytes wide.
"""

from __future__ import annotations

from typing import Any

DTYPES: dict[str, int] = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}
"""Supported element types and their size in bytes."""

QUANTISED_FORMATS: tuple[str, ...] = ("int8", "float8")
"""Quantised products (int8 or FP8 weights and activations, W8A8) a matrix unit may be rated for."""

RATED_ONLY_FORMATS: tuple[str, ...] = ("float4",)
"""Formats a datasheet rates the matrix units for but no workload computes in yet: Blackwell's FP4
(NVFP4/MXFP4) tensor rate is kept on the spec sheet, shown by ``hardware show``, and used by nothing
until a workload carries half-byte elements."""

MATRIX_FORMATS: tuple[str, ...] = (*DTYPES, "tf32", *QUANTISED_FORMATS, *RATED_ONLY_FORMATS)
"""What matrix units can be rated for: the element types, TF32 (float32 data, 10-bit mantissa
products on tensor cores, what frameworks use for float32 convolutions on Ampere and later), the
quantised int8 and FP8 products of quantised LLM serving, and the rated-only FP4."""


Number = Any
"""A quantity: one number, or a NumPy array of them (a vectorised sweep runs the same formulas)."""


def itemsize(dtype: str) -> int:
    """Bytes per element of ``dtype``."""
    return DTYPES[dtype]
