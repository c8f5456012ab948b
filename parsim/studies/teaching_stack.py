"""Figures for three lessons, read from parsim's own predictions (never typed in by hand).

- ``software_stack``: how much of one step each layer of the stack costs — the host (the Python
  program, the framework's dispatch and the CUDA launches: the ``overhead`` of the breakdown), the
  library's kernels on the CUDA cores (``compute`` + ``memory``) and the copies (``transfer``);
- ``mlp_sgd_vs_adam``: the optimizer's share of a training step, found in the step's trace;
- ``cpu_latency_vs_gpu_throughput``: one task's latency and many tasks' throughput on each device.
"""

from __future__ import annotations

from parsim.results.prediction import Prediction
from parsim.studies.scenarios import ScenarioResult

OPTIMIZER_MARKS = ("update", "*= lr", "-= grad_")
"""What names an optimizer's op in ``mlp_train_step``: Adam's fused ``w1: adam update`` and the
articles' SGD in two passes, ``grad_w1 *= lr`` then ``w1 -= grad_w1``."""


def stack_rows(result: ScenarioResult) -> list[dict]:
    """Per case and sweep value: the step's time split by layer of the software stack."""
    rows = []
    for r in result.results:
        b = r.prediction.breakdown
        host = b.get("overhead", 0.0)
        kernels = b.get("compute", 0.0) + b.get("memory", 0.0)
        copies = b.get("transfer", 0.0)
        rows.append(
            {
                "case": r.label,
                "value": r.value,
                "step_s": r.prediction.latency_s,
                "host_s": host,
                "kernels_s": kernels,
                "copies_s": copies,
                "host_share": host / r.prediction.latency_s if r.prediction.latency_s > 0 else 0.0,
            }
        )
    return rows


def _union_length(intervals: list[tuple[float, float]]) -> float:
    """Total length covered by possibly overlapping intervals."""
    total, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


def optimizer_time(prediction: Prediction) -> float:
    """Seconds of the step during which the optimizer's ops are being issued or run (the union of
    their busy intervals on every resource; waiting for their inputs is not counted)."""
    spans = [
        (e.start_s, e.end_s)
        for e in prediction.trace
        if not e.detail and e.kind != "wait" and any(mark in e.label for mark in OPTIMIZER_MARKS)
    ]
    return _union_length(spans)


def optimizer_rows(result: ScenarioResult) -> list[dict]:
    """Per case: the optimizer, the step's latency and the optimizer's time and share of it."""
    rows = []
    for r in result.results:
        spent = optimizer_time(r.prediction)
        rows.append(
            {
                "case": r.label,
                "optimizer": r.prediction.params.get("optimizer", "sgd"),
                "step_s": r.prediction.latency_s,
                "optimizer_s": spent,
                "optimizer_share": spent / r.prediction.latency_s if r.prediction.latency_s > 0 else 0.0,
            }
        )
    return rows


def latency_throughput_rows(result: ScenarioResult) -> list[dict]:
    """Per case: one task's latency (the sweep's smallest batch) and the most items per second
    over the sweep (batch / latency), with the batch that reaches it."""
    rows = []
    for label in result.labels:
        series = result.series(label)
        first = min(series, key=lambda r: float(r.value))
        rates = [
            (float(r.value) / r.prediction.latency_s, r.value) for r in series if r.prediction.latency_s > 0
        ]
        best_rate, best_batch = max(rates)
        rows.append(
            {
                "case": label,
                "batch_1": first.value,
                "latency_s": first.prediction.latency_s,
                "best_items_per_s": best_rate,
                "at_batch": best_batch,
            }
        )
    return rows
