"""A long pipeline's step figures from three short ones: the steady 1F1B state repeats one period.

Under 1F1B every stage warms up with ``p - s - 1`` forward passes, then alternates one forward and
one backward pass, then drains. Once a step has at least ``p`` micro-batches every stage runs the
same warm-up and drain, and each further micro-batch adds one more steady period: the step, the
busy seconds of every kind and the FLOPs grow by the same amount per micro-batch (per round of
``p`` micro-batches under the interleaved schedule, whose micro-batches come in rounds). So the
figures of ``m`` micro-batches are those of ``p`` micro-batches plus ``(m - p)`` periods, and one
period is the difference between the steps of ``p`` and ``p + 1`` micro-batches.

The event simulation stays the oracle and the judge: the three short steps (``p``, ``p + d``,
``p + 2 d`` micro-batches, ``d`` one round) are full event simulations, and where their two
differences disagree by more than ``AFFINE_RTOL`` (the state has not settled into one period)
the full step is simulated instead. Tests compare both forms on small pipelines.
"""

from __future__ import annotations

from typing import Any

from parsim.hardware.network import ClusterSpec
from parsim.methods.predict import predict

AFFINE_RTOL = 1e-9
"""How far the two measured periods may disagree, relative to the step, for the extrapolation."""
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


def short_counts(params: dict[str, Any]) -> tuple[int, int, int] | None:
    """The micro-batch counts of the three short steps, or None where they would cost as much as
    the step itself (a short pipeline, few micro-batches, or no pipeline)."""
    pp, m = int(params.get("pp", 1)), int(params["microbatches"])
    if pp < 2:
        return None
    period = pp if int(params.get("virtual_stages", 1)) > 1 else 1  # interleaving: whole rounds
    counts = (pp, pp + period, pp + 2 * period)
    return counts if m > counts[-1] + period else None


def simulated_passes(params: dict[str, Any]) -> int:
    """Stage passes ``step_figures`` simulates: the three short steps', or the step's own."""
    counts = short_counts(params)
    pp = int(params.get("pp", 1) or 1)
    return pp * (sum(counts) if counts is not None else int(params.get("microbatches", 1) or 1))


def step_figures(params: dict[str, Any], spec: ClusterSpec | str, method: str = "engine") -> dict[str, float]:
    """``FIGURES`` of the 3D-parallel step ``params`` (``tp``, ``pp``, ``microbatches`` set): from
    three short steps where the pipeline is long and they settle into one period, else from the
    step itself."""
    fast = extrapolated(params, spec, method)
    return fast if fast is not None else _figures(_additive(params, spec, method))


def extrapolated(
    params: dict[str, Any], spec: ClusterSpec | str, method: str = "engine"
) -> dict[str, float] | None:
    """``FIGURES`` from the three short steps, or None where they do not apply (``short_counts``)
    or have not settled into one period (their two differences disagree by more than
    ``AFFINE_RTOL`` of the longest's figures)."""
    counts = short_counts(params)
    if counts is None:
        return None
    m, batch = int(params["microbatches"]), int(params["batch"])
    per_micro = batch // m  # sequences of one micro-batch over every replica
    short = [_additive({**params, "microbatches": c, "batch": per_micro * c}, spec, method) for c in counts]
    first = [b - a for a, b in zip(short[0], short[1], strict=True)]
    second = [b - a for a, b in zip(short[1], short[2], strict=True)]
    if any(abs(a - b) > AFFINE_RTOL * abs(v) for a, b, v in zip(first, second, short[2], strict=True)):
        return None
    periods = (m - counts[0]) / (counts[1] - counts[0])
    return _figures(tuple(base + periods * step for base, step in zip(short[0], first, strict=True)))
