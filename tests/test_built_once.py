"""What a prediction derives once and reuses (issue 28 item 4) gives what deriving it again gives.

A layer shape's kernels are built and checked once and named per layer; a kernel record is checked
once and shared; kernels of one cost share one shape; the GPUs of one machine share kernel
durations and layouts; a chain's issue times are found once for every instance; copy engines and
uplinks are made at their first copy. Each test below compares the reuse with the derivation it replaces, or
with a hand-computed answer.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import parsim
from parsim.base.errors import ParsimError
from parsim.methods.predict import clear_caches
from parsim.model.kernel import shape
from parsim.results.resources import Resource
from parsim.results.timeline import TraceEvent, breakdown, utilization
from parsim.workloads.kernel import Kernel
from parsim.workloads.layers import Numerics, layer_kernels, layer_kernels_of_shape
from parsim.workloads.models import MODELS

NUMERICS = [
    Numerics(),
    Numerics(
        dtype="float16",
        mixed=True,
        casts=True,
        conv_math="tf32",
        plain_weights=True,
        cpu_library="onednn",
        layout="nchw",
        foreach_optimizer=True,
    ),
]


@settings(max_examples=40, deadline=None)
@given(
    model=st.sampled_from(sorted(MODELS)),
    batch=st.integers(1, 64),
    numerics=st.sampled_from(NUMERICS),
    train=st.booleans(),
    update=st.booleans(),
    optimizer=st.sampled_from(["sgd", "adam"]),
    device=st.integers(0, 3),
)
def test_named_layer_kernels_are_the_kernels_built_for_the_layer_itself(
    model, batch, numerics, train, update, optimizer, device
):
    for index, layer in enumerate(MODELS[model]()):
        first = index == 0
        assert layer_kernels(layer, batch, numerics, train, first, device, update, optimizer) == (
            layer_kernels_of_shape(layer, batch, numerics, train, first, device, update, optimizer)
        )


def test_resnet50_layers_of_one_shape_share_their_kernels_records():
    layers = MODELS["resnet50"]()
    twins = [layer for layer in layers if layer.kind == "conv" and layer.in_shape == (256, 56, 56)]
    assert len(twins) >= 2  # layer1.1.conv1 and layer1.2.conv1
    first, second = (layer_kernels(layer, 8, Numerics(), True)[0][0] for layer in twins[:2])
    assert (first.name, second.name) == (f"{twins[0].name} fwd", f"{twins[1].name} fwd")
    assert (first.layer, second.layer) == (twins[0].name, twins[1].name)
    assert first.work is second.work and first.library is second.library  # one record each


def _work_items_2(**change: object) -> Kernel:
    facts: dict[str, object] = {"work_items": 2, "matrix": True, **change}
    return Kernel.of("k", 4.0, 8.0, 8.0, **facts)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("change", "field"), [({"work_items": 2.0}, "work_items"), ({"matrix": 1}, "matrix")]
)
def test_a_record_merely_equal_to_a_checked_one_is_still_refused(change, field):
    _work_items_2()  # the valid record, checked and shared
    with pytest.raises(ParsimError, match=field):
        _work_items_2(**change)  # equal to it (2.0 == 2, 1 == True) but of the wrong type


def test_equal_costs_have_one_shape_whatever_the_name_or_place():
    one = Kernel.of("a", 1e6, 4e3, 4e3, 1000, layer="x")
    other = Kernel.of("b", 1e6, 4e3, 4e3, 1000, device=3)
    assert shape(one) is shape(other) is shape(one)
    assert shape(one).name == "" and shape(one).cost_key() == one.cost_key()


def _event(kind: str, start: float, end: float) -> TraceEvent:
    return TraceEvent(Resource("cores", 0), kind, kind, start, end)


def test_breakdown_shares_overlapping_time_and_counts_the_gaps_as_overhead():
    # compute 0-2, memory 1-3, latency 4: 0-1 compute, 1-2 shared, 2-3 memory, 3-4 overhead
    parts = breakdown([_event("compute", 0.0, 2.0), _event("memory", 1.0, 3.0)], 4.0)
    assert parts["compute"] == 1.5 and parts["memory"] == 1.5 and parts["overhead"] == 1.0
    assert parts["transfer"] == 0.0


def test_utilization_adds_a_rows_intervals_whatever_their_order():
    row, other = Resource("cores", 0, busy=4), Resource("link", 0, direction="h2d")
    trace = [
        TraceEvent(row, "a", "compute", 0.0, 1.0, weight=0.5),
        TraceEvent(other, "c", "transfer", 0.0, 2.0),
        TraceEvent(row, "b", "compute", 1.0, 2.0, weight=0.5),
    ]
    busy = utilization(trace, 4.0)
    assert busy[row.group] == 0.25 and busy[other.group] == 0.5


def test_breakdown_clamps_at_the_latency_and_leaves_out_detail_rows_and_empty_intervals():
    # compute 0-6 (clamped to the latency 5), transfer 1-2, a memory detail row and an empty interval
    trace = [
        _event("compute", 0.0, 6.0),
        _event("transfer", 1.0, 2.0),
        TraceEvent(Resource("memory", 0), "m", "memory", 0.0, 5.0, detail=True),
        _event("memory", 3.0, 3.0),
        _event("overhead", 0.0, 5.0),  # host overhead: counted only where no device work runs
    ]
    parts = breakdown(trace, 5.0)
    assert parts == {"compute": 4.5, "memory": 0.0, "transfer": 0.5, "overhead": 0.0}
    assert list(parts) == ["compute", "memory", "transfer", "overhead"]
    # work ending before the latency: the rest is overhead, the active kinds' counts back to 0
    assert breakdown([_event("memory", 0.0, 1.0)], 3.0) == {
        "compute": 0.0,
        "memory": 1.0,
        "transfer": 0.0,
        "overhead": 2.0,
    }


def test_utilization_groups_equal_rows_made_apart_and_leaves_out_waits():
    # two core rows of one GPU (different busy counts) and a thread row made twice, equal
    wide, narrow = Resource("cores", 0, busy=4), Resource("cores", 0, first=0, busy=2)
    thread, again = Resource("thread", -1), Resource("thread", -1)
    trace = [
        TraceEvent(wide, "a", "compute", 0.0, 1.0, weight=0.5),
        TraceEvent(thread, "i", "overhead", 0.0, 1.0),
        TraceEvent(narrow, "b", "compute", 1.0, 3.0, weight=0.25),
        TraceEvent(again, "j", "overhead", 1.0, 2.0),
        TraceEvent(again, "w", "wait", 2.0, 4.0),
    ]
    busy = utilization(trace, 4.0)
    assert busy == {wide.group: 0.25, thread: 0.5}
    assert list(busy) == [wide.group, thread]


CASES = [
    ("data_parallel", {"model": "resnet18", "batch": 32, "gpus": 4, "sync": "host"}, {"device": "v100-pcie"}),
    ("data_parallel", {"model": "resnet18", "batch": 32, "gpus": 4, "sync": "ring"}, {"device": "v100-sxm2"}),
    ("offload", {"n": 1e7, "streams": 4}, {"device": "t4"}),
]


@pytest.mark.parametrize(("name", "params", "where"), CASES)
def test_a_cold_prediction_and_a_warm_one_agree_to_the_bit(name, params, where):
    clear_caches()
    cold = parsim.predict(name, params, **where)
    again = parsim.predict(name, params, budget=None, **where)  # another cache entry, warm shapes
    assert again is not cold
    assert (again.latency_s, again.throughput_per_s) == (cold.latency_s, cold.throughput_per_s)
    assert again.trace == cold.trace and dict(again.breakdown) == dict(cold.breakdown)


def test_a_relabelled_or_moved_kernel_is_the_kernel_the_constructor_makes():
    kernel = Kernel.of(" fwd", 1e9, 1e6, 1e6, 1000, cold_bytes=5e5, stream=2, phase="recompute")
    named = kernel.relabelled("conv1 fwd", "conv1")
    made = Kernel("conv1 fwd", kernel.work, 2, 0, "conv1", kernel.access, phase="recompute")
    assert named == made and hash(named) == hash(made) and named.cost_key() == kernel.cost_key()
    moved = named.on_device(5)
    assert moved == Kernel("conv1 fwd", kernel.work, 2, 5, "conv1", kernel.access, phase="recompute")
    assert moved.on_device(-1).device == -1  # the host
    for bad, field in ((lambda: kernel.on_device(1.0), "device"), (lambda: kernel.on_device(-2), "device")):
        with pytest.raises(ParsimError, match=field):
            bad()
    with pytest.raises(ParsimError, match="layer"):
        kernel.relabelled("x", None)


def test_lowering_keeps_a_program_the_library_runs_as_given():
    from parsim.hardware import registry
    from parsim.model.library import lower
    from parsim.workloads import make_workload

    h100 = registry.system("h100-sxm", None, None, 1, None)
    plain = make_workload("network", {"model": "resnet18", "batch": 2, "train": True})
    assert lower(plain, h100) is plain  # float32 NCHW: no transposes, nothing folded
    half = make_workload("network", {"model": "resnet18", "batch": 2, "train": True, "dtype": "float16"})
    lowered = lower(half, h100)  # 16-bit NCHW convolutions run between two transposes
    assert len(lowered.ops) > len(half.ops) and len(lowered.deps) == len(lowered.ops)
