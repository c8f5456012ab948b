"""Wall time of a transformer prediction (issue 14's target: a GPT-2 training step <= 100 ms, engine).

Run: ``python benchmarks/bench_transformer.py``. Every figure is a *cold* prediction (parsim's caches
cleared before each call): the latency run plus the back-to-back throughput run. The event count
shows that a step's events grow with the layers, not with the batch or the sequence.
"""

from __future__ import annotations

from bench_engine import median_ms  # the sibling script: run as python benchmarks/bench_transformer.py

import parsim

CASES = [
    ("gpt2 train b=8 s=1024 fp32", {"model": "gpt2", "batch": 8, "seq": 1024}, "a100-80gb"),
    (
        "gpt2 train b=8 s=1024 bf16",
        {"model": "gpt2", "batch": 8, "seq": 1024, "dtype": "bfloat16"},
        "a100-80gb",
    ),
    (
        "gpt2 train b=64 s=128 bf16",
        {"model": "gpt2", "batch": 64, "seq": 128, "dtype": "bfloat16"},
        "a100-80gb",
    ),
    (
        "llama-2-7b prefill b=1 s=2048 fp16",
        {"model": "llama-2-7b", "batch": 1, "seq": 2048, "train": False, "dtype": "float16"},
        "h100-sxm",
    ),
]
TARGET_MS = 100.0


def main() -> None:
    for label, params, device in CASES:
        for method in ("engine", "analytic"):
            ms, prediction = median_ms(
                lambda p=params, d=device, m=method: parsim.predict("network", p, device=d, method=m), 5
            )
            print(
                f"{label:36s} {method:8s} {ms:7.1f} ms  events {prediction.events:6d}  "
                f"step {prediction.latency_s * 1e3:8.2f} ms"
            )
    print(f"target: GPT-2 training step <= {TARGET_MS:.0f} ms (engine)")


if __name__ == "__main__":
    main()
