"""Wall time per prediction and event counts (the speed targets of issues 2 and 3).

Run: ``python benchmarks/bench_engine.py``. Targets on a 2-core machine: <= 20 ms per engine
prediction of a single kernel at any n, n = 1e9 within 1.5x of n = 1e6, analytic <= 0.2 ms;
<= 200 ms for ``network model=resnet50 train=true`` and ``data_parallel gpus=8``.

Every figure is a *cold* prediction: all of parsim's caches (predictions, kernel plans) are
cleared before each call, so it measures the model, not a dictionary lookup. A prediction is
the latency run plus the three-instance throughput run (and, for data_parallel, the 1-GPU
baseline that speed-up and efficiency need).
"""

from __future__ import annotations

import statistics
import time

import parsim
from parsim.methods.predict import clear_caches

CASES = [
    ("vector_add n=1e3", "vector_add", {"n": 1e3}, {"device": "h100-sxm"}),
    ("vector_add n=1e6", "vector_add", {"n": 1e6}, {"device": "h100-sxm"}),
    ("vector_add n=1e9", "vector_add", {"n": 1e9}, {"device": "h100-sxm"}),
    ("matmul 4096^3", "matmul", {"m": 4096, "n": 4096, "k": 4096}, {"device": "h100-sxm"}),
    (
        "network resnet50 train b=32",
        "network",
        {"model": "resnet50", "batch": 32, "train": True},
        {"device": "h100-sxm"},
    ),
    (
        "data_parallel gpus=8 host",
        "data_parallel",
        {"model": "resnet50", "batch": 256, "gpus": 8, "sync": "host"},
        {"device": "v100-pcie"},
    ),
    (
        "data_parallel gpus=8 ring",
        "data_parallel",
        {"model": "resnet50", "batch": 256, "gpus": 8, "sync": "ring"},
        {"device": "v100-sxm2", "link": "nvlink3"},
    ),
]


def median_ms(function, repeats: int) -> tuple[float, object]:
    function()  # warm-up: imports, first-call costs
    times, result = [], None
    for _ in range(repeats):
        clear_caches()
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3, result


def main() -> list[dict]:
    rows = []
    for label, name, params, where in CASES:
        heavy = name in ("network", "data_parallel")
        engine_ms, prediction = median_ms(
            lambda n=name, p=params, w=where: parsim.predict(n, p, **w), 5 if heavy else 50
        )
        analytic_ms, _ = median_ms(
            lambda n=name, p=params, w=where: parsim.predict(n, p, method="analytic", **w),
            5 if heavy else 200,
        )
        rows.append(
            {
                "case": label,
                "device": where["device"],
                "engine_ms": engine_ms,
                "events": prediction.events,
                "analytic_ms": analytic_ms,
            }
        )
    print("median wall time per cold prediction (latency run + throughput run of 2-3 instances)")
    print(f"{'case':<30}{'device':<12}{'engine ms':>11}{'events':>8}{'analytic ms':>13}")
    for row in rows:
        print(
            f"{row['case']:<30}{row['device']:<12}{row['engine_ms']:>11.2f}{row['events']:>8}"
            f"{row['analytic_ms']:>13.3f}"
        )
    ratio = rows[2]["engine_ms"] / rows[1]["engine_ms"]
    print(f"engine n=1e9 / n=1e6: {ratio:.2f}x (target <= 1.5x)")
    return rows


if __name__ == "__main__":
    main()
