"""The mechanisms that time ``conv2d algorithm=tap-gemm`` on CuPy, each against a hand-computed answer.

Numbers of the ``h100-sxm`` preset used below: 132 SMs x 8 blocks x 256 threads = 270,336 resident
threads, 1.3 us latency under load, 0.375 us latency, 2.9 TB/s device memory, a 50 MiB L2 at
9.8 TB/s, a 5 us launch; CuPy's host costs 4.3 us (elementwise), 18.7 us (matmul), 53.4 us
(tensordot).
"""

from __future__ import annotations

import pytest

from parsim.hardware import registry
from parsim.model import memory
from parsim.workloads.base import Kernel

SYSTEM = registry.system("h100-sxm", None, None, 1, None)
H100 = SYSTEM.gpu
THREADS = 132 * 8 * 256
US = 1e-6


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
    alone = Kernel("copy", 0.0, 12.85e6, 12.85e6, 1_000_000)
    looped = Kernel("copy", 0.0, 12.85e6, 12.85e6, 1_000_000, reuse_B=128.5e6)
    assert alone.working_set_B == 25.7e6 and looped.working_set_B == 128.5e6
    assert memory.level(H100, 132, alone.working_set_B).name == "L2"
    assert memory.level(H100, 132, looped.working_set_B).name == "device memory"
    # a loop smaller than the kernel's own bytes changes nothing
    assert Kernel("copy", 0.0, 12.85e6, 12.85e6, 1, reuse_B=1e6).working_set_B == 25.7e6
