"""NCCL's protocols and algorithms (``model.nccl`` through ``model.collectives``): hand-computed
choices and times on tiny cases, and the invariants every choice keeps."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.model import nccl
from parsim.model.collectives import bus_bandwidth_Bps, collective

US = 1e-6


def node(cluster: str):
    return registry.cluster_system(cluster, 1)


def test_an_8_byte_all_reduce_on_8_h100_is_a_ring_with_ll():
    # NCCL's constants: Ring/LL base 6.6 us + 14 steps x 0.6 us over NVLink = 15.0 us; LL carries
    # half of NVLink 4's 375 GB/s, capped at Hopper's 141 GB/s: 8 B x 14/8 / 141 GB/s on top
    timing = collective(node("dgx-h100"), "all_reduce", 8.0)
    assert (timing.algorithm, timing.protocol) == ("ring", "ll")
    assert timing.latency_s == pytest.approx(15.0 * US)
    assert timing.bandwidth_s == pytest.approx(8.0 * 14 / 8 / 141e9)


def test_a_large_all_reduce_on_8_h100_takes_nvls():
    # NVLS: Hopper's measured fixed cost (30.5 us, NCCL's constant 25) and the buffer at 0.61 x
    # NVLink 4's 450 GB/s peak
    nbytes = 8 * 2**30
    timing = collective(node("dgx-h100"), "all_reduce", nbytes)
    assert (timing.algorithm, timing.protocol) == ("nvls", "simple")
    assert timing.seconds == pytest.approx(30.5 * US + nbytes / (0.61 * 450e9))
    busbw = bus_bandwidth_Bps("all_reduce", nbytes, timing.seconds, 8)
    assert 470e9 < busbw < 481e9  # nccl-tests on DGX H100 / ND H200 v5: ~480 GB/s; a ring: ~375


def test_a_named_protocol_is_priced_with_its_own_constants():
    # Simple ring on 8 A100: 8.4 us + 14 steps x (3.4 + Ampere's 1.375) us; the whole 240 GB/s of NVLink 3
    timing = collective(node("dgx-a100"), "all_reduce", 2**20, algorithm="ring", protocol="simple")
    assert timing.latency_s == pytest.approx((8.4 + 14 * (3.4 + 1.375)) * US)
    assert timing.bandwidth_s == pytest.approx(2**20 * 14 / 8 / 240e9)
    ll128 = collective(node("dgx-a100"), "all_reduce", 2**20, algorithm="ring", protocol="ll128")
    assert ll128.latency_s == pytest.approx((14.0 + 14 * (1.9 + 1.375)) * US)
    assert ll128.bandwidth_s == pytest.approx(2**20 * 14 / 8 / (0.92 * 240e9))


def test_the_ampere_hop_scale_agrees_with_the_a100_runs():
    # LL: 6.6 us + 14 x (0.6 + 1.375) us (+ 14/8 of the buffer at Ampere's 87.7 GB/s LL cap): an 8-byte
    # all-reduce within 10 % of SuperBench's 34.84 us, 1 MiB within 10 % of Azure's 36.22 GB/s
    small = collective(node("dgx-a100"), "all_reduce", 8.0)
    assert (small.algorithm, small.protocol) == ("ring", "ll")
    assert small.latency_s == pytest.approx((6.6 + 14 * (0.6 + 1.375)) * US)
    assert small.seconds == pytest.approx(34.84 * US, rel=0.10)
    mib = collective(node("dgx-a100"), "all_reduce", 2**20)
    assert mib.seconds == pytest.approx((6.6 + 14 * (0.6 + 1.375)) * US + 2**20 * 14 / 8 / 87.7e9)
    assert bus_bandwidth_Bps("all_reduce", 2**20, mib.seconds, 8) == pytest.approx(36.22e9, rel=0.10)


def test_without_peer_access_each_hop_is_staged_through_host_memory():
    # 2 RTX 4090 on PCIe 4.0 (25 GB/s a direction), staged rate not measured: NCCL's SHM transport
    # moves 4 GB/s; a 1 GiB ring through the host on Simple: 8.4 us + 2 steps x 2 PCIe crossings x
    # 5.7 us, each GPU sending the buffer once
    nbytes = 2**30
    timing = collective(node("rtx4090-pcie-2x"), "all_reduce", nbytes, transport="host")
    assert (timing.algorithm, timing.protocol) == ("ring", "simple")
    assert timing.latency_s == pytest.approx((8.4 + 2 * 2 * 5.7) * US)
    assert timing.bandwidth_s == pytest.approx(nbytes / 4.0e9)
    assert nccl.staged_Bps(registry.link("pcie3-x16")) == pytest.approx(4.0e9)
    # never more than the link one way: a 3 GB/s link carries 3 (each GPU's sends go up its own
    # link, its receives come down it)
    slow = attrs.evolve(registry.link("pcie3-x16"), bandwidth_Bps=3e9, pageable_bandwidth_Bps=1e9)
    assert nccl.staged_Bps(slow) == pytest.approx(3e9)
    # a box whose staged copies were measured (21 GB/s both directions together): 0.68 of it
    assert nccl.staged_Bps(registry.link("pcie4-x16"), measured_Bps=21e9) == pytest.approx(0.68 * 21e9)
    assert nccl.staged_Bps(registry.link("pcie4-x16"), sharing=2) == pytest.approx(2.0e9)  # one switch
    behind_switches = collective(node("rtx4090-pcie-4x"), "all_reduce", nbytes, transport="host")
    assert behind_switches.bandwidth_s == pytest.approx(1.5 * nbytes / 2.0e9)  # 2 GPUs per switch
    direct = collective(node("rtx4090-pcie-2x"), "all_reduce", nbytes)
    assert direct.bandwidth_s == pytest.approx(nbytes / 25e9)


@pytest.mark.parametrize(
    ("cluster", "kwargs", "message"),
    [
        ("dgx-a100", {"algorithm": "nvls"}, "'algorithm' nvls needs"),
        ("rtx4090-pcie-4x", {"algorithm": "nvls"}, "'algorithm' nvls needs"),
        ("rtx4090-pcie-4x", {"protocol": "ll128"}, "'protocol' ll128 does not run on pcie4-x16"),
        ("dgx-h100", {"algorithm": "nvls", "protocol": "ll"}, "'protocol' must be simple or auto"),
        ("dgx-h100", {"protocol": "ll256"}, "'protocol' must be one of auto, ll, ll128, simple: 'll256'"),
        ("dgx-h100", {"transport": "pigeon"}, "'transport' must be one of p2p, host: 'pigeon'"),
    ],
)
def test_impossible_choices_are_refused(cluster, kwargs, message):
    with pytest.raises(ParsimError, match=message):
        collective(node(cluster), "all_reduce", 2**20, **kwargs)


def test_nvls_is_refused_for_other_collectives():
    with pytest.raises(ParsimError, match="applies to all_reduce only"):
        collective(node("dgx-h100"), "all_gather", 2**20, algorithm="nvls")


CLUSTERS = ("dgx-a100", "dgx-h100", "dgx-b200", "rtx4090-pcie-4x", "azure-nd-gb200-v6", "mi300x-node")


@settings(max_examples=60, deadline=None)
@given(
    cluster=st.sampled_from(CLUSTERS),
    small=st.floats(1.0, 1e10),
    factor=st.floats(1.0, 100.0),
    protocol=st.sampled_from(("auto", "ll", "simple")),
    transport=st.sampled_from(nccl.TRANSPORTS),
)
def test_time_grows_with_the_buffer_and_bus_bandwidth_stays_under_the_link(
    cluster, small, factor, protocol, transport
):
    system = node(cluster)
    if transport == "host" and system.ring_link.kind != "pcie":
        transport = "p2p"  # staging through the host is for GPUs without a peer link
    if system.ring_link.kind == "xgmi" and protocol not in ("auto", "ll", "simple"):
        protocol = "auto"  # RCCL runs LL and Simple on MI300X
    a = collective(system, "all_reduce", small, protocol=protocol, transport=transport)
    b = collective(system, "all_reduce", small * factor, protocol=protocol, transport=transport)
    assert b.seconds >= a.seconds
    busbw = bus_bandwidth_Bps("all_reduce", small * factor, b.seconds, system.gpus)
    link = system.ring_link
    if b.algorithm == "nvls":  # the switch reduces: bounded by NVLS' share of the peak, not the ring
        ranks = system.gpus
        assert busbw <= nccl.nvls_bandwidth_Bps(link) * 2 * (ranks - 1) / ranks * 1.0001
        assert link.id in nccl.NVLS_EFFICIENCY and system.gpus >= nccl.NVLS_MIN_RANKS
    else:
        sharing = min(system.gpus_per_switch, system.gpus)
        rate = link.bandwidth_Bps if transport == "p2p" else nccl.staged_Bps(system.host_link, sharing)
        assert busbw <= rate * nccl.share(link, b.algorithm, b.protocol) * 1.0001


def test_the_cli_takes_protocol_and_p2p(cli):
    code, out, _ = cli("predict", "allreduce", "bytes=8", "--cluster", "dgx-h100")
    assert code == 0 and "(LL protocol)" in out
    code, out, _ = cli("predict", "allreduce", "bytes=1e9", "p2p=false", "--cluster", "rtx4090-pcie-2x")
    assert code == 0 and "(Simple protocol)" in out
    code, _, err = cli("predict", "allreduce", "bytes=8", "protocol=fast", "--cluster", "dgx-h100")
    assert code == 2 and "protocol" in err
    code, _, err = cli("predict", "allreduce", "bytes=8", "algorithm=nvls", "--cluster", "dgx-a100")
    assert code == 2 and "'algorithm' nvls needs" in err


def test_nvls_needs_five_gpus_of_an_nvswitch_board():
    # issue #1455: forced NVLS on 2-4 H100 stays at the ring's bandwidth; from 5 GPUs it pays
    from parsim.model.collectives import Group

    system = node("dgx-h100")
    assert collective(system, "all_reduce", 8 * 2**30, Group(5, 5)).algorithm == "nvls"
    assert collective(system, "all_reduce", 8 * 2**30, Group(4, 4)).algorithm == "ring"
    with pytest.raises(ParsimError, match=">= 5 in the group"):
        collective(system, "all_reduce", 2**20, Group(4, 4), algorithm="nvls")


def test_rccl_prices_mi300x_with_its_own_tuner_constants():
    # RCCL's tuning_model_5: Ring/LL 12 us + 14 steps x 0.8 us = 23.2 us, LL at 8 % of the fabric;
    # Ring/Simple 17 us + 14 x 2.1 us = 46.4 us, at the whole fabric (316 GB/s)
    system = node("mi300x-node")
    small = collective(system, "all_reduce", 8.0)
    assert (small.algorithm, small.protocol) == ("ring", "ll")
    assert small.latency_s == pytest.approx(23.2 * US)
    assert small.bandwidth_s == pytest.approx(8.0 * 14 / 8 / (0.08 * 316e9))
    big = collective(system, "all_reduce", 2.0**20)
    assert (big.algorithm, big.protocol) == ("ring", "simple")
    assert big.seconds == pytest.approx(46.4 * US + 2.0**20 * 14 / 8 / 316e9)
    assert nccl.rccl_hop_latency_s(("ring", "ll"), "infinity-fabric-mi300x") == pytest.approx(0.8 * US)


def test_nvls_start_is_hoppers_measured_fixed_cost_and_nccls_elsewhere():
    # NVLS forced on 8 H200 at 64 KiB: 30.5 us + 65536 / (0.61 x 450 GB/s); Blackwell keeps NCCL's 25 us
    timing = collective(node("dgx-h200"), "all_reduce", 65536.0, algorithm="nvls")
    assert timing.seconds == pytest.approx(30.5 * US + 65536 / (0.61 * 450e9))
    assert nccl.nvls_latency_s(1, "nvlink5") == pytest.approx(25.0 * US)
    assert nccl.nvls_latency_s(2, "nvlink4") == pytest.approx((30.5 + 18.0) * US)


def test_a_peer_ring_across_two_sockets_runs_at_the_cross_socket_rate():
    # 8 RTX 4090 on two EPYC sockets, peer access on: the ring's slowest hop crosses the sockets at
    # 20.55 GB/s a direction (not PCIe 4.0's 25), and each of its 14 steps costs 1.4 us more than
    # NCCL's PCIe constant: Ring/Simple 8.4 + 14 x (5.7 + 1.4) us = 107.8 us
    system = node("rtx4090-pcie-8x-2socket")
    nbytes = 2.0**27
    timing = collective(system, "all_reduce", nbytes, algorithm="ring", protocol="simple")
    assert timing.latency_s == pytest.approx(107.8 * US)
    assert timing.bandwidth_s == pytest.approx(nbytes * 14 / 8 / 20.55e9)
    small = collective(system, "all_reduce", 8.0)
    assert small.latency_s == pytest.approx((6.6 + 14 * (1.0 + 1.4)) * US)


def test_a_group_inside_one_socket_keeps_the_pcie_rate():
    # four GPUs of one socket (tensor parallel 4): no hop crosses the sockets
    from parsim.model.collectives import Group

    system = node("rtx4090-pcie-8x-2socket")
    inside = collective(system, "all_reduce", 2.0**27, Group(4, 4), algorithm="ring", protocol="simple")
    assert inside.latency_s == pytest.approx((8.4 + 6 * 5.7) * US)
    assert inside.bandwidth_s == pytest.approx(2.0**27 * 6 / 4 / 25e9)
    # peer access off: the host-staged path at NCCL's SHM share of the box's measured staged copies
    # (0.68 x 21 GB/s), whatever the sockets
    staged = collective(system, "all_reduce", 2.0**27, transport="host")
    assert staged.bandwidth_s == pytest.approx(2.0**27 * 14 / 8 / (0.68 * 21e9))


@settings(max_examples=40, deadline=None)
@given(
    per_socket=st.integers(min_value=1, max_value=8),
    cross=st.floats(min_value=1e9, max_value=60e9),
    nbytes=st.floats(min_value=8.0, max_value=1e10),
)
def test_crossing_sockets_never_makes_a_collective_faster(per_socket, cross, nbytes):
    system = node("rtx4090-pcie-8x-2socket")
    one_socket = attrs.evolve(system, gpus_per_socket=0, cross_socket_Bps=0.0)
    split = attrs.evolve(system, gpus_per_socket=per_socket, cross_socket_Bps=cross)
    assert collective(split, "all_reduce", nbytes).seconds >= collective(
        one_socket, "all_reduce", nbytes
    ).seconds * (1 - 1e-12)


def test_rccl_runs_no_tree_on_simple_and_no_ll128_inside_an_mi300x_node():
    system = node("mi300x-node")
    assert collective(system, "all_reduce", 2.0**30, algorithm="tree").protocol == "ll"
    with pytest.raises(ParsimError, match="ll128"):
        collective(system, "all_reduce", 2.0**20, protocol="ll128")


def test_nccls_all_to_all_over_nvlink_5_pays_its_start_and_its_share_by_hand():
    """8 B200: 41 us in all and 0.923 of the ring's 680 GB/s for NCCL's own (``nccl.A2A_START_S``);
    kernels writing the peers' buffers (DeepEP, HybridEP) pay the link's latency and rate only;
    Hopper's NVLink 4 keeps the ring's rate and no start (no all-to-all table at hand)."""
    from parsim.model.collectives import Group

    b200 = node("dgx-b200")
    link = b200.ring_link
    own = collective(b200, "all_to_all", 128e6, Group(8, 8))
    rate = link.bandwidth_Bps * 627.5e9 / 680e9
    assert link.latency_s + 38 * US == pytest.approx(41 * US)  # the fitted start, the link's 3 us in it
    assert own.seconds == pytest.approx(41 * US + 7 / 8 * 128e6 / rate)
    # below the fitted 64 MiB the start shrinks with the buffer: a decode step's 64 KiB pays 1/1024
    small = collective(b200, "all_to_all", 65536, Group(8, 8))
    assert small.seconds == pytest.approx(link.latency_s + 38 * US / 1024 + 7 / 8 * 65536 / rate)
    with pytest.raises(ParsimError, match="'library' must be one of nccl, kernels: 'NCCL'"):
        collective(b200, "all_to_all", 128e6, Group(8, 8), library="NCCL")
    kernels = collective(b200, "all_to_all", 128e6, Group(8, 8), library="kernels")
    assert kernels.seconds == pytest.approx(link.latency_s + 7 / 8 * 128e6 / link.bandwidth_Bps)
    h100 = node("dgx-h100")
    plain = collective(h100, "all_to_all", 128e6, Group(8, 8))
    assert plain.seconds == pytest.approx(
        h100.ring_link.latency_s + 7 / 8 * 128e6 / h100.ring_link.bandwidth_Bps
    )


OCI_A2A = {  # [OCI-A2A]: GB300 alltoall_perf out-of-place times (us), 64 MiB to 16 GiB, 4 and 8 GPUs
    4: (121.3, 218.9, 410.1, 787.1, 1454.3, 2622.9, 5183.9, 10308, 20527),
    8: (130.1, 227.7, 418.2, 796.3, 1490.4, 2989.6, 5612.2, 11059, 21943),
}


def test_the_nvlink_5_all_to_all_reproduces_the_measurements_it_was_fitted_on():
    """The 18 times of [OCI-A2A] within 4.6 % on average and 14 % at worst (the fit's own figures):
    the constants in ``nccl`` cannot drift from their source unnoticed."""
    from parsim.model.collectives import Group

    b200 = node("dgx-b200")  # NVLink 5, as the GB300 trays' fabric
    errors = []
    for ranks, times in OCI_A2A.items():
        for power, measured_us in enumerate(times):
            nbytes = 2 ** (26 + power)
            timing = collective(b200, "all_to_all", nbytes, Group(ranks, ranks))
            errors.append(abs(timing.seconds / (measured_us * US) - 1))
    assert sum(errors) / len(errors) < 0.046
    assert max(errors) < 0.14
