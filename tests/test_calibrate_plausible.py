"""Calibration never turns a timing into an impossible figure (issue 30, defect 1).

On an H100 host (16 vCPUs, also pinned to 4) calibration reported 4.5 MB moved in 1 ns: the
fork/join cost of 16 threads was subtracted from points that ran 2-3 chunks, and the rest was
clamped to 1e-9 s. Here calibration runs on made-up machines whose timer we control: a fake machine
whose costs are known exactly (so each figure has a hand-computed answer), and a slow clock whose
overhead exceeds the work it times (so most timings are noise: calibration must drop them or stop
with one line, never report them).
"""

from __future__ import annotations

import functools
import os
import random
import time

import numpy
import pytest

from parsim.base.errors import ParsimError
from parsim.measure import calibrate as calibration
from parsim.measure import cpu
from parsim.measure.timing import Timing
from parsim.workloads.ops import python_loop_ops

CALL_S, ITEM_S, TASK_S, GEMM_FLOPS = 1e-6, 1e-9, 30e-6, 50e9  # the fake machine's costs
LOOP_OP_S = 30e-9  # and of one counted operation of a pure-Python loop
UFUNCS = ("add", "multiply", "maximum", "negative", "exp", "reciprocal")


@pytest.fixture(autouse=True)
def own_lock(monkeypatch, tmp_path):
    """A lock of this test's own: made-up timings need not wait for real measurements here."""
    from parsim.measure import lock

    monkeypatch.setattr(lock, "LOCK_PATH", tmp_path / "measure.lock")


def restrict_cpus(monkeypatch, allowed: int, machine: int = 16) -> None:
    """This process may run on ``allowed`` of the machine's ``machine`` CPUs (taskset, a cpuset)."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(allowed)), raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: machine)


def small_memory(monkeypatch, dram_B: float = 16 * 2**20) -> None:
    """The largest working set calibration tries is ``dram_B`` (a quarter of the free memory)."""
    monkeypatch.setattr(calibration, "host_free_memory_B", lambda: 4 * dram_B)


@pytest.fixture
def fake_machine(monkeypatch):
    """A machine where a NumPy call costs 1 us + 1 ns per item, a GEMM runs at 50 GFLOP/s and
    handing a pass to k > 1 threads costs 30 us per thread; its threads do not add bandwidth, and
    its pure-Python loops take 30 ns per counted operation. The timer runs the operation once and
    charges exactly that (other pure Python: its real time)."""
    spent = {"calls": 0, "items": 0, "flops": 0.0, "tasks": 0}

    def counted(name):
        ufunc = getattr(numpy, name)

        def call(*args, **kwargs):
            spent["calls"] += 1
            spent["items"] += numpy.size(kwargs.get("out", args[0]))
            return ufunc(*args, **kwargs)

        return call

    for name in UFUNCS:
        monkeypatch.setattr(numpy, name, counted(name))
    matmul = numpy.matmul

    def gemm(a, b, out=None):
        spent["calls"] += 1
        spent["flops"] += 2.0 * a.shape[0] * a.shape[1] * b.shape[1]
        return matmul(a, b, out=out)

    monkeypatch.setattr(numpy, "matmul", gemm)
    run = cpu.Parallel.run

    def forked(self, tasks):
        if len(tasks) > 1:
            spent["tasks"] += len(tasks)
        return run(self, tasks)

    monkeypatch.setattr(cpu.Parallel, "run", forked)

    def loop(name, params):  # a pure-Python loop at 30 ns per counted operation
        def run():
            return None

        run.cost_s = python_loop_ops(name, params) * LOOP_OP_S
        return run

    monkeypatch.setattr(cpu, "sisd_operation", loop)

    def timer(operation, budget_s=0.0, **_):
        if hasattr(operation, "cost_s"):
            return Timing(operation.cost_s, operation.cost_s, operation.cost_s, 1)
        spent.update(calls=0, items=0, flops=0.0, tasks=0)
        start = time.perf_counter()
        operation()
        seconds = time.perf_counter() - start
        if spent["calls"]:
            seconds = (
                spent["calls"] * CALL_S
                + spent["items"] * ITEM_S
                + spent["flops"] / GEMM_FLOPS
                + spent["tasks"] * TASK_S
            )
        return Timing(seconds, seconds, seconds, 1)

    timer.spent = spent
    small_memory(monkeypatch)
    return timer


def test_each_point_subtracts_the_fork_join_of_what_ran(monkeypatch, fake_machine):
    # 16 CPUs: forking 16 threads costs 496 us, but the 4.5 MB point runs 2 chunks (62 us of
    # overhead around 375 us of work). Before: 375 + 62 - 497 < 0, clamped: 4.5e15 B/s.
    restrict_cpus(monkeypatch, 16)
    spec, raw = calibration.calibrate(quick=True, rounds=1, timer=fake_machine)
    assert spec.cores == 16
    assert spec.dispatch_s == pytest.approx(CALL_S + ITEM_S)
    assert spec.parallel_dispatch_s == pytest.approx(16 * (TASK_S + CALL_S + ITEM_S) - (CALL_S + ITEM_S))
    threaded = [p for p in spec.memory.curve if len(cpu.chunks(int(p.working_set_B / 12))) > 1]
    assert len(threaded) >= 2 and len(spec.memory.curve) == 9 and "notes" not in raw
    for point in spec.memory.curve:  # 12 bytes per item at 1 ns per item, less 1 item per chunk
        assert point.one_core_Bps == pytest.approx(12 / ITEM_S, rel=1e-3)
    for point in threaded:  # the fake machine's threads share one stream of items
        assert point.all_cores_Bps == pytest.approx(12 / ITEM_S, rel=1e-3)
    assert raw["exp_per_s"] == pytest.approx(1 / ITEM_S, rel=1e-3)
    assert raw["op_add_per_s"] == pytest.approx(1 / ITEM_S)
    assert raw["gemm_float32_flops_per_s"] == pytest.approx(GEMM_FLOPS, rel=0.01)


def test_a_process_restricted_to_fewer_cpus_counts_those(monkeypatch, fake_machine):
    restrict_cpus(monkeypatch, 4)  # taskset -c 0-3 on a 16-CPU machine
    assert cpu.cores() == 4 and len(cpu.chunks(100 * cpu.CHUNK_ITEMS)) == 4
    pool = cpu.Parallel()
    try:
        assert pool.pool._max_workers == 4
    finally:
        pool.close()
    spec, _ = calibration.calibrate(quick=True, rounds=1, timer=fake_machine)
    assert spec.cores == 4
    assert spec.parallel_dispatch_s == pytest.approx(4 * (TASK_S + CALL_S + ITEM_S) - (CALL_S + ITEM_S))
    monkeypatch.delattr(os, "sched_getaffinity")  # a platform without the call: the machine's count
    monkeypatch.delattr(os, "process_cpu_count", raising=False)
    assert cpu.cores() == 16


def slow_clock(overhead_s: tuple[float, float], seed: int):
    """A timer that adds a random overhead (``overhead_s`` range) to one real run of the operation:
    the clock costs more than most of the work it times."""
    draw = random.Random(seed)

    def timer(operation, budget_s=0.0, **_):
        start = time.perf_counter()
        operation()
        seconds = time.perf_counter() - start + draw.uniform(*overhead_s)
        return Timing(seconds, seconds, seconds, 1)

    return timer


def assert_possible(spec, raw) -> None:
    """Every figure within what any CPU core can do (bounds of our own, far above real machines)."""
    per_core_Bps, per_core_per_s = 2e12, 5e11  # 300+ B and 75+ results per cycle at 6.5 GHz
    for point in spec.memory.curve:
        assert point.one_core_Bps <= per_core_Bps and point.all_cores_Bps <= spec.cores * per_core_Bps
    for name, rate in spec.op_rates_per_core:
        assert rate <= per_core_per_s, name
    assert raw["exp_per_s"] <= per_core_per_s and spec.interpreted_element_s >= 1e-9
    assert raw["gemm_float32_flops_per_s"] <= 1e12


@pytest.mark.parametrize(
    ("seed", "overhead_s"), [(1, (1e-6, 5e-6)), (2, (20e-6, 100e-6)), (3, (0.2e-3, 2e-3)), (4, (1e-3, 1e-3))]
)
def test_a_timer_whose_overhead_exceeds_the_work_never_yields_an_impossible_figure(
    monkeypatch, seed, overhead_s
):
    # overheads from a few us (most cached-data timings drowned) to 2 ms (nearly all of them)
    small_memory(monkeypatch)
    try:
        spec, raw = calibration.calibrate(quick=True, rounds=1, timer=slow_clock(overhead_s, seed))
    except ParsimError as exc:  # what could not be measured, and why: one line, not a spec's bound
        message = str(exc)
        assert message.startswith("calibration could not measure ") and "\n" not in message
        assert "must be in" not in message and "tries" in message
        return
    assert_possible(spec, raw)
    for note in raw.get("notes", []):  # each dropped timing says what and why
        assert ": dropped, " in note


def test_dropped_timings_are_noted_in_the_meta_table(monkeypatch, fake_machine):
    # the fake machine times `a.sum()` (its one uncounted call) for real, a few us: a clock
    # costing 1 ms drowns it. Keyed on the call, not on its real time, which a loaded machine
    # can stretch past any bound.
    def drowned(operation, budget_s=0.0, **_):
        timing = fake_machine(operation, budget_s)
        uncounted = not hasattr(operation, "cost_s") and not fake_machine.spent["calls"]
        return Timing(1e-3, 1e-3, 1e-3, 1) if uncounted else timing

    restrict_cpus(monkeypatch, 2)
    spec, raw = calibration.calibrate(quick=True, rounds=1, timer=drowned)
    meta = calibration.describe(raw, quick=True)
    assert "op_sum_per_s" not in raw and "sum" not in dict(spec.op_rates_per_core)
    assert any(note.startswith("the sum rate: dropped") for note in meta["notes"])


@pytest.mark.slow
def test_the_app_shows_the_same_one_line(monkeypatch, tmp_path):
    from tests.apptest import app

    monkeypatch.chdir(tmp_path)
    small_memory(monkeypatch)
    slow = functools.partial(calibration.calibrate, timer=slow_clock((1e-3, 1e-3), 0))
    monkeypatch.setattr("parsim.measure.calibrate.calibrate", slow)
    at = app("measure")
    at.button(key="measure_calibrate").click().run()
    assert not at.exception
    (error,) = [e.value for e in at.error]
    assert error.startswith("calibration could not measure") and "\n" not in error
    assert not (tmp_path / "this-machine.toml").exists()


def test_an_exp_rate_no_core_could_have_is_refused_in_one_line():
    from parsim.measure import plausible
    from parsim.measure.calibrate import _exp_per_cycle

    assert plausible.rate(4096, 1.0, 1e12, "exp/s", floor=6.5e6).startswith("4.1e+03 exp/s is below")
    assert plausible.rate(4096, 1e-5, 1e12, "exp/s", floor=6.5e6) == pytest.approx(4.096e8)
    assert _exp_per_cycle(3e9, 3e9) == 1.0
    with pytest.raises(ParsimError) as caught:  # a 2 ms timer overhead left 1 exp per 1,000+ cycles
        _exp_per_cycle(2.9e6, 3e9)
    message = str(caught.value)
    assert message.startswith("calibration could not measure the exp throughput: 0.000967 results per")
    assert "below what any core does (0.001)" in message and "\n" not in message
