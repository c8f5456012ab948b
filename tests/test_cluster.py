"""Clusters: NICs, collectives in closed form (hand-computed), their workloads, DDP buckets and ZeRO."""

from __future__ import annotations

import json

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parsim
from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.hardware.network import NetworkSpec
from parsim.hardware.tomlio import loads_hardware
from parsim.model import collectives
from parsim.model.collectives import Group, bus_bandwidth_Bps, bus_factor, collective
from parsim.model.transfer import ring_all_reduce_s
from parsim.workloads import ddp

GB = 1e9


def dgx_a100(nodes: int):
    return registry.cluster_system("dgx-a100", nodes)


# --- closed forms, by hand (dgx-a100: NVLink 3 240 GB/s and 3 us per hop; 8x HDR at 24 GB/s, 5 us) ---


def test_one_node_ring_is_the_nodes_ring():
    # NCCL's Simple ring (model.nccl): 8.4 us + 14 steps x (3.4 + Ampere's 1.375) us, each GPU
    # sending 14/8 GB at 240 GB/s
    one = dgx_a100(1)
    timing = collective(one, "all_reduce", 1e9)
    assert (timing.algorithm, timing.protocol) == ("ring", "simple")
    assert timing.latency_s == pytest.approx((8.4 + 14 * (3.4 + 1.375)) * 1e-6, rel=1e-12)
    bandwidth = ring_all_reduce_s(one.ring_link, 1e9, 8) - 14 * one.ring_link.latency_s
    assert timing.bandwidth_s == pytest.approx(bandwidth, rel=1e-12)


def test_ring_across_nodes_is_paced_by_the_nodes_nics():
    # 16 GPUs, 2 nodes, NCCL's Simple ring: 8.4 us + 28 NVLink steps x 3.4 us + 2 network steps x
    # 14 us; each GPU sends 2 x 15/16 GB at min(240, 8 x 24) GB/s
    timing = collective(dgx_a100(2), "all_reduce", 1e9, algorithm="ring")
    assert timing.latency_s == pytest.approx((8.4 + 28 * (3.4 + 1.375) + 2 * 14.0) * 1e-6)
    assert timing.bandwidth_s == pytest.approx(2 * 15 / 16 * 1e9 / 192e9)
    assert timing.algorithm == "ring"


def test_tree_latency_grows_with_log2_of_the_nodes():
    # 16 nodes, NCCL's Simple tree: 8.4 us + 2 x (4 network hops x 14 us + 7 NVLink hops x 4 us);
    # 2 GB through 192 GB/s
    timing = collective(dgx_a100(16), "all_reduce", 1e9, algorithm="tree")
    assert timing.latency_s == pytest.approx((8.4 + 2 * (4 * 14.0 + 7 * (4.0 + 1.375))) * 1e-6)
    assert timing.bandwidth_s == pytest.approx(2 * 1e9 / 192e9)


def test_auto_takes_the_tree_for_small_buffers_at_scale_and_never_the_slower():
    system = dgx_a100(128)
    small = collective(system, "all_reduce", 8192)
    assert small.algorithm == "tree"
    ring = collective(system, "all_reduce", 8192, algorithm="ring")
    assert ring.seconds > 10 * small.seconds  # 2046 ring steps of 5 us against 2 x (7 + 7) hops
    for size in (1e3, 1e6, 1e8, 1e10):
        chosen = collective(system, "all_reduce", size).seconds
        assert chosen == min(
            collective(system, "all_reduce", size, algorithm=a).seconds for a in ("ring", "tree")
        )


def test_reduce_scatter_and_all_gather_move_half_an_all_reduce():
    system = dgx_a100(4)
    n = 32
    rs = collective(system, "reduce_scatter", 1e9)
    # NCCL's Simple ring: 8.4 us + 28 NVLink steps x 3.4 us + 3 network steps x 14 us
    assert rs.seconds == pytest.approx(
        (8.4 + 28 * (3.4 + 1.375) + 3 * 14.0) * 1e-6 + (n - 1) / n * 1e9 / 192e9
    )
    assert collective(system, "all_gather", 1e9).seconds == pytest.approx(rs.seconds)


def test_all_to_all_sends_other_nodes_their_share_through_one_gpus_nic():
    system = dgx_a100(4)  # 32 GPUs: 7/32 of the buffer over NVLink, 24/32 over the GPU's 24 GB/s NIC share
    timing = collective(system, "all_to_all", 1e9)
    assert timing.seconds == pytest.approx(5e-6 + max(7 / 32 * 1e9 / 240e9, 24 / 32 * 1e9 / 24e9))


def test_an_oversubscribed_spine_slows_trees_and_all_to_all_not_rings():
    plain = dgx_a100(64)  # 64 nodes span 4 leaves of 20
    tapered = attrs.evolve(plain, network=attrs.evolve(plain.network, oversubscription=2.0))
    for kind, algorithm, slower in (
        ("all_reduce", "ring", False),
        ("all_reduce", "tree", True),
        ("all_to_all", "auto", True),
    ):
        before = collective(plain, kind, 1e9, algorithm=algorithm).seconds
        after = collective(tapered, kind, 1e9, algorithm=algorithm).seconds
        assert (after > 1.5 * before) if slower else after == pytest.approx(before), kind


def test_bus_bandwidth_is_nccl_tests_formula():
    assert bus_factor("all_reduce", 8) == pytest.approx(2 * 7 / 8)
    assert bus_factor("all_gather", 8) == pytest.approx(7 / 8)
    assert bus_bandwidth_Bps("all_reduce", 1e9, 0.01, 16) == pytest.approx(1e11 * 2 * 15 / 16)


def test_groups_that_do_not_split_evenly_and_unknown_names_are_refused():
    with pytest.raises(ParsimError, match="per_node"):
        Group(12, 8)
    with pytest.raises(ParsimError, match="all_reduce, reduce_scatter"):
        collective(dgx_a100(1), "broadcast", 1e9)
    with pytest.raises(ParsimError, match="tree applies to all_reduce only"):
        collective(dgx_a100(2), "all_gather", 1e9, algorithm="tree")


@settings(max_examples=60, deadline=None)
@given(
    nodes=st.integers(1, 512),
    small=st.floats(1.0, 1e10),
    factor=st.floats(1.0, 100.0),
    kind=st.sampled_from(collectives.COLLECTIVES),
)
def test_more_bytes_never_take_less_time_and_bus_bandwidth_stays_under_the_wires(nodes, small, factor, kind):
    system = dgx_a100(nodes)
    first = collective(system, kind, small).seconds
    assert collective(system, kind, small * factor).seconds >= first
    if kind != "all_to_all":  # what nccl-tests reports can never beat the slowest level's wires
        ceiling = 240e9 if nodes == 1 else 192e9
        assert bus_bandwidth_Bps(kind, small, first, system.total_gpus) <= ceiling * (1 + 1e-9)


# --- hardware: presets and files ---


def test_presets_wire_their_nodes():
    system = registry.cluster_system("dgx-h100", 4)
    assert (system.gpu.id, system.gpus, system.nodes, system.total_gpus) == ("h100-sxm", 8, 4, 32)
    assert system.peer_link is not None and system.peer_link.id == "nvlink4"
    assert system.network is not None and system.network.node_Bps() == pytest.approx(8 * 48e9)
    pcie = registry.cluster_system("pcie-h100-2nic", 2)
    assert pcie.peer_link is None and pcie.ring_link.kind == "pcie"  # peers talk over PCIe


CLUSTER_TOML = """
[cluster]
id = "my-cluster"
name = "four T4 per node on 25G Ethernet"
device = "t4"
gpus_per_node = 4
fabric = "pcie3-x16"
host = "xeon-e5-2630v3"
[cluster.network]
nic = "eth-25g"
nics_per_node = 1
"""


def test_a_cluster_file_splits_its_gpus_over_two_sockets():
    # two T4 per socket, 10 GB/s between sockets (below PCIe 3.0's rate): a 4-GPU ring runs at it
    text = CLUSTER_TOML.replace(
        "gpus_per_node = 4", "gpus_per_node = 4\ngpus_per_socket = 2\ncross_socket_Bps = 10e9"
    )
    system = registry.cluster_system(loads_hardware(text), 1)
    assert (system.gpus_per_socket, system.cross_socket_Bps) == (2, 10e9)
    timing = collective(system, "all_reduce", 1e9, algorithm="ring", protocol="simple")
    assert timing.bandwidth_s == pytest.approx(1e9 * 6 / 4 / 10e9)


def test_a_cluster_file_loads_and_runs():
    spec = loads_hardware(CLUSTER_TOML)
    system = registry.cluster_system(spec, 3)
    assert system.total_gpus == 12
    assert system.network is not None and system.network.nic.id == "eth-25g"
    inline = CLUSTER_TOML.replace('nic = "eth-25g"', "")
    inline += "[cluster.network.nic]\nid = 'x'\nname = 'x'\nbandwidth_Bps = 1e9\n"
    inline += "peak_bandwidth_Bps = 2e9\nlatency_s = 1e-5\n"
    assert loads_hardware(inline).network.nic.bandwidth_Bps == 1e9


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('device = "t4"', 'device = "/etc/passwd.toml"'), "'device' must be a preset id"),
        (("gpus_per_node = 4", "gpus_per_node = 0"), "gpus_per_node"),
        (("nics_per_node = 1", "nics_per_node = 1\noversubscription = 0.5"), "oversubscription"),
        (('nic = "eth-25g"', 'nic = "ib-xdr"'), "unknown NIC preset"),
        (("nics_per_node = 1", "nics_per_node = 1\nspeed = 3"), "unknown key 'cluster.network.speed'"),
        (("gpus_per_node = 4", "gpus_per_node = 4\ngpus_per_socket = -2"), "'gpus_per_socket' must be"),
        (("gpus_per_node = 4", "gpus_per_node = 4\ncross_socket_Bps = -1e9"), "'cross_socket_Bps' must be"),
        (("gpus_per_node = 4", "gpus_per_node = 4\nstaged_Bps = -5"), "'staged_Bps' must be"),
    ],
)
def test_bad_cluster_files_say_which_field(change, message):
    with pytest.raises(ParsimError, match=message):
        loads_hardware(CLUSTER_TOML.replace(*change))


def test_a_cluster_file_may_only_name_gpus_and_cpus_it_should():
    spec = loads_hardware(CLUSTER_TOML.replace('device = "t4"', 'device = "xeon-8480"'))
    with pytest.raises(ParsimError, match="must be a GPU or TPU preset"):
        registry.cluster_system(spec, 1)


def test_a_network_needs_a_nic_count_in_range():
    nic = registry.cluster("dgx-a100").network.nic
    with pytest.raises(ParsimError, match="nics_per_node"):
        NetworkSpec(nic, nics_per_node=0)


# --- the collective workloads ---


def test_allreduce_reports_what_nccl_tests_prints():
    p = parsim.predict("allreduce", {"bytes": 1e9, "nodes": 2}, cluster="dgx-a100")
    seconds = collective(dgx_a100(2), "all_reduce", 1e9).seconds
    assert p.gpus == 16 and p.nodes == 2
    assert p.metrics["collective_s"] == pytest.approx(seconds)
    assert p.metrics["algorithm_bandwidth_Bps"] == pytest.approx(1e9 / seconds)
    assert p.metrics["bus_bandwidth_Bps"] == pytest.approx(1e9 / seconds * 2 * 15 / 16)
    assert any("over 16 GPUs (2 nodes)" in note for note in p.notes)
    rows = {event.resource.label for event in p.trace}
    assert "network (ib-hdr)" in rows and "GPU7 NVLink ring" in rows


def test_a_collective_on_one_machine_uses_its_gpus():
    p = parsim.predict("allgather", {"bytes": 1e8}, device="h100-sxm", gpus=8)
    assert p.metrics["bus_bandwidth_Bps"] == pytest.approx(1e8 / p.metrics["collective_s"] * 7 / 8)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            {"workload": "allreduce", "params": {"bytes": 1e9, "nodes": 4}, "device": "a100-80gb"},
            "needs a cluster",
        ),
        (
            {"workload": "allreduce", "params": {"bytes": 1e9}, "cluster": "dgx-a100", "device": "t4"},
            "'device' does not apply with --cluster",
        ),
        ({"workload": "allreduce", "params": {"bytes": 1e9}, "cluster": "dgx-a10"}, "closest: dgx-a100"),
        (
            {"workload": "matmul", "params": {"m": 8, "n": 8, "k": 8}, "cluster": "dgx-a100"},
            "--cluster applies",
        ),
        (
            {"workload": "allgather", "params": {"bytes": 1, "algorithm": "tree"}, "cluster": "dgx-a100"},
            "tree",
        ),
        ({"workload": "allreduce", "params": {"bytes": 0}, "cluster": "dgx-a100"}, "'bytes'"),
        (
            {"workload": "data_parallel", "params": {"gpus": 16, "sync": "ring"}, "cluster": "dgx-a100"},
            "'gpus' must be 1 to 8, the GPUs of one dgx-a100 node",
        ),
        (
            {"workload": "data_parallel", "params": {"nodes": 2, "sync": "host"}, "cluster": "dgx-a100"},
            "nodes > 1 and zero need sync=ring",
        ),
    ],
)
def test_bad_cluster_input_is_one_line(call, message):
    workload, params = call.pop("workload"), call.pop("params")
    with pytest.raises(ParsimError, match=message):
        parsim.predict(workload, params, **call)


# --- data parallelism across nodes: DDP buckets and ZeRO ---


def test_buckets_fill_to_the_cap_in_backward_order():
    layers = [("fc3", 10), ("relu", 0), ("fc2", 30), ("fc1", 25), ("embed", 5)]
    assert ddp.buckets(layers, 30) == [[("fc3", 10), ("fc2", 30)], [("fc1", 25), ("embed", 5)]]
    assert ddp.buckets(layers, 1e9) == [[("fc3", 10), ("fc2", 30), ("fc1", 25), ("embed", 5)]]


DP = {"model": "resnet50", "batch": 256, "sync": "ring", "scaling": "weak", "dtype": "float16"}


def _spans(prediction, prefix):
    return [
        e for e in prediction.trace if e.label.startswith(prefix) and e.resource.label == "GPU0 NVLink ring"
    ]


def test_ddp_buckets_reduce_while_the_backward_pass_runs():
    p = parsim.predict("data_parallel", {**DP, "nodes": 4}, cluster="dgx-a100")
    buckets = _spans(p, "all-reduce bucket")
    last_kernel = max(
        e.end_s for e in p.trace if e.resource.kind == "cores" and e.layer not in ("sync", "data")
    )
    assert len(buckets) == 4  # ResNet-50: 25.6 M float32 gradients (98 MiB) in buckets of 25 MiB or more
    assert min(e.start_s for e in buckets) < last_kernel  # the first buckets hide behind backward
    late = parsim.predict("data_parallel", {**DP, "nodes": 4, "overlap": False}, cluster="dgx-a100")
    late_kernel = max(
        e.end_s for e in late.trace if e.resource.kind == "cores" and e.layer not in ("sync", "data")
    )
    assert min(e.start_s for e in _spans(late, "all-reduce bucket")) >= late_kernel
    assert late.latency_s > p.latency_s


def test_a_thousand_gpus_cost_what_one_node_costs_to_simulate():
    small = parsim.predict("data_parallel", {**DP, "nodes": 2}, cluster="dgx-a100")
    large = parsim.predict("data_parallel", {**DP, "nodes": 128}, cluster="dgx-a100")
    assert large.gpus == 1024 and large.events == small.events  # one node simulated either way
    assert large.metrics["samples_per_s"] == pytest.approx(64 * small.metrics["samples_per_s"], rel=0.05)


def test_zero_shards_optimizer_state_then_gradients_then_weights():
    base = {
        "model": "gpt2",
        "batch": 8,
        "scaling": "weak",
        "seq": 1024,
        "sync": "ring",
        "dtype": "float16",
        "optimizer": "adam",
    }
    params = parsim.workloads.llms.LLMS["gpt2"].params
    ranks = 16
    footprint = {
        z: parsim.workloads.make_workload(
            "data_parallel", {**base, "gpus": 8, "nodes": 2, "zero": z}
        ).footprint_B
        for z in range(4)
    }
    gone = 1 - 1 / ranks
    assert footprint[0] - footprint[1] == pytest.approx(2 * 4 * params * gone)  # Adam's two float32 moments
    assert footprint[1] - footprint[2] == pytest.approx(4 * params * gone)  # float32 gradients
    assert footprint[2] - footprint[3] == pytest.approx((4 + 2) * params * gone)  # master + float16 weights
    kinds = {
        z: [
            op.kind
            for op in parsim.workloads.make_workload(
                "data_parallel", {**base, "gpus": 8, "nodes": 2, "zero": z}
            ).ops
            if isinstance(op, parsim.workloads.base.AllReduce)
        ]
        for z in (0, 1, 3)
    }
    assert set(kinds[0]) == {"all_reduce"}
    assert set(kinds[1]) == {"reduce_scatter", "all_gather"} and kinds[1].count("all_gather") == 1
    assert kinds[3].count("all_gather") == 2 * kinds[3].count("reduce_scatter")  # every bucket twice


def test_measure_it_here_skips_cluster_lessons_and_says_why():
    from parsim.app.measure_here import plan
    from parsim.studies.scenarios import load_scenario

    planned, skipped = plan(load_scenario("cluster_ring_vs_tree"), None, gpu=False)
    assert not planned
    assert skipped and all("runs on a cluster" in line for line in skipped)


def test_a_cluster_steps_timeline_draws_its_network_row():
    from parsim import plots

    p = parsim.predict("data_parallel", {**DP, "nodes": 2}, cluster="dgx-a100")
    figure = plots.timeline(p)
    labels = [tick.get_text() for ax in figure.axes for tick in ax.get_yticklabels()]
    assert any("network" in label for label in labels)


def test_the_issues_command_runs_as_written():
    # parsim predict data_parallel model=resnet50 batch=256 scaling=weak --cluster dgx-a100 nodes=128
    p = parsim.predict(
        "data_parallel",
        {"model": "resnet50", "batch": 256, "scaling": "weak", "nodes": 128},
        cluster="dgx-a100",
    )
    assert p.gpus == 1024 and dict(p.params)["sync"] == "ring"
    assert 0.5 < p.metrics["efficiency"] <= 1.0


# --- part of a node: 8 GPUs of an NVL72 rack, as published GB200 runs take ---


def test_a_job_on_part_of_a_node_keeps_each_gpus_network_share_and_fabric():
    # an NVL72 rack has one NIC per GPU: 8 of its 72 GPUs get 8 NICs, each GPU the same share
    whole = registry.cluster_system("gb200-nvl72", 2)
    part = registry.cluster_system("gb200-nvl72", 2, 8)
    assert (part.gpus, part.total_gpus, whole.gpus) == (8, 16, 72)
    assert part.network.nics_per_node == 8
    assert part.network.gpu_share_Bps(part.gpus) == whole.network.gpu_share_Bps(whole.gpus)
    assert (part.peer_link, part.gpu) == (whole.peer_link, whole.gpu)
    # fewer NICs than GPUs (a p4d: 4 for 8): 3 GPUs use the 2 cards their pairs share, rounded up
    assert registry.cluster_system("aws-p4d", 1, 3).network.nics_per_node == 2
    with pytest.raises(ParsimError, match="'gpus' must be 1 to 72, the GPUs of one gb200-nvl72 node"):
        registry.cluster_system("gb200-nvl72", 1, 73)


def test_the_cli_predicts_a_published_partial_node_row_as_the_published_check_does(cli):
    # mbridge2511-llama3-8b-gb200-8: 8 GPUs of an NVL72 rack; the CLI once refused the GPU count
    from parsim.studies import pipeline_figures, published

    row = next(r for r in published.load_rows() if r.id == "mbridge2511-llama3-8b-gb200-8")
    words = [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in row.params.items()]
    code, out, err = cli("predict", "network", *words, "--cluster", row.device, "--json")
    assert code == 0, err
    figures = pipeline_figures.step_figures(dict(row.params), row.device)
    assert json.loads(out)["latency_s"] == pytest.approx(figures["step_s"], rel=1e-9)
    assert json.loads(out)["gpus"] == 8
