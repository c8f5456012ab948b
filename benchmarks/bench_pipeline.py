"""Issue 28's pipeline, cache and collector figures, each beside its target, A (before) vs B (now).

Run: ``python benchmarks/bench_pipeline.py [--repeats 5] [--skip-slow]``. Every figure is the
median of ``--repeats`` cold runs (parsim's caches cleared first) unless it says otherwise; A is
the path issue 28 replaced, measured in the same run so that a loaded machine inflates both
alike (the targets are for a quiet 2-core machine):

- the largest published Megatron row (1T parameters, 64 stages x 512 micro-batches) and the
  slowest of all published Megatron rows, timed by the max-plus recurrence (B,
  ``methods.recurrence``) against the SimPy event simulation it replaces (A, ``pipeline_events=true``,
  once); target <= 1 s;
- ``parsim splits`` of 1,024 GPUs for GPT-3 175B (target <= 5 s, <= 500 MB; A once) and of 16,384
  (target <= 30 s);
- a prediction cache hit against a miss (target: a hit <= 1 % of a miss);
- a 1,024-GPU training step with the cyclic collector paused (B) or left on (A).
"""

from __future__ import annotations

import argparse
import contextlib
import resource
import statistics
import time
from collections.abc import Callable, Iterator
from unittest import mock

import attrs

from parsim.base import collector
from parsim.methods.predict import clear_caches, predict
from parsim.studies import published, splits
from parsim.studies.published import load_rows

GPT3 = {"model": "gpt3-175b", "train": True, "dtype": "float16", "optimizer": "adam", "recompute": "full"}
STEP_1024 = {**GPT3, "batch": 1536, "tp": 8, "pp": 16, "microbatches": 192, "nodes": 128}


def median_s(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        clear_caches()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@contextlib.contextmanager
def collector_left_on() -> Iterator[None]:
    """Path A of the collector: nothing paused."""
    with mock.patch.object(collector, "paused", contextlib.nullcontext):
        yield


def peak_mb() -> float:
    """The largest resident set of this process and of its finished workers, in MB."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) / 1024


def line(label: str, a: float | None, b: float, target: str) -> None:
    before = f"{a:9.2f}" if a is not None else f"{'-':>9}"
    print(f"{label:58} {before} {b:9.3f}   {target}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-slow", action="store_true", help="no search of 16,384 GPUs")
    args = parser.parse_args()
    n = args.repeats
    rows = {row.id: row for row in load_rows()}
    warm = {**GPT3, "model": "gpt3-1.3b", "batch": 8, "tp": 8, "pp": 1, "microbatches": 1, "nodes": 1}
    predict("network", warm, cluster="dgx-a100")  # imports and first-call costs
    print(f"{'figure (seconds unless named)':58} {'A before':>9} {'B now':>9}   target")
    # the split search first: the peak memory is a high-water mark, before any 1T step runs here

    def search(nodes: int, **extra: object) -> Callable[[], object]:
        given = {**GPT3, "batch": 1536, "nodes": nodes, **extra}
        return lambda: splits.split_table(given, "dgx-a100", budget=None)

    b = median_s(search(128), n)
    memory = peak_mb()
    a = None if args.skip_slow else median_s(search(128, pipeline_events=True), 1)
    line("splits of 1,024 GPUs, GPT-3 175B batch 1536, every core", a, b, "<= 5 s")
    print(f"{'  peak memory, MB (this process or a worker, B)':58} {'':9} {memory:9.0f}   <= 500 MB")
    if not args.skip_slow:
        b = median_s(search(2048), max(1, n // 5))
        line("splits of 16,384 GPUs, GPT-3 175B batch 1536 (median of n/5)", None, b, "<= 30 s")

    one_t = rows["sc21-t1-1t"]
    events = attrs.evolve(one_t, params={**one_t.params, "pipeline_events": True})
    b = median_s(lambda: published.predicted(one_t), n)
    a = None if args.skip_slow else median_s(lambda: published.predicted(events), 1)  # tens of seconds
    line("published row sc21-t1-1t (1T, pp 64 x 512 micro-batches)", a, b, "<= 1 s")
    megatron = [row for row in rows.values() if row.klass == "megatron"]
    slowest, worst = 0.0, ""
    for row in megatron:
        seconds = median_s(lambda row=row: published.predicted(row), 1)
        if seconds > slowest:
            slowest, worst = seconds, row.id
    line(f"slowest of {len(megatron)} published Megatron rows ({worst}; once each)", None, slowest, "<= 1 s")

    for label, miss_args in (
        ("ResNet-50 training step b=32", ("network", {"model": "resnet50", "batch": 32, "train": True})),
        ("matmul 4096^3", ("matmul", {"m": 4096, "n": 4096, "k": 4096})),
    ):
        miss = median_s(lambda: predict(*miss_args, device="h100-sxm"), n)  # noqa: B023
        predict(*miss_args, device="h100-sxm")
        start = time.perf_counter()
        for _ in range(1000):
            predict(*miss_args, device="h100-sxm")
        hit = (time.perf_counter() - start) / 1000
        line(f"prediction cache: a miss, {label} on an H100, ms", None, miss * 1e3, "")
        line("prediction cache: a hit, ms", None, hit * 1e3, f"<= 1 % of a miss: {hit / miss:.3%}")

    def step() -> object:
        return predict("network", STEP_1024, cluster="dgx-a100")

    b = median_s(step, n)
    with collector_left_on():
        a = median_s(step, n)
    line("1,024-GPU step (tp8 pp16 dp8, 192 micro-batches): collector", a, b, "paused (B) vs on (A)")


if __name__ == "__main__":
    main()
