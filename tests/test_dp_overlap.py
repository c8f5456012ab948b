"""Megatron-Core's data-parallel overlap (``workloads.dp_overlap``: ``overlap_grad_reduce``,
``overlap_param_gather``, ``bucket_params``).

Known answers by hand on GPT-3 125M split over 8 GPUs (dp 8, the distributed optimizer, 4
micro-batches): which collectives run when, how many bytes each keeps and what waits for them; the
engine's events agree with the recurrence to rounding; hypothesis: the overlap never makes a step
slower and moves no byte (every collective's bytes are kept, split between its buckets);
Megatron-LM's refusals.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parsim.base.errors import ParsimError
from parsim.methods.predict import predict
from parsim.workloads import dp_overlap
from parsim.workloads.base import SYNC_STREAM, AllReduce, Block
from parsim.workloads.registry import make_workload

BASE = {"model": "gpt3-125m", "train": True, "dtype": "bfloat16", "optimizer": "adam", "seq": 128}
SPLIT = {"gpus": 8, "batch": 32, "microbatches": 4, "distributed_optimizer": True}
OVERLAP = {"overlap_grad_reduce": True, "overlap_param_gather": True}
RTOL = 1e-9


def _step(**given_: object):
    return make_workload("network", {**BASE, **SPLIT, **given_})


def _sync(workload) -> list[tuple[int, AllReduce]]:
    return [
        (n, op) for n, op in enumerate(workload.ops) if isinstance(op, AllReduce) and op.stream == SYNC_STREAM
    ]


def _index(workload, name: str) -> int:
    return next(n for n, op in enumerate(workload.ops) if op.name == name)


def test_megatron_cores_default_bucket_grows_with_the_data_parallel_ranks():
    assert dp_overlap.bucket_elements(0, 8) == 40_000_000
    assert dp_overlap.bucket_elements(0, 64) == 64_000_000
    assert dp_overlap.bucket_elements(1234, 64) == 1234
    assert dp_overlap.buckets(125e6, 40_000_000) == 4
    assert dp_overlap.buckets(0, 40_000_000) == 1


def test_the_buckets_run_while_the_passes_do_only_the_first_and_last_wait():
    # bucket 40M elements; GPT-3 125M's weights (2 B each) fill 4 buckets. Off: the reduce-scatter
    # after the last backward B3, the all-gather after the update. On: the all-gather's first
    # bucket from the step's start (F0 waits for it), its other 3 next (B0 waits for them); 3/4 of
    # the reduce-scatter issued with B3 (waiting for what B3 waits for: B3 and it start together),
    # the last 1/4 after B3
    off, on = _step(), _step(**OVERLAP)
    (scatter_at, scatter), (gather_at, gather) = _sync(off)
    assert (scatter.kind, gather.kind) == ("reduce_scatter", "all_gather")
    assert scatter_at > _index(off, "B3") and gather_at > _index(off, "optimizer step")
    assert dp_overlap.buckets(gather.nbytes / 2, 40_000_000) == 4
    ops = _sync(on)
    assert [(op.kind, op.nbytes) for _, op in ops] == [
        ("all_gather", pytest.approx(gather.nbytes / 4)),
        ("all_gather", pytest.approx(gather.nbytes * 3 / 4)),
        ("reduce_scatter", pytest.approx(scatter.nbytes * 3 / 4)),
        ("reduce_scatter", pytest.approx(scatter.nbytes / 4)),
    ]
    (first, _), (ahead, _), (during, _), (after, _) = ops
    f0, b0, b3 = _index(on, "F0"), _index(on, "B0"), _index(on, "B3")
    assert first in on.deps[f0] and ahead in on.deps[b0]
    before = max(n for n in range(during) if isinstance(on.ops[n], Block))  # the pass before B3
    assert set(on.deps[during]) == set(on.deps[b3]) | {before} and before < during < b3 < after
    assert b3 in on.deps[after]


def test_one_bucket_overlaps_nothing():
    # a bucket as large as the model: the reduction is its one bucket's, after the last backward
    # pass, as without the overlap (and the gather, not overlapped, after the update)
    whole = _step(overlap_grad_reduce=True, bucket_params=10**9)
    assert [(n, op.nbytes) for n, op in _sync(whole)] == [(n, op.nbytes) for n, op in _sync(_step())]


def test_the_engines_events_agree_with_the_recurrence():
    # one node; a pipeline; two nodes, the pipeline's sends and the buckets sharing each GPU's NICs
    two_nodes = {**SPLIT, "nodes": 2, "pp": 2, "batch": 64, "microbatches": 4}
    for split in (SPLIT, {**SPLIT, "pp": 2, "microbatches": 4}, two_nodes):
        params = {**BASE, **split, **OVERLAP}
        fast = predict("network", params, cluster="dgx-a100", budget=None)
        events = predict("network", {**params, "pipeline_events": True}, cluster="dgx-a100", budget=None)
        assert fast.latency_s == pytest.approx(events.latency_s, rel=RTOL)
        for name in ("dp_comm_share", "compute_share", "idle_share"):
            assert fast.metrics[name] == pytest.approx(events.metrics[name], rel=RTOL, abs=1e-15), name


@settings(max_examples=12, deadline=None)
@given(
    gpus=st.sampled_from([2, 4, 8]),
    microbatches=st.sampled_from([1, 2, 4]),
    bucket=st.sampled_from([0, 5_000_000, 20_000_000]),
    pp=st.sampled_from([1, 2]),
)
def test_the_overlap_never_slows_a_step_in_a_node_and_keeps_every_byte(gpus, microbatches, bucket, pp):
    # inside one node: across nodes a bucket shares its GPU's NICs with the pipeline's sends, which
    # it may slow (``engine.fluid``)
    split = {"gpus": gpus, "pp": pp, "microbatches": microbatches * pp}
    split |= {"batch": 4 * gpus * microbatches, "distributed_optimizer": True, "bucket_params": bucket}
    off = predict("network", {**BASE, **split}, cluster="dgx-a100", budget=None)
    on = predict("network", {**BASE, **split, **OVERLAP}, cluster="dgx-a100", budget=None)
    assert on.latency_s <= off.latency_s * (1 + 1e-12)
    kept = sum(op.nbytes for _, op in _sync(_step(**split, **OVERLAP)))
    assert kept == pytest.approx(sum(op.nbytes for _, op in _sync(_step(**split))))


@pytest.mark.parametrize(
    ("given_", "words"),
    [
        (
            {"overlap_param_gather": True, "overlap_grad_reduce": True, "distributed_optimizer": False},
            "the distributed optimizer's weights: it needs distributed_optimizer=true",
        ),
        ({"overlap_param_gather": True}, "overlap_param_gather needs overlap_grad_reduce=true too"),
    ],
)
def test_megatron_lms_refusals_are_one_line(given_: dict, words: str):
    with pytest.raises(ParsimError) as e:
        _step(**given_)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_the_cli_takes_the_flags_and_refuses_a_bad_bucket(cli):
    words = [
        f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in {**BASE, **SPLIT, **OVERLAP}.items()
    ]
    code, out, err = cli("predict", "network", *words, "--cluster", "dgx-a100")
    assert code == 0, err
    code, out, err = cli("predict", "network", *words, "bucket_params=-1", "--cluster", "dgx-a100")
    assert code == 2 and "Traceback" not in out + err and "bucket_params" in err


def test_only_the_first_stages_first_chunk_is_bucketed_as_megatron_core_buckets():
    # Megatron-Core: ``pp_rank > 0`` and every model chunk but the first get one bucket. Stage 1 of
    # a 2-stage pipeline keeps its reduction whole after its last backward pass and its gather
    # whole from the step's start; with 2 virtual stages the first stage's chunk 0 (half of GPT-3
    # 125M's weights: 2 buckets of 40M) waits for its last bucket, 1/(2 x 2) of the buffer
    assert dp_overlap.waiting_share(125e6, 40_000_000, False, 1) == 1.0
    assert dp_overlap.waiting_share(125e6, 40_000_000, True, 1) == 1 / 4
    assert dp_overlap.waiting_share(125e6, 40_000_000, True, 2) == 1 / (2 * 2)
    on, off = _step(**OVERLAP, pp=2), _step(pp=2)
    kinds = ("all_gather", "reduce_scatter")
    mine = [(op.kind, op.nbytes) for _, op in _sync(on) if op.device == 1]
    whole = {op.kind: op.nbytes for _, op in _sync(off) if op.device == 1}
    assert mine == [(kind, whole[kind]) for kind in kinds]
    assert len([op for _, op in _sync(on) if op.device == 0]) == 4
