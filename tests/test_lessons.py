"""The lessons are package data: found by name, listed, copied out, and installed with the code."""

from __future__ import annotations

import json
import os
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest

from parsim.base.errors import ParsimError
from parsim.studies import lessons
from parsim.studies.scenarios import load_scenario, scenario_paths

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "parsim"


def test_the_lessons_live_in_the_package_and_nowhere_else():
    assert lessons.SHIPPED == PACKAGE / "lessons"
    assert not (ROOT / "scenarios").exists()  # one copy: no second folder to drift from it
    assert "flynn_vector_add" in lessons.names() and len(lessons.names()) == 27  # issue 27: +3
    assert scenario_paths() == lessons.lesson_paths() == sorted(lessons.SHIPPED.glob("*.toml"))


def test_every_file_in_the_package_that_is_not_code_is_declared_package_data():
    """A lesson (or any data file) missing from ``package-data`` would vanish from a wheel."""
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    data = [
        p.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    ]
    assert [f for f in data if not any(fnmatch(f, g) for g in globs["parsim"])] == []
    assert {"lessons/flynn_vector_add.toml", "lessons/hardware/a100_25gbe.toml"} <= set(data)


@pytest.mark.parametrize("name", lessons.names())
def test_every_lesson_loads_by_its_name(name):
    assert load_scenario(name) == load_scenario(lessons.SHIPPED / f"{name}.toml")


def test_a_path_is_still_a_path_and_a_name_is_looked_up():
    path = lessons.SHIPPED / "conv3x3.toml"
    assert lessons.find(path) == path and lessons.find(str(path)) == path
    assert lessons.find("conv3x3") == path
    assert lessons.find("missing/x.toml") == Path("missing/x.toml")  # reading it says it is missing
    with pytest.raises(ParsimError, match="no such scenario file"):
        load_scenario("missing.toml")


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("flyn_vector_add", "did you mean flynn_vector_add?"),
        ("llm", "did you mean llm_70b_gpus, llm_batching_decode, llm_kv_cache?"),
        ("zzz", "unknown lesson 'zzz': (`parsim lessons` lists them"),
    ],
)
def test_an_unknown_name_is_refused_with_the_closest_names(typed, expected):
    with pytest.raises(ParsimError, match="unknown lesson") as info:
        load_scenario(typed)
    assert expected in str(info.value) and "\n" not in str(info.value)


def test_parsim_run_takes_a_name_and_refuses_a_misspelt_one_in_one_line(cli):
    code, out, err = cli("run", "flynn_vector_add", "--no-lesson")
    assert code == 0 and "SISD" in out, err
    code, out, err = cli("run", "flynn_vectoradd")
    assert code == 2 and out == ""
    assert err == (
        "error: unknown lesson 'flynn_vectoradd': did you mean flynn_vector_add? "
        "(`parsim lessons` lists them; a scenario file is given by its path)\n"
    )


def test_parsim_lessons_lists_every_name_with_its_title(cli):
    code, out, _ = cli("lessons")
    lines = out.splitlines()
    assert code == 0 and [line.split()[0] for line in lines] == lessons.names()
    assert any(line.split(None, 1)[1] == "Flynn's taxonomy on one vector add" for line in lines)
    code, out, _ = cli("lessons", "--json")
    assert code == 0 and {"name": "conv3x3", "title": "3x3 convolution: embarrassingly parallel"} in (
        json.loads(out)
    )


def test_parsim_lessons_name_prints_the_file(cli):
    code, out, _ = cli("lessons", "streams_overlap")
    assert code == 0 and out == (lessons.SHIPPED / "streams_overlap.toml").read_text()


def test_a_copied_lesson_brings_its_hardware_files_and_runs_as_the_original(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("lessons", "cluster_allreduce_overlap", "--copy-to", "mine.toml")
    assert code == 0, err
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*.toml")) == [
        "hardware/a100_100g_roce.toml",
        "hardware/a100_25gbe.toml",
        "mine.toml",
    ]
    assert (tmp_path / "mine.toml").read_text() == (
        lessons.SHIPPED / "cluster_allreduce_overlap.toml"
    ).read_text()
    copied, shipped = load_scenario("mine.toml"), load_scenario("cluster_allreduce_overlap")
    clusters = {case.cluster for case in copied.cases}
    assert clusters == {"dgx-a100", "hardware/a100_100g_roce.toml", "hardware/a100_25gbe.toml"}  # beside it
    assert copied.model_dump(exclude={"cases"}) == shipped.model_dump(exclude={"cases"})
    # an edited copy is the user's: never overwritten
    code, _, err = cli("lessons", "cluster_allreduce_overlap", "--copy-to", "mine.toml")
    assert code == 2 and err == "error: '--copy-to': 'mine.toml' exists; parsim does not overwrite a lesson\n"
    # the same hardware files already there are kept; other text there is refused before writing
    assert cli("lessons", "cluster_allreduce_overlap", "--copy-to", "again.toml")[0] == 0
    (tmp_path / "hardware" / "a100_25gbe.toml").write_text("# edited\n")
    code, _, err = cli("lessons", "cluster_allreduce_overlap", "--copy-to", "third.toml")
    assert code == 2 and "a100_25gbe.toml' exists with other text" in err
    assert not (tmp_path / "third.toml").exists()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["lessons", "--copy-to", "x.toml"], "'--copy-to' needs a lesson's name"),
        (["lessons", "conv3x3", "--copy-to", "x.txt"], "'--copy-to' must end in .toml: 'x.txt'"),
        (["lessons", "a/conv3x3.toml"], "'NAME' must be a lesson's name (no folder, no .toml)"),
        (["lessons", "conv3x33"], "did you mean conv3x3?"),
    ],
)
def test_lessons_command_mistakes_are_one_line(cli, tmp_path, monkeypatch, args, expected):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(*args)
    assert code == 2 and expected in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_a_course_points_parsim_at_its_own_lessons(tmp_path, monkeypatch):
    (tmp_path / "mine.toml").write_text((lessons.SHIPPED / "conv3x3.toml").read_text())
    monkeypatch.setenv(lessons.FOLDER_VARIABLE, str(tmp_path))
    assert lessons.names() == ["mine"] and lessons.folder() == tmp_path
    assert load_scenario("mine").title == "3x3 convolution: embarrassingly parallel"
    with pytest.raises(ParsimError, match="unknown lesson 'conv3x3'"):
        load_scenario("conv3x3")


def test_a_workloads_lessons_are_found_from_the_lessons_themselves():
    from parsim.studies.lessons import using

    assert ("flynn_vector_add", lessons.titles()["flynn_vector_add"]) in using("vector_add")
    assert {name for name, _ in using("llm_load")} >= {
        "llm_load_queueing_knee",
        "llm_load_continuous_batching",
        "llm_load_chunked_prefill",
    }
    assert using("no_such_workload") == []


def test_copies_and_collectives_are_not_explained_by_a_roofline():
    from parsim.workloads.registry import WORKLOADS

    assert "roofline" not in WORKLOADS["copy"].figures and "roofline" not in WORKLOADS["allreduce"].figures
    assert WORKLOADS["matmul"].figures == ("timeline", "roofline", "breakdown")


def test_copy_to_never_reads_a_hardware_file_beside_it_through_a_link(cli, tmp_path, monkeypatch):
    """A link standing where the lesson's hardware file goes is neither followed nor read, even
    when it points at the very text the lesson needs (or at a FIFO, which would hang a read)."""
    monkeypatch.chdir(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shipped = lessons.SHIPPED / "hardware" / "a100_25gbe.toml"
    (elsewhere / "same.toml").write_text(shipped.read_text())
    (tmp_path / "hardware").mkdir()
    (tmp_path / "hardware" / "a100_25gbe.toml").symlink_to(elsewhere / "same.toml")
    code, _, err = cli("lessons", "cluster_allreduce_overlap", "--copy-to", "mine.toml")
    assert code == 2 and "a100_25gbe.toml' exists with other text" in err, err
    assert not (tmp_path / "mine.toml").exists()
    os.mkfifo(tmp_path / "hardware" / "a100_100g_roce.toml")
    (tmp_path / "hardware" / "a100_25gbe.toml").unlink()
    code, _, err = cli("lessons", "cluster_allreduce_overlap", "--copy-to", "mine.toml")
    assert code == 2 and "a100_100g_roce.toml' exists with other text" in err, err


def test_lessons_name_prints_the_lesson_never_a_file_of_that_name_here(cli, tmp_path, monkeypatch):
    """``parsim lessons NAME`` prints the lesson NAME, not a file (or a link) called NAME in the
    working folder; a lesson folder's unreadable file is refused in one line, not a traceback."""
    monkeypatch.chdir(tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("not a lesson\n")
    (tmp_path / "flynn_vector_add").symlink_to(secret)
    code, out, err = cli("lessons", "flynn_vector_add")
    assert (
        code == 0
        and out == (lessons.SHIPPED / "flynn_vector_add.toml").read_text()
        and "not a lesson" not in out
    )
    own = tmp_path / "course"
    own.mkdir()
    (own / "broken.toml").write_bytes(b"\xff title = 'x'")
    (own / "bad.toml").write_text("x [\n")
    os.mkfifo(own / "pipe.toml")
    monkeypatch.setenv(lessons.FOLDER_VARIABLE, str(own))
    for name, expected in (("broken", "is not UTF-8 text"), ("pipe", "is not a regular file")):
        code, _, err = cli("lessons", name)
        assert code == 2 and expected in err, err
    code, _, err = cli("lessons", "bad", "--copy-to", str(tmp_path / "o.toml"))
    assert code == 2 and "malformed TOML" in err, err
    code, out, _ = cli("lessons")  # the listing names each, unreadable or not, without hanging
    assert code == 0 and "broken" in out and "pipe" in out and "(not a readable lesson)" in out


def test_copy_to_never_writes_through_a_linked_hardware_folder(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "hardware").symlink_to(elsewhere)
    code, _, err = cli("lessons", "cluster_allreduce_overlap", "--copy-to", "mine.toml")
    assert code == 2 and "hardware' is a symbolic link; parsim does not write through links" in err, err
    assert list(elsewhere.iterdir()) == [] and not (tmp_path / "mine.toml").exists()
