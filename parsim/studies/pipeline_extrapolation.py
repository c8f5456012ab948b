"""A 3D-parallel step's figures (step, tokens/s, TFLOP/s, MFU, idle share) from its event simulation.

Issue 28 tried a fast form here: a long 1F1B pipeline's figures from three short steps (``p``,
``p + 1``, ``p + 2`` micro-batches), extrapolated where their two differences agreed to 1e-9. It is
not sound: the step of megatron-7.5b on 8 DGX A100 nodes (tp 2, pp 8, one sequence per
micro-batch) grows by 33.3 ms per micro-batch from 8 to 10 micro-batches, then by 34.2-35.2 ms, so
the three short steps agree with each other and the extrapolation to 32 micro-batches comes out
2.5 % fast. A steady period that settles only after an unknown number of micro-batches cannot be
found from the first few, so every figure here is the full simulation's until a proof of when the
period settles exists (``tests/test_pipeline_extrapolation.py`` keeps the counter-example).
"""

from __future__ import annotations

from typing import Any

from parsim.hardware.network import ClusterSpec
from parsim.methods.predict import predict

FIGURES = ("step_s", "tokens_per_s", "tflops_per_gpu", "mfu", "idle_share")


def _additive(params: dict[str, Any], spec: ClusterSpec | str, method: str) -> tuple[float, ...]:
    """The step and the quantities that add up per micro-batch: tokens, FLOPs (model and run) and
    busy stage-seconds (each a figure times the step)."""
    metrics = predict("network", params, cluster=spec, method=method, budget=None).metrics
    step = float(metrics["step_s"])
    return (
        step,
        float(metrics["tokens_per_s"]) * step,
        float(metrics["tflops_per_gpu"]) * step,
        float(metrics["mfu"]) * step,
        (1.0 - float(metrics["idle_share"])) * step,
    )


def _figures(additive: tuple[float, ...]) -> dict[str, float]:
    step, tokens, tflop, model, busy = additive
    return {
        "step_s": step,
        "tokens_per_s": tokens / step,
        "tflops_per_gpu": tflop / step,
        "mfu": model / step,
        "idle_share": max(0.0, 1.0 - busy / step),
    }


def simulated_passes(params: dict[str, Any]) -> int:
    """Stage passes ``step_figures`` simulates: every micro-batch on every stage."""
    return int(params.get("pp", 1) or 1) * int(params.get("microbatches", 1) or 1)


def step_figures(params: dict[str, Any], spec: ClusterSpec | str, method: str = "engine") -> dict[str, float]:
    """``FIGURES`` of the 3D-parallel step ``params`` (``tp``, ``pp``, ``microbatches`` set)."""
    return _figures(_additive(params, spec, method))
