"""A convolution's geometry: what a kernel library needs to choose how to run it.

A framework hands cuDNN (or oneDNN) a convolution, not a matrix product: the library then picks an
algorithm for the shape. ``ConvShape`` keeps the shape and which pass of training the kernel is:
``fwd`` (the output), ``dgrad`` (the gradient with respect to the input) or ``wgrad`` (with respect
to the weights). Every pass is, as an implicit GEMM, ``2 M N K`` FLOPs with the dimensions
``gemm_dims`` gives; other algorithms (Winograd, FFT) exist only for some shapes. ``algorithm``
pins one of the library's algorithms (a measurement that ran it, a what-if); empty leaves the
choice to the library, which takes its fastest.
"""

from __future__ import annotations

from typing import Literal

import attrs

from parsim.base.checks import non_negative_int, one_of, positive_int

Pass = Literal["fwd", "dgrad", "wgrad"]

IMPLICIT_GEMM = "implicit-gemm"
GEMM = "gemm"  # an implicit GEMM of a 1x1 stride-1 layer is a plain GEMM
WINOGRAD = "winograd"
FFT = "fft"
DIRECT_LOOP = "direct loop"
"""A SISD convolution: one scalar loop over every output and tap (no library, so no GEMM)."""
LIBRARY_ALGORITHMS = (IMPLICIT_GEMM, WINOGRAD, FFT)
"""The algorithms a kernel library offers (``model.library.candidates``), as a user names them."""


@attrs.frozen(cache_hash=True)
class ConvShape:
    """One convolution pass over a batch.

    Attributes:
        batch: images.
        channels: input channels.
        height: input height.
        width: input width.
        filters: output channels.
        kernel: filter edge (square filters).
        stride: step between windows.
        padding: zeros added on each side.
        pass_: ``fwd``, ``dgrad`` or ``wgrad``.
        algorithm: one of ``LIBRARY_ALGORITHMS`` to run; empty: the library's fastest.
    """

    batch: int = attrs.field(validator=positive_int)
    channels: int = attrs.field(validator=positive_int)
    height: int = attrs.field(validator=positive_int)
    width: int = attrs.field(validator=positive_int)
    filters: int = attrs.field(validator=positive_int)
    kernel: int = attrs.field(validator=positive_int)
    stride: int = attrs.field(default=1, validator=positive_int)
    padding: int = attrs.field(default=0, validator=non_negative_int)
    pass_: Pass = attrs.field(default="fwd", validator=one_of(("fwd", "dgrad", "wgrad")))
    algorithm: str = attrs.field(default="", validator=one_of(("", *LIBRARY_ALGORITHMS)))

    @property
    def out_height(self) -> int:
        return (self.height + 2 * self.padding - self.kernel) // self.stride + 1

    @property
    def out_width(self) -> int:
        return (self.width + 2 * self.padding - self.kernel) // self.stride + 1

    def gemm_dims(self) -> tuple[int, int, int]:
        """(M, N, K) of this pass as an implicit GEMM; the output is M x N."""
        pixels_out = self.batch * self.out_height * self.out_width
        window = self.channels * self.kernel * self.kernel
        if self.pass_ == "fwd":
            return pixels_out, self.filters, window
        if self.pass_ == "dgrad":
            return self.batch * self.height * self.width, self.channels, self.filters * self.kernel**2
        return self.filters, window, pixels_out  # wgrad: a filters x window product reduced over pixels

    @property
    def winograd_shape(self) -> bool:
        """3x3 at stride 1: the shape Winograd's minimal filtering applies to."""
        return self.kernel == 3 and self.stride == 1
