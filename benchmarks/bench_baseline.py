"""This checkout's prediction and sweep speed beside commit 5c8cff1's, measured in the same run.

Run: ``python benchmarks/bench_baseline.py --baseline PATH`` where PATH is a checkout of 5c8cff1
(``git worktree add ../parsim-5c8cff1 5c8cff1``): issue 28 item 4 asks that a ResNet-50
training step, data parallelism and a matmul predict no slower than there, and that an engine
sweep of ResNet-50 points reach >= 6,000 points/min. Without ``--baseline`` only this checkout
is measured.

Each round runs a fresh process of each checkout, one after the other (alternated, so that a
machine shared with other work loads both alike); a process measures every case as the CPU time
(``time.process_time``: time the process ran, not time it waited for a core) of a cold
prediction, every parsim cache cleared before each call, the minimum of its repeats. The
figures printed are the medians over the rounds, and this checkout's ratio to the baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from bench_engine import CASES as ENGINE_CASES

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
import parsim
try:
    from parsim.methods.predict import clear_caches
    from parsim.studies.sweeps.api import sweep
except ImportError:  # 5c8cff1's layout
    from parsim.predict import clear_caches
    from parsim.sweeps.api import sweep
assert parsim.__file__.startswith(sys.argv[1]), parsim.__file__
CASES = json.loads(sys.argv[2])
figures = {}
for label, name, params, where, repeats in CASES:
    parsim.predict(name, params, **where)  # imports and first-call costs out of the timing
    best = float("inf")
    for _ in range(repeats):
        clear_caches()
        start = time.process_time()
        parsim.predict(name, params, **where)
        best = min(best, time.process_time() - start)
    figures[label] = best * 1e3
GRID = {"workload": ["network"], "workload.model": ["resnet50"], "workload.train": [True],
        "workload.batch": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512], "device": ["t4", "v100-sxm2", "h100-sxm"]}
clear_caches()
start = time.process_time()
frame = sweep(None, GRID)
figures["sweep"] = len(frame) / (time.process_time() - start) * 60
print(json.dumps(figures))
"""

REPEATS = {"matmul 4096^3": 50, "network resnet50 train b=32": 7}
"""Cold repeats per case (the best counts); the data-parallel steps take 3."""
CASES = [(*case, REPEATS.get(case[0], 3)) for case in ENGINE_CASES if not case[0].startswith("vector_add")]
"""bench_engine's cases issue 28 item 4 names (a matmul, a ResNet-50 step, data parallelism)."""
SWEEP = "engine sweep, ResNet-50 points/min"


def measure(root: Path) -> dict[str, float]:
    """One fresh process of the checkout at ``root``: its figures (ms per case, sweep points/min)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), json.dumps(CASES)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="a checkout of commit 5c8cff1")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    roots = {"this": ROOT}
    if args.baseline is not None:
        roots["5c8cff1"] = args.baseline.resolve()
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in roots}
    for _ in range(args.rounds):
        for name, root in roots.items():  # alternated: both see the same load
            runs[name].append(measure(root))
    labels = [case[0] for case in CASES] + ["sweep"]
    median = {
        name: {label: statistics.median(run[label] for run in rounds) for label in labels}
        for name, rounds in runs.items()
    }
    print(f"CPU ms per cold prediction (median of {args.rounds} rounds; each the best of its repeats)")
    header = f"{'case':<32}{'this':>10}"
    if "5c8cff1" in median:
        header += f"{'5c8cff1':>10}{'ratio':>8}"
    print(header)
    for label in labels:
        shown = SWEEP if label == "sweep" else label
        line = f"{shown:<32}{median['this'][label]:>10,.2f}"
        if "5c8cff1" in median:
            old = median["5c8cff1"][label]
            line += f"{old:>10,.2f}{median['this'][label] / old:>7.2f}x"
        print(line)
    print(
        "targets: each case at or below 5c8cff1's (ratio <= 1.00x; for the sweep >= 1.00x), "
        "and the sweep >= 6,000 points/min"
    )


if __name__ == "__main__":
    main()
