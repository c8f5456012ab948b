"""Neural-network layers and the kernels a framework launches for them.

A network is a list of ``net.Layer`` records with concrete shapes (``net.NetBuilder`` writes
them the way the model code reads); each knows its per-sample multiply-accumulates (MACs),
parameters and output activation size. ``layer_kernels`` turns one into the kernels of one
training or inference step:

- forward: one kernel per layer (convolutions and linear layers are GEMMs that matrix units
  can run; the rest stream their activations through memory);
- backward: two GEMMs per convolution or linear layer (gradient w.r.t. the input and w.r.t.
  the weights, each as many FLOPs as the forward), one streaming kernel for the others;
- update: one optimizer kernel per layer with parameters: SGD (``w -= lr * g``) or Adam (two
  moments per parameter, kept in the master precision: their memory and their traffic).
"""

from __future__ import annotations

import math
import operator
from typing import Any

import attrs

from parsim.base.caching import cached
from parsim.base.dtypes import itemsize
from parsim.workloads.base import Kernel
from parsim.workloads.conv import ConvShape, Pass
from parsim.workloads.net import Layer
from parsim.workloads.optimizers import update_kernel

# Per element of the output (o) and input (i) activations: FLOPs and bytes moved, forward and
# backward, for the layers that stream memory rather than run GEMMs.
_STREAMING = {
    # kind: (fwd flops/elem, fwd elems moved, bwd flops/elem, bwd elems moved)
    "relu": (1, 2, 1, 3),  # y = max(x, 0); dx = dy * (y > 0): reads dy, y; writes dx
    # statistics pass + normalise pass; backward reads dy and x twice (PyTorch's
    # batch_norm_backward_reduce then batch_norm_backward_elemt kernels, Normalization.cuh) and writes dx
    "bn": (5, 3, 8, 5),
    "add": (1, 3, 1, 3),  # y = a + b; backward accumulates the two gradient paths
    "softmax": (5, 2, 2, 2),  # exp, sum, divide, log, pick; gradient p - onehot
    "mse": (3, 3, 2, 3),  # (y - t)^2 summed; gradient 2 (y - t)
}

_INFERENCE_STREAMING = {
    # kind: (fwd flops/elem, fwd elems moved) where inference differs: a batch norm in eval mode
    # normalises with its running statistics (PyTorch's BatchNorm2d.eval(), cuDNN's
    # cudnnBatchNormalizationForwardInference): y = x * scale + shift, one pass, no statistics pass
    "bn": (2, 2),
}


@attrs.frozen(cache_hash=True)  # a key of the layer-shape cache, asked once per layer
class Numerics:
    """How a framework does the arithmetic of a network.

    Attributes:
        dtype: element type of activations and of the weights the kernels read.
        mixed: mixed precision: float32 master weights, gradients and optimizer.
        casts: the host issues a cast kernel before every matrix layer (weights to ``dtype``) and
            after its weight gradient (back to float32), as PyTorch's autocast does.
        conv_math: ``tf32`` when float32 convolutions may use TF32 tensor cores, else empty.
        linear_math: the same for linear layers (matrix products).
        plain_weights: an eager framework hands every call its weights in the plain layout (a
            blocked-layout library re-lays them out each time: ``LibraryHints.reorder_B``).
        cpu_library: the framework's kernel library on a CPU (``LibraryHints.cpu_library``).
        layout: ``nchw`` (PyTorch's default memory format) or ``nhwc`` (channels-last, what
            tensor cores compute in): ``LibraryHints.nchw_B``.
        foreach_optimizer: the optimizer runs as PyTorch's multi-tensor passes, not one fused kernel
            (``FrameworkSpec.fused_optimizer``).
        primitive_layers: a transformer's composite layers run as the primitive tensor ops they
            are written in (``FrameworkSpec.primitive_layers``; ``transformer_eager``).
    """

    dtype: str = "float32"
    mixed: bool = False
    casts: bool = False
    conv_math: str = ""
    linear_math: str = ""
    plain_weights: bool = False
    cpu_library: str = ""
    layout: str = "nhwc"
    primitive_layers: bool = False
    foreach_optimizer: bool = False

    @property
    def master_dtype(self) -> str:
        """The element type of the weights the optimizer updates."""
        return "float32" if self.mixed else self.dtype


@cached(maxsize=4096)
def _conv_pass(
    batch: int,
    channels: int,
    height: int,
    width: int,
    filters: int,
    window: int,
    stride: int,
    padding: int,
    step: Pass,
) -> ConvShape:
    """One pass of a convolution, checked once per shape (a ResNet repeats its blocks' shapes)."""
    return ConvShape(batch, channels, height, width, filters, window, stride, padding, step)


_shape_of = operator.attrgetter(*(field.name for field in attrs.fields(Layer) if field.name != "name"))
"""Every field of a layer but its name, as a tuple: what its kernels' costs depend on."""


def layer_kernels(
    layer: Layer,
    batch: int,
    numerics: Numerics,
    train: bool,
    first: bool = False,
    device: int = 0,
    update: bool = True,
    optimizer: str = "sgd",
) -> tuple[list[Kernel], list[Kernel]]:
    """The kernels of ``layer`` for one step over ``batch`` samples: the forward ones, the backward ones
    (``layer_kernels_of_shape``, whose arguments these are).

    A network repeats a few layer shapes under many names (ResNet-50: 175 layers, 55 shapes), and
    only the names and the ``layer`` field of their kernels differ: the kernels of each shape are
    built and checked once (``_unnamed_kernels``) and given each layer's name here, their records
    shared (``Kernel.on_device``'s cheap path), not built again.
    """
    shape = _shape_of(layer)
    forward, backward = _unnamed_kernels(shape, batch, numerics, train, first, device, update, optimizer)
    name = layer.name
    return [_named(kernel, name) for kernel in forward], [_named(kernel, name) for kernel in backward]


@cached(maxsize=4096)
def _unnamed_kernels(
    shape: tuple[Any, ...],
    batch: int,
    numerics: Numerics,
    train: bool,
    first: bool,
    device: int,
    update: bool,
    optimizer: str,
) -> tuple[tuple[Kernel, ...], tuple[Kernel, ...]]:
    """The kernels of a layer of this shape named ``""``: names `` fwd``, `` update``..., layer ``""``."""
    layer = Layer("", *shape)
    built = layer_kernels_of_shape(layer, batch, numerics, train, first, device, update, optimizer)
    forward, backward = built
    return tuple(forward), tuple(backward)


def _named(kernel: Kernel, layer: str) -> Kernel:
    """An unnamed layer kernel (``_unnamed_kernels``) as the kernel of layer ``layer``."""
    return kernel.relabelled(layer + kernel.name, layer)


def layer_kernels_of_shape(
    layer: Layer,
    batch: int,
    numerics: Numerics,
    train: bool,
    first: bool = False,
    device: int = 0,
    update: bool = True,
    optimizer: str = "sgd",
) -> tuple[list[Kernel], list[Kernel]]:
    """The kernels of ``layer`` for one step over ``batch`` samples: the forward ones, the backward ones.

    Args:
        layer: the layer.
        batch: samples in the step.
        numerics: element types, mixed precision and TF32 (``Numerics``).
        train: build the backward kernels (and the update when ``update``); else none.
        first: the first layer needs no gradient w.r.t. its input (the data).
        device: GPU index the kernels run on.
        update: include the optimizer's update (data parallel with host averaging updates elsewhere).
        optimizer: ``sgd`` or ``adam`` (``update_kernel``).
    """
    dtype = numerics.dtype
    size = itemsize(dtype)
    n_in, n_out = batch * layer.in_size, batch * layer.out_size

    def kernel(
        step: str, flops: float, read: float, written: float, items: int, cold_read: float = 0.0, **extra: Any
    ) -> Kernel:
        # What a layer writes leaves the cache for main memory sooner or later, and a network's
        # weights are streamed from main memory once per step: both are cold traffic. Only the
        # activations a kernel reads right after the previous kernel wrote them can be warm.
        return Kernel.of(
            f"{layer.name} {step}",
            flops,
            read,
            written,
            items,
            dtype=dtype,
            device=device,
            layer=layer.name,
            cold_bytes=cold_read + written,
            cpu_library=numerics.cpu_library,
            **extra,
        )

    forward: list[Kernel] = []
    kernels: list[Kernel] = []  # the backward pass
    if layer.kind in ("conv", "linear"):
        conv = None
        if layer.kind == "conv":
            out_c, out_h, out_w = layer.out_shape
            in_c, in_h, in_w = layer.in_shape
            m, n, k = batch * out_h * out_w, out_c, in_c * layer.window**2
            dgrad_mn, wgrad_mn = (batch * in_h * in_w, in_c), (out_c, k)
            conv_args = (batch, in_c, in_h, in_w, out_c, layer.window, layer.stride, layer.padding)
            conv = _conv_pass(*conv_args, "fwd")
        else:
            m, n, k = batch, layer.out_shape[0], layer.in_shape[0]
            dgrad_mn, wgrad_mn = (batch, k), (k, n)
        flops = 2.0 * batch * layer.macs
        weights = layer.params * size
        gemm: dict[str, Any] = {
            "matrix": True,
            "python_ops_per_item": k,
            "math": numerics.conv_math if conv else numerics.linear_math,
        }
        reorder = {"reorder_B": float(weights)} if numerics.plain_weights else {}

        def pass_of(step: Pass) -> dict[str, Any]:
            if conv is None:
                return {}
            nchw = {"nchw_B": float((n_in + n_out) * size)} if numerics.layout == "nchw" else {}
            return {"conv": _conv_pass(*conv_args, step), **nchw}

        if numerics.casts:
            forward.append(_cast(layer, "cast weights", layer.params, "float32", dtype, device))
        forward.append(
            kernel(
                "fwd",
                flops,
                n_in * size + weights,
                n_out * size,
                m * n,
                weights,
                gemm_mn=(m, n),
                **gemm,
                **pass_of("fwd"),
                **reorder,
            )
        )
        if train:
            if not first:
                kernels.append(
                    kernel(
                        "bwd-data",
                        flops,
                        n_out * size + weights,
                        n_in * size,
                        math.prod(dgrad_mn),
                        weights,
                        gemm_mn=dgrad_mn,
                        **gemm,
                        **pass_of("dgrad"),
                        **reorder,
                    )
                )
            kernels.append(
                kernel(
                    "bwd-weight",
                    flops,
                    (n_in + n_out) * size,
                    weights,
                    math.prod(wgrad_mn),
                    gemm_mn=wgrad_mn,
                    **gemm,
                    **pass_of("wgrad"),
                )
            )
            if numerics.casts:
                kernels.append(_cast(layer, "cast gradient", layer.params, dtype, "float32", device))
    elif layer.kind in ("maxpool", "avgpool"):
        forward.append(kernel("fwd", n_out * layer.window**2, n_in * size, n_out * size, n_out))
        if train:
            # reads the output gradient and the input (to find the maxima), writes the input gradient
            kernels.append(kernel("bwd", n_in, (n_in + n_out) * size, n_in * size, n_in))
    else:
        fwd_flops, fwd_moved, bwd_flops, bwd_moved = _STREAMING[layer.kind]
        if not train and layer.kind in _INFERENCE_STREAMING:
            fwd_flops, fwd_moved = _INFERENCE_STREAMING[layer.kind]
        special = n_out if layer.kind == "softmax" else 0
        sign = {"sign_test": True} if layer.kind == "relu" else {}  # forward: x > 0; backward: its mask
        forward.append(
            kernel(
                "fwd",
                fwd_flops * n_out,
                (fwd_moved - 1) * n_out * size,
                n_out * size,
                n_out,
                special_ops=special,
                **sign,
            )
        )
        if train:
            kernels.append(
                kernel("bwd", bwd_flops * n_out, (bwd_moved - 1) * n_out * size, n_out * size, n_out, **sign)
            )
    if train and update and layer.params:
        kernels.append(layer_update(layer, numerics, optimizer, device))
    return forward, kernels if train else []


def layer_update(layer: Layer, numerics: Numerics, optimizer: str = "sgd", device: int = 0) -> Kernel:
    """The optimizer's update of ``layer``'s weights (in the master precision), one layer's share of
    ``torch.optim``'s step over all of them."""
    return update_kernel(
        optimizer,
        f"{layer.name} update",
        layer.params,
        numerics.master_dtype,
        device=device,
        layer=layer.name,
        cold=True,
        foreach=numerics.foreach_optimizer,
        multi_tensor=True,  # torch.optim steps over every layer's weights at once
    )


def _cast(layer: Layer, what: str, items: int, source: str, target: str, device: int) -> Kernel:
    """A mixed-precision cast of ``items`` values from ``source`` to ``target`` (autocast's copy)."""
    moved = items * (itemsize(source) + itemsize(target))
    return Kernel.of(
        f"{layer.name} {what}",
        float(items),
        items * itemsize(source),
        items * itemsize(target),
        items,
        dtype=target,
        device=device,
        layer=layer.name,
        cold_bytes=float(moved),
    )
