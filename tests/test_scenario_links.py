"""User-named files the front ends read are read by their names alone: a scenario file and the app's
calibrated hardware file, when a symbolic link stands at the name, are refused, not followed."""

from __future__ import annotations

import os

import pytest

from parsim.base.errors import ParsimError
from parsim.hardware.tomlio import dumps_hardware
from parsim.studies import lessons
from parsim.studies.scenarios import load_scenario


def test_a_scenario_file_behind_a_link_is_refused(tmp_path):
    lesson = lessons.find("flynn_vector_add")
    real = tmp_path / "real.toml"
    real.write_text(lesson.read_text(encoding="utf-8"), encoding="utf-8")
    assert load_scenario(real).title  # the file itself loads
    link = tmp_path / "link.toml"
    link.symlink_to(real)
    with pytest.raises(ParsimError, match="is a symbolic link; parsim does not read through links"):
        load_scenario(link)


def test_the_apps_calibrated_file_is_offered_only_when_it_is_one_read_by_name(tmp_path):
    pytest.importorskip("streamlit")
    from parsim.app.widgets import calibration_text
    from parsim.hardware import registry

    real = tmp_path / "this-machine.toml"
    text = dumps_hardware(registry.processor("xeon-e5-2630v3"))
    real.write_text(text, encoding="utf-8")
    assert calibration_text(real) == text
    link = tmp_path / "linked.toml"
    link.symlink_to(real)
    assert calibration_text(link) is None  # never read through the link
    (tmp_path / "other.toml").write_text("not = [hardware", encoding="utf-8")
    assert calibration_text(tmp_path / "other.toml") is None
    assert calibration_text(tmp_path / "missing.toml") is None


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda p: p.mkdir(), "is a folder, not a scenario file"),
        (lambda p: os.mkfifo(p), "is not a regular file"),  # refused, not waited on
        (lambda p: p.symlink_to(p.parent / "nowhere.toml"), "is a symbolic link"),
        (lambda p: None, "no such scenario file"),
    ],
)
def test_a_scenario_that_is_not_a_file_says_what_it_is(tmp_path, make, expected):
    path = tmp_path / "lesson.toml"
    make(path)
    with pytest.raises(ParsimError, match=expected):
        load_scenario(path)


def test_parsim_run_refuses_a_linked_scenario_in_one_line(cli, tmp_path):
    lesson = lessons.find("flynn_vector_add")
    real = tmp_path / "real.toml"
    real.write_text(lesson.read_text(encoding="utf-8"), encoding="utf-8")
    link = tmp_path / "link.toml"
    link.symlink_to(real)
    code, out, err = cli("run", str(link))
    assert (
        code == 2
        and out == ""
        and err == (f"error: {link} is a symbolic link; parsim does not read through links\n")
    ), err
