"""Wall time of cold ``llm_serve`` predictions (issue 14's target: <= 200 ms for the 70B case).

Run: ``python benchmarks/bench_llm_serve.py``. Each figure is the median of cold predictions (all
of parsim's caches cleared first): building the workload (prefill + the mean decode step, per
GPU) and predicting it, the latency run plus the throughput run.
"""

from __future__ import annotations

import statistics
import time

from parsim.methods.predict import clear_caches, predict
from parsim.workloads.serving import NAME, LlmServeParams, check_llm_serve, llm_serve

CASES = [
    (
        "llama-2-70b b=64 2048+256 gpus=8",
        {"model": "llama-2-70b", "batch": 64, "prompt": 2048, "output": 256, "gpus": 8},
        "h100-sxm",
    ),
    (
        "llama-2-70b b=16 1024+128 gpus=4",
        {"model": "llama-2-70b", "batch": 16, "prompt": 1024, "output": 128, "gpus": 4},
        "h100-sxm",
    ),
    (
        "llama-2-13b b=8 512+128 gpus=2",
        {"model": "llama-2-13b", "batch": 8, "prompt": 512, "output": 128, "gpus": 2},
        "a100-80gb",
    ),
    (
        "llama-2-7b b=1 512+128",
        {"model": "llama-2-7b", "batch": 1, "prompt": 512, "output": 128},
        "a100-80gb",
    ),
    ("gpt2 b=32 64+512", {"model": "gpt2", "batch": 32, "prompt": 64, "output": 512}, "a100-80gb"),
]


def cold_ms(given: dict, device: str, method: str, repeats: int = 3) -> tuple[float, int]:
    """Median milliseconds to build and predict, and the program's op count."""
    times, ops = [], 0
    for _ in range(repeats):
        clear_caches()
        start = time.perf_counter()
        workload = llm_serve(check_llm_serve(NAME, given, LlmServeParams(**given).model_dump()))
        predict(workload, device=device, method=method)
        times.append(time.perf_counter() - start)
        ops = len(workload.ops)
    return statistics.median(times) * 1e3, ops


def main() -> None:
    cold_ms(CASES[-1][1], CASES[-1][2], "engine", 1)  # imports and first-call costs
    print(f"{'case':36} {'device':10} {'ops':>6} {'engine ms':>10} {'analytic ms':>12}")
    for label, given, device in CASES:
        engine, ops = cold_ms(given, device, "engine")
        analytic, _ = cold_ms(given, device, "analytic")
        print(f"{label:36} {device:10} {ops:6d} {engine:10.0f} {analytic:12.0f}")


if __name__ == "__main__":
    main()
