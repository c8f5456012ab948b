"""Wall time of serving-under-load simulations (issue 24's targets: 1,000 requests <= 1 s, 10,000 <= 10 s).

Run: ``python benchmarks/bench_llm_load.py``. llama-2-7b on an A100 80GB, Poisson arrivals,
prompts lognormal (median 512, sigma 0.8), outputs lognormal (median 128, sigma 0.6). For each
scheduler and size: ``cold`` is the first run with a fresh step model (the ``llm_serve``
predictions that price the steps included: their count in brackets), ``warm`` the same run again
(the simulation alone, the step prices cached as a capacity search or a sweep reuses them).
"""

from __future__ import annotations

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


if __name__ == "__main__":
    main()
