"""Hardware presets: ids, links, cited measurements, sanity orderings and a comment on every number.

The measurement file is the presets' exam: each row is a public measurement of one device and
the preset's effective figure must land within 15 % of it. The last test reads the preset
sources token by token and insists that every numeric field sits next to a comment (its source).
"""

from __future__ import annotations

import csv
import io
import tokenize
from pathlib import Path

import pytest

from parsim.base.dtypes import MATRIX_FORMATS as DTYPES
from parsim.hardware import presets_cpu, presets_gpu, presets_gpu_current, presets_links, presets_tpu
from parsim.hardware.presets import LINKS, PROCESSORS

DATA = Path(presets_cpu.__file__).parent / "data" / "measurements.csv"
TOLERANCE = 0.15
CPU_IDS = [
    "laptop-4c-avx2",
    "i7-3820",
    "xeon-e5-2630v3",
    "dual-xeon-e5-2630v3",
    "xeon-8480",
    "epyc-9654",
    "dual-epyc-7742",
    "grace-x2",
    "grace-nvl72",
]
GPU_IDS = [
    "gtx-980",
    "gtx-1080",
    "k80",
    "t4",
    "v100-pcie",
    "v100-sxm2",
    "a100-40gb",
    "a100-80gb",
    "h100-pcie",
    "h100-sxm",
    "h200",
    "rtx-4090",
]
CURRENT_GPU_IDS = sorted(presets_gpu_current.CURRENT_GPU_PRESETS)  # tests/test_presets_current.py names them
AMD_IDS = ["mi250x", "mi250x-module", "mi300x"]  # presets_amd.py, conventions in tests/test_amd.py
TPU_IDS = ["tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e"]
LINK_IDS = [
    "pcie3-x16",
    "pcie4-x16",
    "pcie5-x16",
    "nvlink2",
    "nvlink3",
    "nvlink4",
    "nvlink5",
    "nvlink-c2c",
    "infinity-fabric-mi300x",
    "xgmi-mi250x",
]
ICI_IDS = ["ici-v4", "ici-v5e", "ici-v5p", "ici-v6e"]
PROCESSOR_QUANTITIES = {"memory_bandwidth_Bps", "dispatch_s", "matmul_flops_per_s"}
LINK_QUANTITIES = {"link_bandwidth_Bps", "link_pageable_bandwidth_Bps"}
HEADER = ["preset_id", "quantity", "value", "unit", "source", "dtype"]


def _read_rows() -> list[dict[str, str]]:
    with DATA.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


ROWS = _read_rows()


def _row_id(row: dict[str, str]) -> str:
    return f"{row['preset_id']}:{row['quantity']}:{row['value']}"


def _effective(row: dict[str, str]) -> float:
    """The preset's figure that the measurement in ``row`` should reproduce."""
    quantity = row["quantity"]
    if quantity == "memory_bandwidth_Bps":
        return PROCESSORS[row["preset_id"]].memory.bandwidth_Bps
    if quantity == "dispatch_s":
        return PROCESSORS[row["preset_id"]].dispatch_s
    if quantity == "matmul_flops_per_s":
        spec = PROCESSORS[row["preset_id"]]
        return spec.peak_flops_per_s(row["dtype"], matrix=True) * spec.matmul_efficiency
    if quantity == "link_bandwidth_Bps":
        return LINKS[row["preset_id"]].bandwidth_Bps
    if quantity == "link_pageable_bandwidth_Bps":
        return LINKS[row["preset_id"]].pageable_bandwidth_Bps
    raise AssertionError(f"unknown quantity {quantity!r}")


# --- ids and cross references -------------------------------------------------------------------


def test_every_preset_id_exists_with_its_kind():
    assert sorted(presets_cpu.CPU_PRESETS) == sorted(CPU_IDS)
    assert sorted(presets_gpu.GPU_PRESETS) == sorted(GPU_IDS)
    assert sorted(presets_tpu.TPU_PRESETS) == sorted(TPU_IDS)
    assert sorted(LINKS) == sorted(LINK_IDS + ICI_IDS)
    assert sorted(PROCESSORS) == sorted(CPU_IDS + GPU_IDS + CURRENT_GPU_IDS + AMD_IDS + TPU_IDS)
    for pid, spec in PROCESSORS.items():
        assert spec.id == pid
        assert spec.kind == ("cpu" if pid in CPU_IDS else "tpu" if pid in TPU_IDS else "gpu")
    for lid, link in LINKS.items():
        assert link.id == lid


@pytest.mark.parametrize("pid", GPU_IDS + CURRENT_GPU_IDS + AMD_IDS)
def test_gpu_default_link_exists(pid):
    assert PROCESSORS[pid].default_link in LINKS


@pytest.mark.parametrize("pid", GPU_IDS + CURRENT_GPU_IDS)
def test_gpu_conventions(pid):
    spec = PROCESSORS[pid]
    assert spec.warp_size == 32
    assert spec.tile_items == 256
    assert spec.tiles_per_core * spec.tile_items in (1024, 1536, 2048)  # max threads per SM
    assert 0.5 <= spec.matmul_efficiency <= 0.95
    assert 1e-6 <= spec.dispatch_s <= 25e-6


@pytest.mark.parametrize("pid", CPU_IDS)
def test_cpu_conventions(pid):
    spec = PROCESSORS[pid]
    assert spec.warp_size == 1
    assert spec.tiles_per_core == 1
    assert spec.default_link is None
    assert 8e9 <= spec.memory.per_core_bandwidth_Bps <= 30e9
    assert spec.memory.per_core_bandwidth_Bps < spec.memory.bandwidth_Bps


# --- the measurement file -----------------------------------------------------------------------


def test_measurement_file_header_and_fields():
    with DATA.open(newline="", encoding="utf-8") as f:
        assert next(csv.reader(f)) == HEADER
    for row in ROWS:
        assert row["preset_id"] in PROCESSORS or row["preset_id"] in LINKS, row
        assert row["source"].strip(), row
        assert float(row["value"]) > 0, row
        if row["quantity"] in PROCESSOR_QUANTITIES:
            assert row["preset_id"] in PROCESSORS, row
        elif row["quantity"] in LINK_QUANTITIES:
            assert row["preset_id"] in LINKS, row
        else:
            raise AssertionError(f"unknown quantity in {row}")
        if row["quantity"] == "matmul_flops_per_s":
            assert row["dtype"] in DTYPES, row
        else:
            assert row["dtype"] == "", row


def test_measurement_file_coverage():
    memory = {r["preset_id"] for r in ROWS if r["quantity"] == "memory_bandwidth_Bps"}
    assert len(memory & set(GPU_IDS)) >= 8
    assert len(memory & set(CPU_IDS)) >= 3
    links = {r["preset_id"] for r in ROWS if r["quantity"] == "link_bandwidth_Bps"}
    assert {"pcie3-x16", "pcie4-x16", "pcie5-x16"} <= links
    launches = {r["preset_id"] for r in ROWS if r["quantity"] == "dispatch_s"}
    assert len(launches & set(GPU_IDS)) >= 2


@pytest.mark.parametrize("row", ROWS, ids=_row_id)
def test_preset_reproduces_measurement(row):
    measured = float(row["value"])
    assert _effective(row) == pytest.approx(measured, rel=TOLERANCE), row["source"]


# --- physical sanity ----------------------------------------------------------------------------


@pytest.mark.parametrize("pid", sorted(PROCESSORS))
def test_memory_effective_below_peak_and_caches_sane(pid):
    memory = PROCESSORS[pid].memory
    assert memory.bandwidth_Bps <= memory.peak_bandwidth_Bps
    assert memory.per_core_bandwidth_Bps <= memory.bandwidth_Bps
    assert 50e-9 <= memory.latency_s <= 1e-6
    sizes = [level.size_B for level in memory.caches]
    assert sizes == sorted(sizes)
    for level in memory.caches:
        assert level.bandwidth_Bps > memory.bandwidth_Bps, level.name


@pytest.mark.parametrize("lid", LINK_IDS)
def test_link_effective_below_peak(lid):
    link = LINKS[lid]
    assert link.pageable_bandwidth_Bps <= link.bandwidth_Bps <= link.peak_bandwidth_Bps
    assert link.duplex


def test_sanity_orderings():
    def bw(pid):
        return PROCESSORS[pid].memory.bandwidth_Bps

    assert bw("h100-sxm") > bw("a100-80gb") > bw("v100-sxm2") > bw("gtx-1080")

    def link_bw(lid):
        return LINKS[lid].bandwidth_Bps

    assert link_bw("pcie5-x16") > link_bw("pcie4-x16") > link_bw("pcie3-x16")
    assert (
        link_bw("nvlink5")
        > link_bw("nvlink4")
        > link_bw("nvlink3")
        > link_bw("nvlink2")
        > link_bw("pcie5-x16")
    )
    assert bw("dual-xeon-e5-2630v3") == pytest.approx(2 * bw("xeon-e5-2630v3"))


def test_vector_peaks_match_datasheets():
    assert PROCESSORS["h100-sxm"].vector_flops_per_s("float32") == pytest.approx(67e12, rel=0.05)
    assert PROCESSORS["v100-sxm2"].vector_flops_per_s("float32") == pytest.approx(15.7e12, rel=0.05)
    assert PROCESSORS["a100-40gb"].vector_flops_per_s("float32") == pytest.approx(19.5e12, rel=0.05)
    assert PROCESSORS["rtx-4090"].vector_flops_per_s("float32") == pytest.approx(82.6e12, rel=0.05)
    assert PROCESSORS["a100-40gb"].peak_flops_per_s("float16", matrix=True) == pytest.approx(312e12)
    # float32 matmuls stay on the vector units: TF32 is deliberately not a float32 matrix rate
    assert PROCESSORS["h100-sxm"].peak_flops_per_s("float32", matrix=True) == pytest.approx(66.9e12, rel=0.01)
    # Sandy Bridge has no FMA: 16 FLOP/cycle/core (8-lane add + 8-lane multiply)
    assert PROCESSORS["i7-3820"].vector_flops_per_s("float32") == pytest.approx(4 * 16 * 3.7e9)


# --- every number has its source ----------------------------------------------------------------


def _uncommented_numeric_fields(path: Path) -> tuple[int, list[str]]:
    """Count numeric keyword arguments / dict entries and list those without a comment.

    A field counts as commented when a ``#`` comment sits on its line or on the line just above.
    """
    tokens = list(tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline))
    comment_lines = {tok.start[0] for tok in tokens if tok.type == tokenize.COMMENT}
    significant = [
        tok
        for tok in tokens
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT)
    ]
    depth, found, missing = 0, 0, []
    for i, tok in enumerate(significant):
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
        if depth == 0 or i + 2 >= len(significant):
            continue
        key_then_value = (tok.type == tokenize.NAME and significant[i + 1].string == "=") or (
            tok.type == tokenize.STRING and significant[i + 1].string == ":"
        )
        if not key_then_value:
            continue
        value = significant[i + 2]
        if value.string in "+-" and i + 3 < len(significant):
            value = significant[i + 3]
        if value.type != tokenize.NUMBER:
            continue
        found += 1
        line = tok.start[0]
        if line not in comment_lines and line - 1 not in comment_lines:
            missing.append(f"{path.name}:{line}: {tok.string}")
    return found, missing


@pytest.mark.parametrize(
    "module",
    [presets_cpu, presets_gpu, presets_gpu_current, presets_links, presets_tpu],
    ids=lambda m: m.__name__,
)
def test_every_numeric_field_has_a_source_comment(module):
    found, missing = _uncommented_numeric_fields(Path(module.__file__))
    assert found >= 20, "the checker found suspiciously few numeric fields"
    assert not missing, "numbers without a source comment:\n" + "\n".join(missing)


def test_the_dgx_a100_cluster_is_hosted_by_two_epyc_7742_as_the_user_guide_says():
    # Before: a Xeon E5-2630 v3 stood in for the host (issue 27, 11).
    from parsim.hardware.presets_cluster import CLUSTER_PRESETS

    host = PROCESSORS[CLUSTER_PRESETS["dgx-a100"].host]
    assert host.id == "dual-epyc-7742" and host.cores == 2 * 64
    assert host.memory.peak_bandwidth_Bps == 2 * 8 * 3200e6 * 8  # 8 channels DDR4-3200 per socket
    assert host.memory.capacity_B == 2 * 2**40  # 2 TB in the DGX A100 640 GB


def test_blackwell_to_hopper_gemm_ratio_is_the_benchmarks():
    """One cuBLASLt FP8 GEMM benchmark on a GB200 and an H200 (Azure/AI-benchmarking-guide: 8192^3 and
    6144x12288x12288, 2876.6 and 2895.6 vs 1300.6 and 1318.0 TFLOP/s): parsim's effective FP8 rates
    keep its ratio, and the B200 reaches the same share of its own (lower-power) peak."""

    def rate(pid: str) -> float:
        spec = PROCESSORS[pid]
        return spec.peak_flops_per_s("float8", matrix=True) * spec.matmul_efficiency

    measured = (2876.6 + 2895.6) / (1300.6 + 1318.0)
    assert rate("gb200") / rate("h200") == pytest.approx(measured, rel=1e-3)
    assert PROCESSORS["b200"].matmul_efficiency == PROCESSORS["gb200"].matmul_efficiency
    assert rate("b200") / rate("gb200") == pytest.approx(4.5 / 5.0)
