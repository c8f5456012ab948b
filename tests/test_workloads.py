"""Workload arithmetic (FLOPs, bytes, items) by hand, and parameter validation."""

import pytest

from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.model.traffic import link_bytes
from parsim.workloads import Kernel, Transfer, make_workload


def kernel(name, **params) -> Kernel:
    (op,) = make_workload(name, params).ops
    return op


@pytest.mark.parametrize(
    ("name", "flops", "read", "special"),
    [
        ("vector_add", 1000, 8000, 0),
        ("saxpy", 2000, 8000, 0),
        ("relu", 1000, 4000, 0),
        ("sigmoid", 3000, 4000, 1000),
        ("reduce_sum", 1000, 4000, 0),
    ],
)
def test_vector_ops_float32(name, flops, read, special):
    k = kernel(name, n=1000)
    assert (k.work.flops, k.work.bytes_read, k.work.special_ops, k.work.work_items) == (
        flops,
        read,
        special,
        1000,
    )
    assert k.work.bytes_written == (4 if name == "reduce_sum" else 4000)


def test_dtype_sets_the_element_size():
    assert kernel("vector_add", n=10, dtype="float64").bytes == 240
    assert kernel("vector_add", n=10, dtype="bfloat16").bytes == 60


def test_matmul_counts():
    k = kernel("matmul", m=2, n=3, k=4)
    assert k.work.flops == 2 * 2 * 3 * 4
    assert k.bytes == (2 * 4 + 4 * 3 + 2 * 3) * 4
    assert k.work.matrix and k.library.gemm_mn == (2, 3) and k.work.work_items == 6


def test_conv2d_is_an_implicit_gemm():
    k = kernel("conv2d", batch=2, channels=3, height=8, width=8, filters=16, kernel=3)
    assert k.work.flops == 2 * (2 * 8 * 8) * 16 * (3 * 9)
    assert k.bytes == (2 * 3 * 64 + 16 * 3 * 9 + 2 * 16 * 64) * 4
    assert k.library.gemm_mn == (128, 16)


def test_copy_and_offload():
    (copy,) = make_workload("copy", {"n": 100, "direction": "d2h", "pinned": "false"}).ops
    assert copy == Transfer(name="d2h pageable", nbytes=400, direction="d2h", pinned=False)
    work = make_workload("offload", {"op": "vector_add", "n": 10, "streams": 3})
    assert [op.stream for op in work.ops] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    sizes = [op.work.work_items for op in work.kernels]
    assert sizes == [4, 3, 3]
    assert [op.nbytes for op in work.transfers if op.direction == "h2d"] == [32, 24, 24]
    assert work.flops == 10 and link_bytes(work, registry.system("v100-pcie")) == 80 + 40


def test_numbers_in_scientific_notation_are_integers():
    assert kernel("vector_add", n=1e8).work.work_items == 10**8


@pytest.mark.parametrize(
    ("name", "params", "expected"),
    [
        ("vector_add", {"n": 0}, "'n' input should be greater than 0: 0"),
        ("vector_add", {"n": -5}, "'n' input should be greater than 0: -5"),
        ("vector_add", {"n": 2.5}, "'n'"),
        ("vector_add", {"n": 10, "dtype": "int8"}, "'dtype'"),
        ("vector_add", {"n": 10, "m": 3}, "unknown parameter 'm'"),
        ("matmul", {"m": 2, "n": 2}, "missing parameter 'k'"),
        ("offload", {"n": 10, "op": "matmul"}, "'op'"),
        ("offload", {"n": 10, "streams": 0}, "'streams'"),
        ("copy", {"n": 10, "direction": "sideways"}, "'direction'"),
        ("vectoradd", {"n": 10}, "did you mean vector_add"),
    ],
)
def test_bad_parameters_give_one_line(name, params, expected):
    with pytest.raises(ParsimError) as info:
        make_workload(name, params)
    assert expected in str(info.value)
    assert "\n" not in str(info.value)
