"""Calibration: microbenchmarks that turn this machine into a hardware spec.

Each step measures one figure the model needs, the way the model uses it:

- ``dispatch_s``: one NumPy call on one element; ``parallel_dispatch_s``: the extra cost of
  handing tiny chunks to the worker threads and joining them;
- ``interpreted_element_s``: the pure-Python vector add, per element;
- memory: a vector add over working sets from a few KiB to several times the last cache level,
  on one thread (the per-core ceiling) and on all cores: the bandwidth curve the model
  interpolates, and from it each cache level's and the DRAM figures;
- compute: single-thread GEMMs in float32, float64 and float16 (BLAS efficiency and dtype
  ratios), ``exp`` on cache-resident data (the special-function rate), and the rate of each
  NumPy operation a pass can be (``add``, ``maximum``, ``exp``, ``sum``...): their loops run at
  very different speeds, which FLOP counts alone do not show.

The result is an ordinary ``ProcessorSpec`` (saved as hardware TOML with a ``[meta]`` table of
what was measured and when) that every ``--device``/``--host`` accepts. On a machine with a GPU
the CuPy steps (``gpu_calibration``) add the GPU and its PCIe link. The ``[meta]`` table
(``describe``) is also how ``parsim validate`` recognises a file calibrated on this machine: its
``source`` says calibrate wrote it, its ``host`` and ``cpu_model`` where.
"""

from __future__ import annotations

import datetime
import os
import platform
import statistics
from collections.abc import Callable
from pathlib import Path

import attrs
import numpy

from parsim.errors import ParsimError
from parsim.hardware.specs import BandwidthPoint, CacheLevel, MemorySpec, ProcessorSpec
from parsim.measure import cpu, kernels
from parsim.measure.backends import NumpyBackend, cpu_model, host_free_memory_B
from parsim.measure.lock import check_timeout, measurement_lock
from parsim.measure.timing import time_callable

Progress = Callable[[int, int, str], None]
ASSUMED_LATENCY_S = 90e-9  # DRAM load-to-use latency is not measured from Python; a typical server figure


def cache_levels(cpu: Path = Path("/sys/devices/system/cpu/cpu0")) -> list[tuple[str, float, bool]]:
    """Data/unified caches of one CPU as (name, size in bytes, private to one core).

    A cache is private when only this core's hardware threads share it (with SMT its
    ``shared_cpu_list`` names the sibling threads too, e.g. ``0,64``).
    """
    try:
        siblings = _cpus((cpu / "topology" / "thread_siblings_list").read_text())
    except OSError:
        siblings = {int(cpu.name[3:])} if cpu.name[3:].isdigit() else {0}
    levels = []
    for index in sorted((cpu / "cache").glob("index*")):
        try:
            kind = (index / "type").read_text().strip()
            if kind == "Instruction":
                continue
            level = int((index / "level").read_text())
            size = _bytes((index / "size").read_text().strip())
            shared = _cpus((index / "shared_cpu_list").read_text())
        except (OSError, ValueError):
            continue
        levels.append((f"L{level}", size, shared <= siblings))
    if not levels:  # no sysfs (not Linux): a generic hierarchy
        levels = [("L1", 32 * 1024, True), ("L2", 1024 * 1024, True), ("L3", 16 * 2**20, False)]
    return levels


def _cpus(text: str) -> set[int]:
    """``"0-3,8"`` -> {0, 1, 2, 3, 8}."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if "-" in part:
            low, high = part.split("-")
            cpus.update(range(int(low), int(high) + 1))
        elif part:
            cpus.add(int(part))
    return cpus


def _bytes(text: str) -> float:
    units = {"K": 1024, "M": 1024**2, "G": 1024**3}
    return float(text[:-1]) * units[text[-1]] if text[-1] in units else float(text)


def simd_lanes() -> int:
    """float32 lanes x 2 FMA pipes, from the CPU's instruction-set flags."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        flags = ""
    width = 16 if " avx512f" in flags else 8 if " avx2" in flags else 4
    return width * 2


def clock_Hz() -> float | None:
    """The clock the operating system reports for this CPU (its maximum, else the current one), or None."""
    import psutil

    frequency = psutil.cpu_freq()
    if frequency is None:
        return None
    megahertz = frequency.max or frequency.current
    return megahertz * 1e6 if megahertz > 0 else None


def calibrate(
    quick: bool = True,
    progress: Progress | None = None,
    rounds: int | None = None,
    lock_timeout_s: float = 600.0,
    on_wait: Callable[[str], None] | None = None,
) -> tuple[ProcessorSpec, dict]:
    """Measure this machine's CPU and return its spec and the raw measurements.

    Every step runs in ``rounds`` passes over the whole list (2 quick, 3 thorough) and each figure
    keeps the median of its passes, so a machine whose speed drifts over seconds does not leave
    one figure measured in a slow moment and the next in a fast one.

    Args:
        quick: small budgets and sizes (<= 30 s on a 2-core machine); False measures longer.
        progress: called as ``progress(step, steps, label)`` before each step.
        rounds: passes over the steps (default 2 quick, 3 thorough).
        lock_timeout_s: how long to wait for another measurement on this machine.
        on_wait: told once, in one line, when it waits (default: a ``ParsimNote`` warning).
    """
    check_timeout(lock_timeout_s)  # like every input, before the machine is measured or waited for
    if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1):
        raise ParsimError(f"'rounds' must be a whole number >= 1: {rounds!r}")
    backend = NumpyBackend()
    rounds = rounds or (2 if quick else 3)
    budget = (0.15 if quick else 0.6) / rounds
    cores = os.cpu_count() or 1
    levels = cache_levels()
    steps: list[tuple[str, Callable[[], object]]] = []
    raw: dict = {}

    def add(label, function):
        steps.append((label, function))

    def timed(operation, budget_s=budget):
        return time_callable(operation, budget_s=budget_s).median_s

    def dispatch():
        a, b, c = backend.random(1, "float32"), backend.random(1, "float32"), numpy.empty(1, "float32")
        raw["dispatch_s"] = timed(lambda: numpy.add(a, b, out=c))
        pool = cpu.Parallel()
        try:
            tasks = [lambda: numpy.add(a, b, out=c) for _ in range(cores)]
            raw["parallel_dispatch_s"] = max(0.0, timed(lambda: pool.run(tasks)) - raw["dispatch_s"])
        finally:
            pool.close()

    def interpreted():
        run = cpu.sisd_operation("vector_add", {"n": 20000})
        raw["interpreted_element_s"] = timed(run, 3 * budget) / 20000

    def curve_point(working_set_B: float):
        def step():
            n = max(256, int(working_set_B / 12))
            one = _stream_rate(backend, n, "simd", raw, timed)
            private = sum(size for _, size, is_private in levels if is_private)
            if len(cpu.chunks(n)) > 1:
                every = _stream_rate(backend, n, "mimd+simd", raw, timed)
            else:  # too little work to hand to threads: within private caches each core adds its own
                every = one * (cores if working_set_B <= private else 1)
            raw.setdefault("curve", []).append((12.0 * n, one, max(every, one)))

        return step

    def gemm():
        size = 384 if quick else 1024
        for dtype in ("float32", "float64"):
            operation, limit = cpu.cpu_operation(
                backend, "matmul", {"m": size, "n": size, "k": size, "dtype": dtype}, "simd"
            )
            try:
                raw[f"gemm_{dtype}_flops_per_s"] = 2.0 * size**3 / timed(operation)
            finally:
                limit.close()
        small = 64 if quick else 128
        operation = kernels.matmul(backend, small, small, small, "float16")
        raw["gemm_float16_flops_per_s"] = 2.0 * small**3 / timed(operation)

    def special():
        n = 4096
        a, out = backend.random(n, "float32"), numpy.empty(n, "float32")
        raw["exp_per_s"] = n / max(timed(lambda: numpy.exp(a, out=out)) - raw["dispatch_s"], 1e-9)

    def op_rates():
        # One pass of each NumPy operation over data that stays in L2, on one core, at two sizes:
        # the slope between them is the per-item rate, free of the call's fixed costs.
        sizes = (8192, 65536)
        times: dict[str, list[float]] = {}
        for n in sizes:
            a, b = backend.random(n, "float32"), backend.random(n, "float32")
            out = numpy.empty(n, "float32")
            passes = {
                "add": lambda a=a, b=b, out=out: numpy.add(a, b, out=out),
                "multiply": lambda a=a, out=out: numpy.multiply(a, 2.0, out=out),
                "maximum": lambda a=a, out=out: numpy.maximum(a, 0.0, out=out),  # relu as written
                "negative": lambda a=a, out=out: numpy.negative(a, out=out),
                "exp": lambda a=a, out=out: numpy.exp(a, out=out),
                "reciprocal": lambda a=a, out=out: numpy.reciprocal(a, out=out),
                "sum": lambda a=a: a.sum(),
            }
            for name, operation in passes.items():
                times.setdefault(name, []).append(timed(operation))
        for name, (small, large) in times.items():
            raw[f"op_{name}_per_s"] = (sizes[1] - sizes[0]) / max(large - small, 1e-9)

    add("dispatch and fork/join overhead", dispatch)
    add("interpreted Python per element", interpreted)
    last = levels[-1][1] if levels else 32 * 2**20
    dram_B = min(max(4 * last, 96 * 2**20) if quick else max(8 * last, 512 * 2**20), host_free_memory_B() / 4)
    count = 9 if quick else 16
    for index in range(count):
        size = 16 * 1024 * (dram_B / (16 * 1024)) ** (index / (count - 1))
        add(f"bandwidth at a {size / 1024:,.0f} KiB working set", curve_point(size))
    add("GEMM FLOP/s (float32, float64, float16)", gemm)
    add("exp throughput", special)
    add("NumPy operation rates (add, multiply, maximum, negative, exp, reciprocal, sum)", op_rates)
    passes = []
    with measurement_lock(lock_timeout_s, on_wait=on_wait):
        for round_index in range(rounds):
            raw.clear()
            for index, (label, step) in enumerate(steps):
                if progress is not None:
                    progress(round_index * len(steps) + index, rounds * len(steps), label)
                step()
            passes.append(dict(raw))
        if progress is not None:
            progress(rounds * len(steps), rounds * len(steps), "done")
    merged = {key: statistics.median(p[key] for p in passes) for key in passes[0] if key != "curve"}
    merged["curve"] = [
        (points[0][0], statistics.median(p[1] for p in points), statistics.median(p[2] for p in points))
        for points in zip(*(p["curve"] for p in passes), strict=True)
    ]
    return _spec(merged, levels, cores), merged


def _stream_rate(backend, n: int, mode: str, raw: dict, timed) -> float:
    """Bytes per second of a vector add over ``n`` float32 elements (call overheads removed)."""
    operation, resource = cpu.cpu_operation(
        backend, "vector_add", {"n": n, "dtype": "float32", "fused": False}, mode
    )
    try:
        seconds = timed(operation)
    finally:
        if resource is not None:
            resource.close()
    overhead = raw["dispatch_s"] + (
        raw["parallel_dispatch_s"] if mode != "simd" and len(cpu.chunks(n)) > 1 else 0
    )
    return 12.0 * n / max(seconds - overhead, 1e-9)


BLAS_EFFICIENCY = 0.9  # a single-thread SGEMM's usual share of the FMA peak, when the clock cannot tell


def _spec(raw: dict, levels: list[tuple[str, float, bool]], cores: int) -> ProcessorSpec:
    lanes, clock = simd_lanes(), clock_Hz()
    gemm = raw["gemm_float32_flops_per_s"]
    efficiency = gemm / (lanes * 2.0 * clock) if clock else 0.0
    if not 0 < efficiency <= 1.0:
        # No reported clock, or the flags or the clock undersell this core: the measured GEMM rate
        # decides, at the usual BLAS efficiency (the FLOP model only needs their product).
        efficiency = BLAS_EFFICIENCY
        clock = gemm / (lanes * 2.0 * efficiency)
    curve = tuple(BandwidthPoint(size, one, every) for size, one, every in raw["curve"])
    memory = MemorySpec(
        curve=curve,
        caches=(),
        latency_s=ASSUMED_LATENCY_S,
        capacity_B=_total_memory_B(),
        bandwidth_Bps=curve[-1].all_cores_Bps,
        peak_bandwidth_Bps=curve[-1].all_cores_Bps,
        per_core_bandwidth_Bps=curve[-1].one_core_Bps,
    )
    caches = tuple(
        CacheLevel(
            name=name,
            size_B=size,
            per_core=private,
            bandwidth_Bps=_at(memory, size / 2)[0],
            per_core_bandwidth_Bps=_at(memory, size / 2)[1],
        )
        for name, size, private in levels
    )
    fp32 = raw["gemm_float32_flops_per_s"]
    return ProcessorSpec(
        id="this-machine",
        name=f"{cpu_model()} (calibrated)",
        kind="cpu",
        cores=cores,
        lanes_per_core=lanes,
        clock_Hz=clock,
        memory=attrs.evolve(memory, caches=caches),
        fma=True,
        fp64_ratio=min(1.0, raw["gemm_float64_flops_per_s"] / fp32),
        fp16_ratio=min(1.0, raw["gemm_float16_flops_per_s"] / fp32),
        matmul_efficiency=efficiency,
        special_per_core_per_cycle=raw["exp_per_s"] / clock,
        op_rates_per_core={key[3:-6]: value for key, value in raw.items() if key.startswith("op_")},
        dispatch_s=raw["dispatch_s"],
        parallel_dispatch_s=raw["parallel_dispatch_s"],
        interpreted_element_s=raw["interpreted_element_s"],
        tile_items=cpu.CHUNK_ITEMS,
        matmul_tile=64,
        max_gpus=8,
    )


def _at(memory: MemorySpec, working_set_B: float) -> tuple[float, float]:
    from parsim.model.memory import interpolate

    return interpolate(memory.curve, working_set_B)


def _total_memory_B() -> float:
    import psutil

    return float(psutil.virtual_memory().total)


def describe(raw: dict, quick: bool, kind: str = "cpu") -> dict:
    """The ``[meta]`` table of a calibrated hardware file (``kind``: which processor was measured)."""
    if kind == "gpu":
        return {
            "source": "parsim calibrate (GPU)" + (" --quick" if quick else ""),
            "measured_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "host": platform.node(),
            "assumed": {
                "latency_s": 500e-9,
                "per_core_bandwidth_Bps": "3 x bandwidth / SMs",
                "l2_bandwidth": "3x",
            },
            "measurements": {key: float(value) for key, value in raw.items()},
        }
    return {
        "source": "parsim calibrate" + (" --quick" if quick else ""),
        "measured_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "host": platform.node(),
        "cpu_model": cpu_model(),
        "numpy": numpy.__version__,
        "assumed": {
            "latency_s": ASSUMED_LATENCY_S,
            "peak_bandwidth_Bps": "set to the measured DRAM bandwidth",
        },
        "measurements": {key: value if key == "curve" else float(value) for key, value in raw.items()},
    }
