"""A kernel is a name, a place and four small records by concern (``parsim.workloads.kernel``)."""

from __future__ import annotations

import attrs
import pytest

from parsim.base.errors import ParsimError
from parsim.workloads.conv import ConvShape
from parsim.workloads.kernel import (
    NO_LIBRARY_HINTS,
    PLAIN_ACCESS,
    PLAIN_ISSUE,
    Access,
    Issue,
    Kernel,
    LibraryHints,
    Work,
)

FACTS = {  # every fact the flat kernel had, and the record it belongs to now
    "work": {
        "flops",
        "bytes_read",
        "bytes_written",
        "work_items",
        "dtype",
        "matrix",
        "special_ops",
        "op",
        "int_ops",
    },
    "access": {"cold_bytes", "thread_loads_B", "reuse_B", "bandwidth_share", "core_in_flight_B"},
    "library": {
        "gemm_mn",
        "conv",
        "math",
        "foldable",
        "reorder_B",
        "cpu_library",
        "nchw_B",
        "fused_attention",
        "sign_test",
        "frequency_domain",
    },
    "issue": {
        "python_ops_per_item",
        "primitive",
        "multi_tensor",
        "python_loop",
        "in_library_call",
        "launches",
        "host_waits",
        "graph_node",
    },
}


def test_the_kernel_is_a_name_a_place_and_four_records():
    assert [f.name for f in attrs.fields(Kernel)] == [
        "name",
        "work",
        "stream",
        "device",
        "layer",
        "access",
        "library",
        "issue",
        "phase",
        "part",
    ]
    for part, cls in (("work", Work), ("access", Access), ("library", LibraryHints), ("issue", Issue)):
        assert set(cls._fields) == FACTS[part]


def test_of_takes_every_fact_of_every_record_by_its_name():
    import inspect

    facts = set(inspect.signature(Kernel.of).parameters) - {
        "name",
        "stream",
        "device",
        "layer",
        "phase",
        "part",
    }
    assert facts == set().union(*FACTS.values())


def test_of_files_each_fact_into_its_record():
    shape = ConvShape(1, 3, 8, 8, 4, 3, 1, 1)
    k = Kernel.of(
        "conv",
        10.0,
        8.0,
        4.0,
        2,
        stream=1,
        device=3,
        layer="c1",
        dtype="float16",
        matrix=True,
        cold_bytes=6.0,
        conv=shape,
        math="tf32",
        gemm_mn=(2, 1),
        primitive=True,
    )
    assert k.work == Work(10.0, 8.0, 4.0, 2, dtype="float16", matrix=True)
    assert k.access == Access(cold_bytes=6.0)
    assert k.library == LibraryHints(gemm_mn=(2, 1), conv=shape, math="tf32")
    assert k.issue == Issue(primitive=True)
    assert (k.name, k.stream, k.device, k.layer) == ("conv", 1, 3, "c1")
    assert (k.bytes, k.intensity, k.working_set_B) == (12.0, 10.0 / 12.0, 6.0)
    with pytest.raises(TypeError, match="'colour'"):
        Kernel.of("k", 1, 1, 1, 1, colour="red")


def test_a_kernel_without_hints_shares_the_default_records():
    k = Kernel.of("relu", 1.0, 4.0, 4.0, 1)
    assert k.access is PLAIN_ACCESS and k.library is NO_LIBRARY_HINTS and k.issue is PLAIN_ISSUE


def test_but_changes_only_the_records_it_names():
    k = Kernel.of("k", 2.0, 8.0, 8.0, 4, cold_bytes=8.0, cpu_library="onednn")
    moved = k.but(device=1, layer="fc")
    assert moved.work is k.work and moved.access is k.access and moved.library is k.library
    bigger = k.but(bytes_read=16.0, cold_bytes=16.0, reorder_B=0.0)
    assert bigger.work == k.work._replace(bytes_read=16.0) and bigger.access.cold_bytes == 16.0
    assert bigger.library.cpu_library == "onednn" and bigger.issue is k.issue
    with pytest.raises(TypeError, match="'flop'"):
        k.but(flop=1.0)


def test_the_cost_key_is_the_records_and_ignores_the_place():
    k = Kernel.of("a", 2.0, 8.0, 8.0, 4, cold_bytes=8.0)
    twin = Kernel.of(
        "b", 2.0, 8.0, 8.0, 4, cold_bytes=8.0, stream=2, device=1, layer="x", phase="decode", part="qkv"
    )
    assert k.cost_key() == twin.cost_key() == (k.work, k.access, k.library, k.issue)
    assert k.but(multi_tensor=True).cost_key() != k.cost_key()
    assert Kernel.anonymous(k.cost_key()) == k.but(name="")


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: Kernel("k", Work(1, 8, 8, 1), access=Access(reuse_B=-1)),
            "kernel 'k': 'reuse_B' must be >= 0",
        ),
        (lambda: Kernel("k", Work(1, 8, 8, 1), issue=Issue(primitive=1)), "kernel 'k': 'primitive' must be"),
        (lambda: Kernel.of("k", 1, 8, 8, 1, launches=-1), "kernel 'k': 'launches' must be"),
        (lambda: Kernel("k", (1, 8, 8, 1)), "kernel 'k': 'work' must be a Work"),
        (lambda: Kernel("k", Work(1, 8, 8, 1), device=-2), "kernel 'k': 'device' must be"),
        (lambda: Kernel.of("k", 1, 8, 8, 1, math="fp4"), "kernel 'k': 'math' must be one of"),
        (
            lambda: Kernel.of("k", 1, 8, 8, 1).but(cold_bytes=17),
            "kernel 'k': 'cold_bytes' must be <= bytes_read",
        ),
    ],
)
def test_a_bad_fact_in_any_record_is_refused_naming_the_kernel_and_the_field(build, message):
    with pytest.raises(ParsimError, match=message):
        build()


def test_equal_checked_records_are_shared_between_kernels():
    a = Kernel.of("a", 3.0, 8.0, 8.0, 2, cold_bytes=4.0, gemm_mn=(2, 1), multi_tensor=True)
    b = Kernel.of("b", 3.0, 8.0, 8.0, 2, cold_bytes=4.0, gemm_mn=(2, 1), multi_tensor=True, device=5)
    assert a.work is b.work and a.access is b.access and a.library is b.library and a.issue is b.issue
    with pytest.raises(ParsimError, match="'matrix' must be true or false"):
        Kernel.of("bad", 5.0, 8.0, 8.0, 2, matrix=1)  # refused, so never kept for sharing
    good = Kernel.of("good", 5.0, 8.0, 8.0, 2, matrix=True)
    assert good.work.matrix is True


def test_records_are_tuples_compared_within_their_own_kind():
    assert Access(1.0, 0.0, 0.0) == (
        1.0,
        0.0,
        0.0,
        1.0,
        0.0,
    )  # hence: compare a record with its own kind only
    assert Kernel.of("k", 1, 8, 8, 1).cost_key() == Kernel.of("k", 1, 8, 8, 1).cost_key()


def test_on_device_is_but_device_and_keeps_the_checked_records():
    k = Kernel.of("conv fwd", 6.0, 8.0, 8.0, 4, cold_bytes=8.0, gemm_mn=(2, 2), layer="conv1", stream=1)
    moved = k.on_device(3)
    assert moved == k.but(device=3) and moved.device == 3 and moved.cost_key() == k.cost_key()
    assert moved.work is k.work and moved.access is k.access and moved.library is k.library
    with pytest.raises(ParsimError, match="kernel 'conv fwd': 'device' must be"):
        k.on_device(-2)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        # each record checked and shared already: the place and the rule between records still are
        (lambda k, _: Kernel(k.name, k.work, device=-3), "'device' must be"),
        (lambda k, _: Kernel(k.name, k.work, stream=1.0), "'stream' must be"),
        (lambda k, _: Kernel(k.name, k.work, layer=7), "'layer' must be"),
        (lambda k, big: Kernel(k.name, k.work, access=big.access), "'cold_bytes' must be <= bytes_read"),
    ],
)
def test_a_kernel_of_shared_records_still_has_its_place_and_cold_bytes_checked(build, message):
    k = Kernel.of("small", 1.0, 8.0, 8.0, 1, cold_bytes=16.0)  # 16 bytes moved, all cold
    big = Kernel.of("big", 1.0, 64.0, 64.0, 1, cold_bytes=128.0)  # its Access is not valid for k
    with pytest.raises(ParsimError, match=message):
        build(k, big)


def test_every_gpu_of_a_data_parallel_step_runs_gpu_0s_kernels():
    from parsim.workloads.registry import make_workload, validate_params

    params = validate_params("data_parallel", {"model": "resnet50", "batch": 64, "gpus": 4, "sync": "ring"})
    kernels = [op for op in make_workload("data_parallel", params).ops if isinstance(op, Kernel)]
    per_gpu = {g: [(k.name, k.layer, k.cost_key()) for k in kernels if k.device == g] for g in range(4)}
    assert len(per_gpu[0]) > 100
    assert per_gpu[1] == per_gpu[0] and per_gpu[2] == per_gpu[0] and per_gpu[3] == per_gpu[0]
