"""The max-plus recurrence (``methods.recurrence``) against its oracle, the SimPy engine.

Every pipelined step the recurrence times must come out as the engine's event simulation times it:
the step, every figure of the 3D-parallel record, the breakdown and the trace's intervals, to
1e-9 relative, on a grid of small pipelines (1-8 stages, 1-32 micro-batches, 1-2 virtual stages,
with and without tensor and data parallelism, sends inside a node and across nodes, the
distributed optimizer's two collectives), and on random ones (hypothesis).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parsim.hardware import registry
from parsim.methods import recurrence
from parsim.methods.predict import predict
from parsim.methods.program import by_recurrence
from parsim.workloads.base import AllReduce, Block, Kernel, Transfer, Workload
from parsim.workloads.registry import make_workload

RTOL = 1e-9
BASE = {"model": "gpt3-125m", "train": True, "dtype": "float16", "optimizer": "adam", "seq": 128}
FIGURES = ("step_s", "tokens_per_s", "tflops_per_gpu", "mfu", "idle_share", "compute_share")
FIGURES += ("tp_comm_share", "dp_comm_share")


def _both(params: dict) -> tuple:
    fast = predict("network", params, cluster="dgx-a100", budget=None)
    events = predict("network", {**params, "pipeline_events": True}, cluster="dgx-a100", budget=None)
    return fast, events


def _agree(params: dict) -> None:
    fast, events = _both(params)
    assert fast.latency_s == pytest.approx(events.latency_s, rel=RTOL, abs=0)
    for name in FIGURES:
        assert fast.metrics[name] == pytest.approx(events.metrics[name], rel=RTOL, abs=1e-15), name
    for part, seconds in events.breakdown.items():
        assert fast.breakdown[part] == pytest.approx(seconds, rel=RTOL, abs=1e-15), part
    key = lambda e: (e.resource.label, e.label, e.start_s)  # noqa: E731
    mine, theirs = sorted(fast.trace, key=key), sorted(events.trace, key=key)
    assert [(e.resource, e.label, e.kind, e.op) for e in mine] == [
        (e.resource, e.label, e.kind, e.op) for e in theirs
    ]
    for a, b in zip(mine, theirs, strict=True):
        assert a.start_s == pytest.approx(b.start_s, rel=RTOL, abs=1e-15)
        assert a.end_s == pytest.approx(b.end_s, rel=RTOL, abs=1e-15)
    assert fast.events < events.events  # no event queue for what resolves at once


def _split(pp: int, m: int, tp: int, nodes: int, v: int = 1) -> dict:
    """``pp`` stages of ``tp`` GPUs over ``nodes`` DGX A100 nodes, data parallel over the rest."""
    dp = 8 * nodes // (tp * pp)
    params = {**BASE, "gpus": 8, "nodes": nodes, "tp": tp, "pp": pp, "microbatches": m, "batch": m * dp}
    return {**params, "virtual_stages": v} if v > 1 else params


GRID = [
    # pp, micro-batches, tp, nodes, virtual stages (dp: the GPUs left)
    (1, 1, 2, 1, 1),  # no pipeline: dp 4
    (1, 4, 1, 1, 1),
    (2, 1, 4, 1, 1),  # no dp
    (2, 3, 2, 1, 1),
    (2, 8, 4, 1, 2),
    (3, 5, 4, 3, 1),  # stages across nodes, dp 2
    (4, 5, 2, 1, 1),
    (4, 4, 2, 1, 2),
    (4, 7, 1, 2, 1),  # two stages per node: every other send crosses the NICs
    (4, 8, 2, 4, 2),  # every stage in its own node, dp across nodes too
    (8, 8, 1, 1, 1),
    (6, 12, 1, 6, 2),
    (8, 32, 1, 8, 1),
    (6, 30, 4, 3, 2),
]


@pytest.mark.parametrize(("pp", "m", "tp", "nodes", "v"), GRID)
def test_the_recurrence_is_the_engines_timeline(pp: int, m: int, tp: int, nodes: int, v: int) -> None:
    _agree(_split(pp, m, tp, nodes, v))


@pytest.mark.parametrize("features", [{"distributed_optimizer": True}, {"recompute": "full"}])
def test_features_that_add_collectives_or_work_agree(features: dict) -> None:
    _agree({**_split(4, 8, 2, 4), **features})


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pp=st.sampled_from([1, 2, 3, 4, 6]),
    m=st.integers(1, 12),
    tp=st.sampled_from([1, 2, 4]),
    across=st.booleans(),
)
def test_random_pipelines_agree_and_never_beat_their_busiest_stage(
    pp: int, m: int, tp: int, across: bool
) -> None:
    nodes = pp if across else (1 if 8 % (tp * pp) == 0 else 3)
    params = _split(pp, m, tp, nodes)
    _agree(params)
    fast = predict("network", params, cluster="dgx-a100", budget=None)
    # a stage runs its m forward and m backward passes one after another: the step is at least that
    busy: dict[int, float] = {}
    for event in fast.trace:
        if isinstance(event.op, Block):
            busy[event.resource.device] = busy.get(event.resource.device, 0.0) + event.duration_s
    assert len(busy) == pp
    assert max(busy.values()) <= fast.latency_s * (1 + 1e-12)


def test_what_the_recurrence_covers() -> None:
    system = registry.cluster_system(registry.cluster("dgx-a100"), 1)
    block = Block("F0", (), (), device=0)
    send = AllReduce("send", 1e6, stream=1, device=0, kind="send", ranks=2, per_node=2)
    copy = Transfer("tokens", 1e3, "h2d", device=0)
    pipeline = Workload("network", (), (copy, block, send), ((), (), (1,)), devices=1, gpus=8)
    assert recurrence.covers(pipeline, system)
    assert by_recurrence(pipeline, system)
    assert not recurrence.covers(pipeline, system, repeats=2)  # back-to-back instances: the engine's
    pageable = Transfer("tokens", 1e3, "h2d", pinned=False, device=0)
    assert not recurrence.covers(Workload("network", (), (pageable,), ((),)), system)
    two = Workload("network", (), (copy, copy), ((), ()))  # one copy engine, queued: the engine's
    assert not recurrence.covers(two, system)
    kernel = make_workload("matmul", {"m": 8, "n": 8, "k": 8}).ops[0]
    assert isinstance(kernel, Kernel)
    assert not recurrence.covers(Workload("matmul", (), (kernel,), ((),)), system)
    forced = Workload("network", (("pipeline_events", True),), pipeline.ops, pipeline.deps, devices=1)
    assert not by_recurrence(forced, system)


def test_a_hand_computed_two_stage_relay() -> None:
    """Two stages in one node, F then B of one micro-batch each: a send of known time in between."""
    system = registry.cluster_system(registry.cluster("dgx-a100"), 1)
    kernel = make_workload("matmul", {"m": 8, "n": 8, "k": 8}).ops[0]
    assert isinstance(kernel, Kernel)
    forward, backward = (kernel,), (kernel, kernel)  # a pass's shape is its kernel tuple
    f0, f1 = Block("F0", forward, (), device=0), Block("F0", forward, (), device=1)
    b1, b0 = Block("B0", backward, (), device=1), Block("B0", backward, (), device=0)
    send_f = AllReduce("send F", 1e6, stream=1, device=0, kind="send", ranks=2, per_node=2)
    send_b = AllReduce("send B", 1e6, stream=2, device=1, kind="send", ranks=2, per_node=2)
    ops = (f0, send_f, f1, b1, send_b, b0)
    deps = ((), (0,), (1,), (), (3,), (4,))
    pipeline = Workload("network", (), ops, deps, devices=2, gpus=8)

    def parts(block: Block) -> tuple[float, float]:
        return (3.0 if block.kernels is forward else 4.0), (0.0 if block.kernels is forward else 1.0)

    end, trace, _, busy = recurrence.evaluate(pipeline, system, parts)
    from parsim.model.collectives import op_timing
    from parsim.model.issue import issue_s

    send = op_timing(system, send_f).seconds
    issue = issue_s(system, None, False, send_f)
    # stage 0: F0 at 0 (a block costs no dispatch), its send issued after one dispatch, starts at 3
    # stage 1: F0 after the send, B0 after F0, the send back, stage 0's B0 after it
    expected = 3.0 + send + 3.0 + 5.0 + send + 5.0
    assert issue < 3.0
    assert end == pytest.approx(expected, rel=1e-12)
    drawn = {(e.resource.device, e.label): (e.start_s, e.end_s) for e in trace if e.op is not None}
    assert drawn[(1, "B0")] == pytest.approx((6.0 + send, 10.0 + send))  # its kernels: 4 s
    assert drawn[(1, "B0 tp")] == pytest.approx((10.0 + send, 11.0 + send))  # then its tp all-reduces
    assert drawn[(0, "send F")] == pytest.approx((3.0, 3.0 + send))
    assert busy == pytest.approx((3.0 + 4.0 + 3.0 + 4.0, 2.0, 0.0))  # sends are not the gradients' ring


SPLITS = [
    ({**_split(4, 8, 2, 4), "distributed_optimizer": True}, "dgx-a100"),
    (_split(6, 30, 4, 3, 2), "dgx-a100"),
    (_split(1, 4, 1, 1), "dgx-a100"),
    (
        {**BASE, "model": "llama-3-8b", "seq": 1024, "gpus": 8, "nodes": 2, "tp": 2, "pp": 2, "cp": 2}
        | {"microbatches": 4, "batch": 8, "dtype": "bfloat16", "fp8": True, "sequence_parallel": True},
        "dgx-h100",
    ),
]


@pytest.mark.parametrize(("params", "cluster"), SPLITS)
def test_a_split_searchs_figures_are_the_engines(params: dict, cluster: str) -> None:
    """``step_figures`` (unnamed passes, no trace) against the engine's full prediction."""
    from parsim.studies import pipeline_figures as px

    fast = px.step_figures(params, cluster)
    events = predict("network", {**params, "pipeline_events": True}, cluster=cluster, budget=None)
    assert set(fast) == set(px.FIGURES)
    for name in px.FIGURES:
        assert fast[name] == pytest.approx(float(events.metrics[name]), rel=RTOL, abs=1e-15), name


def test_the_command_line_reaches_the_engines_events_and_refuses_a_bad_value(cli) -> None:
    """``pipeline_events=true`` on ``parsim predict`` takes the SimPy events: more of them, the same step."""
    import json

    from typer.testing import CliRunner

    from parsim.cli.main import app

    params = [f"{k}={v}" for k, v in _split(4, 4, 2, 1).items()]
    args = ["predict", "network", *params, "--cluster", "dgx-a100", "--json"]
    fast = json.loads(CliRunner().invoke(app, args).stdout)
    events = json.loads(CliRunner().invoke(app, [*args, "pipeline_events=true"]).stdout)
    assert fast["latency_s"] == pytest.approx(events["latency_s"], rel=RTOL)
    assert fast["events"] < events["events"]
    code, _, err = cli(*args, "pipeline_events=maybe")
    assert code == 2
    assert "'pipeline_events' input should be a valid boolean" in err and "'maybe'" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("row_id", ["sc21-t1-39b", "nemo2407-llama2-13b-16"])
def test_a_published_3d_row_reads_the_figure_the_engine_predicts(row_id: str) -> None:
    """``published.predicted`` of a 3D-parallel row (the recurrence's figures, no trace) against the
    full prediction with SimPy events, converted as the row's metric says."""
    from parsim.studies import published, published_flops

    row = next(r for r in published.load_rows() if r.id == row_id)
    events = predict(row.workload, {**row.params, "pipeline_events": True}, cluster=row.device, budget=None)
    if row.metric == "megatron_tflops_per_gpu":
        expected = published_flops.megatron_flops(row.params) / events.latency_s / events.gpus / 1e12
    else:
        assert row.metric == "tokens_per_s_per_gpu"
        expected = float(events.metrics["tokens_per_s"]) / events.gpus
    assert published.predicted(row) == pytest.approx(expected, rel=RTOL)
