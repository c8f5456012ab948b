"""``parsim splits``: MFU and TFLOP/s per GPU describe the same FLOPs against the step's own peak.

Issue 28 noticed MFU looking 16x too large beside TFLOP/s per GPU. It is not mis-scaled: without
``dtype`` a step trains in float32, whose A100 peak is 19.5 TFLOP/s (not the 312 of the 16-bit
tensor cores, 16x more); the table now says which peak MFU is measured against.
"""

from __future__ import annotations

import pytest

from parsim.hardware import registry
from parsim.studies.splits import split_table


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_without_recomputation_mfu_is_tflops_over_the_dtypes_peak(dtype: str) -> None:
    rows = split_table(
        {"model": "gpt2", "batch": 8, "nodes": 1, "dtype": dtype}, "dgx-a100", method="analytic"
    )
    peak = registry.cluster_system(registry.cluster("dgx-a100"), 1).gpu.peak_flops_per_s(dtype, matrix=True)
    timed = [row for row in rows if row.mfu is not None]
    assert timed
    for row in timed:  # no recomputation: the model's FLOPs are every FLOP run
        assert row.mfu == pytest.approx(row.tflops_per_gpu * 1e12 / peak, rel=1e-12)


def test_the_table_names_the_peak_mfu_is_measured_against(cli) -> None:
    code, out, _ = cli("splits", "model=gpt2", "batch=8", "nodes=1", "--method", "analytic")
    assert code == 0
    assert out.strip().splitlines()[-1].startswith("MFU: the model's FLOPs")
    assert "a100-80gb's float32 peak, 19.5 TFLOP/s" in out
    code, out, _ = cli("splits", "model=gpt2", "batch=8", "nodes=1", "dtype=float16", "--method", "analytic")
    assert code == 0 and "float16 peak, 312.0 TFLOP/s" in out
