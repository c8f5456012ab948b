"""A network as the model code reads: ``Layer`` records with concrete shapes, built in order.

``NetBuilder`` keeps the activation shape as it goes, so a model is written the way torchvision
writes it (``conv``, ``bn``, ``relu``, ``maxpool``, ``linear``, residual ``add``...) and each
layer comes out knowing its per-sample multiply-accumulates (MACs), parameters and output size.
What a framework launches for a layer is ``layers.layer_kernels``'s business, not this module's:
a network is a description, the same whichever device or precision later runs it.
"""

from __future__ import annotations

import math

import attrs

Shape = tuple[int, ...]


@attrs.frozen
class Layer:
    """One layer with concrete shapes (per sample; the batch is applied when building kernels).

    Attributes:
        name: torchvision-style name (``layer1.0.conv1``).
        kind: ``conv``, ``linear``, ``relu``, ``bn``, ``maxpool``, ``avgpool``, ``add``,
            ``softmax`` or ``mse``.
        in_shape: input activation shape (C, H, W) or (features,).
        out_shape: output activation shape.
        params: learnable parameters (weights and biases).
        macs: multiply-accumulates per sample (convolutions and linear layers).
        window: kernel edge for convolutions and pooling.
        stride: step between windows (convolutions).
        padding: zeros added on each side (convolutions).
    """

    name: str
    kind: str
    in_shape: Shape
    out_shape: Shape
    params: int = 0
    macs: int = 0
    window: int = 1
    stride: int = 1
    padding: int = 0

    @property
    def in_size(self) -> int:
        return math.prod(self.in_shape)

    @property
    def out_size(self) -> int:
        return math.prod(self.out_shape)


class NetBuilder:
    """Builds a layer list while tracking the activation shape, like writing the model code."""

    def __init__(self, input_shape: Shape):
        self.shape = input_shape
        self.layers: list[Layer] = []

    def _add(self, layer: Layer) -> NetBuilder:
        self.layers.append(layer)
        self.shape = layer.out_shape
        return self

    def conv(
        self, name: str, out_channels: int, kernel: int, stride: int = 1, padding: int = 0, bias: bool = False
    ) -> NetBuilder:
        channels, height, width = self.shape
        out_h = (height + 2 * padding - kernel) // stride + 1
        out_w = (width + 2 * padding - kernel) // stride + 1
        weights = out_channels * channels * kernel * kernel
        return self._add(
            Layer(
                name,
                "conv",
                self.shape,
                (out_channels, out_h, out_w),
                params=weights + (out_channels if bias else 0),
                macs=out_h * out_w * weights,
                window=kernel,
                stride=stride,
                padding=padding,
            )
        )

    def linear(self, name: str, out_features: int) -> NetBuilder:
        features = math.prod(self.shape)
        return self._add(
            Layer(
                name,
                "linear",
                (features,),
                (out_features,),
                params=features * out_features + out_features,
                macs=features * out_features,
            )
        )

    def bn(self, name: str) -> NetBuilder:
        return self._add(Layer(name, "bn", self.shape, self.shape, params=2 * self.shape[0]))

    def relu(self, name: str) -> NetBuilder:
        return self._add(Layer(name, "relu", self.shape, self.shape))

    def maxpool(self, name: str, kernel: int, stride: int, padding: int = 0) -> NetBuilder:
        channels, height, width = self.shape
        out = (
            channels,
            (height + 2 * padding - kernel) // stride + 1,
            (width + 2 * padding - kernel) // stride + 1,
        )
        return self._add(Layer(name, "maxpool", self.shape, out, window=kernel))

    def global_avgpool(self, name: str) -> NetBuilder:
        return self._add(Layer(name, "avgpool", self.shape, (self.shape[0], 1, 1), window=self.shape[1]))

    def add(self, name: str) -> NetBuilder:
        """Residual add of the shortcut into the main path (same shape)."""
        return self._add(Layer(name, "add", self.shape, self.shape))

    def loss(self, kind: str = "softmax") -> NetBuilder:
        return self._add(Layer("loss", kind, self.shape, self.shape))

    def branch(self, shape: Shape) -> NetBuilder:
        """Continue from ``shape`` (the saved input of a residual block, for its shortcut)."""
        self.shape = shape
        return self
