"""The bytes a collective moves belong to its algorithm (``model.collectives.traffic``), once: hand
computed for a 1 GB buffer over 8 GPUs, then read back from predictions and their report."""

from __future__ import annotations

import pytest

import parsim
from parsim.hardware import registry
from parsim.model import collectives
from parsim.model.collectives import bus_bandwidth_Bps, ring_share, traffic
from parsim.model.traffic import link_bytes, traffic_notes
from parsim.report.text import prediction_text
from parsim.workloads import make_workload
from parsim.workloads.base import AllReduce, Block, Transfer, Workload

S = 1e9  # the buffer
N = 8  # GPUs


def test_a_ring_all_gather_and_reduce_scatter_move_half_an_all_reduce():
    reduced = traffic("all_reduce", S, N)
    assert reduced.per_gpu_B == pytest.approx(2 * 7 / 8 * S)  # 1.75 GB from each GPU
    assert reduced.total_B == pytest.approx(14e9)
    for kind in ("all_gather", "reduce_scatter"):
        half = traffic(kind, S, N)
        assert half.per_gpu_B == pytest.approx(7 / 8 * S)  # 875 MB from each GPU
        assert half.total_B == pytest.approx(7e9)
        assert half.per_gpu_B == pytest.approx(reduced.per_gpu_B / 2)


def test_other_algorithms_and_kinds():
    # a tree sends the buffer up and down each of its n-1 edges: the ring's total, in fewer steps
    assert traffic("all_reduce", S, N, "tree").total_B == pytest.approx(traffic("all_reduce", S, N).total_B)
    assert traffic("all_to_all", S, N, "direct").per_gpu_B == pytest.approx(7 / 8 * S)
    send = traffic("send", S, 2, "p2p")
    assert (send.per_gpu_B, send.senders, send.total_B) == (S, 1, S)  # one GPU sends it whole
    alone = traffic("all_reduce", S, 1)
    assert (alone.total_B, alone.algorithm) == (0.0, "none")


def test_bus_bandwidth_is_the_ring_share_of_the_algorithm_bandwidth():
    # nccl-tests: all-reduce busbw = algbw 2(n-1)/n; all-gather, reduce-scatter (n-1)/n; sendrecv 1
    assert bus_bandwidth_Bps("all_reduce", S, 0.01, N) == pytest.approx(100e9 * 1.75)
    assert bus_bandwidth_Bps("all_gather", S, 0.01, N) == pytest.approx(100e9 * 0.875)
    assert bus_bandwidth_Bps("send", S, 0.01, 2) == pytest.approx(100e9)
    assert ring_share("reduce_scatter", N) == collectives.bus_factor("reduce_scatter", N)


@pytest.mark.parametrize(
    ("workload", "moved_B"), [("allreduce", 14e9), ("allgather", 7e9), ("reduce_scatter", 7e9)]
)
def test_predictions_report_the_bytes_each_collective_moves(workload, moved_B):
    p = parsim.predict(workload, {"bytes": S, "algorithm": "ring"}, device="h100-sxm", gpus=N)
    assert p.transfer_bytes == pytest.approx(moved_B)
    each = "1.75 GB, 2(n-1)/n" if workload == "allreduce" else "875 MB, (n-1)/n"
    note = next(note for note in p.notes if "each GPU sends" in note)
    assert f"over 8 GPUs (1 op, 1 GB of buffers): each GPU sends {each} of each buffer" in note
    text = prediction_text(p)
    assert f"over links   {moved_B / 1e9:g} GB" in text and each in text


def test_link_bytes_counts_copies_and_every_collective_of_a_pass():
    system = registry.system("h100-sxm", gpus=N)
    gather = AllReduce("gather", S, kind="all_gather", ranks=4, per_node=4)
    passes = tuple(Block(f"F{i}", (), (gather, gather)) for i in range(3))  # 6 all-gathers over 4 GPUs
    workload = Workload("w", (), (Transfer("up", 5.0, "h2d"), *passes), gpus=N)
    assert link_bytes(workload, system) == pytest.approx(5.0 + 6 * 3 / 4 * S * 4)
    (note,) = traffic_notes(workload, system)
    assert note.startswith("all-gather by ring over 4 GPUs (6 ops, 6 GB of buffers): each GPU sends 4.5 GB")


def test_zero_moves_what_ddp_moves_and_host_averaging_moves_more():
    """ZeRO-1's reduce-scatters and all-gather move exactly DDP's all-reduce bytes; averaging on the
    host copies every GPU's gradients down and the weights back up: 2G buffers, not 2(G-1)."""
    params = {"gpus": 4, "sync": "ring", "batch": 64}
    ddp = parsim.predict("data_parallel", {**params, "zero": 0}, device="a100-80gb")
    zero = parsim.predict("data_parallel", {**params, "zero": 1}, device="a100-80gb")
    host = parsim.predict("data_parallel", {**params, "sync": "host"}, device="a100-80gb")
    workload = make_workload("data_parallel", {**params, "zero": 0})
    gradients_B = sum(op.nbytes for op in workload.ops if isinstance(op, AllReduce))
    assert zero.transfer_bytes == pytest.approx(ddp.transfer_bytes)
    assert host.transfer_bytes - ddp.transfer_bytes == pytest.approx(
        2 * 4 * gradients_B - 2 * 3 * gradients_B
    )


def test_nvls_sends_each_buffer_once():
    # 8 H100 on NVSwitch take NVLS for 1 GB: each GPU sends its buffer to the switch once
    p = parsim.predict("allreduce", {"bytes": S}, device="h100-sxm", gpus=N)
    assert p.transfer_bytes == pytest.approx(N * S)
    assert traffic("all_reduce", S, N, "nvls").per_gpu_B == pytest.approx(S)
