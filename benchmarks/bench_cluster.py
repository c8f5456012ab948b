"""Wall time of cold cluster predictions (issue 15's targets).

Run: ``python benchmarks/bench_cluster.py``. Targets: a 1,024-GPU training step in <= 1 s and a
16,384-GPU one in <= 3 s (engine), and a (tp, pp, dp) sweep over every split of 1,024 GPUs for one
model in <= 60 s on 2 cores. Each step figure is the median of cold predictions (all of parsim's
caches cleared first), building the workload included; the sweep runs once, cold.
"""

from __future__ import annotations

import os
import statistics
import time

from parsim.methods.predict import clear_caches, predict
from parsim.studies.splits import split_table

GPT3 = {"model": "gpt3-175b", "train": True, "dtype": "float16", "optimizer": "adam", "recompute": "full"}
STEPS = [
    (
        "GPT-3 175B tp8 pp16 dp8, 192 micro-batches",
        {**GPT3, "batch": 1536, "tp": 8, "pp": 16, "microbatches": 192},
        128,
    ),
    (
        "GPT-3 175B tp8 pp16 dp128, 12 micro-batches",
        {**GPT3, "batch": 1536, "tp": 8, "pp": 16, "microbatches": 12},
        2048,
    ),
    (
        "GPT-3 175B tp8 pp8 dp256, 64 micro-batches",
        {**GPT3, "batch": 16384, "tp": 8, "pp": 8, "microbatches": 64},
        2048,
    ),
]
DATA_PARALLEL = {"model": "resnet50", "batch": 256, "sync": "ring", "scaling": "weak", "dtype": "float16"}


def cold_s(workload: str, params: dict, nodes: int, repeats: int = 3) -> tuple[float, int, float]:
    """Median seconds of a cold prediction, its events and its predicted step."""
    times, events, step = [], 0, 0.0
    for _ in range(repeats):
        clear_caches()
        start = time.perf_counter()
        prediction = predict(workload, {**params, "nodes": nodes}, cluster="dgx-a100")
        times.append(time.perf_counter() - start)
        events, step = prediction.events, prediction.latency_s
    return statistics.median(times), events, step


def main() -> None:
    cold_s("network", STEPS[1][1], STEPS[1][2], 1)  # imports and first-call costs
    print(f"{'case':48} {'GPUs':>6} {'events':>8} {'step':>9} {'wall s':>7}")
    for label, params, nodes in STEPS:
        wall, events, step = cold_s("network", params, nodes)
        print(f"{label:48} {nodes * 8:6d} {events:8d} {step:8.2f}s {wall:7.2f}")
    for nodes in (128, 2048):
        wall, events, step = cold_s("data_parallel", DATA_PARALLEL, nodes)
        print(
            f"{'ResNet-50 data parallel, DDP buckets':48} {nodes * 8:6d} {events:8d} {step:8.3f}s {wall:7.2f}"
        )
    clear_caches()
    start = time.perf_counter()
    rows = split_table({**GPT3, "batch": 1536, "nodes": 128}, "dgx-a100")
    wall = time.perf_counter() - start
    best = next(row for row in rows if row.fastest)
    print(
        f"\nsplits of 1,024 GPUs for GPT-3 175B (batch 1536, micro-batch 1): {len(rows)} splits, "
        f"{sum(row.fits for row in rows)} fit, fastest tp={best.tp} pp={best.pp} dp={best.dp} "
        f"({best.step_s:.1f} s/step): {wall:.1f} s on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
