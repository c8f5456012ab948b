"""Wall time per prediction and event counts (issue 2's speed targets).

Run: ``python benchmarks/bench_engine.py``. Targets on a 2-core machine: <= 20 ms per engine
prediction at any n, n = 1e9 within 1.5x of n = 1e6, analytic <= 0.2 ms.

Each figure is the median of repeated calls with the prediction cache bypassed (the internal
``_predict`` is called through ``__wrapped__``), so it measures the model, not a dict lookup.
"""

from __future__ import annotations

import statistics
import time

from parsim.hardware import registry
from parsim.hardware.execution import check_mode
from parsim.predict import _predict
from parsim.workloads import make_workload

CASES = [
    ("vector_add n=1e3", "vector_add", {"n": 1e3}),
    ("vector_add n=1e6", "vector_add", {"n": 1e6}),
    ("vector_add n=1e9", "vector_add", {"n": 1e9}),
    ("matmul 4096^3", "matmul", {"m": 4096, "n": 4096, "k": 4096}),
]


def median_s(function, repeats: int) -> float:
    function()  # warm-up: imports, first-call costs
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(device: str = "h100-sxm") -> list[dict]:
    system = registry.system(device)
    mode = check_mode(system.compute, None)
    rows = []
    for label, name, params in CASES:
        workload = make_workload(name, params)
        row = {"case": label}
        for method, repeats in (("engine", 50), ("analytic", 500)):

            def run(method=method, workload=workload):
                return _predict.__wrapped__(workload, system, mode, method, "roofline")

            row[f"{method}_ms"] = median_s(run, repeats) * 1e3
            if method == "engine":
                row["events"] = run().events
        rows.append(row)
    print(f"device {device}; median wall time per prediction (latency run + 3-instance throughput run)")
    print(f"{'case':<20}{'engine ms':>12}{'events':>8}{'analytic ms':>13}")
    for row in rows:
        print(f"{row['case']:<20}{row['engine_ms']:>12.3f}{row['events']:>8}{row['analytic_ms']:>13.4f}")
    ratio = rows[2]["engine_ms"] / rows[1]["engine_ms"]
    print(f"engine n=1e9 / n=1e6: {ratio:.2f}x (target <= 1.5x)")
    return rows


if __name__ == "__main__":
    main()
