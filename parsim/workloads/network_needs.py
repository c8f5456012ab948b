"""A network's device memory and the layers a compiled inference graph folds away.

``network_needs`` is what a framework allocates for one step of a ``net.Layer`` list
(PyTorch's autograd and caching allocator): weights in the master precision beside autocast's
low-precision copies, a gradient per weight, the tensors the backward pass keeps (each layer's
output once, less what an in-place ReLU shares or a batch norm before a residual add drops) and
the largest layer's input and output in flight. ``folded_layers`` names the batch norms and
ReLUs an inference graph folds into the op before them, so they launch no kernel of their own.
"""

from __future__ import annotations

import attrs

from parsim.base.dtypes import itemsize
from parsim.workloads.layers import Numerics
from parsim.workloads.needs import MemoryNeeds
from parsim.workloads.net import Layer
from parsim.workloads.optimizers import parameter_needs

FOLDED_AFTER = {"bn": ("conv",), "relu": ("conv", "bn", "linear", "add")}
"""For inference a compiled graph folds a batch norm into the convolution before it (scaled
weights and a bias) and fuses a ReLU into the op before it as a post-op (oneDNN's fused
convolutions, TensorFlow's remapper, TorchScript's freeze): ``LibraryHints.foldable``."""


def folded_layers(layers: list[Layer]) -> set[int]:
    """Indices of the layers a compiled inference graph folds into the op before them."""
    return {
        index
        for index in range(1, len(layers))
        if layers[index - 1].kind in FOLDED_AFTER.get(layers[index].kind, ())
        and layers[index - 1].out_shape == layers[index].in_shape
    }


def _saved(layer: Layer, after: Layer | None) -> bool:
    """Is ``layer``'s output kept for the backward pass (in storage of its own)?

    A ReLU runs in place: its output is the storage of the tensor it overwrites, counted there. A
    batch norm's output is kept only when an in-place ReLU follows (the next layer saves that
    tensor); one that feeds a residual add is dropped, since an add saves nothing.
    """
    if layer.kind == "relu":
        return False
    if layer.kind == "bn":
        return after is not None and after.kind == "relu"
    return True


def network_needs(
    layers: list[Layer], batch: int, numerics: Numerics, train: bool, optimizer: str = "sgd"
) -> MemoryNeeds:
    """Device memory of one step as a framework allocates it (PyTorch's autograd and caching allocator).

    Weights are kept in the master precision, plus the low-precision copies autocast caches under
    mixed precision. Training also keeps a gradient per weight and every tensor the backward pass
    needs: a convolution or linear layer saves its input and a batch norm its input, so each
    layer's output is stored once, except that an in-place ReLU shares the storage of the tensor
    it overwrites and a batch norm feeding a residual add is not kept (``_saved``); max pooling
    also keeps int64 indices. At the start of the backward pass all of
    that is held at once, with the gradients of the largest layer in flight; activations are freed
    as the backward pass goes. Inference holds only the largest input/output pair at a time. Adam
    adds its two moments per parameter (``parameter_needs``). The parts: ``MemoryNeeds``.
    """
    size = itemsize(numerics.dtype)
    params = sum(layer.params for layer in layers)
    state = parameter_needs(params, numerics.dtype, numerics.mixed, train, optimizer)
    peak = max(batch * (layer.in_size + layer.out_size) for layer in layers) * size
    if not train:
        return attrs.evolve(state, workspace_B=float(peak))
    stored = layers[0].in_size + sum(
        layer.out_size
        for layer, after in zip(layers, [*layers[1:], None], strict=True)
        if _saved(layer, after)
    )
    indices = sum(layer.out_size for layer in layers if layer.kind == "maxpool") * itemsize("float64")
    return attrs.evolve(
        state, activations_B=float(batch * (stored * size + indices)), workspace_B=float(peak)
    )
