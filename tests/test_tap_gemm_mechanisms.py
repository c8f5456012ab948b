"""The mechanisms that time ``conv2d algorithm=tap-gemm`` on CuPy, each against a hand-computed answer.

Numbers of the ``h100-sxm`` preset used below: 132 SMs x 8 blocks x 256 threads = 270,336 resident
threads, 1.3 us latency under load, 0.375 us latency, 2.9 TB/s device memory, a 50 MiB L2 at
9.8 TB/s, a 5 us launch; CuPy's host costs 4.3 us (elementwise), 18.7 us (matmul), 53.4 us
(tensordot).
"""

from __future__ import annotations

import math

import pytest

import parsim
from parsim.hardware import registry
from parsim.model import memory
from parsim.model.issue import issue_s
from parsim.model.kernel import closed_form_s
from parsim.workloads.base import Kernel
from parsim.workloads.registry import make_workload

SYSTEM = registry.system("h100-sxm", None, None, 1, None)
H100 = SYSTEM.gpu
THREADS = 132 * 8 * 256
US = 1e-6


def tap_gemm(**shape):
    return make_workload("conv2d", {**shape, "algorithm": "tap-gemm"})


IMAGES = {"batch": 32, "dtype": "float16"}
ROW_1X1 = {**IMAGES, "channels": 64, "height": 56, "width": 56, "filters": 256, "kernel": 1}
ROW_HOST = {**IMAGES, "channels": 256, "height": 14, "width": 14, "filters": 256, "kernel": 3}


def test_littles_law_caps_the_cold_bytes_a_cache_level_does_not_serve():
    # 1e7 elements of one 4-byte load, half of their 80 MB cold, with the L2 serving the rest:
    # moving them takes 40 MB / 9.8 TB/s + 40 MB / 2.9 TB/s = 4.08 + 13.79 = 17.87 us, but the cold
    # half of the elements waits on device memory: 5e6 x 1.3 us / 270,336 threads = 24.04 us
    level = memory.level(H100, 132, 1e6)
    assert level.name == "L2"
    seconds = level.stream_s(H100, 8e7, 0.5, 132, 1e7, 4.0)
    assert seconds == pytest.approx(5e6 * 1.3 * US / THREADS, rel=1e-9)
    assert seconds == pytest.approx(24.04 * US, rel=1e-3)
    # all warm: the L2 alone, no latency bound
    assert level.stream_s(H100, 8e7, 0.0, 132, 1e7, 4.0) == pytest.approx(8e7 / 9.8e12, rel=1e-9)


def test_data_stays_in_the_cache_only_while_the_loop_around_it_fits():
    # 25.7 MB alone fits the 52.4 MB L2; touched again only after 128.5 MB it comes from memory
    alone = Kernel.of("copy", 0.0, 12.85e6, 12.85e6, 1_000_000)
    looped = Kernel.of("copy", 0.0, 12.85e6, 12.85e6, 1_000_000, reuse_B=128.5e6)
    assert alone.working_set_B == 25.7e6 and looped.working_set_B == 128.5e6
    assert memory.level(H100, 132, alone.working_set_B).name == "L2"
    assert memory.level(H100, 132, looped.working_set_B).name == "device memory"
    # a loop smaller than the kernel's own bytes changes nothing
    assert Kernel.of("copy", 0.0, 12.85e6, 12.85e6, 1, reuse_B=1e6).working_set_B == 25.7e6


def test_a_tap_is_issued_as_a_tensordot_not_a_matmul():
    program = tap_gemm(**ROW_HOST)
    product = next(op for op in program.ops if op.work.matrix)
    assert issue_s(SYSTEM, None, False, product) == pytest.approx((53.4 + 5) * US)
    matmul = make_workload("matmul", {"m": 256, "n": 256, "k": 256, "dtype": "float16"}).ops[0]
    assert issue_s(SYSTEM, None, False, matmul) == pytest.approx((18.7 + 5) * US)


def test_the_copies_are_cupy_ufuncs_and_the_fill_a_memset():
    program = tap_gemm(**ROW_1X1)
    fill, window, product, add = program.ops  # a 1x1 filter's weights need no copy
    assert (fill.work.bytes_read, fill.access.thread_loads_B) == (0.0, 0.0)
    assert window.name.endswith("copy window") and window.access.thread_loads_B == 2.0  # one float16 load
    loop = program.footprint_B  # 12.85 MB in, 12.85 MB window, 2 x 51.4 MB out, 32 KB of weights
    assert loop == pytest.approx(128.5e6, rel=1e-3)
    assert all(op.access.reuse_B == loop for op in program.ops)
    # the window's 6,422,528 values come from memory, one 2-byte load in flight per thread:
    # 0.375 us + 6,422,528 x 1.3 us / 270,336 = 31.26 us (the bytes alone would take 8.9 us)
    elements = 32 * 64 * 56 * 56
    expected = 0.375 * US + elements * 1.3 * US / THREADS
    assert closed_form_s(window, H100, "simt", "roofline") == pytest.approx(expected, rel=1e-6)
    assert expected == pytest.approx(31.26 * US, rel=1e-3)
    # the memset's 51.4 MB of stores go to memory: 0.375 + 51,380,224 / 2.9e12 s = 18.09 us
    outputs_B = 256 * 32 * 56 * 56 * 2
    assert closed_form_s(fill, H100, "simt", "roofline") == pytest.approx(0.375 * US + outputs_B / 2.9e12)


def test_a_loop_that_fits_the_l2_stays_warm():
    program = tap_gemm(**ROW_HOST)  # 15 MB a tap
    assert program.footprint_B < 50 * 2**20
    window = next(op for op in program.ops if op.name.endswith("copy window"))
    # 3.2 MB read and written from the L2 at 9.8 TB/s, no latency bound
    assert closed_form_s(window, H100, "simt", "roofline") == pytest.approx(
        0.375 * US + window.bytes / 9.8e12, rel=1e-6
    )


@pytest.mark.parametrize("method", ["engine", "analytic"])
def test_a_host_bound_convolution_costs_its_calls(method):
    # each tap's kernels take ~5 us, its calls 86.3: the memset's call (9.3 us), then 9 taps of two
    # copies and an add (3 x 9.3 us) and a tensordot (58.4 us), then the last add on the GPU
    # (9.63 MB from the L2: 0.375 + 0.98 us)
    outputs_B = 256 * 32 * 14 * 14 * 2
    last_add = 0.375 * US + 3 * outputs_B / 9.8e12
    expected = 9.3 * US + 9 * (3 * 9.3 + 58.4) * US + last_add
    params = {**ROW_HOST, "algorithm": "tap-gemm"}
    predicted = parsim.predict("conv2d", params, device="h100-sxm", method=method)
    assert predicted.latency_s == pytest.approx(expected, rel=1e-6)
    assert math.isclose(expected, 787.36 * US, rel_tol=1e-4)
