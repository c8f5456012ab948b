"""Which program a measurement runs for its parameters, and the parameters that record what ran.

A measurement and the prediction beside it must describe the same program, so that
``predict(m.workload, m.params)`` models what was timed. Three rules keep them together:

- parameters naming a program parsim cannot run are refused before anything runs (``check``): a
  convolution algorithm no backend here has, an optimizer the measured step does not use;
- float32 matrix products on the GPU run in the ``math`` asked, and ``math`` then says what ran
  (``in_math_asked``: TF32 may be unavailable, or switched off by the driver);
- what the backend ran in place of what was asked is written back (``as_ran``): NumPy has no
  convolution library, so its ``conv2d`` is ``tap-gemm``; the MLP's step is NumPy or CuPy calls,
  not a framework's (``framework=none``).
"""

from __future__ import annotations

from collections.abc import Callable

from parsim.base.errors import ParsimError
from parsim.measure import gpu, torch_conv


def check(backend: str, workload: str, params: dict) -> None:
    """Refuse parameters that describe a program parsim cannot run, so that what is measured is
    what they describe: a convolution is ``tap-gemm`` (NumPy, CuPy) or cuDNN's ``auto`` (PyTorch);
    the MLP's step is SGD. (NumPy has no convolution library: there ``auto`` runs, and is recorded
    as, ``tap-gemm``.)"""
    if workload == "mlp_train_step" and params["optimizer"] != "sgd":
        raise ParsimError(
            f"mlp_train_step is measured with SGD (w -= lr * g): optimizer={params['optimizer']} "
            "is predicted only"
        )
    if workload != "conv2d":
        return
    algorithm = params["algorithm"]
    if algorithm == "auto" and backend == "cupy" and torch_conv.import_torch() is None:
        raise ParsimError(torch_conv.refusal())
    if algorithm not in ("auto", "tap-gemm"):
        raise ParsimError(
            f"conv2d algorithm={algorithm} cannot be measured: parsim runs tap-gemm (one product per "
            "filter tap, NumPy or CuPy) and auto (cuDNN's own choice, through PyTorch on a GPU)"
        )


def in_math_asked(backend, params: dict, run: Callable[[], tuple]) -> tuple:
    """``run()``'s ``(timing, stages, implementation)`` with the float32 products in ``params``'
    math, and the parameters as they ran: ``(timing, stages, implementation, params)``."""
    if "math" not in params:
        return (*run(), params)
    asked = params["math"]
    with gpu.math_mode(backend.xp, backend.dtype(params["dtype"]), asked) as (ran, note):
        timing, stages, how = run()
    # a framework's "default" runs its matrix products in IEEE float32 (training.numerics_of)
    recorded = asked if (ran == "tf32") == (asked == "tf32") else ran
    products = "on TF32 tensor cores" if ran == "tf32" else "in IEEE arithmetic"
    how = f"{how}; float32 matrix products {products}" + (f" ({note})" if note else "")
    return timing, stages, how, {**params, "math": recorded}


def as_ran(backend: str, workload: str, params: dict) -> dict:
    """``params`` with what ``backend`` ran in place of what they asked."""
    if workload == "conv2d" and backend == "numpy":
        params = {**params, "algorithm": "tap-gemm"}  # no convolution library in NumPy
    if "framework" in params:  # the step ran as NumPy/CuPy calls, whatever framework was named
        params = {**params, "framework": "none"}
    return params
