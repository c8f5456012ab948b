"""The model core and the seams around it: one rule per fact, validated values, caches nobody corrupts."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import attrs
import numpy
import pytest

import parsim
from parsim.base import caching
from parsim.base.errors import ParsimError, ParsimNote
from parsim.hardware import registry
from parsim.hardware.presets import PROCESSORS
from parsim.hardware.tomlio import loads_hardware
from parsim.methods.engine import simulate
from parsim.model import memory, outcome
from parsim.model.kernel import kernel_time_s
from parsim.model.modes import modes_for
from parsim.model.rates import execution
from parsim.workloads.base import AllReduce, Kernel, Transfer, Workload
from tests.systems import TINY_CPU

PACKAGE = Path(parsim.__file__).parent

DGX_NVLINK = """
[link]
id = "dgx-nvlink"
name = "DGX-1 hybrid cube mesh"
kind = "nvlink"
bandwidth_Bps = 1.2e11
peak_bandwidth_Bps = 1.5e11
pageable_bandwidth_Bps = 5e10
latency_s = 3e-6
"""


def test_a_link_file_says_what_kind_of_link_it_is(tmp_path):
    # Before: the family came from the id prefix, so 'dgx-nvlink' was taken for a PCIe host link.
    path = tmp_path / "dgx.toml"
    path.write_text(DGX_NVLINK)
    params = {"model": "resnet18", "batch": 64, "gpus": 4, "sync": "ring"}
    p = parsim.predict("data_parallel", params, device="v100-sxm2", link=str(path))
    assert p.peer_link == "dgx-nvlink" and p.link == "pcie3-x16"
    assert any(e.resource.kind == "ring" and e.resource.unit == "NVLink" for e in p.trace)


def test_a_link_file_without_kind_is_read_by_its_name_with_a_note():
    text = DGX_NVLINK.replace('kind = "nvlink"\n', "")
    with pytest.warns(ParsimNote, match="taken as nvlink"):
        assert loads_hardware(text, "old.toml").kind == "nvlink"
    with pytest.warns(ParsimNote, match="taken as pcie"):
        plain = loads_hardware(text.replace("nvlink", "x16").replace("DGX-1", "PCIe"), "old.toml")
    assert plain.kind == "pcie"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a file that says its kind gets no note
        loads_hardware(DGX_NVLINK, "new.toml")


def test_the_cli_shows_the_note_in_one_line(cli, tmp_path):
    path = tmp_path / "old.toml"
    path.write_text(DGX_NVLINK.replace('kind = "nvlink"\n', ""))
    code, out, err = cli("hardware", "show", str(path))
    assert code == 0 and err.count("\n") == 1 and err.startswith("note: ")


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Kernel.of("k", -1e9, 8, 8, 1), "kernel 'k': 'flops' must be >= 0: -1000000000.0"),
        (lambda: Kernel.of("k", 1, 8, 8, 0), "kernel 'k': 'work_items' must be an integer >= 1: 0"),
        (lambda: Kernel.of("k", 1, 8, 8, 1, dtype="int3"), "kernel 'k': 'dtype' must be one of"),
        (lambda: Kernel.of("k", float("nan"), 8, 8, 1), "kernel 'k': 'flops' must be >= 0: nan"),
        (
            lambda: Kernel.of("k", 1, 8, 8, 1, cold_bytes=17),
            "'cold_bytes' must be <= bytes_read + bytes_written",
        ),
        (lambda: Kernel.of("k", 1, 8, 8, 4, gemm_mn=(2, 0)), "'gemm_mn' must be None or two integers >= 1"),
        (lambda: Transfer("t", -5, "h2d"), "'nbytes' must be >= 0: -5"),
        (lambda: Transfer("t", 5, "sideways"), "'direction' must be one of h2d, d2h: 'sideways'"),
        (lambda: AllReduce("a", float("inf")), "'nbytes' must be >= 0: inf"),
        (
            lambda: Workload(
                "w", (), (Kernel.of("a", 1, 8, 8, 1), Kernel.of("b", 1, 8, 8, 1)), deps=((1,), ())
            ),
            "workload 'w': op 0 ('a') may wait only for nothing (it is the first op): 1",
        ),
        (
            lambda: Workload(
                "w", (), (Kernel.of("a", 1, 8, 8, 1), Kernel.of("b", 1, 8, 8, 1)), deps=((), (5,))
            ),
            "workload 'w': op 1 ('b') may wait only for ops 0..0: 5",
        ),
        (
            lambda: Workload("w", (), (Kernel.of("a", 1, 8, 8, 1),), deps=((), ())),
            "'deps' has 2 entries for 1 ops",
        ),
        (
            lambda: Workload("w", (), (Kernel.of("a", 1, 8, 8, 1, device=2),)),
            "runs on GPU 2, but 'gpus' is 1",
        ),
    ],
)
def test_invalid_work_is_refused_in_one_line(build, message):
    with pytest.raises(ParsimError) as caught:
        build()
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_negative_flop_kernel_no_longer_predicts_6_5_us():
    # Before: Kernel(flops=-1e9) predicted 6.5 us on an H100; now it cannot be built at all.
    with pytest.raises(ParsimError, match="'flops' must be >= 0"):
        parsim.predict(Workload("w", (), (Kernel.of("k", -1e9, 8, 8, 1),)), device="h100-sxm")


def test_a_forward_dependency_cannot_reach_the_engine_or_the_analytic_method():
    # Before: the engine deadlocked and reported 0.0 s; the analytic method raised IndexError.
    ops = (Kernel.of("a", 1e6, 8e6, 4e6, 10**6), Kernel.of("b", 1e6, 8e6, 4e6, 10**6, stream=1))
    for method in ("engine", "analytic"):
        with pytest.raises(ParsimError, match="may wait only for"):
            parsim.predict(Workload("w", (), ops, deps=((1,), ())), device="t4", method=method)


def test_the_engine_refuses_to_report_a_latency_when_an_op_never_ran():
    # Validation makes this unreachable; the guard makes a future bug loud instead of a silent 0 s.
    # On a CPU the host runs op 0 itself and waits for op 1, which it has not issued yet.
    system = parsim.hardware.specs.SystemSpec(host=TINY_CPU)
    work = Workload("w", (), (Kernel.of("a", 8, 8, 8, 8), Kernel.of("b", 8, 8, 8, 8, stream=1)))
    object.__setattr__(work, "deps", ((1,), ()))  # smuggle a forward edge past the validator
    with pytest.raises(RuntimeError, match="only 0 of 2 ops"):
        simulate(work, system, "simt")


def test_a_cached_prediction_cannot_be_changed_by_its_callers():
    # Before: p.breakdown["compute"] = 123 changed what the next identical call returned.
    p = parsim.predict("vector_add", {"n": 1e6}, device="t4")
    for mapping in (p.breakdown, p.metrics, p.params, p.utilization, p.busy):
        with pytest.raises(TypeError):
            mapping["compute"] = 123  # type: ignore[index]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        p.latency_s = 0  # type: ignore[misc]
    layers = parsim.predict("network", {"model": "resnet18"}, device="t4").layers
    with pytest.raises(TypeError):
        layers[0]["latency_s"] = 0  # type: ignore[index]
    again = parsim.predict("vector_add", {"n": 1e6}, device="t4")
    assert again.breakdown["compute"] == p.breakdown["compute"] != 123


def test_predictions_stay_plain_data_for_json_and_pickle():
    import json
    import pickle

    p = parsim.predict("data_parallel", {"model": "mlp", "batch": 64, "gpus": 2}, device="t4")
    assert pickle.loads(pickle.dumps(p)) == p
    data = json.loads(json.dumps(p.to_dict(trace=True)))
    assert data["breakdown"] == dict(p.breakdown) and data["metrics"]["speedup"] == p.metrics["speedup"]
    assert data["utilization"] == dict(p.utilization)
    assert {row["resource"] for row in data["trace"]} == {e.resource.label for e in p.trace}


def test_every_cache_registers_itself_and_clear_caches_empties_them_all():
    parsim.predict("network", {"model": "resnet18", "batch": 2}, device="t4")
    parsim.predict("network", {"model": "resnet18", "batch": 2}, device="t4", method="analytic")
    used = [cache for cache in caching.registered() if cache.cache_info().currsize]
    assert len(used) >= 6  # predictions, timings, kernel shapes, plans, phase times, layouts
    parsim.predict.__globals__["clear_caches"]()
    assert all(cache.cache_info().currsize == 0 for cache in caching.registered())
    hand_made = [
        f"{path.relative_to(PACKAGE)}:{node.lineno}"
        for path in PACKAGE.rglob("*.py")
        if path.name != "caching.py"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute) and node.attr in ("lru_cache", "cache") and _is_functools(node)
    ]
    assert hand_made == []  # every memo goes through caching.cached


def _is_functools(node: ast.Attribute) -> bool:
    return isinstance(node.value, ast.Name) and node.value.id == "functools"


def test_modes_for_lists_what_the_device_can_run():
    assert modes_for(PROCESSORS["t4"]) == ["simt", "sisd", "simd", "mimd", "mimd+simd"]
    assert modes_for(PROCESSORS["laptop-4c-avx2"]) == ["sisd", "simd", "mimd", "mimd+simd"]


def test_the_memory_level_rule_is_the_same_for_one_size_and_for_an_array():
    spec = PROCESSORS["xeon-8480"]
    sizes = numpy.geomspace(1e3, 1e10, 50)
    every = memory.level(spec, spec.cores, sizes)
    for index, size in enumerate(sizes):
        one = memory.level(spec, spec.cores, float(size))
        assert one.bandwidth_Bps == every.bandwidth_Bps[index]
        assert one.core_bandwidth_Bps == every.core_bandwidth_Bps[index]
    assert memory.level(spec, spec.cores, 1e3).name == "L1"
    assert memory.level(spec, spec.cores, 1e11).name == "DRAM"
    assert memory.level(PROCESSORS["h100-sxm"], 132, 1e3).name == "L2"  # a GPU's L1 never counts


def test_bottleneck_rule_is_the_same_for_numbers_and_arrays():
    parts = {"compute": 1.0, "memory": 1.0, "transfer": 0.0, "overhead": 1.0}
    assert outcome.bottleneck(parts) == "compute"  # ties go to the earlier category
    arrays = {k: numpy.array([v, 0.0, 0.0]) for k, v in parts.items()}
    arrays["overhead"] = numpy.array([1.0, 2.0, 0.0])
    assert list(outcome.bottleneck(arrays)) == ["compute", "overhead", "compute"]


def test_engine_and_analytic_share_the_kernel_rates():
    # The analytic kernel time is the model's closed form; the engine cuts the same rates into waves.
    # A cuBLAS product pays the smooth roofline (norm 2) of its compute and memory legs, not their max.
    from parsim.model.kernel import compute_s, memory_s, overlap_norm
    from parsim.model.roofline import combine

    spec = PROCESSORS["a100-80gb"]
    kernel = parsim.workloads.make_workload("matmul", {"m": 8192, "n": 8192, "k": 8192}).ops[0]
    seconds, leg = kernel_time_s(kernel, spec, "simt")
    ex = execution(spec, "simt", kernel)
    compute = compute_s(
        ex,
        kernel.work.flops,
        kernel.work.special_ops,
        kernel.work.work_items,
        kernel.issue.python_ops_per_item,
        ex.cores,
    )
    moved = memory_s(spec, ex, kernel.bytes, kernel.access.cold_bytes, ex.cores)
    assert leg == "compute"
    assert overlap_norm(spec, kernel) == 2.0
    assert compute == pytest.approx(kernel.work.flops / ex.flops_per_s, rel=1e-12)
    assert seconds == pytest.approx(combine(compute, moved, "roofline", 2.0), rel=1e-12)
    assert seconds == pytest.approx((compute**2 + moved**2) ** 0.5, rel=1e-12)
    assert compute < seconds < compute * 1.001  # compute-bound: the memory leg adds ~0.002 %
    engine = parsim.predict("matmul", {"m": 8192, "n": 8192, "k": 8192}, device=spec)
    assert engine.latency_s >= seconds  # waves and padding only ever add


def test_registry_asks_the_link_its_kind():
    nvlink = registry.link("nvlink3")
    system = registry.system("a100-80gb", None, nvlink, gpus=2)
    assert system.peer_link is nvlink and system.link.kind == "pcie"
    pcie_named_like_nvlink = attrs.evolve(registry.link("pcie4-x16"), id="nvlink-but-pcie")
    assert registry.system("a100-80gb", None, pcie_named_like_nvlink).peer_link is None


def test_smooth_roofline_known_answers():
    """The smooth roofline of norm 2 is the length of (compute, memory): 3 and 4 give 5."""
    from parsim.model.roofline import combine

    assert combine(3.0, 4.0, "roofline", 2.0) == pytest.approx(5.0)
    assert combine(3.0, 4.0, "roofline") == 4.0  # the plain max
    assert combine(3.0, 4.0, "serial", 2.0) == 7.0  # serial stays the sum


def test_cublas_gemm_near_the_ridge_pays_the_smooth_roofline():
    """A prefill-sized product (128 rows, LLaMA-7B MLP) on an A100: compute and weight streaming are
    nearly equal, so it takes ~1.4x their max; a large square product (compute-bound) and a gemv
    (memory-bound) stay within 2 % of the max."""
    import math

    from parsim.hardware.registry import processor
    from parsim.model.kernel import closed_form, compute_s, memory_s, overlap_norm
    from parsim.model.rates import execution
    from parsim.workloads.ops import gemm_kernel

    a100 = processor("a100-80gb")

    def ratio(m: int, n: int, k: int) -> float:
        kernel = gemm_kernel(m, n, k, "float16", "g")
        ex = execution(a100, "simt", kernel)
        c = compute_s(
            ex,
            kernel.work.flops,
            kernel.work.special_ops,
            kernel.work.work_items,
            kernel.issue.python_ops_per_item,
            ex.cores,
        )
        mem = memory_s(a100, ex, kernel.bytes, kernel.access.cold_bytes, ex.cores)
        assert overlap_norm(a100, kernel) == 2.0
        return closed_form(kernel, a100, "simt", "roofline")[0] / max(c, mem)

    assert 1.2 < ratio(128, 11008, 4096) <= math.sqrt(2) + 1e-9
    assert ratio(8192, 8192, 8192) < 1.02
    assert ratio(1, 11008, 4096) < 1.02
