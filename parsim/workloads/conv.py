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

from typing import Literal, NamedTuple

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
PASSES = ("fwd", "dgrad", "wgrad")


class _Field(NamedTuple):
    """What a field validator reads of an attrs attribute: its name."""

    name: str


_RULES = {
    "batch": positive_int,
    "channels": positive_int,
    "height": positive_int,
    "width": positive_int,
    "filters": positive_int,
    "kernel": positive_int,
    "stride": positive_int,
    "padding": non_negative_int,
    "pass_": one_of(PASSES),
    "algorithm": one_of(("", *LIBRARY_ALGORITHMS)),
}
"""``ConvShape``'s field validators, as its attrs fields had them."""


class _ConvFields(NamedTuple):
    batch: int
    channels: int
    height: int
    width: int
    filters: int
    kernel: int
    stride: int = 1
    padding: int = 0
    pass_: Pass = "fwd"
    algorithm: str = ""


class ConvShape(_ConvFields):
    """One convolution pass over a batch.

    A named tuple, checked when made (a refused field is named as an attrs validator names it):
    every convolution kernel's ``LibraryHints`` holds one, and the timing caches hash and compare
    those records, which a tuple does in C (an attrs class cost a Python call per hash and per
    comparison, and a validator call per field per shape built).

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

    __slots__ = ()

    def __new__(
        cls,
        batch: int,
        channels: int,
        height: int,
        width: int,
        filters: int,
        kernel: int,
        stride: int = 1,
        padding: int = 0,
        pass_: Pass = "fwd",
        algorithm: str = "",
    ) -> ConvShape:
        shape = tuple.__new__(
            cls, (batch, channels, height, width, filters, kernel, stride, padding, pass_, algorithm)
        )
        good = (  # plain integers pass here at once; anything else goes through the validators
            type(batch) is int
            and batch >= 1
            and type(channels) is int
            and channels >= 1
            and type(height) is int
            and height >= 1
            and type(width) is int
            and width >= 1
            and type(filters) is int
            and filters >= 1
            and type(kernel) is int
            and kernel >= 1
            and type(stride) is int
            and stride >= 1
            and type(padding) is int
            and padding >= 0
            and type(pass_) is str
            and pass_ in PASSES
            and type(algorithm) is str
            and (algorithm == "" or algorithm in LIBRARY_ALGORITHMS)
        )
        if not good:
            for name, validate in _RULES.items():  # raises naming the first field refused
                validate(shape, _Field(name), getattr(shape, name))
        return shape

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
