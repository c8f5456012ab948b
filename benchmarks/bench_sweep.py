"""Sweep throughput in points per minute, and the memory of a large analytic sweep (issue 5).

Run: ``python benchmarks/bench_sweep.py``. Targets on a 2-core machine: engine >= 6,000
points/min with 2 workers; analytic >= 300,000 points/min; peak memory of a 100,000-point
analytic sweep under 500 MB (measured in a fresh process as its peak resident set).
Single-kernel workloads (vector_add, relu, matmul) over sizes and devices, cold caches.
"""

from __future__ import annotations

import subprocess
import sys
import time

from parsim.methods.predict import clear_caches
from parsim.studies.sweeps.api import dask_map, sweep

GRID = {
    "workload": ["vector_add", "relu"],
    "workload.n": "logspace:1e3:1e9:250",
    "device": ["t4", "h100-sxm"],
}


def points_per_minute(label: str, **options) -> tuple[str, float, int]:
    clear_caches()
    start = time.perf_counter()
    frame = sweep(None, GRID, **options)
    elapsed = time.perf_counter() - start
    return label, len(frame) / elapsed * 60, len(frame)


PEAK = """
import resource, parsim.studies.sweeps.api as s
frame = s.sweep({"workload": "vector_add", "device": "h100-sxm", "method": "analytic"},
                {"workload.n": list(range(1000, 1000 + 100_000))})
assert len(frame) == 100_000
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def main() -> None:
    rows = [points_per_minute("engine, serial"), points_per_minute("engine, 2 worker processes", workers=2)]
    mapper, close = dask_map("local", workers=2)
    try:
        sweep(
            None, {"workload": ["relu"], "workload.n": [1000], "device": ["t4"]}, workers=mapper
        )  # start-up out of the timing
        rows.append(points_per_minute("engine, Dask LocalCluster (2 workers)", workers=mapper))
    finally:
        close()
    big = {"workload.n": "logspace:1e3:1e9:100000", "device": ["t4", "h100-sxm"]}
    start = time.perf_counter()
    frame = sweep({"workload": "vector_add", "method": "analytic"}, big)
    rows.append(("analytic, vectorised", len(frame) / (time.perf_counter() - start) * 60, len(frame)))
    peak_mb = float(
        subprocess.run([sys.executable, "-c", PEAK], capture_output=True, text=True, check=True).stdout
    )
    print(f"{'how':<40}{'points':>9}{'points/min':>14}")
    for label, rate, count in rows:
        print(f"{label:<40}{count:>9}{rate:>14,.0f}")
    print(f"peak memory of a 100,000-point analytic sweep (fresh process, max RSS): {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
