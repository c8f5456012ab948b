"""Traces for Perfetto (``report.chrome_trace``, ``--trace FILE.json``): the Trace Event format, every
op of the built-in timeline at its start and duration, bandwidth counters, the budget, the files."""

from __future__ import annotations

import json
import math
import os
import shutil
from collections import defaultdict
from pathlib import Path

import attrs
import jsonschema  # a dependency of streamlit's altair: always installed with parsim
import pytest
from hypothesis import given
from hypothesis import strategies as st

import parsim
from parsim.base.budget import Budget
from parsim.base.errors import ParsimError
from parsim.report import chrome_trace
from parsim.results.resources import Resource
from parsim.results.timeline import TraceEvent
from parsim.studies.serving_load import run_load
from parsim.workloads.base import AllReduce, Transfer

# The Trace Event format (Google's "Trace Event Format" document, the one chrome://tracing, Perfetto
# and PyTorch's profiler read), as far as parsim writes it: the object form, complete events,
# counters and the four metadata events. Times are microseconds, ids integers.
_NUMBER = {"type": "number"}
_ID = {"type": "integer", "minimum": 0}
SCHEMA = {
    "type": "object",
    "required": ["traceEvents"],
    "properties": {
        "traceEvents": {
            "type": "array",
            "items": {
                "oneOf": [
                    {
                        "type": "object",
                        "required": ["name", "ph", "ts", "dur", "pid", "tid"],
                        "properties": {
                            "name": {"type": "string"},
                            "cat": {"type": "string"},
                            "ph": {"const": "X"},
                            "ts": {"type": "number", "minimum": 0},
                            "dur": {"type": "number", "minimum": 0},
                            "pid": _ID,
                            "tid": _ID,
                            "args": {"type": "object"},
                        },
                        "additionalProperties": False,
                    },
                    {
                        "type": "object",
                        "required": ["name", "ph", "ts", "pid", "args"],
                        "properties": {
                            "name": {"type": "string"},
                            "ph": {"const": "C"},
                            "ts": {"type": "number", "minimum": 0},
                            "pid": _ID,
                            "args": {"type": "object", "additionalProperties": _NUMBER, "minProperties": 1},
                        },
                        "additionalProperties": False,
                    },
                    {
                        "type": "object",
                        "required": ["name", "ph", "pid", "args"],
                        "properties": {
                            "name": {
                                "enum": [
                                    "process_name",
                                    "thread_name",
                                    "process_sort_index",
                                    "thread_sort_index",
                                ]
                            },
                            "ph": {"const": "M"},
                            "pid": _ID,
                            "tid": _ID,
                            "args": {
                                "type": "object",
                                "oneOf": [
                                    {"required": ["name"], "properties": {"name": {"type": "string"}}},
                                    {
                                        "required": ["sort_index"],
                                        "properties": {"sort_index": {"type": "integer"}},
                                    },
                                ],
                            },
                        },
                        "additionalProperties": False,
                    },
                ]
            },
        },
        "displayTimeUnit": {"enum": ["ms", "ns"]},
        "otherData": {"type": "object"},
    },
}


@pytest.fixture(scope="module")
def step3d():
    """A 3D-parallel training step: tp=2 inside a node, pp=2 across two nodes, 4 micro-batches."""
    return parsim.predict(
        "network",
        {
            "model": "megatron-1.7b",
            "train": True,
            "tp": 2,
            "pp": 2,
            "microbatches": 4,
            "nodes": 2,
            "batch": 16,
        },
        cluster="dgx-a100",
    )


@pytest.fixture(scope="module")
def ddp():
    """A data-parallel step on two GPUs: thousands of kernels, copies, host threads, memory levels."""
    return parsim.predict("data_parallel", {"model": "resnet18", "gpus": 2, "batch": 16}, device="a100-80gb")


def _threads(document):
    return {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in document["traceEvents"]
        if e["ph"] == "M" and e["name"] == "thread_name"
    }


def _row(thread_name: str) -> str:
    """The built-in timeline's row a thread shows (a lane is an extra thread of the same row)."""
    head, _, lane = thread_name.rpartition(" (lane ")
    return head if head and lane.endswith(")") else thread_name


def _ns(ts_us: float, rounding) -> int:
    return int(rounding(ts_us * 1000.0))


@pytest.mark.parametrize("case", ["step3d", "ddp"])
def test_every_op_of_the_timeline_at_its_start_and_duration(case, request):
    prediction = request.getfixturevalue(case)
    document = json.loads(chrome_trace.dumps(chrome_trace.prediction_trace(prediction)))
    jsonschema.validate(document, SCHEMA)
    threads = _threads(document)
    written = sorted(
        (_row(threads[(e["pid"], e["tid"])]), e["name"], e["cat"], e["ts"], e["dur"])
        for e in document["traceEvents"]
        if e["ph"] == "X"
    )
    shown = sorted(
        (e.resource.group.label, e.label, e.kind, e.start_s * 1e6, max(e.duration_s, 0.0) * 1e6)
        for e in prediction.trace
    )
    assert len(written) == len(shown) == len(prediction.trace)
    for (row, name, kind, ts, dur), (row0, name0, kind0, start_us, duration_us) in zip(
        written, shown, strict=True
    ):
        assert (row, name, kind) == (row0, name0, kind0)
        assert ts == pytest.approx(start_us, abs=0.0005 + 1e-9 * start_us)  # to the nanosecond
        assert dur == pytest.approx(duration_us, abs=0.001 + 1e-9 * start_us)


@pytest.mark.parametrize("case", ["step3d", "ddp"])
def test_slices_of_a_thread_never_overlap_as_perfetto_reads_them(case, request):
    """Perfetto multiplies ts and dur by 1000, truncating (older) or rounding (newer): either way
    the slices of one thread follow one another, so none is dropped or nested by mistake."""
    document = chrome_trace.prediction_trace(request.getfixturevalue(case))
    for rounding in (math.trunc, round):
        by_thread = defaultdict(list)
        for e in document["traceEvents"]:
            if e["ph"] == "X":
                start = _ns(e["ts"], rounding)
                by_thread[(e["pid"], e["tid"])].append((start, start + _ns(e["dur"], rounding)))
        for slices in by_thread.values():
            slices.sort()
            assert all(b[0] >= a[1] for a, b in zip(slices, slices[1:], strict=False))


def test_processes_are_devices_and_threads_the_timeline_rows(step3d):
    document = chrome_trace.prediction_trace(step3d)
    processes = {e["pid"]: e["args"]["name"] for e in document["traceEvents"] if e["name"] == "process_name"}
    assert sorted(processes.values()) == sorted(
        ["host (dual-epyc-7742)", "GPU0 (a100-80gb)", "GPU1 (a100-80gb)", "network (the node's NICs)"]
    )
    rows = {_row(name) for name in _threads(document).values()}
    assert rows == {e.resource.group.label for e in step3d.trace}


@given(st.integers(min_value=0, max_value=10**15))
def test_a_time_reads_back_as_its_nanosecond_both_ways(ns):
    us = chrome_trace.microseconds(ns)
    assert math.trunc(us * 1000.0) == ns
    assert round(us * 1000.0) == ns


def test_the_bandwidth_counter_of_a_copy_is_its_bytes_over_its_time():
    p = parsim.predict("copy", {"n": 1e8}, device="a100-80gb")
    (copy,) = [e for e in p.trace if isinstance(e.op, Transfer)]
    document = chrome_trace.prediction_trace(p)
    samples = [e for e in document["traceEvents"] if e["ph"] == "C"]
    assert [s["name"] for s in samples] == ["PCIe h2d bandwidth"] * 2
    assert samples[0]["args"]["B/s"] == pytest.approx(4e8 / copy.duration_s, rel=1e-6)  # float32: 4 B
    assert samples[1]["args"]["B/s"] == 0.0


def test_a_ring_all_reduce_counts_nccl_bus_bandwidth():
    """Each of 8 GPUs sends 2(8-1)/8 of the buffer: the counter is nccl-tests' bus bandwidth."""
    p = parsim.predict("allreduce", {"bytes": 1e9}, device="a100-80gb", gpus=8)
    rings = [e for e in p.trace if isinstance(e.op, AllReduce)]
    assert len(rings) == 8
    document = chrome_trace.prediction_trace(p)
    first = [
        e for e in document["traceEvents"] if e["ph"] == "C" and e["name"] == "GPU3 NVLink ring bandwidth"
    ]
    assert first[0]["args"]["B/s"] == pytest.approx(1e9 * 2 * 7 / 8 / rings[3].duration_s, rel=1e-6)


@pytest.mark.parametrize("case", ["step3d", "ddp"])
def test_a_counter_integrates_to_the_bytes_its_row_moved(case, request):
    prediction = request.getfixturevalue(case)
    document = chrome_trace.prediction_trace(prediction)
    moved = defaultdict(float)
    for e in prediction.trace:
        if e.resource.kind in chrome_trace.BANDWIDTH_ROWS and e.end_s > e.start_s:
            moved[f"{e.resource.group.label} bandwidth"] += chrome_trace.moved_B(e, prediction.gpus)
    integral = defaultdict(float)
    last = {}
    for e in document["traceEvents"]:
        if e["ph"] == "C":
            if e["name"] in last:
                ts, rate = last[e["name"]]
                integral[e["name"]] += rate * (e["ts"] - ts) * 1e-6
            last[e["name"]] = (e["ts"], e["args"]["B/s"])
    assert moved and {k for k, v in moved.items() if v > 0} == set(integral)
    for name, total in integral.items():
        assert total == pytest.approx(moved[name], rel=1e-6)
        assert last[name][1] == 0.0  # every row ends idle


_ROWS = [
    Resource("memory", 0, "L2", tagged=True),
    Resource("cores", 0, "SM", 0, 8, tagged=True),
    Resource("thread", -1, first=0),
]


@pytest.mark.slow
@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.floats(0, 1e-3), st.floats(0, 1e-4)),
        min_size=1,
        max_size=40,
    )
)
def test_any_timeline_keeps_every_interval_once_on_non_overlapping_lanes(intervals):
    """Whatever overlaps: every interval is written once, on its row, and a lane never overlaps."""
    base = parsim.predict("vector_add", {"n": 1000}, device="a100-80gb")
    trace = tuple(
        TraceEvent(_ROWS[row], f"op{index}", "memory", start, start + length)
        for index, (row, start, length) in enumerate(intervals)
    )
    document = chrome_trace.prediction_trace(attrs.evolve(base, trace=trace))
    jsonschema.validate(document, SCHEMA)
    threads = _threads(document)
    slices = [e for e in document["traceEvents"] if e["ph"] == "X"]
    assert sorted((e["name"], _row(threads[(e["pid"], e["tid"])])) for e in slices) == sorted(
        (e.label, e.resource.group.label) for e in trace
    )
    lanes = defaultdict(list)
    for e in slices:
        start = _ns(e["ts"], math.trunc)
        lanes[(e["pid"], e["tid"])].append((start, start + _ns(e["dur"], math.trunc)))
    for spans in lanes.values():
        spans.sort()
        assert all(b[0] >= a[1] for a, b in zip(spans, spans[1:], strict=False))


def test_a_served_load_is_its_timeline_as_counters():
    record, timeline = run_load({"rate": 4, "requests": 60, "seed": 3}, "a100-80gb")
    document = chrome_trace.load_trace(timeline)
    jsonschema.validate(document, SCHEMA)
    held = {}  # the value holding at each nanosecond: the last sample there
    for t, w, r, kv in zip(
        timeline.time_s, timeline.waiting, timeline.running, timeline.kv_fraction, strict=True
    ):
        held[chrome_trace.nanoseconds(float(t))] = (float(w), float(r), 100 * float(kv))
    requests = [e for e in document["traceEvents"] if e["name"] == "requests"]
    cache = [e for e in document["traceEvents"] if e["name"] == "KV cache used"]
    assert len(requests) == len(cache) == len(held)
    for sample, kv, (ns, (w, r, k)) in zip(requests, cache, sorted(held.items()), strict=True):
        assert round(sample["ts"] * 1000.0) == ns == round(kv["ts"] * 1000.0)
        assert (sample["args"]["waiting"], sample["args"]["running"]) == (w, r)
        assert kv["args"]["%"] == pytest.approx(k)
    assert max(e["args"]["running"] for e in requests) >= 1


def test_a_trace_above_the_budget_is_refused_before_it_is_built(ddp):
    count = chrome_trace.event_count([ddp])
    assert count >= len(ddp.trace)
    small = Budget("a test", 1, split_passes=1, kept_rows=1, workers=1, beyond="so", trace_events=count - 1)
    with pytest.raises(
        ParsimError,
        match=rf"^the trace's event count is {count:,}, above a test's budget of {count - 1:,}; so$",
    ):
        chrome_trace.prediction_trace(ddp, budget=small)
    chrome_trace.prediction_trace(ddp, budget=attrs.evolve(small, trace_events=count))


# --- the command line ---

_STEP = [
    "network",
    "model=megatron-1.7b",
    "train=true",
    "tp=2",
    "pp=2",
    "microbatches=4",
    "nodes=2",
    "batch=16",
]


def test_predict_trace_writes_the_file(cli, tmp_path, step3d):
    out = tmp_path / "step.json"
    code, _, err = cli("predict", *_STEP, "--cluster", "dgx-a100", "--trace", str(out))
    assert code == 0, err
    assert f"saved {out}" in err
    document = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.validate(document, SCHEMA)
    assert sum(e["ph"] == "X" for e in document["traceEvents"]) == len(step3d.trace)
    assert document["otherData"]["cases"][0]["workload"] == "network"


def test_json_trace_keeps_the_old_meaning_of_trace_in_json(cli):
    code, out, _ = cli("predict", "vector_add", "n=1000", "--json", "--json-trace")
    assert code == 0
    data = json.loads(out)
    assert data["trace"] and {"resource", "label", "kind", "start_s", "end_s"} <= set(data["trace"][0])
    code, out, _ = cli("predict", "vector_add", "n=1000", "--json")
    assert "trace" not in json.loads(out)


def test_run_trace_holds_every_case(cli, tmp_path):
    out = tmp_path / "lesson.json"
    code, _, err = cli("run", "streams_overlap", "--no-lesson", "--trace", str(out))
    assert code == 0, err
    document = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.validate(document, SCHEMA)
    labels = [case["label"] for case in document["otherData"]["cases"]]
    processes = [e["args"]["name"] for e in document["traceEvents"] if e["name"] == "process_name"]
    assert len(labels) >= 2
    assert {name.split(": ")[0] for name in processes} == set(labels)


def test_predict_trace_of_a_served_load_is_its_timeline(cli, tmp_path):
    out = tmp_path / "load.json"
    code, _, err = cli(
        "predict", "llm_load", "rate=4", "requests=40", "--device", "a100-80gb", "--trace", str(out)
    )
    assert code == 0, err
    document = json.loads(out.read_text(encoding="utf-8"))
    _, timeline = run_load({"rate": 4, "requests": 40}, "a100-80gb")
    assert {e["name"] for e in document["traceEvents"] if e["ph"] == "C"} == {"requests", "KV cache used"}
    assert max(e["ts"] for e in document["traceEvents"] if e["ph"] == "C") == pytest.approx(
        float(timeline.time_s[-1]) * 1e6, abs=0.001
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("missing/t.json", "error: '--trace': folder '{tmp}/missing' does not exist"),
        ("t.txt", "error: '--trace' must end in .json: '{tmp}/t.txt'"),
        ("folder.json", "error: '--trace': '{tmp}/folder.json' is a folder, not a file"),
        (
            "link.json",
            "error: '--trace': {tmp}/link.json is a symbolic link; parsim does not write through links",
        ),
    ],
)
def test_a_bad_trace_path_is_one_line_and_exit_2(cli, tmp_path, name, message):
    (tmp_path / "folder.json").mkdir()
    target = tmp_path / "elsewhere.json"
    target.write_text("keep")
    (tmp_path / "link.json").symlink_to(target)
    code, out, err = cli("predict", "vector_add", "--trace", str(tmp_path / name))
    assert code == 2
    assert err.strip() == message.format(tmp=tmp_path)
    assert out == ""
    assert target.read_text() == "keep"


def test_a_trace_above_the_command_lines_budget_is_one_line(cli, tmp_path, monkeypatch):
    from parsim.base import budget

    monkeypatch.setattr(budget, "CLI", attrs.evolve(budget.CLI, trace_events=2))
    out = tmp_path / "t.json"
    code, _, err = cli("predict", "vector_add", "n=1e6", "--device", "a100-80gb", "--trace", str(out))
    assert code == 2
    assert (
        err.startswith("error: the trace's event count is ") and "above the command line's budget of 2" in err
    )
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()
    code, _, err = cli(
        "predict", "vector_add", "n=1e6", "--device", "a100-80gb", "--trace", str(out), "--no-limits"
    )
    assert code == 0 and out.exists()


# --- Perfetto's own trace processor, where one is on this machine ---


def _trace_processor() -> tuple[object, str] | None:
    """Perfetto's Python API and a trace_processor_shell binary already on this machine (the API
    alone downloads one at first use: a test must not fetch a binary)."""
    try:
        from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig
    except ImportError:
        return None
    binary = os.environ.get("PARSIM_TRACE_PROCESSOR") or shutil.which("trace_processor_shell")
    if not binary or not Path(binary).is_file():
        return None
    return (TraceProcessor, TraceProcessorConfig), binary


@pytest.mark.skipif(
    _trace_processor() is None,
    reason="Perfetto's trace processor is not here: pip install perfetto, and point PARSIM_TRACE_PROCESSOR "
    "at a trace_processor_shell binary (the package downloads one at first use; tests fetch nothing)",
)
def test_perfetto_loads_every_op(step3d, tmp_path):
    (api, config), binary = _trace_processor()
    path = chrome_trace.write(tmp_path / "step.json", chrome_trace.prediction_trace(step3d))
    document = json.loads(path.read_text(encoding="utf-8"))
    written = sorted(
        (round(e["ts"] * 1000), round(e["dur"] * 1000), e["name"])
        for e in document["traceEvents"]
        if e["ph"] == "X"
    )
    processor = api(trace=str(path), config=config(bin_path=binary))
    try:
        rows = processor.query("select ts, dur, name from slice").as_pandas_dataframe()
        loaded = sorted(zip(rows["ts"].astype(int), rows["dur"].astype(int), rows["name"], strict=True))
        threads = set(processor.query("select name from thread").as_pandas_dataframe()["name"])
    finally:
        processor.close()
    assert loaded == written
    assert {_row(name) for name in _threads(document).values()} <= {_row(n) for n in threads if n}


def test_the_saved_line_of_a_trace_name_with_control_characters_is_one_line(cli, tmp_path):
    # a name with a newline printed two lines, one with ESC a raw terminal escape (on a terminal)
    out = tmp_path / "a\nb\x1b[31m.json"
    code, _, err = cli("predict", "vector_add", "n=1e6", "--device", "a100-80gb", "--trace", str(out))
    assert code == 0 and out.exists()
    assert err.count("\n") == 1 and "\x1b" not in err
    assert f"saved {tmp_path}/a\\nb\\x1b[31m.json (open it in" in err


def test_a_scenario_of_served_loads_is_refused_not_written_empty(cli, tmp_path):
    # the shipped lesson llm_load_queueing_knee wrote a trace with no event and said "saved"
    out = tmp_path / "knee.json"
    scenario = tmp_path / "load.toml"
    scenario.write_text(
        'title = "load"\nlesson = "x"\nplot = "bars"\n[defaults]\nworkload = "llm_load"\n'
        'device = "a100-80gb"\n'
        'params = { model = "gpt2", requests = 20, rate = 1.0 }\n[[cases]]\nlabel = "one"\n'
    )
    code, out_text, err = cli("run", str(scenario), "--trace", str(out))
    assert code == 2 and not out.exists() and out_text == ""
    assert err == (
        "error: '--trace': case 'one' is a served load (llm_load), which has no op timeline; "
        "trace it with parsim predict llm_load ... --trace\n"
    )
