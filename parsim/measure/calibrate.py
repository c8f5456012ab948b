"""Calibration: microbenchmarks that turn this machine into a hardware spec.

Each step measures one figure the model needs, the way the model uses it:

- ``dispatch_s``: one NumPy call on one element; ``parallel_dispatch_s``: the extra cost of
  handing tiny chunks to the worker threads and joining them;
- ``interpreted_element_s``: the pure-Python vector add, per element; then each other loop body
  the SISD demo runs (saxpy, relu on signed data, sigmoid, a running sum, a scalar matmul) over
  what its counted operations predict, in the same pass (``interpreted_loop_scale``);
- memory: a vector add over working sets from a few KiB to several times the last cache level,
  on one thread (the per-core ceiling) and on all cores: the bandwidth curve the model
  interpolates, and from it each cache level's and the DRAM figures;
- compute: single-thread GEMMs in float32, float64 and float16 (BLAS efficiency and dtype
  ratios), the float32 one again on all cores (the BLAS's threading efficiency), ``exp`` on
  cache-resident data (the special-function rate), and the rate of each NumPy operation a pass
  can be (``add``, ``maximum``, ``exp``, ``sum``...): their loops run at very different speeds,
  which FLOP counts alone do not show.

A timing the machine could not have produced (an overhead that is nearly all of the time it is
subtracted from, a rate above what any core does) is measured again, then dropped with a note in
the ``[meta]`` table, or stops calibration with one line when the spec needs it (``plausible``).

The result is an ordinary ``ProcessorSpec`` (saved as hardware TOML with a ``[meta]`` table of
what was measured and when) that every ``--device``/``--host`` accepts. On a machine with a GPU
the CuPy steps (``gpu_calibration``) add the GPU and its PCIe link. The ``[meta]`` table
(``describe``) is also how ``parsim validate`` recognises a file calibrated on this machine: its
``source`` says calibrate wrote it, its ``host`` and ``cpu_model`` where.
"""

from __future__ import annotations

import datetime
import platform
import statistics
from collections.abc import Callable

import attrs
import numpy

from parsim.base.errors import ParsimError
from parsim.hardware.specs import MIN_DTYPE_RATIO, BandwidthPoint, CacheLevel, MemorySpec, ProcessorSpec
from parsim.measure import calibrate_loops, cpu, kernels, plausible
from parsim.measure.backends import NumpyBackend, cpu_model, host_free_memory_B
from parsim.measure.lock import check_timeout, measurement_lock
from parsim.measure.machine import cache_levels, clock_Hz, simd_lanes, total_memory_B
from parsim.measure.timing import Timing, time_callable

Progress = Callable[[int, int, str], None]
Timer = Callable[..., Timing]
ASSUMED_LATENCY_S = 90e-9  # DRAM load-to-use latency is not measured from Python; a typical server figure


def calibrate(
    quick: bool = True,
    progress: Progress | None = None,
    rounds: int | None = None,
    lock_timeout_s: float = 600.0,
    on_wait: Callable[[str], None] | None = None,
    timer: Timer = time_callable,
) -> tuple[ProcessorSpec, dict]:
    """Measure this machine's CPU and return its spec and the raw measurements.

    Every step runs in ``rounds`` passes over the whole list (2 quick, 3 thorough) and each figure
    keeps the median of its passes, so a machine whose speed drifts over seconds does not leave
    one figure measured in a slow moment and the next in a fast one. A timing the machine could
    not have produced is measured again, then dropped with a note (``raw["notes"]``, written to the
    ``[meta]`` table); a figure the spec needs that no try measured stops calibration with one line
    (``parsim.measure.plausible``).

    Args:
        quick: small budgets and sizes (<= 30 s on a 2-core machine); False measures longer.
        progress: called as ``progress(step, steps, label)`` before each step.
        rounds: passes over the steps (default 2 quick, 3 thorough).
        lock_timeout_s: how long to wait for another measurement on this machine.
        on_wait: told once, in one line, when it waits (default: a ``ParsimNote`` warning).
        timer: ``timer(operation, budget_s=...)`` returns a ``Timing`` (tests give a slow clock).
    """
    check_timeout(lock_timeout_s)  # like every input, before the machine is measured or waited for
    if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1):
        raise ParsimError(f"'rounds' must be a whole number >= 1: {rounds!r}")
    backend = NumpyBackend()
    rounds = rounds or (2 if quick else 3)
    budget = (0.15 if quick else 0.6) / rounds
    cores = cpu.cores()  # the CPUs this process may use, which is what its threads get
    levels = cache_levels()
    ceiling = plausible.cpu_ceilings(simd_lanes())
    steps: list[tuple[str, Callable[[], object]]] = []
    raw: dict = {}

    def add(label, function):
        steps.append((label, function))

    def timed(operation, budget_s=budget):
        return timer(operation, budget_s=budget_s).median_s

    def keep(key: str, outcome: float | str, what: str) -> None:
        """A figure the spec needs: kept, or calibration stops saying why."""
        if isinstance(outcome, str):
            raise plausible.unmeasurable(what, outcome)
        raw[key] = outcome

    def note(what: str, why: str) -> None:
        raw.setdefault("notes", []).append(f"{what}: dropped, {why}")

    tiny = [backend.random(1, "float32"), backend.random(1, "float32"), numpy.empty(1, "float32")]

    def one_call():
        a, b, c = tiny
        return numpy.add(a, b, out=c)

    overheads: dict[int, float] = {}  # this pass's fixed cost of a pass on ``tasks`` threads

    def overhead_s(tasks: int, fresh: bool = False) -> float:
        """One pass handed to ``tasks`` threads and joined, on 1-item chunks: what a chunked op
        costs besides its work (one task runs in the caller: a plain call). Measured once per pass
        and task count, again when ``fresh`` (a retry)."""
        if fresh or tasks not in overheads:
            if tasks == 1:
                overheads[tasks] = timed(one_call)
            else:
                pool = cpu.Parallel()
                try:
                    overheads[tasks] = timed(lambda: pool.run([one_call] * tasks))
                finally:
                    pool.close()
        return overheads[tasks]

    def dispatch():
        overheads.clear()

        def call_s():
            seconds = overhead_s(1, fresh=True)
            return seconds if seconds > 0 else f"a time of {seconds:g} s"

        keep("dispatch_s", plausible.measured(call_s), "the cost of one NumPy call")
        if cores == 1:
            raw["parallel_dispatch_s"] = 0.0  # nothing to fork
            return
        keep(
            "parallel_dispatch_s",
            plausible.measured(lambda: plausible.net_s(overhead_s(cores, fresh=True), raw["dispatch_s"])),
            f"the fork/join cost of {cores} threads",
        )

    def interpreted():
        run = cpu.sisd_operation("vector_add", {"n": 20000})

        def attempt():
            per_element = timed(run, 3 * budget) / 20000
            if per_element < plausible.INTERPRETED_FLOOR_S:
                return f"{per_element:.3g} s per element is faster than any Python loop"
            return per_element

        keep("interpreted_element_s", plausible.measured(attempt), "the interpreted Python cost per element")

    def loop_scales():
        calibrate_loops.loop_scales(timed, raw, note)

    def curve_point(working_set_B: float):
        def step():
            n = max(256, int(working_set_B / 12))
            what = f"the bandwidth at a {working_set_B / 1024:,.0f} KiB working set"
            one = _stream_rate(
                backend, n, "simd", lambda fresh: overhead_s(1, fresh), timed, ceiling["bytes_per_s"]
            )
            private = sum(size for _, size, is_private in levels if is_private)
            tasks = len(cpu.chunks(n))
            if isinstance(one, str):
                every: float | str = one
            elif tasks > 1:
                every = _stream_rate(
                    backend,
                    n,
                    "mimd+simd",
                    lambda fresh: overhead_s(tasks, fresh),
                    timed,
                    tasks * ceiling["bytes_per_s"],
                )
            else:  # too little work to hand to threads: within private caches each core adds its own
                every = one * (cores if working_set_B <= private else 1)
            if isinstance(one, str) or isinstance(every, str):
                note(what, one if isinstance(one, str) else f"on {tasks} threads {every}")
                return
            raw.setdefault("curve", []).append((12.0 * n, one, max(every, one)))

        return step

    def gemm():
        size = 384 if quick else 1024
        for dtype in ("float32", "float64"):
            operation, limit = cpu.cpu_operation(
                backend, "matmul", {"m": size, "n": size, "k": size, "dtype": dtype}, "simd"
            )
            try:
                flops = 2.0 * size**3
                outcome = plausible.measured(
                    lambda operation=operation, flops=flops: plausible.rate(
                        flops, timed(operation), ceiling["flops_per_s"], "FLOP/s"
                    )
                )
                keep(f"gemm_{dtype}_flops_per_s", outcome, f"the {dtype} GEMM rate")
            finally:
                limit.close()
        if cores > 1:
            calibrate_loops.blas_share(backend, size, cores, timed, raw, note)
        small = 64 if quick else 128
        operation = kernels.matmul(backend, small, small, small, "float16")
        outcome = plausible.measured(
            lambda: plausible.rate(2.0 * small**3, timed(operation), ceiling["flops_per_s"], "FLOP/s")
        )
        keep("gemm_float16_flops_per_s", outcome, "the float16 GEMM rate")

    def special():
        n = 4096
        a, out = backend.random(n, "float32"), numpy.empty(n, "float32")

        def attempt():
            net = plausible.net_s(timed(lambda: numpy.exp(a, out=out)), overhead_s(1))
            floor = plausible.SPECIAL_FLOOR_PER_CYCLE * plausible.CLOCK_CEILING_HZ
            return plausible.rate(n, net, ceiling["results_per_s"], "exp/s", floor)

        keep("exp_per_s", plausible.measured(attempt), "the exp throughput")

    def op_rates():
        # One pass of each NumPy operation over data that stays in L2, on one core, at two sizes:
        # the slope between them is the per-item rate, free of the call's fixed costs.
        small, large = 8192, 65536
        for name in OP_PASSES:
            passes = [_op_pass(backend, name, n) for n in (small, large)]

            def attempt(passes=passes):
                net = plausible.net_s(timed(passes[1]), timed(passes[0]))
                return plausible.rate(large - small, net, ceiling["results_per_s"], "items/s")

            outcome = plausible.measured(attempt)
            if isinstance(outcome, str):
                note(f"the {name} rate", outcome)  # the FLOP model stands in for a missing op rate
            else:
                raw[f"op_{name}_per_s"] = outcome

    add("dispatch and fork/join overhead", dispatch)
    add("interpreted Python per element", interpreted)
    add(f"interpreted loop bodies ({', '.join(loop for loop, _ in calibrate_loops.SISD_LOOPS)})", loop_scales)
    last = levels[-1][1] if levels else 32 * 2**20
    dram_B = min(max(4 * last, 96 * 2**20) if quick else max(8 * last, 512 * 2**20), host_free_memory_B() / 4)
    count = 9 if quick else 16
    sizes = [16 * 1024 * (dram_B / (16 * 1024)) ** (index / (count - 1)) for index in range(count)]
    for size in sizes:
        add(f"bandwidth at a {size / 1024:,.0f} KiB working set", curve_point(size))
    add("GEMM FLOP/s (float32, float64, float16; float32 on all cores)", gemm)
    add("exp throughput", special)
    add(f"NumPy operation rates ({', '.join(OP_PASSES)})", op_rates)
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
    merged = _merge(passes, largest_B=12.0 * max(256, int(sizes[-1] / 12)))
    return _spec(merged, levels, cores), merged


OP_PASSES = ("add", "multiply", "maximum", "negative", "exp", "reciprocal", "sum")


def _op_pass(backend, name: str, n: int) -> Callable[[], object]:
    """One pass of the NumPy operation ``name`` over ``n`` float32 items (relu's maximum as written)."""
    a, b, out = backend.random(n, "float32"), backend.random(n, "float32"), numpy.empty(n, "float32")
    passes = {
        "add": lambda: numpy.add(a, b, out=out),
        "multiply": lambda: numpy.multiply(a, 2.0, out=out),
        "maximum": lambda: numpy.maximum(a, 0.0, out=out),
        "negative": lambda: numpy.negative(a, out=out),
        "exp": lambda: numpy.exp(a, out=out),
        "reciprocal": lambda: numpy.reciprocal(a, out=out),
        "sum": lambda: a.sum(),
    }
    return passes[name]


def _merge(passes: list[dict], largest_B: float) -> dict:
    """The median of each figure over the passes that measured it; the curve point by point.

    Raises ParsimError when no pass measured the DRAM point (the largest working set), which the
    spec's bandwidth is, or fewer than two points of the curve remain.
    """
    merged: dict = {}
    for key in dict.fromkeys(key for p in passes for key in p if key not in ("curve", "notes")):
        merged[key] = statistics.median(p[key] for p in passes if key in p)
    points: dict[float, list[tuple[float, float]]] = {}
    for p in passes:
        for size, one, every in p.get("curve", []):
            points.setdefault(size, []).append((one, every))
    merged["curve"] = [
        (size, statistics.median(v[0] for v in values), statistics.median(v[1] for v in values))
        for size, values in sorted(points.items())
    ]
    notes = list(dict.fromkeys(note for p in passes for note in p.get("notes", [])))
    if notes:
        merged["notes"] = notes
    dropped = "; ".join(notes[-2:]) if notes else "no point measured"
    if largest_B not in points:
        raise plausible.unmeasurable(
            f"the DRAM bandwidth ({largest_B / 2**20:,.0f} MiB working set)", dropped
        )
    if len(merged["curve"]) < 2:
        raise plausible.unmeasurable("the memory bandwidth curve (fewer than 2 working sets)", dropped)
    return merged


def _stream_rate(
    backend, n: int, mode: str, overhead_s: Callable[[bool], float], timed, ceiling_Bps: float
) -> float | str:
    """Bytes per second of a vector add over ``n`` float32 elements less its fixed cost
    ``overhead_s(fresh)``: the cost of exactly what ran (one call, or as many threads forked and
    joined on 1-item chunks), measured afresh on a retry; or why no try gave a plausible rate."""
    operation, resource = cpu.cpu_operation(
        backend, "vector_add", {"n": n, "dtype": "float32", "fused": False}, mode
    )
    tries = []

    def attempt():
        tries.append(None)
        net = plausible.net_s(timed(operation), overhead_s(len(tries) > 1))
        return plausible.rate(12.0 * n, net, ceiling_Bps, "B/s")

    try:
        return plausible.measured(attempt)
    finally:
        if resource is not None:
            resource.close()


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
        capacity_B=total_memory_B(),
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
    return ProcessorSpec(
        id="this-machine",
        name=f"{cpu_model()} (calibrated)",
        kind="cpu",
        cores=cores,
        lanes_per_core=lanes,
        clock_Hz=clock,
        memory=attrs.evolve(memory, caches=caches),
        fma=True,
        fp64_ratio=_dtype_ratio(raw, "float64"),
        fp16_ratio=_dtype_ratio(raw, "float16"),
        matmul_efficiency=efficiency,
        special_per_core_per_cycle=_exp_per_cycle(raw["exp_per_s"], clock),
        op_rates_per_core={key[3:-6]: value for key, value in raw.items() if key.startswith("op_")},
        dispatch_s=raw["dispatch_s"],
        parallel_dispatch_s=raw["parallel_dispatch_s"],
        interpreted_element_s=raw["interpreted_element_s"],
        interpreted_loop_scale={
            key.removeprefix("loop_").removesuffix("_scale"): value
            for key, value in raw.items()
            if key.startswith("loop_")
        },
        blas_thread_efficiency=raw.get("blas_thread_efficiency", 1.0),
        tile_items=cpu.CHUNK_ITEMS,
        matmul_tile=64,
        max_gpus=8,
    )


def _exp_per_cycle(exp_per_s: float, clock: float) -> float:
    """The exp rate per cycle of the spec's clock; one line if no core could be that slow."""
    per_cycle = exp_per_s / clock
    if per_cycle < plausible.SPECIAL_FLOOR_PER_CYCLE:
        why = (
            f"{per_cycle:.3g} results per cycle at {clock / 1e9:.3g} GHz is below what any core does "
            f"({plausible.SPECIAL_FLOOR_PER_CYCLE:g})"
        )
        raise plausible.unmeasurable("the exp throughput", why)
    return per_cycle


def _dtype_ratio(raw: dict, dtype: str) -> float:
    """``dtype``'s GEMM rate over float32's (at most 1 on a CPU); a ratio no CPU has means a timing
    drowned by the clock's cost, which is refused in one line rather than kept."""
    ratio = min(1.0, raw[f"gemm_{dtype}_flops_per_s"] / raw["gemm_float32_flops_per_s"])
    if ratio < MIN_DTYPE_RATIO:
        raise plausible.unmeasurable(
            f"the {dtype} GEMM rate", f"{ratio:.2g} of the float32 rate, below any CPU's {MIN_DTYPE_RATIO:g}"
        )
    return ratio


def _at(memory: MemorySpec, working_set_B: float) -> tuple[float, float]:
    from parsim.model.memory import interpolate

    return interpolate(memory.curve, working_set_B)


def describe(raw: dict, quick: bool, kind: str = "cpu") -> dict:
    """The ``[meta]`` table of a calibrated hardware file (``kind``: which processor was measured),
    with a ``notes`` list of the timings dropped as implausible, when there were any."""
    figures = {key: value for key, value in raw.items() if key != "notes"}
    meta: dict = {
        "source": "parsim calibrate" + (" (GPU)" if kind == "gpu" else "") + (" --quick" if quick else ""),
        "measured_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "host": platform.node(),
    }
    if kind == "gpu":
        meta["assumed"] = {
            "latency_s": 500e-9,
            "per_core_bandwidth_Bps": "3 x bandwidth / SMs",
            "l2_bandwidth": "3x",
        }
        meta["measurements"] = {key: float(value) for key, value in figures.items()}
    else:
        meta["cpu_model"] = cpu_model()
        meta["numpy"] = numpy.__version__
        meta["assumed"] = {
            "latency_s": ASSUMED_LATENCY_S,
            "peak_bandwidth_Bps": "set to the measured DRAM bandwidth",
        }
        meta["measurements"] = {
            key: value if key == "curve" else float(value) for key, value in figures.items()
        }
    if raw.get("notes"):
        meta["notes"] = list(raw["notes"])
    return meta
