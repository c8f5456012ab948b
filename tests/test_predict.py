"""The ``predict`` entry across every preset: invariants that hold for any input."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parsim
from parsim.base.errors import ParsimError
from parsim.hardware.presets import PROCESSORS
from parsim.methods.predict import clear_caches, predict
from parsim.model.rates import execution
from parsim.workloads import make_workload

GPUS = sorted(k for k, v in PROCESSORS.items() if v.is_gpu)
CPUS = sorted(k for k, v in PROCESSORS.items() if not v.is_gpu)


def check_invariants(p):
    assert p.latency_s > 0 and math.isfinite(p.latency_s)
    assert sum(p.breakdown.values()) == pytest.approx(p.latency_s, rel=1e-9)
    assert all(v >= -1e-15 for v in p.breakdown.values())
    assert p.bottleneck == max(p.breakdown, key=p.breakdown.get)
    assert all(0 <= u <= 1 for u in p.utilization.values())
    # back-to-back instances can overlap, never slow each other below one at a time
    assert p.throughput_per_s >= (1 / p.latency_s) * (1 - 1e-9)
    assert all(0 <= e.start_s <= e.end_s <= p.latency_s * (1 + 1e-12) for e in p.trace)


@settings(max_examples=60, deadline=None)
@given(
    device=st.sampled_from(GPUS + CPUS),
    op=st.sampled_from(["vector_add", "saxpy", "relu", "sigmoid", "reduce_sum"]),
    n=st.integers(1, 10**8),
    dtype=st.sampled_from(["float16", "bfloat16", "float32", "float64"]),
    method=st.sampled_from(["engine", "analytic"]),
)
def test_elementwise_invariants(device, op, n, dtype, method):
    check_invariants(parsim.predict(op, {"n": n, "dtype": dtype}, device=device, method=method))


@settings(max_examples=30, deadline=None)
@given(
    device=st.sampled_from(GPUS),
    n=st.integers(1, 10**8),
    streams=st.integers(1, 8),
    pinned=st.booleans(),
)
def test_offload_invariants(device, n, streams, pinned):
    p = parsim.predict("offload", {"n": n, "streams": streams, "pinned": pinned}, device=device)
    check_invariants(p)
    assert p.transfer_bytes == 2 * 4 * n


@settings(max_examples=30, deadline=None)
@given(
    device=st.sampled_from(GPUS + CPUS),
    size=st.integers(1, 4096),
    dtype=st.sampled_from(["float16", "float32"]),
)
def test_matmul_never_beats_peak(device, size, dtype):
    p = parsim.predict("matmul", {"m": size, "n": size, "k": size, "dtype": dtype}, device=device)
    check_invariants(p)
    assert p.flops_per_s <= PROCESSORS[device].peak_flops_per_s(dtype, matrix=True) * (1 + 1e-9)


@pytest.mark.parametrize("device", GPUS + CPUS)
def test_engine_matches_analytic_on_full_waves_for_every_preset(device):
    spec = PROCESSORS[device]
    probe = make_workload("vector_add", {"n": 1})
    ex = execution(spec, "simt" if spec.is_gpu else "mimd+simd", probe.ops[0])
    n = ex.cores * ex.tiles_per_core * ex.tile_items * 64  # whole waves, working set beyond the caches
    n = (
        max(n, 10**8)
        // (ex.cores * ex.tiles_per_core * ex.tile_items)
        * (ex.cores * ex.tiles_per_core * ex.tile_items)
    )
    engine = parsim.predict("vector_add", {"n": n}, device=device, method="engine")
    closed = parsim.predict("vector_add", {"n": n}, device=device, method="analytic")
    assert engine.latency_s == pytest.approx(closed.latency_s, rel=0.01)
    assert engine.throughput_per_s == pytest.approx(closed.throughput_per_s, rel=0.01)


def test_gpu_memory_bound_op_runs_near_its_bandwidth():
    p = parsim.predict("vector_add", {"n": 1e9}, device="a100-80gb")
    assert p.bottleneck == "memory"
    assert p.bytes_per_s == pytest.approx(PROCESSORS["a100-80gb"].memory.bandwidth_Bps, rel=0.02)


def test_gpu_memory_bound_op_runs_at_what_its_loads_in_flight_allow():
    # Little's law on an H100: 132 x 2048 threads keep 8 bytes of loads in flight each for 1.3 us,
    # 1.66 TB/s of reads; with the writes, 12 bytes move per 8 read: 2.5 TB/s, below the 2.9 TB/s copy
    p = parsim.predict("vector_add", {"n": 1e9}, device="h100-sxm")
    assert p.bottleneck == "memory"
    assert p.bytes_per_s == pytest.approx(1.5 * 132 * 2048 * 8 / 1.3e-6, rel=0.02)


def test_tiny_gpu_kernel_is_launch_bound():
    p = parsim.predict("vector_add", {"n": 100}, device="v100-pcie")
    assert p.bottleneck == "overhead"


def test_copied_vs_pinned_and_pageable():
    pinned = parsim.predict("copy", {"n": 1e8}, device="v100-pcie", link="pcie3-x16")
    pageable = parsim.predict("copy", {"n": 1e8, "pinned": False}, device="v100-pcie", link="pcie3-x16")
    assert pinned.bottleneck == "transfer"
    # 400 MB at the measured 12.3 GB/s pinned
    assert pinned.latency_s == pytest.approx(4e8 / 12.3e9, rel=0.05)
    assert pageable.latency_s > 1.3 * pinned.latency_s


def test_workload_objects_and_params_do_not_mix():
    with pytest.raises(ParsimError, match="'params' only applies"):
        parsim.predict(make_workload("relu", {"n": 10}), {"n": 5}, device="t4")


def test_cpu_device_with_a_gpu_host_or_link_is_refused():
    with pytest.raises(ParsimError, match="'link' only applies with a GPU"):
        parsim.predict("relu", {"n": 10}, device="xeon-8480", link="pcie4-x16")
    with pytest.raises(ParsimError, match="'host' must be a CPU"):
        parsim.predict("relu", {"n": 10}, device="t4", host="v100-pcie")


def test_a_workload_is_built_once_for_every_device_it_is_predicted_on():
    """A sweep over devices shares the built step (``predict._built``); a value naming a file is
    read again each time, and the predictions are those of fresh builds."""
    from parsim.methods import predict as predicting

    clear_caches()
    params = {"model": "resnet50", "batch": 2, "train": True}
    values = predicting.validate_params("network", dict(params))
    assert predicting._built("network", values) is predicting._built("network", dict(values))
    named = {**predicting.validate_params("matmul", {"m": 8, "n": 8, "k": 8}), "file": "a.json"}
    assert predicting._built("matmul", named) is not predicting._built("matmul", dict(named))
    shared = [predict("network", params, device=d).latency_s for d in ("t4", "h100-sxm")]
    clear_caches()
    fresh = [predict("network", params, device="t4").latency_s]
    clear_caches()
    fresh.append(predict("network", params, device="h100-sxm").latency_s)
    assert shared == fresh


@pytest.mark.parametrize(
    ("name", "params", "where"),
    [
        ("network", {"model": "resnet18", "batch": 4, "train": True}, {"device": "t4"}),
        (
            "data_parallel",
            {"model": "resnet18", "batch": 32, "gpus": 4, "sync": "ring"},
            {"device": "v100-sxm2"},
        ),
        ("matmul", {"m": 512, "n": 512, "k": 512}, {"device": "xeon-e5-2630v3"}),
        (  # its metrics read the trace (``cluster_figures``): before the trace is dropped
            "network",
            {
                "model": "megatron-1.7b",
                "train": True,
                "tp": 2,
                "pp": 2,
                "microbatches": 4,
                "nodes": 2,
                "batch": 16,
            },
            {"cluster": "dgx-a100"},
        ),
    ],
)
def test_a_prediction_without_detail_has_every_figure_of_the_full_one(name, params, where):
    """What a sweep asks (``detail=False``): the same figures, without layers, utilisation, notes or
    trace (a sweep's predictions keep no trace: thousands of records per point)."""
    full = predict(name, params, **where)
    lean = predict(name, params, detail=False, **where)
    from parsim.studies.sweeps.points import prediction_row

    assert prediction_row(lean) == prediction_row(full)
    assert lean.records == full.records and lean.memory == full.memory and lean.events == full.events
    assert not lean.layers and not lean.notes and not lean.busy and lean.executed_flops is None
    assert lean.trace == () and full.trace
    assert full.notes and (full.layers or name == "matmul") and full.busy
