"""Host work and copy engines: one rule each (``model.placement``), composed by the engine and the
analytic schedule alike. Timelines on the tiny system of ``tests/systems.py`` (1 GB/s pinned link,
1 us latency), computed on paper."""

from __future__ import annotations

import attrs
import pytest
from systems import TINY_CPU, TINY_LINK, evolve_gpu

from parsim.hardware.specs import SystemSpec
from parsim.methods import analytic
from parsim.methods.engine import simulate
from parsim.model import placement
from parsim.model.issue import issue_s
from parsim.workloads.base import HOST, Kernel, Transfer, Workload

COPY_B = 1e6  # 1 ms at 1 GB/s, plus 1 us of latency
COPY_S = 1e-6 + COPY_B / 1e9


def _system(engines: int, duplex: bool = True) -> SystemSpec:
    return SystemSpec(
        host=TINY_CPU, device=evolve_gpu(copy_engines=engines), link=attrs.evolve(TINY_LINK, duplex=duplex)
    )


def _both_ways() -> Workload:
    """A host-to-device and a device-to-host copy on two streams: nothing orders them."""
    ops = (Transfer("up", COPY_B, "h2d", stream=0), Transfer("down", COPY_B, "d2h", stream=1))
    return Workload("both-ways", (), ops)


def _kernel(name: str, device: int = 0) -> Kernel:
    return Kernel.of(name, flops=1e6, bytes_read=1e3, bytes_written=1e3, work_items=1000, device=device)


def _copy_ends(workload: Workload, system: SystemSpec) -> tuple[float, float]:
    engine = simulate(workload, system, "simt").instance_ends_s[0]
    closed = analytic.schedule(workload, system, "simt").instance_ends_s[0]
    return engine, closed


def test_copy_lanes():
    assert placement.copy_lane(_system(2), "d2h") == "d2h"
    assert placement.copy_lane(_system(1), "d2h") == placement.BOTH_WAYS  # one engine for both ways
    assert placement.copy_lane(_system(2, duplex=False), "d2h") == placement.BOTH_WAYS  # one way at a time
    assert placement.engines_per_lane(evolve_gpu(copy_engines=1)) == 1
    assert placement.engines_per_lane(evolve_gpu(copy_engines=4)) == 2


@pytest.mark.parametrize(
    ("engines", "duplex", "copies_in_a_row"),
    [(2, True, 1), (1, True, 2), (2, False, 2)],
)
def test_both_methods_copy_both_ways_by_the_same_rule(engines, duplex, copies_in_a_row):
    """Two engines on a duplex link overlap the two copies; one engine queues them; a half-duplex
    link shares its bandwidth (the engine) or takes one after the other (analytic): both end when
    two copies' bytes have crossed it."""
    system = _system(engines, duplex)
    up, down = _both_ways().ops
    issue_up, issue_down = issue_s(system, None, False, up), issue_s(system, None, False, down)
    engine, closed = _copy_ends(_both_ways(), system)
    if copies_in_a_row == 1:  # the second starts once the host has issued it
        assert closed == pytest.approx(issue_up + issue_down + COPY_S, rel=1e-12)
    else:
        assert closed == pytest.approx(issue_up + 2 * COPY_S, rel=1e-12)
    assert engine == pytest.approx(closed, rel=2e-3)


def test_host_work_beside_gpus_runs_in_the_hosts_default_mode():
    system = _system(2)
    host_kernel = _kernel("decode", HOST)
    gpu_kernel = _kernel("relu")
    assert placement.on_host(system, host_kernel) and not placement.on_host(system, gpu_kernel)
    assert placement.kernel_processor(system, host_kernel, "simt") == (TINY_CPU, "mimd+simd")
    assert placement.kernel_processor(system, gpu_kernel, "simt") == (system.gpu, "simt")
    cpu_only = SystemSpec(host=TINY_CPU)
    assert placement.kernel_processor(cpu_only, gpu_kernel, "sisd") == (TINY_CPU, "sisd")
    assert placement.host_mode(cpu_only, "simd") == "simd"


def test_the_issuing_thread_waits_for_host_work_and_pageable_copies_only():
    system = _system(2)
    assert placement.blocks_host(system, _kernel("decode", HOST))
    assert placement.blocks_host(system, Transfer("up", 1.0, "h2d", pinned=False))
    assert not placement.blocks_host(system, Transfer("up", 1.0, "h2d"))
    assert not placement.blocks_host(system, _kernel("relu"))
    assert placement.blocks_host(SystemSpec(host=TINY_CPU), _kernel("relu"))
