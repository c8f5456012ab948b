"""Megatron-Core's combined 1F1B in the pipeline (``ep_overlap``: ``pipeline_schedule``, ``parallel3d``).

Known answers by hand: the one forward more it runs before the steady state, and the coupling of a
paired forward and backward into one step (it waits for both inputs; the forward's output leaves
after both), on Mixtral 8x7B's shapes cut to a 128-token sequence.
"""

from __future__ import annotations

from parsim.workloads import parallel3d
from parsim.workloads.base import AllReduce, Block
from parsim.workloads.llms import llm
from parsim.workloads.pipeline_schedule import interleaved, one_f_one_b, steady, warmup_passes
from parsim.workloads.registry import validate_params
from parsim.workloads.training import numerics_of

BASE = {"model": "mixtral-8x7b", "train": True, "dtype": "bfloat16", "optimizer": "adam", "seq": 128}


def test_one_forward_ahead_by_hand():
    # stage 1 of 2, 2 chunks, 2 micro-batches: 2 (2 - 1 - 1) + (2 - 1) 2 = 2 warm-up forwards, and 3
    # ahead of the combined schedule (forward k: chunk (k // 2) % 2, micro-batch k % 2; backward k
    # takes the chunks in reverse)
    forwards = [("F", 0, 0), ("F", 0, 1), ("F", 1, 0), ("F", 1, 1)]
    backwards = [("B", 1, 0), ("B", 1, 1), ("B", 0, 0), ("B", 0, 1)]
    assert interleaved(1, 2, 2, 2) == [*forwards[:3], backwards[0], forwards[3], *backwards[1:]]
    assert interleaved(1, 2, 2, 2, ahead=1) == forwards + backwards
    # without a pipeline (combined_1f1b_schedule_for_no_pipelining): the first forward alone, then
    # forward i + 1 beside backward i, the last backward alone
    assert one_f_one_b(0, 1, 3, ahead=1) == [("F", 0), ("F", 1), ("B", 0), ("F", 2), ("B", 1), ("B", 2)]
    assert [steady(n, 1, 6) for n in range(6)] == [False, True, True, True, True, False]
    # the pairs are the steady state's: with 3 warm-up forwards of 4 the 4th forward and the 1st
    # backward are one step; with all 4 warm-up (stage 0 above: 2 + 2 + 1 > 4) no pass has a partner,
    # though the passes come in the same order
    assert warmup_passes(1, 2, 2, 2, ahead=1) == 3 and warmup_passes(0, 2, 2, 2, ahead=1) == 4
    assert interleaved(0, 2, 2, 2, ahead=1) == interleaved(1, 2, 2, 2, ahead=1)
    assert [steady(n, 3, 8) for n in range(8)] == [False] * 3 + [True] * 2 + [False] * 3
    assert not any(steady(n, 4, 8) for n in range(8))


def _step(**given: object) -> tuple[tuple, tuple]:
    params = validate_params(
        "network",
        {
            **BASE,
            "batch": 32,
            "gpus": 8,
            "nodes": 2,
            "pp": 2,
            "virtual_stages": 2,
            "microbatches": 4,
            **given,
        },
    )
    workload = parallel3d.parallel_step(llm("mixtral-8x7b"), params, numerics_of(params))
    return workload.ops, workload.deps


def _index(ops: tuple, device: int, name: str) -> int:
    """The first op of ``device`` named ``name``."""
    return next(n for n, op in enumerate(ops) if op.device == device and op.name == name)


def test_a_paired_forward_waits_for_its_backwards_gradient_and_sends_after_it():
    # stage 0 of 2, 2 chunks, 4 micro-batches: 2 (2 - 0 - 1) + (2 - 1) 2 = 4 warm-up forwards, 5 with
    # the forward ahead, so the first backward (B0.1: chunk 1 first) runs beside F3.0, not F2.0
    for overlap, first_pair in ((False, "F2.0"), (True, "F3.0")):
        ops, deps = _step(ep=8, ep_overlap=overlap)
        stage0 = [op.name for op in ops if op.device == 0 and isinstance(op, Block)]
        assert stage0[stage0.index("B0.1") - 1] == first_pair
    forward, backward = _index(ops, 0, "F3.0"), _index(ops, 0, "B0.1")
    gradient = _index(ops, 1, "send B0 to stage 0")  # stage 1's chunk-1 gradient of micro-batch 0
    output = _index(ops, 0, "send F3 to stage 1")
    assert isinstance(ops[output], AllReduce)
    assert gradient in deps[forward]  # the combined step starts once the backward's gradient is in
    assert set(deps[output]) == {forward, backward}  # and the forward's output leaves after both
    # without the overlap, F3.0 runs beside B1.1 as two passes: it waits for its own input only and
    # sends as soon as it ends
    ops, deps = _step(ep=8)
    forward, output = _index(ops, 0, "F3.0"), _index(ops, 0, "send F3 to stage 1")
    assert not [n for n in deps[forward] if ops[n].name.startswith("send B")]
    assert deps[output] == (forward,)
