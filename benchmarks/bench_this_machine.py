"""This machine against its calibrated model, timed by a harness that shares no code with parsim.measure.

Plain NumPy as a user writes it — ``np.add(a, b, out=c)``, ``np.maximum(x, 0, out=y)`` on signed
data, ``x.sum()``, ``a @ b`` — timed with ``time.perf_counter`` (warm-up, then the median of
repeats), and each point predicted from a quick calibration of this machine: elementwise ops and
reductions run on one thread (NumPy's ufuncs do), matrix products on every core (the BLAS
does). Prints each point and the MAPE per operation over points of at least 100 us (issue 10's
target: <= 15 %).

    python benchmarks/bench_this_machine.py                    # calibrates first (~7 s)
    python benchmarks/bench_this_machine.py --device me.toml   # or uses a calibrated file
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy

import parsim
from parsim.hardware.registry import processor
from parsim.measure.calibrate import calibrate

LARGE_S = 100e-6


def median_time(operation, budget_s: float = 0.3) -> float:
    operation()  # warm-up: page faults, BLAS thread start
    samples, spent = [], 0.0
    while spent < budget_s or len(samples) < 7:
        start = time.perf_counter()
        operation()
        samples.append(time.perf_counter() - start)
        spent += samples[-1]
        if len(samples) >= 2000:
            break
    return statistics.median(samples)


def points(rng: numpy.random.Generator):
    """``(workload, params, mode, operation)`` for every point; data is standard normal (both signs)."""
    for n in (1e5, 3e5, 1e6, 3e6, 1e7, 3e7):
        size = int(n)
        a = rng.standard_normal(size, dtype=numpy.float32)
        b = rng.standard_normal(size, dtype=numpy.float32)
        c = numpy.empty_like(a)  # outputs reused, as a loop over steps does (no fresh pages each call)
        yield "vector_add", {"n": n}, "simd", lambda a=a, b=b, c=c: numpy.add(a, b, out=c)
        yield "relu", {"n": n}, "simd", lambda a=a, c=c: numpy.maximum(a, 0, out=c)
        yield "reduce_sum", {"n": n}, "simd", lambda a=a: a.sum()
    for edge in (256, 512, 1024, 2048):
        a = rng.standard_normal((edge, edge), dtype=numpy.float32)
        b = rng.standard_normal((edge, edge), dtype=numpy.float32)
        yield "matmul", {"m": edge, "n": edge, "k": edge}, "mimd+simd", lambda a=a, b=b: a @ b


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", help="calibrated hardware TOML (default: calibrate --quick now)")
    args = parser.parse_args()
    spec = processor(args.device) if args.device else calibrate(quick=True)[0]
    rng = numpy.random.default_rng(2026)
    errors: dict[str, list[float]] = {}
    print(f"{'workload':<11} {'size':>16} {'measured':>11} {'predicted':>11} {'error':>7}")
    for workload, params, mode, operation in points(rng):
        measured = median_time(operation)
        predicted = parsim.predict(workload, params, device=spec, mode=mode).latency_s
        error = (predicted - measured) / measured
        size = "x".join(f"{params[k]:g}" for k in ("m", "n", "k")) if "m" in params else f"{params['n']:g}"
        print(f"{workload:<11} {size:>16} {measured * 1e6:>9.1f}us {predicted * 1e6:>9.1f}us {error:>+7.0%}")
        if measured >= LARGE_S:
            errors.setdefault(workload, []).append(abs(error))
    print()
    for workload, values in errors.items():
        print(f"MAPE {workload:<11} {statistics.fmean(values):6.1%} over {len(values)} points >= 100 us")
    every = [e for values in errors.values() for e in values]
    print(f"MAPE {'overall':<11} {statistics.fmean(every):6.1%} over {len(every)} points (target <= 15 %)")


if __name__ == "__main__":
    main()
