"""Transformer Engine's grouped expert GEMM in the Megatron step (``moe_layer_ops.per_expert_gemms``)
and the FP8 casts of its inputs (``megatron.fp8_linears``): hand-computed rounds, launches and casts."""

from __future__ import annotations

import math

import pytest

from parsim.hardware import registry
from parsim.model.issue import issue_s
from parsim.stack import framework
from parsim.workloads.base import Kernel
from parsim.workloads.megatron import fp8_linears
from parsim.workloads.moe import GROUPED_GEMM
from parsim.workloads.moe_layer_ops import TE_COMPUTE_STREAMS, per_expert_gemms


def _grouped(part: str, m: int, n: int, k: int, *, weights: float = 0.0) -> Kernel:
    """A grouped GEMM of ``m`` rows in all: ``[m, k] @ [k, n]``, bfloat16, ``weights`` bytes cold."""
    written = 2.0 * m * n
    return Kernel.of(
        f"layer 0 experts {part} fwd",
        2.0 * m * n * k,
        2.0 * m * k + weights,
        written,
        m * n,
        dtype="bfloat16",
        matrix=True,
        gemm_mn=(m, n),
        cold_bytes=weights + written,
        part=part,
        op=GROUPED_GEMM,
    )


def test_six_experts_run_as_a_round_of_four_then_a_round_of_two():
    kernel = _grouped("up", 6000, 768, 2048)
    rounds = per_expert_gemms([kernel], 6)
    assert TE_COMPUTE_STREAMS == 4
    assert len(rounds) == 2
    first, second = rounds
    # 4/6 and 2/6 of the rows and FLOPs: 4000 and 2000 rows of 768 x 2048
    assert first.work.flops == pytest.approx(2.0 * 4000 * 768 * 2048)
    assert second.work.flops == pytest.approx(2.0 * 2000 * 768 * 2048)
    assert first.library.gemm_mn == (4000, 768)
    assert second.library.gemm_mn == (2000, 768)
    # the first round pays the module's call and four launches; the second runs inside the call
    assert (first.issue.launches, first.issue.in_library_call) == (4, False)
    assert (second.issue.launches, second.issue.in_library_call) == (2, True)
    assert sum(r.work.flops for r in rounds) == pytest.approx(kernel.work.flops)


def test_one_local_expert_and_other_kernels_are_left_alone():
    grouped, plain = _grouped("up", 100, 64, 64), _grouped("up", 100, 64, 64).but(op="")
    assert per_expert_gemms([grouped, plain], 1) == [grouped, plain]
    assert per_expert_gemms([plain], 16) == [plain]


def test_sixteen_experts_issue_four_launches_per_round_after_the_call():
    rounds = per_expert_gemms([_grouped("down", 16 * 2048, 2048, 768)], 16)
    system = registry.system("h100-sxm", "xeon-8480", None, 8, None)
    eager = framework("eager")
    launch = system.gpu.dispatch_s
    host = [issue_s(system, eager, False, r) for r in rounds]
    call = eager.op_host_s(system.host.clock_Hz)
    # first: the framework's call + 4 launches; then 3 rounds of 4 launches each
    assert host[0] == pytest.approx(call + 4 * launch)
    assert host[1:] == pytest.approx([4 * launch] * 3)
    assert sum(host) == pytest.approx(call + 16 * launch)


def test_fp8_casts_each_experts_input_inside_the_round_that_uses_it():
    up, down = _grouped("up", 8000, 768, 2048, weights=1e6), _grouped("down", 8000, 2048, 768, weights=1e6)
    rounds = per_expert_gemms([up, down], 8)  # two rounds each
    made = fp8_linears(rounds, "bfloat16", forward=True)
    casts = [k for k in made if k.name.endswith("fp8 cast")]
    # each round's input cast: up's x [4000, 2048], down's activation [4000, 768]
    assert [c.work.work_items for c in casts] == [4000 * 2048, 4000 * 2048, 4000 * 768, 4000 * 768]
    assert [(c.issue.launches, c.issue.in_library_call) for c in casts] == [(4, False), (4, True)] * 2
    # read 16-bit, write a byte
    assert casts[0].work.bytes_read == 2 * 4000 * 2048
    assert casts[0].work.bytes_written == 4000 * 2048
    assert all(k.library.math == "float8" for k in made if k.work.op == GROUPED_GEMM)


def test_a_dense_mlps_forward_input_is_still_cast_by_its_norm():
    dense = _grouped("up", 8000, 768, 2048, weights=1e6).but(op="")
    made = fp8_linears([dense], "bfloat16", forward=True)
    assert [k.name for k in made] == [dense.name]
    assert math.isclose(made[0].work.flops, dense.work.flops)


def test_the_flex_dispatchers_hybridep_permutes_inside_its_exchange():
    from parsim.workloads.llms import llm
    from parsim.workloads.moe_layer_ops import hidden_moves

    qwen = llm("qwen3-30b-a3b")  # 8 experts per token
    # all-to-all: permute (T in, 8 T out), two chunk sorts (8 T in and out); backward mirrored
    assert hidden_moves(qwen, 16, "alltoall") == ([(1, 8), (8, 8), (8, 8)], [(8, 8), (8, 8), (8, 1)])
    assert hidden_moves(qwen, 1, "alltoall") == ([(1, 8)], [(8, 1)])  # one local expert: no sorts
    assert hidden_moves(qwen, 16, "hybridep", ep=8) == ([], [])


def test_the_gate_half_runs_inside_fc1s_launches():
    """TE's fc1 computes gate and up in one GEMM per expert: the gate's rounds launch nothing and
    make no call, so a gated MLP's host cost is fc1's and fc2's calls (two), not three."""
    gate, up = _grouped("gate", 8000, 768, 2048, weights=1e6), _grouped("up", 8000, 768, 2048, weights=1e6)
    rounds = per_expert_gemms([gate, up], 8)
    assert [(r.part, r.issue.launches, r.issue.in_library_call) for r in rounds] == [
        ("gate", 0, True),
        ("gate", 0, True),
        ("up", 4, False),
        ("up", 4, True),
    ]
    system = registry.system("h100-sxm", "xeon-8480", None, 8, None)
    eager = framework("eager")
    host = [issue_s(system, eager, False, r) for r in rounds]
    launch = system.gpu.dispatch_s
    assert host == pytest.approx([0.0, 0.0, eager.op_host_s(system.host.clock_Hz) + 4 * launch, 4 * launch])
    # one local expert (Mixtral at ep=8): the gate still rides on fc1's single launch
    one = per_expert_gemms([gate, up], 1)
    assert [(r.issue.launches, r.issue.in_library_call) for r in one] == [(0, True), (1, False)]
    # its backward gradient's casts ride on fc1's too (one cast of dy per expert round)
    casts = [k for k in fp8_linears(rounds, "bfloat16", forward=False) if k.name.endswith("fp8 cast")]
    assert [(c.part, c.issue.launches) for c in casts if c.part == "gate"] == [("gate", 0), ("gate", 0)]
