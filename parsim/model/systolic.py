"""A matrix product on a systolic array: its dimensions padded up to the array's edge.

A TPU's matrix unit (MXU) is a square systolic array of ``E x E`` multiply-accumulators
(``ProcessorSpec.systolic_array``: 128, or 256 on v6e). XLA loads an ``E x E`` tile of the
weights (the reduction dimension ``k`` by the output columns ``n``) into the array and streams
the rows of the activations through it, ``8`` rows at a time (the vector unit's sublanes). A tile
that is only partly filled costs a full one, so a product of ``m x k`` by ``k x n`` takes as long as
one of ``ceil8(m) x ceilE(k)`` by ``ceilE(k) x ceilE(n)``: on a 128x128 array a 129-wide product
costs like a 256-wide one, and only ``129^2 / 256^2`` = 25 % of the array's multiply-adds do work.

A GPU's tensor cores are fed tile by tile by warps, and cuBLAS picks among many tile shapes
(``model.library.gemm_tiling``); this rule is the systolic array's alone and is applied once, where
the library lowers a kernel (``model.library.candidates``), so the closed form and the engine see
the same padded product.
"""

from __future__ import annotations

import math

import attrs

from parsim.hardware.specs import ProcessorSpec
from parsim.model.rates import matrix_format
from parsim.workloads.base import Kernel

ROWS = 8
"""The rows of activations an MXU takes at a time: the vector unit's 8 sublanes."""


def round_up(value: float, multiple: int) -> int:
    """``value`` rounded up to a whole multiple of ``multiple``."""
    return int(math.ceil(value / multiple - 1e-9)) * multiple


@attrs.frozen
class Padding:
    """A product's dimensions as asked and as the array runs them."""

    edge: int
    m: int
    n: int
    k: int
    padded_m: int
    padded_n: int
    padded_k: int

    @property
    def used(self) -> float:
        """Share of the padded multiply-adds that are the product's own."""
        return (self.m * self.n * self.k) / (self.padded_m * self.padded_n * self.padded_k)

    def sentence(self) -> str:
        """``MXU 128x128: k=129 and n=129 padded to 256, 25 % of the array used``."""
        grown = [
            f"{name}={own} padded to {padded}"
            for name, own, padded in (("k", self.k, self.padded_k), ("n", self.n, self.padded_n))
            if padded != own
        ]
        if self.padded_m != self.m:
            grown.append(f"m={self.m} padded to {self.padded_m} rows")
        what = ", ".join(grown) if grown else "no padding (every dimension a multiple of the array)"
        return f"MXU {self.edge}x{self.edge}: {what}, {self.used:.0%} of the array used"


def on_array(spec: ProcessorSpec, kernel: Kernel) -> bool:
    """Does ``kernel`` run on ``spec``'s systolic arrays (a matrix product in a format they take)?"""
    return (
        spec.systolic_array is not None
        and kernel.library.gemm_mn is not None
        and kernel.work.matrix
        and matrix_format(kernel) in dict(spec.matrix_flops_per_s)
    )


def padding(spec: ProcessorSpec, kernel: Kernel) -> Padding | None:
    """How ``kernel``'s product is padded on ``spec``'s arrays; None off the arrays."""
    if not on_array(spec, kernel):
        return None
    assert spec.systolic_array is not None and kernel.library.gemm_mn is not None
    edge = spec.systolic_array
    m, n = kernel.library.gemm_mn
    k = max(1, round(kernel.work.flops / (2.0 * m * n)))
    return Padding(edge, m, n, k, round_up(m, ROWS), round_up(n, edge), round_up(k, edge))


def padded(spec: ProcessorSpec, kernel: Kernel) -> Kernel:
    """``kernel`` as the arrays run it: the padded product's multiply-adds (bytes unchanged: the
    padding is zeros made on chip, never read from HBM)."""
    pad = padding(spec, kernel)
    if pad is None or pad.used >= 1.0:
        return kernel
    return kernel.but(
        flops=2.0 * pad.padded_m * pad.padded_n * pad.padded_k, gemm_mn=(pad.padded_m, pad.padded_n)
    )
