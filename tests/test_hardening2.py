"""Issue 23 (hardening, round 2): silent wrong answers — each test failed on the main it was filed
against."""

from __future__ import annotations

import pytest

import parsim
from parsim.errors import ParsimError
from parsim.hardware.presets import LINKS, PROCESSORS
from parsim.hardware.presets_cluster import CLUSTER_PRESETS, NIC_PRESETS
from parsim.hardware.tomlio import dumps_hardware, load_hardware, loads_hardware

EVERY_PRESET = [*PROCESSORS, *LINKS, *CLUSTER_PRESETS, *NIC_PRESETS]


@pytest.mark.parametrize("preset", EVERY_PRESET)
def test_show_toml_of_every_preset_loads_back_as_the_same_spec(cli, tmp_path, preset):
    """Item 8: ``hardware show dgx-a100 --toml`` and ``ib-hdr --toml`` wrote a [link] table."""
    code, out, err = cli("hardware", "show", preset, "--toml")
    assert code == 0, err
    path = tmp_path / f"{preset}.toml"
    path.write_text(out)
    spec = {**PROCESSORS, **LINKS, **CLUSTER_PRESETS, **NIC_PRESETS}[preset]
    assert load_hardware(path) == spec
    assert loads_hardware(dumps_hardware(spec)) == spec


def test_a_cluster_file_keeps_its_own_size(tmp_path):
    """Item 7: a cluster file's ``nodes = 4`` was ignored (the prediction ran one node)."""
    text = dumps_hardware(CLUSTER_PRESETS["dgx-a100"]).replace("\nnodes = 1\n", "\nnodes = 4\n")
    path = tmp_path / "four.toml"
    path.write_text(text)
    assert load_hardware(path).nodes == 4
    four = parsim.predict("allreduce", {"bytes": 1e9}, cluster=str(path))
    assert four.gpus == 32
    two = parsim.predict("allreduce", {"bytes": 1e9, "nodes": 2}, cluster=str(path))  # nodes= still wins
    assert two.gpus == 16


def test_a_gpu_without_nvlink_refuses_an_nvlink(cli):
    """Item 9: a T4 with an nvlink2 link was accepted (a T4 has no NVLink)."""
    with pytest.raises(ParsimError, match="'link': t4 has no NVLink, so nvlink2 cannot join its GPUs"):
        parsim.predict("data_parallel", {"gpus": 2}, device="t4", link="nvlink2")
    code, _, err = cli("predict", "data_parallel", "gpus=2", "--device", "t4", "--link", "nvlink2")
    assert code == 2 and err.count("\n") == 1
    # a board with NVLink may be given a faster one (a what-if), and any GPU a PCIe link
    assert (
        parsim.predict("data_parallel", {"gpus": 2}, device="v100-sxm2", link="nvlink3").peer_link
        == "nvlink3"
    )
    assert parsim.predict("data_parallel", {"gpus": 2}, device="t4", link="pcie4-x16").link == "pcie4-x16"
