"""Well-kept libraries where a hand-written part stood: filelock, psutil, pandas ranks, one path check."""

from __future__ import annotations

from pathlib import Path

import pytest

from parsim.base.errors import ParsimError
from parsim.base.paths import output_path
from parsim.measure import calibrate
from parsim.studies.validate import spearman

RAW = {
    "gemm_float32_flops_per_s": 100e9,
    "gemm_float64_flops_per_s": 50e9,
    "gemm_float16_flops_per_s": 20e9,
    "exp_per_s": 1e9,
    "dispatch_s": 1e-6,
    "parallel_dispatch_s": 5e-6,
    "interpreted_element_s": 50e-9,
    "curve": [(1e4, 50e9, 100e9), (1e9, 10e9, 20e9)],
}


def test_spearman_gives_ties_their_average_rank():
    # Before: argsort of argsort gave the tie ranks 2 and 3 and reported a perfect 1.0.
    assert spearman([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(0.9486833, rel=1e-6)
    assert spearman([3, 2, 1], [10, 20, 30]) == pytest.approx(-1.0)
    assert spearman([5, 5, 5], [1, 2, 3]) == 0.0 and spearman([5, 5], [7, 7]) == 1.0


@pytest.mark.parametrize(
    ("reported", "clock", "efficiency"), [(3e9, 3e9, 100e9 / (32 * 2 * 3e9)), (None, None, 0.9)]
)
def test_calibration_takes_the_clock_from_the_os_or_from_the_measured_gemm(
    monkeypatch, reported, clock, efficiency
):
    # Before: an unreadable clock became an invented 3 GHz and unreadable memory an invented 16 GiB.
    monkeypatch.setattr(calibrate, "clock_Hz", lambda: reported)
    monkeypatch.setattr(calibrate, "simd_lanes", lambda: 32)
    spec = calibrate._spec(RAW, [("L1", 32e3, True)], cores=2)
    assert spec.matmul_efficiency == pytest.approx(efficiency)
    assert spec.clock_Hz == pytest.approx(clock or 100e9 / (32 * 2 * 0.9))
    import psutil

    assert spec.memory.capacity_B == psutil.virtual_memory().total


@pytest.mark.parametrize(
    ("name", "suffixes", "message"),
    [
        ("out.svg", (".png",), "'--plot' must end in .png: "),
        ("missing/out.png", (".png",), "folder "),
        ("a-folder.png", (".png",), "is a folder, not a file"),
    ],
)
def test_output_paths_are_checked_before_any_work(tmp_path, name, suffixes, message):
    (tmp_path / "a-folder.png").mkdir()
    with pytest.raises(ParsimError, match=message):
        output_path(tmp_path / name, suffixes, "--plot")
    assert output_path(tmp_path / "fine.PNG", (".png",), "--plot") == tmp_path / "fine.PNG"
    assert not list(tmp_path.glob(".parsim-probe-*"))  # the probe file is gone


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="no /proc on this system")
def test_a_pseudo_file_system_is_not_a_place_for_results():
    with pytest.raises(ParsimError, match="cannot write in '/proc'"):
        output_path("/proc/x.csv", (".csv",), "out")


def test_an_output_name_too_long_is_one_line_naming_the_option(tmp_path):
    # Path.is_dir raised ENAMETOOLONG (an OSError, without the option's name) on Python 3.11
    with pytest.raises(ParsimError, match=r"^'--trace': cannot write .*\.json \(File name too long\)$"):
        output_path(tmp_path / ("a" * 300 + ".json"), (".json",), "--trace")


def test_an_existing_output_that_is_not_a_regular_file_is_refused(tmp_path, cli):
    """A sweep reads an existing --out back to resume: a FIFO there would hang it (and a device
    stream forever), so an output that exists must be a regular file, refused in one line first."""
    import os

    fifo = tmp_path / "sw.csv"
    os.mkfifo(fifo)
    with pytest.raises(ParsimError, match=r"^'out': '.*sw\.csv' exists and is not a regular file$"):
        output_path(fifo, (".csv",), "out")
    args = ("sweep", "--set", "workload=vector_add", "--set", "device=laptop-4c-avx2")
    code, _, err = cli(*args, "--grid", "workload.n=1e3,1e4", "--out", str(fifo))
    assert code == 2 and "exists and is not a regular file" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sw.csv"]  # nothing written beside it
