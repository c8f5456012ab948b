"""Loss scaling: how a float16 training step ends under PyTorch's ``GradScaler``.

Float16 gradients underflow, so mixed-precision training multiplies the loss by a scale before the
backward pass and divides the gradients by it afterwards. The division is one multi-tensor pass over
every float32 gradient that also checks them for overflow (``_amp_foreach_non_finite_check_and_unscale_``);
a step whose gradients overflowed must be skipped, so ``GradScaler.step`` reads the flag back to the
host (``.item()``) before it calls ``optimizer.step``. That read is a synchronisation: like a cashier
who must count the till before opening the next register, the host cannot issue the optimizer's
kernels until the GPU has finished the whole backward pass, and the GPU then idles while the host
issues them one by one ([SCALER] in ``stack.presets``). bfloat16 has float32's range and needs no
scaler; graph frameworks check the flag on the device (``FrameworkSpec.scaler_sync``).
"""

from __future__ import annotations

from parsim.base.dtypes import itemsize
from parsim.stack.specs import FrameworkSpec
from parsim.workloads.base import Kernel, Op, Transfer
from parsim.workloads.layers import Numerics, layer_update
from parsim.workloads.net import Layer

OVERFLOW_FLAG_B = 4  # GradScaler's found_inf: one float32 per device


def scaler_syncs(numerics: Numerics, framework: FrameworkSpec) -> bool:
    """Does a training step with these numerics end with a loss scaler's read-back in ``framework``?"""
    return numerics.mixed and numerics.dtype == "float16" and framework.scaler_sync


def scaled_update(layers: list[Layer], numerics: Numerics, optimizer: str = "sgd") -> list[Op]:
    """The end of a float16 training step under a loss scaler: one multi-tensor pass unscales every
    master gradient and checks it for overflow, the host reads the flag back (it waits for the
    backward pass), then it issues the optimizer's update of every layer's weights.

    Args:
        layers: the network's layers (those with parameters are updated).
        numerics: the step's arithmetic (the master precision of the gradients and weights).
        optimizer: ``sgd`` or ``adam`` (``optimizers.update_kernel``).
    """
    weights = sum(layer.params for layer in layers)
    master = itemsize(numerics.master_dtype)
    unscale = Kernel.of(
        "unscale gradients and check them",
        float(weights),
        weights * master,
        weights * master,
        weights,
        dtype=numerics.master_dtype,
        layer="loss",
        cold_bytes=2.0 * weights * master,
    )
    flag = Transfer("d2h overflow flag", OVERFLOW_FLAG_B, "d2h", layer="loss", waits=True)
    updates = [layer_update(layer, numerics, optimizer) for layer in layers if layer.params]
    return [unscale, flag, *updates]
