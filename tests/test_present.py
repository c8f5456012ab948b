"""The present GPU (issue 30, defect 10): which spec predicts what CuPy measures here, and how it
was chosen: this machine's calibration, the preset whose name/SM/memory rule matches, or a quick
calibration now. Tested with the CuPy stand-in reporting real devices' properties."""

from __future__ import annotations

import json
import re

import attrs
import pytest

from parsim.base.errors import ParsimError
from parsim.hardware.presets import PROCESSORS
from parsim.hardware.tomlio import save_hardware
from parsim.measure import present
from parsim.measure.present import NAME_PATTERNS, UNREPORTED, Identity, match_preset, present_gpu
from tests import cupy_standin

GIB = 2**30

# What CUDA reports on real boards (deviceQuery / nvidia-smi logs): name, SMs, total memory
REPORTED = {
    "gtx-980": ("GeForce GTX 980", 16, 4043 * 2**20),
    "gtx-1080": ("NVIDIA GeForce GTX 1080", 20, 8113 * 2**20),
    "k80": ("Tesla K80", 13, 11441 * 2**20),
    "t4": ("Tesla T4", 40, 15109 * 2**20),
    "v100-pcie": ("Tesla V100-PCIE-16GB", 80, 16160 * 2**20),
    "v100-sxm2": ("Tesla V100-SXM2-16GB", 80, 16160 * 2**20),
    "a100-40gb": ("NVIDIA A100-SXM4-40GB", 108, 40536 * 2**20),
    "a100-80gb": ("NVIDIA A100-SXM4-80GB", 108, 81251 * 2**20),
    "h100-pcie": ("NVIDIA H100 PCIe", 114, 81559 * 2**20),
    "h100-sxm": ("NVIDIA H100 80GB HBM3", 132, 85_031_714_816),
    "h200": ("NVIDIA H200", 132, 143771 * 2**20),
    "rtx-4090": ("NVIDIA GeForce RTX 4090", 128, 24564 * 2**20),
    # the current GPUs: the presets' own SMs, memory as the driver leaves it (a few % below the board's)
    "b200": ("NVIDIA B200", 148, 0.98 * PROCESSORS["b200"].memory.capacity_B),
    "gb200": ("NVIDIA GB200", 148, 0.98 * PROCESSORS["gb200"].memory.capacity_B),
    "h100-nvl": ("NVIDIA H100 NVL", 132, 95830 * 2**20),
    "a100-pcie-40gb": ("NVIDIA A100-PCIE-40GB", 108, 40536 * 2**20),
    "a100-pcie-80gb": ("NVIDIA A100 80GB PCIe", 108, 81251 * 2**20),
    "l40s": ("NVIDIA L40S", 142, 46068 * 2**20),
    "a10g": ("NVIDIA A10G", 80, 23028 * 2**20),
    "l4": ("NVIDIA L4", 58, 23034 * 2**20),
    "rtx-3090": ("NVIDIA GeForce RTX 3090", 82, 24268 * 2**20),
    "rtx-a6000": ("NVIDIA RTX A6000", 84, 48685 * 2**20),
    # what ROCm reports (rocminfo "Marketing Name", CUs, memory): Azure ND MI300X v5 and an MI250X GCD
    "mi300x": ("AMD Instinct MI300X", 304, 196288 * 2**20),
    "mi250x": ("AMD Instinct MI250X", 110, 65520 * 2**20),
}

# Neighbours that must match no preset: same family, another board
NEIGHBOURS = [
    ("NVIDIA GeForce GTX 1080 Ti", 28, 11 * GIB),
    ("GeForce GTX 980 Ti", 22, 6 * GIB),
    ("Tesla V100-PCIE-32GB", 80, 32 * GIB),
    ("Tesla V100S-PCIE-32GB", 80, 32 * GIB),
    ("Tesla V100-SXM2-32GB", 80, 32 * GIB),
    ("NVIDIA GH200 480GB", 132, 96 * GIB),
    ("NVIDIA H200 NVL", 132, 141 * GIB),
    ("NVIDIA GeForce RTX 4090 D", 114, 24 * GIB),
    ("NVIDIA GeForce RTX 3090 Ti", 84, 24 * GIB),
    ("NVIDIA L40", 142, 48 * GIB),
    ("NVIDIA A10", 72, 24 * GIB),
    ("NVIDIA RTX 6000 Ada Generation", 142, 48 * GIB),
    ("Stand-in GPU", 108, 16 * GIB),
    ("AMD Instinct MI250", 104, 64 * GIB),  # the MI250's GCD: 104 CUs
    ("AMD Instinct MI300A", 228, 128 * GIB),
    ("AMD Instinct MI325X", 304, 256 * GIB),
    ("AMD Instinct MI300X", 38, 24 * GIB),  # one XCD of an MI300X in CPX partition mode
]


def test_every_gpu_preset_has_a_rule():
    gpus = {key for key, spec in PROCESSORS.items() if spec.kind == "gpu"} - UNREPORTED
    assert set(NAME_PATTERNS) == gpus
    assert set(REPORTED) == gpus


@pytest.mark.parametrize("preset", sorted(REPORTED))
def test_each_real_device_matches_its_own_preset_only(preset):
    name, sms, memory = REPORTED[preset]
    assert match_preset(Identity(name, sms, memory)) == preset
    hits = [p for p, pattern in NAME_PATTERNS.items() if re.fullmatch(pattern, name, re.IGNORECASE)]
    assert hits == [preset]  # the name alone already singles it out


@pytest.mark.parametrize(("name", "sms", "memory"), NEIGHBOURS)
def test_neighbouring_boards_match_no_preset(name, sms, memory):
    assert match_preset(Identity(name, sms, memory)) is None


def test_sm_count_and_memory_are_both_required():
    name, sms, memory = REPORTED["h100-sxm"]
    assert match_preset(Identity(name, sms - 18, memory)) is None  # a cut-down part
    assert match_preset(Identity(name, sms, memory * 1.2)) is None  # more memory than the preset's
    assert match_preset(Identity(name.lower(), sms, memory)) == "h100-sxm"  # case does not matter


def install(monkeypatch, preset=None):
    device = None
    if preset is not None:
        name, sms, memory = REPORTED[preset]
        device = {**cupy_standin.H100_SXM, "name": name.encode(), "multiProcessorCount": sms}
        device["totalGlobalMem"] = memory
    return cupy_standin.install(monkeypatch, device=device)


def refuse_calibration():
    raise AssertionError("a known GPU was calibrated")


def test_an_h100_is_predicted_as_h100_sxm_and_named(monkeypatch, tmp_path):
    install(monkeypatch, "h100-sxm")
    found = present_gpu(tmp_path, calibrate=refuse_calibration)
    assert found.how == "preset" and found.device is PROCESSORS["h100-sxm"]
    assert found.label == "predicted for h100-sxm (matched NVIDIA H100 80GB HBM3)"
    expected = found.predict("matmul", {"m": 4096, "n": 4096, "k": 4096})
    from parsim.methods.predict import predict

    direct = predict("matmul", {"m": 4096, "n": 4096, "k": 4096}, device="h100-sxm").latency_s
    assert expected.latency_s == pytest.approx(direct, rel=1e-12)


def test_an_h200_is_predicted_as_h200(monkeypatch, tmp_path):
    install(monkeypatch, "h200")
    found = present_gpu(tmp_path, calibrate=refuse_calibration)
    assert found.device.id == "h200" and "matched NVIDIA H200" in found.label


def gpu_calibration_file(folder, name, sms, bandwidth=2.5e12):
    spec = attrs.evolve(
        PROCESSORS["h100-sxm"],
        id="this-machine-gpu",
        name=f"{name} (calibrated)",
        cores=sms,
        memory=attrs.evolve(PROCESSORS["h100-sxm"].memory, bandwidth_Bps=bandwidth),
    )
    save_hardware(spec, folder / "this-machine-gpu.toml", {"source": "parsim calibrate (GPU) --quick"})
    return spec


def test_this_machines_calibration_of_this_gpu_wins(monkeypatch, tmp_path):
    install(monkeypatch, "h100-sxm")
    gpu_calibration_file(tmp_path, "NVIDIA H100 80GB HBM3", 132, bandwidth=2.5e12)
    found = present_gpu(tmp_path, calibrate=refuse_calibration)
    assert found.how == "calibration" and found.device.memory.bandwidth_Bps == 2.5e12
    assert found.label.endswith("calibrated on this machine")


def test_a_calibration_of_another_gpu_is_not_used_and_said_so(monkeypatch, tmp_path):
    install(monkeypatch, "h100-sxm")
    gpu_calibration_file(tmp_path, "Tesla V100-SXM2-16GB", 80)
    found = present_gpu(tmp_path, calibrate=refuse_calibration)
    assert found.how == "preset" and found.device.id == "h100-sxm"
    assert "describes another GPU (Tesla V100-SXM2-16GB (calibrated), 80 SMs)" in found.note


def test_an_unknown_gpu_is_calibrated_now_once(monkeypatch, tmp_path):
    install(monkeypatch)  # "Stand-in GPU": no preset
    calls = []

    def quick():
        calls.append(1)
        name = "Stand-in GPU (calibrated)"
        calibrated = attrs.evolve(PROCESSORS["a100-40gb"], id="this-machine-gpu", name=name)
        return calibrated, None

    found = present_gpu(tmp_path, calibrate=quick)
    assert calls == [1] and found.how == "calibrated now"
    assert found.label == "predicted for Stand-in GPU, calibrated on this machine just now (quick, not saved)"
    assert not list(tmp_path.iterdir())  # nothing written


def test_a_failed_calibration_of_an_unknown_gpu_is_one_line(monkeypatch, tmp_path):
    install(monkeypatch)

    def broken():
        raise ParsimError("'bandwidth_Bps' must be > 0: -1.0")

    with pytest.raises(ParsimError, match=r"^Stand-in GPU matches no preset, and calibrating it failed: "):
        present_gpu(tmp_path, calibrate=broken)


# --- every front end asks present_gpu: the CLI --------------------------------------------------


def test_cli_measure_on_an_h100_predicts_for_h100_sxm_and_names_it(monkeypatch, tmp_path, cli):
    install(monkeypatch, "h100-sxm")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("measure", "vector_add", "n=1e6", "--backend", "cupy", "--budget", "0.01")
    assert code == 0, err
    from parsim.methods.predict import predict

    expected = predict("vector_add", {"n": 1e6}, device="h100-sxm").latency_s
    (line,) = [line for line in out.splitlines() if line.strip().startswith("predicted")]
    assert line.endswith("predicted for h100-sxm (matched NVIDIA H100 80GB HBM3)")
    from tests.apptest import seconds

    shown = seconds(" ".join(line.split()[1:3]))
    assert shown == pytest.approx(expected, rel=0.01)  # printed to 3 significant digits
    code, out, err = cli("measure", "vector_add", "n=1e6", "--backend", "cupy", "--budget", "0.01", "--json")
    document = json.loads(out)
    assert document["predicted_s"] == pytest.approx(expected, rel=1e-9)
    assert document["predicted_for"] == "predicted for h100-sxm (matched NVIDIA H100 80GB HBM3)"


def test_cli_measure_on_the_cpu_predicts_nothing_for_a_gpu(tmp_path, monkeypatch, cli):
    monkeypatch.chdir(tmp_path)
    code, out, _ = cli("measure", "vector_add", "n=1000", "--budget", "0.01", "--json")
    assert code == 0 and "predicted_for" not in json.loads(out)


# --- on a machine with an NVIDIA GPU -------------------------------------------------------------


@pytest.mark.gpu
def test_the_real_gpu_is_named_and_predicted(tmp_path, cli, monkeypatch):
    identity = present.identify()
    preset = match_preset(identity)
    found = present_gpu(tmp_path)  # no calibration there: a preset, or one measured now
    assert found.identity == identity and found.how == ("preset" if preset else "calibrated now")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("measure", "vector_add", "n=1e7", "--backend", "cupy", "--budget", "0.05")
    assert code == 0 and found.label in out, err
    if identity.name == "NVIDIA H100 80GB HBM3":
        assert preset == "h100-sxm"


@pytest.mark.gpu
def test_record_on_the_real_gpu(tmp_path, monkeypatch):
    from parsim.studies import measured, validate

    monkeypatch.setattr(measured, "GRID", (("vector_add", {"n": 1e6}), ("copy", {"n": 1e6})))
    data = measured.record(tmp_path / "here.json", budget_s=0.05)
    assert validate.load_report(tmp_path / "here.json")["device"] == data["device"]
    assert len(data["rows"]) == 2 and data["machine"]["gpu"].startswith(data["device"])
