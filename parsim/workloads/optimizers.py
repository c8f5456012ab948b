"""Optimizer updates: the kernel that applies a step's gradients to the weights, and its memory.

``sgd``: ``w -= lr * g``. ``adam``: two moments per weight kept in the master precision (PyTorch's
fused Adam reads w, g, m, v and writes w, m, v; its default ``foreach`` Adam makes eight passes over
the same arrays, reading 12 and writing 8 per weight: see ``FrameworkSpec.fused_optimizer``).
Every training workload (the MLP, the CNNs, the transformers, data parallel) takes its update,
and the memory of its weights, gradients and optimizer state (``parameter_needs``), from here.
"""

from __future__ import annotations

from parsim.base.dtypes import itemsize
from parsim.workloads.base import Kernel
from parsim.workloads.needs import MemoryNeeds

__all__ = ["OPTIMIZERS", "adam_kernel", "optimizer_state_B", "parameter_needs", "sgd_kernel", "update_kernel"]


def sgd_kernel(
    name: str,
    params: int,
    dtype: str,
    device: int = 0,
    layer: str = "",
    cold: bool = False,
    multi_tensor: bool = False,
) -> Kernel:
    """``w -= lr * g``: a multiply and a subtract per parameter; reads w and g, writes w.

    ``cold``: the parameters come from main memory (a network's weights, too many to stay cached).
    ``multi_tensor``: one layer's share of an optimizer step over all of them (``torch.optim``).
    """
    size = itemsize(dtype)
    return Kernel.of(
        name,
        2.0 * params,
        2 * params * size,
        params * size,
        params,
        dtype=dtype,
        python_ops_per_item=2,
        device=device,
        layer=layer,
        cold_bytes=3.0 * params * size if cold else 0.0,
        multi_tensor=multi_tensor,
    )


_FOREACH_ADAM = (12, 8)  # arrays read and written per weight by PyTorch's multi-tensor Adam(W)


def adam_kernel(
    name: str,
    params: int,
    dtype: str,
    device: int = 0,
    layer: str = "",
    cold: bool = False,
    foreach: bool = False,
    multi_tensor: bool = False,
    moments_dtype: str | None = None,
) -> Kernel:
    """One Adam step: reads w, g and the moments m and v; writes w, m and v (PyTorch's fused Adam).

    Per parameter: m = b1 m + (1 - b1) g and v = b2 v + (1 - b2) g^2 (6 FLOPs), the bias-corrected
    step lr m / (sqrt(v) + eps) and the subtraction (about 6 more, one square root): 12 FLOPs, 4
    arrays read and 3 written, 28 bytes a parameter in float32. ``foreach``: the same arithmetic in
    eight multi-tensor passes, 12 arrays read and 8 written (80 bytes a parameter).
    ``moments_dtype``: the moments kept in another dtype than the weights (Transformer Engine's
    ``FusedAdam`` under Megatron-Core's precision-aware optimizer: bfloat16 moments, 20 bytes a
    parameter with float32 weights); None: the weights' dtype.
    """
    size = itemsize(dtype)
    reads, writes = _FOREACH_ADAM if foreach else (4, 3)
    moment = itemsize(moments_dtype or dtype)
    # two of the arrays read and two of those written are the moments
    read_B = (reads - 2) * params * size + 2 * params * moment
    written_B = (writes - 2) * params * size + 2 * params * moment
    return Kernel.of(
        name,
        12.0 * params,
        read_B,
        written_B,
        params,
        dtype=dtype,
        special_ops=float(params),
        python_ops_per_item=12,
        device=device,
        layer=layer,
        cold_bytes=float(read_B + written_B) if cold else 0.0,
        multi_tensor=multi_tensor,
    )


OPTIMIZERS = ("sgd", "adam")
"""The optimizers a training step can update its weights with."""


def update_kernel(
    optimizer: str,
    name: str,
    params: int,
    dtype: str,
    device: int = 0,
    layer: str = "",
    cold: bool = False,
    foreach: bool = False,
    multi_tensor: bool = False,
    moments_dtype: str | None = None,
) -> Kernel:
    """The update kernel of ``optimizer`` (``sgd`` or ``adam``) over ``params`` weights (``foreach``:
    Adam as PyTorch's multi-tensor passes; ``multi_tensor``: one layer's share of a step over all;
    ``moments_dtype``: Adam's moments in another dtype, ``adam_kernel``)."""
    if optimizer == "adam":
        return adam_kernel(name, params, dtype, device, layer, cold, foreach, multi_tensor, moments_dtype)
    return sgd_kernel(name, params, dtype, device, layer, cold, multi_tensor)


def optimizer_state_B(optimizer: str, params: int, master_dtype: str) -> float:
    """Memory the optimizer keeps besides weights and gradients: Adam's two moments per parameter."""
    return 2.0 * params * itemsize(master_dtype) if optimizer == "adam" else 0.0


def parameter_needs(params: float, dtype: str, mixed: bool, train: bool, optimizer: str) -> MemoryNeeds:
    """The parameter state of ``params`` weights: the weights in the master precision (+ the
    ``dtype`` copy the kernels read under mixed precision); training adds a master-precision
    gradient per weight and the optimizer's state. Mixed-precision Adam: 4 + 2 + 4 + 8 = 18 B."""
    master = "float32" if mixed else dtype
    weights = params * itemsize(master) + (params * itemsize(dtype) if mixed else 0.0)
    if not train:
        return MemoryNeeds(weights_B=weights)
    state = optimizer_state_B(optimizer, int(params), master)
    return MemoryNeeds(weights_B=weights, gradients_B=params * itemsize(master), optimizer_B=state)
