"""Wall time of serving-under-load simulations (issue 24's targets: 1,000 requests <= 1 s, 10,000 <= 10 s).

Run: ``python benchmarks/bench_llm_load.py``. llama-2-7b on an A100 80GB, Poisson arrivals,
prompts lognormal (median 512, sigma 0.8), outputs lognormal (median 128, sigma 0.6). For each
scheduler and size: ``cold`` is the first run with a fresh step model (the ``llm_serve``
predictions that price the steps included: their count in brackets), ``warm`` the same run again
(the simulation alone, the step prices cached as a capacity search or a sweep reuses them).

Then the command line as a user runs it (a fresh process each: start-up, pricing and simulation
included): ``parsim predict llm_load`` at 1,000 and 10,000 requests (the issue's example load),
and ``parsim capacity llm_load`` for P90 SLOs of 0.5 s TTFT and 50 ms TPOT (target: <= 30 s).
``--before DIR`` times the same commands from another checkout too (``git worktree add DIR main``),
one process of each in turn, so that a change's before and after share the machine's load;
``--cli`` times the command line alone.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from parsim.methods.predict import clear_caches
from parsim.methods.serving.config import ServerConfig
from parsim.methods.serving.metrics import summarize
from parsim.methods.serving.simulate import simulate
from parsim.methods.serving.steps import ModelSteps, kv_blocks, replica_system
from parsim.workloads.requests import generate

PARAMS = {"model": "llama-2-7b"}
DEVICE = "a100-80gb"
RATES = {1_000: 4.0, 10_000: 4.0}


def main() -> None:
    blocks = kv_blocks(PARAMS, replica_system(PARAMS, DEVICE), 16, 4096)
    print(f"llama-2-7b on {DEVICE}: {blocks:,} KV blocks of 16 tokens")
    for scheduler in ("static", "continuous", "chunked"):
        for requests, rate in RATES.items():
            clear_caches()
            steps = ModelSteps(PARAMS, DEVICE, max_batch=64)
            stream = generate(
                rate, requests, "lognormal:512:0.8", "lognormal:128:0.6", seed=1, max_context=4096
            )
            config = ServerConfig(kv_blocks=blocks, scheduler=scheduler, max_batch=64, batch_timeout_s=0.5)
            seconds = []
            for _ in range(2):
                start = time.perf_counter()
                metrics = summarize(simulate(stream, config, steps))
                seconds.append(time.perf_counter() - start)
            print(
                f"{scheduler:10s} {requests:6,d} requests at {rate:g}/s: cold {seconds[0]:6.2f} s "
                f"[{steps.predictions} predictions], warm {seconds[1]:6.2f} s; "
                f"P50/P99 e2e {metrics.e2e_p50_s:.2f}/{metrics.e2e_p99_s:.2f} s, "
                f"{metrics.requests_per_s:.2f} req/s, batch {metrics.batch_mean:.1f}"
            )


PREDICT = ["predict", "llm_load", "model=llama-2-7b", "rate=4", "prompt=512", "output=128"]
PREDICT += ["scheduler=continuous", "max_batch=64", "seed=1", "--device", DEVICE]
CAPACITY = ["capacity", "llm_load", "model=llama-2-7b", "prompt=512", "output=128"]
CAPACITY += ["slo_ttft=0.5", "slo_tpot=0.05", "--device", DEVICE]


def timed(args: list[str], checkout: str | None) -> tuple[float, str]:
    """Wall seconds of ``parsim ARGS`` in a fresh process (from ``checkout`` if given), its last line."""
    env = dict(os.environ)
    if checkout is not None:
        env["PYTHONPATH"] = checkout
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "parsim", *args], capture_output=True, text=True, env=env, cwd=checkout
    )
    seconds = time.perf_counter() - start
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr.strip()
    return seconds, last


def command_line(before: str | None = None) -> None:
    """Wall time of the commands as a user types them (one fresh process each)."""
    for name, args in (
        ("predict, 1,000 requests", [*PREDICT, "requests=1000"]),
        ("predict, 10,000 requests", [*PREDICT, "requests=10000"]),
        ("capacity (1,000 requests per probe)", CAPACITY),
    ):
        then = f"  (before: {timed(args, before)[0]:6.2f} s)" if before is not None else ""
        seconds, last = timed(args, None)
        print(f"parsim {name:38s} {seconds:6.2f} s{then}  ({last[:80]})")


if __name__ == "__main__":
    flags = sys.argv[1:]
    if "--cli" not in flags:
        main()
    command_line(flags[flags.index("--before") + 1] if "--before" in flags else None)
