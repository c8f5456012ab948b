"""The 2-layer MLP of the articles, one SGD step: the program ``parsim measure`` runs, call for call.

N, D, H = 64, 1000, 100: ``h = relu(x @ w1)``, ``y_pred = h @ w2``, an L2 loss, its gradients and
an SGD step. With ``weights=copied`` the weights are fed from the host every step and the gradients
come back for a NumPy update (``tf.placeholder`` + ``feed_dict``); with ``weights=resident`` they
live on the device and are updated there (``tf.Variable``). Only the data batch crosses PCIe.

Every kernel is what the measured step (``measure.kernels.mlp_train_step``) launches: the loss as
a square and a sum, the ReLU's gradient as a boolean mask and a multiply, ``w -= lr * g`` as two
in-place passes; the copies are from page-locked buffers unless ``pinned=false``. ``framework``
adds a framework's host cost per operator (``none``: plain NumPy/CuPy calls, as measured).
"""

from __future__ import annotations

import attrs

from parsim.base.dtypes import itemsize
from parsim.workloads.base import HOST, Kernel, Op, Params, Transfer, Workload
from parsim.workloads.ops import _items, gemm_kernel
from parsim.workloads.optimizers import parameter_needs, update_kernel


def _streaming(
    name: str, n: int, flops: float, arrays_read: int, dtype: str, device: int = 0, layer: str = ""
) -> Kernel:
    size = itemsize(dtype)
    return Kernel.of(
        name, flops * n, arrays_read * n * size, n * size, n, dtype=dtype, device=device, layer=layer
    )


def mlp_train_step(params: Params) -> Workload:
    """One SGD (or Adam) step of the 2-layer MLP, each kernel launched separately as a framework would.

    Call for call the program ``parsim measure mlp_train_step`` runs (``measure.kernels``): the loss
    as a square and a sum, the ReLU's gradient as a mask and a multiply, SGD's ``w -= lr * g`` as two
    passes, every copy from page-locked memory.
    """
    n, d_in, hidden, d_out = params["batch"], params["d_in"], params["hidden"], params["d_out"]
    optimizer = params.get("optimizer", "sgd")
    dtype, copied = params["dtype"], params["weights"] == "copied"
    linear = "tf32" if params["math"] == "tf32" else ""  # as numerics_of: products in IEEE by default
    size = itemsize(dtype)
    w1, w2 = d_in * hidden, hidden * d_out
    pinned = params.get("pinned", True)
    ops: list[Op] = [
        Transfer("h2d x", n * d_in * size, "h2d", pinned, layer="data"),
        Transfer("h2d y", n * d_out * size, "h2d", pinned, layer="data"),
    ]
    if copied:
        ops += [
            Transfer("h2d w1", w1 * size, "h2d", pinned, layer="fc1"),
            Transfer("h2d w2", w2 * size, "h2d", pinned, layer="fc2"),
        ]
    ops += [
        _layer(gemm_kernel(n, hidden, d_in, dtype, "h = x @ w1", math=linear), "fc1"),
        _streaming("h_relu = max(h, 0)", n * hidden, 1, 1, dtype, layer="relu"),
        _layer(gemm_kernel(n, d_out, hidden, dtype, "y_pred = h_relu @ w2", math=linear), "fc2"),
        _streaming("diff = y_pred - y", n * d_out, 1, 2, dtype, layer="loss"),
        _streaming("square = diff * diff", n * d_out, 1, 1, dtype, layer="loss"),
        Kernel.of(
            "loss = sum(square)", n * d_out, n * d_out * size, size, n * d_out, dtype=dtype, layer="loss"
        ),
        _streaming("grad_y = 2 * diff", n * d_out, 1, 1, dtype, layer="loss"),
        _layer(gemm_kernel(hidden, d_out, n, dtype, "grad_w2 = h_relu.T @ grad_y", math=linear), "fc2"),
        _layer(gemm_kernel(n, hidden, d_out, dtype, "grad_h = grad_y @ w2.T", math=linear), "fc2"),
        # the ReLU's gradient: a boolean mask (a byte per value), then a multiply by it
        Kernel.of(
            "mask = h > 0", n * hidden, n * hidden * size, n * hidden, n * hidden, dtype=dtype, layer="relu"
        ),
        Kernel.of(
            "grad_h *= mask",
            n * hidden,
            n * hidden * (size + 1),
            n * hidden * size,
            n * hidden,
            dtype=dtype,
            layer="relu",
        ),
        _layer(gemm_kernel(d_in, hidden, n, dtype, "grad_w1 = x.T @ grad_h", math=linear), "fc1"),
    ]
    where = HOST if copied else 0
    if copied:
        ops += [
            Transfer("d2h grad_w1", w1 * size, "d2h", pinned, layer="fc1"),
            Transfer("d2h grad_w2", w2 * size, "d2h", pinned, layer="fc2"),
            Transfer("d2h loss", size, "d2h", layer="loss"),
        ]
    for layer, weights in (("fc1", w1), ("fc2", w2)):
        ops += _update(optimizer, layer, weights, dtype, where)
    if copied:
        deps = _after_all_copies_back(ops)
    else:
        ops.append(Transfer("d2h loss", size, "d2h", layer="loss"))
        deps = ()
    # the weights, their gradients and the optimizer's state; x, h, relu(h), y and their gradients
    state = parameter_needs(w1 + w2, dtype, False, True, optimizer)
    memory = attrs.evolve(state, activations_B=float(n * (2 * d_in + 3 * hidden + 4 * d_out) * size))
    kinds = (("data", "copy"), ("fc1", "linear"), ("relu", "relu"), ("fc2", "linear"), ("loss", "mse"))
    return Workload(
        "mlp_train_step",
        _items(params),
        tuple(ops),
        deps,
        memory=memory,
        layers=kinds,
        staging=True,
        framework="" if params["framework"] == "none" else params["framework"],
    )


def _update(optimizer: str, layer: str, weights: int, dtype: str, device: int) -> list[Kernel]:
    """The update of one layer's weights (on the host when ``device`` is ``HOST``). SGD as the
    articles write it, ``w -= lr * g``: the gradient scaled in place, then subtracted (two passes);
    Adam as one fused kernel."""
    w = "w1" if layer == "fc1" else "w2"
    where = " (host)" if device == HOST else ""
    if optimizer == "adam":
        return [
            update_kernel(optimizer, f"{w}: adam update{where}", weights, dtype, device=device, layer=layer)
        ]
    return [
        _streaming(f"grad_{w} *= lr{where}", weights, 1, 1, dtype, device=device, layer=layer),
        _streaming(f"{w} -= grad_{w}{where}", weights, 1, 2, dtype, device=device, layer=layer),
    ]


def _layer(kernel: Kernel, layer: str) -> Kernel:
    return attrs.evolve(kernel, layer=layer)


def _after_all_copies_back(ops: list[Op]) -> tuple[tuple[int, ...], ...]:
    """Host-side kernels wait for every device-to-host copy before them."""
    copies_back: list[int] = []
    deps: list[tuple[int, ...]] = []
    for index, op in enumerate(ops):
        if isinstance(op, Kernel) and op.device == HOST:
            deps.append(tuple(copies_back))
        else:
            deps.append(())
        if isinstance(op, Transfer) and op.direction == "d2h":
            copies_back.append(index)
    return tuple(deps)
