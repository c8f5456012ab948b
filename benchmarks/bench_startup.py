"""How long ``parsim --help`` takes in a fresh process (issue 12's target: <= 0.5 s).

python benchmarks/bench_startup.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time


def main() -> None:
    times = []
    for _ in range(7):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "parsim", "--help"], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    print(
        f"parsim --help: median {statistics.median(times):.2f} s, best {min(times):.2f} s (target <= 0.5 s)"
    )


if __name__ == "__main__":
    main()
