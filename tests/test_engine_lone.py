"""The engine's closed forms for a program of one GPU kernel (``engine.lone``) against the engine.

``program.timing`` skips the throughput simulation of a one-kernel program and takes the ends
``lone.instance_ends`` computes, and ``program.latency_run`` takes ``lone.latency_run``'s traced
run: they must be the simulation's to the bit (ends, trace records, event count, notes), on every
kind of device, framework, overlap and repeat count, and every other program must be simulated.
"""

import attrs
import pytest

from parsim.hardware import registry
from parsim.methods import program
from parsim.methods.engine import lone, simulate
from parsim.model.library import lower
from parsim.model.modes import check_mode
from parsim.workloads import make_workload

KERNELS = [
    ("matmul", {"m": 4096, "n": 4096, "k": 4096}),
    ("matmul", {"m": 35, "n": 8457, "k": 2560}),
    ("matmul", {"m": 1, "n": 3, "k": 5}),
    ("matmul", {"m": 1000, "n": 1000, "k": 77, "dtype": "float16"}),
    ("matmul", {"m": 2048, "n": 512, "k": 1024, "math": "tf32"}),
    ("vector_add", {"n": 1}),
    ("vector_add", {"n": 1e6}),
    ("vector_add", {"n": 1e9}),
    ("conv2d", {}),
]
DEVICES = ["h100-sxm", "v100-pcie", "t4", "a100-80gb", "gtx-980", "mi300x", "tpu-v5e"]


def _program(name, params, device, framework=None):
    system = registry.system(device, None, None, 1, None)
    workload = lower(make_workload(name, params), system)
    if framework is not None:
        workload = attrs.evolve(workload, framework=framework)
    return workload, system, check_mode(system.compute, None)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("name", "params"), KERNELS)
def test_one_kernel_ends_are_the_simulation_s_to_the_bit(name, params, device):
    workload, system, mode = _program(name, params, device)
    assert len(workload.ops) == 1
    for overlap in ("roofline", "serial"):
        for repeats in (1, 2, 3):
            simulated = simulate(workload, system, mode, overlap, repeats=repeats, record=False)
            assert lone.instance_ends(workload, system, mode, overlap, repeats) == simulated.instance_ends_s
        traced = simulate(workload, system, mode, overlap)
        run = lone.latency_run(workload, system, mode, overlap)
        assert run == (traced.instance_ends_s, traced.trace, traced.events, traced.notes)
        assert repr(run) == repr((traced.instance_ends_s, traced.trace, traced.events, traced.notes))


@pytest.mark.parametrize("framework", ["eager", "cuda-graph", "xla"])
@pytest.mark.parametrize("device", ["h100-sxm", "t4", "tpu-v5e"])
def test_one_kernel_in_a_framework(framework, device):
    workload, system, mode = _program("matmul", {"m": 64, "n": 64, "k": 64}, device, framework)
    simulated = simulate(workload, system, mode, repeats=3, record=False).instance_ends_s
    ends = lone.instance_ends(workload, system, mode, "roofline", 3)
    assert ends is None or ends == simulated  # a compiled step's dispatch is left to the engine
    traced = simulate(workload, system, mode)
    run = lone.latency_run(workload, system, mode, "roofline")
    assert run is None or repr(run) == repr(
        (traced.instance_ends_s, traced.trace, traced.events, traced.notes)
    )
    assert program.timing.__wrapped__(workload, system, mode, "engine", "roofline") == (
        simulated[0],
        (simulated[-1] - simulated[0]) / 2,
    )


def test_xla_step_dispatch_is_simulated():
    workload, system, mode = _program("matmul", {"m": 64, "n": 64, "k": 64}, "h100-sxm", "xla")
    assert lone.instance_ends(workload, system, mode, "roofline", 3) is None
    assert lone.latency_run(workload, system, mode, "roofline") is None


@pytest.mark.parametrize(
    ("name", "params", "device"),
    [
        ("vector_add", {"n": 1e6}, "xeon-e5-2630v3"),  # the host runs it: no GPU
        ("offload", {"op": "relu", "n": 1000}, "v100-pcie"),  # copies around the kernel
    ],
)
def test_anything_else_is_simulated(name, params, device):
    workload, system, mode = _program(name, params, device)
    assert lone.instance_ends(workload, system, mode, "roofline", 3) is None
    assert lone.latency_run(workload, system, mode, "roofline") is None


def test_timing_takes_the_engine_s_period():
    workload, system, mode = _program("matmul", {"m": 4096, "n": 4096, "k": 4096}, "h100-sxm")
    simulated = simulate(workload, system, mode, repeats=3, record=False).instance_ends_s
    assert program.timing.__wrapped__(workload, system, mode, "engine", "roofline") == (
        simulated[0],
        (simulated[-1] - simulated[0]) / 2,
    )
