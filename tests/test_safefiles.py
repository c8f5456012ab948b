"""Issue 23, item 1: parsim writes only where the user pointed and never through a link it did not
create — a sweep's journal, its output and temporaries, figures, hardware and report files."""

from __future__ import annotations

import os
import stat

import pytest

from parsim.base import safefiles
from parsim.base.errors import ParsimError
from parsim.hardware.presets import PROCESSORS
from parsim.hardware.tomlio import save_hardware
from parsim.studies.sweeps.store import Store

SWEEP = ["sweep", "--set", "workload=relu", "--set", "device=h100-sxm", "--grid", "workload.n=1e3,1e4"]


@pytest.fixture
def victim(tmp_path):
    """A file of the user's that a planted link points to: it must come out exactly as it was."""
    path = tmp_path / "victim.txt"
    path.write_text("precious\n")
    path.chmod(0o600)
    return path


def unchanged(path) -> bool:
    return path.read_text() == "precious\n" and stat.S_IMODE(path.stat().st_mode) == 0o600


def error_lines(err: str) -> list[str]:
    assert "Traceback" not in err, err
    return [line for line in err.splitlines() if line.startswith("error:")]


def test_a_journal_planted_as_a_link_is_refused_and_left_alone(cli, tmp_path, victim):
    """Regression: the sweep appended its rows into the link's target, then deleted the link."""
    out = tmp_path / "sweep.csv"
    journal = tmp_path / "sweep.csv.journal.jsonl"
    journal.symlink_to(victim)
    code, _, err = cli(*SWEEP, "--out", str(out))
    assert code == 2
    (line,) = error_lines(err)
    assert "symbolic link" in line and str(journal) in line
    assert unchanged(victim) and journal.is_symlink() and not out.exists()


def test_an_output_that_is_a_link_is_refused_before_any_work(cli, tmp_path, victim):
    out = tmp_path / "sweep.csv"
    out.symlink_to(victim)
    code, _, err = cli(*SWEEP, "--out", str(out))
    assert code == 2 and "symbolic link" in error_lines(err)[0]
    assert unchanged(victim) and out.is_symlink()


def test_a_figure_is_not_written_through_a_link(cli, tmp_path, victim):
    plot = tmp_path / "t.png"
    plot.symlink_to(victim)
    code, _, err = cli("predict", "vector_add", "n=1e3", "--device", "h100-sxm", "--plot", str(plot))
    assert code == 2 and "'--plot'" in error_lines(err)[0]
    assert unchanged(victim)


def test_a_hardware_file_is_not_written_through_a_link(tmp_path, victim):
    target = tmp_path / "gpu.toml"
    target.symlink_to(victim)
    with pytest.raises(ParsimError, match="symbolic link"):
        save_hardware(PROCESSORS["h100-sxm"], target)
    assert unchanged(victim)


def test_the_store_refuses_a_link_in_the_library_too(tmp_path, victim):
    out = tmp_path / "rows.jsonl"
    out.symlink_to(victim)
    with pytest.raises(ParsimError, match="symbolic link"):
        Store(out)
    assert unchanged(victim)


def test_replacing_writes_a_new_file_and_moves_it_over_the_target(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    safefiles.write_text(target, "new")
    assert target.read_text() == "new" and not target.is_symlink()
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]  # no temporary left behind


def test_a_failed_write_leaves_the_target_and_no_temporary(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), safefiles.replacing(target) as out:
        out.write("half")
        raise RuntimeError("killed")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_a_temporary_name_that_exists_is_never_reused(tmp_path, victim, monkeypatch):
    """O_EXCL: a file (or a link) planted at the temporary's name fails the write instead of feeding it."""
    planted = tmp_path / ".out.txt.planted.tmp"
    planted.symlink_to(victim)
    monkeypatch.setattr(safefiles, "temporary_name", lambda path, suffix=".tmp": planted)
    with pytest.raises(ParsimError, match="symbolic link"):
        safefiles.write_text(tmp_path / "out.txt", "data")
    assert unchanged(victim) and not (tmp_path / "out.txt").exists()


def test_appending_follows_no_link(tmp_path, victim):
    link = tmp_path / "journal.jsonl"
    link.symlink_to(victim)
    with pytest.raises(ParsimError, match="symbolic link"):
        safefiles.open_append(link)
    assert unchanged(victim)


@pytest.mark.skipif(not hasattr(os, "O_NOFOLLOW"), reason="O_NOFOLLOW is POSIX")
def test_every_open_for_writing_asks_the_kernel_not_to_follow():
    assert safefiles.NOFOLLOW == os.O_NOFOLLOW


def test_reading_a_folder_is_one_line_naming_it(tmp_path):
    # os.open of a folder succeeds read-only; os.fdopen then raised IsADirectoryError naming fd 3
    folder = tmp_path / "config.json"
    folder.mkdir()
    with pytest.raises(ParsimError, match=rf"^'model': {folder} is not a regular file$"):
        safefiles.read_text(folder, 1000, option="model")


def test_a_name_too_long_to_look_up_is_one_line_not_an_oserror(tmp_path):
    # Path.is_symlink of such a name raised ENAMETOOLONG inside the handler (Python 3.11): an
    # OSError reached API callers (llm("a/a/.../x.json"))
    name = tmp_path / ("a/" * 3000 + "x.json")
    with pytest.raises(ParsimError, match=r"^'model': cannot read .*x\.json \(File name too long\)$"):
        safefiles.read_text(name, 1000, option="model")


def test_read_bytes_names_what_stopped_it(tmp_path, victim):
    """The one reader both the text and the JSON readers stand on: each refusal has its kind, and the
    file a link points to is never read."""
    with pytest.raises(safefiles.Unreadable) as missing:
        safefiles.read_bytes(tmp_path / "absent", 100)
    assert missing.value.kind == "missing"
    (tmp_path / "link").symlink_to(victim)
    with pytest.raises(safefiles.Unreadable) as link:
        safefiles.read_bytes(tmp_path / "link", 100)
    assert link.value.kind == "link"
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(safefiles.Unreadable) as fifo:  # refused at once, never waited on
        safefiles.read_bytes(tmp_path / "fifo", 100)
    assert fifo.value.kind == "not-regular"
    (tmp_path / "folder").mkdir()
    with pytest.raises(safefiles.Unreadable) as folder:
        safefiles.read_bytes(tmp_path / "folder", 100)
    assert folder.value.kind == "folder"
    (tmp_path / "big").write_bytes(b"x" * 101)
    with pytest.raises(safefiles.Unreadable) as big:
        safefiles.read_bytes(tmp_path / "big", 100)
    assert (big.value.kind, big.value.size) == ("too-big", 101)
    assert safefiles.read_bytes(victim, 100) == b"precious\n"
    assert unchanged(victim)
