"""The published comparison shipped with parsim: read at once, refused when it is not one, and
counted behind ``published.csv`` when rows were added or changed since it was made (issue 27, 10)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from parsim.base.errors import ParsimError
from parsim.studies.published import SCHEMA, Row, load_rows
from parsim.studies.published_snapshot import (
    MAX_FIGURE_BYTES,
    behind,
    figure_path,
    figure_stamp,
    load_snapshot,
    shipped_figure,
    snapshot_path,
)


def row(id: str, value: float) -> Row:
    return Row(id, "kernels", "matmul", {}, "v100-pcie", None, None, "latency_s", value, "src")


def report(*rows: tuple[str, float]) -> dict:
    return {"schema": SCHEMA, "rows": [{"id": i, "published": v} for i, v in rows], "classes": {}}


def test_behind_counts_added_changed_and_removed_rows():
    shipped = report(("a", 1.0), ("b", 2.0), ("gone", 3.0))
    assert behind(shipped, (row("a", 1.0), row("b", 2.0), row("gone", 3.0))) == 0
    # "b" changed, "new" added, "gone" removed
    assert behind(shipped, (row("a", 1.0), row("b", 2.5), row("new", 4.0))) == 3


def test_the_shipped_snapshot_loads_and_covers_the_shipped_rows():
    data = load_snapshot()  # a page opens on it: no prediction
    assert data is not None and snapshot_path().name == "published_snapshot.json"
    assert {"rows", "classes", "created_at"} <= set(data)
    ids = {r.id for r in load_rows()}
    assert len(data["rows"]) >= 100 and len({r["id"] for r in data["rows"]} & ids) >= 100
    assert behind(data) < len(ids)  # regenerate: parsim validate --published --out <snapshot_path()>


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "cannot read the published snapshot"),
        (json.dumps({"schema": "other/1", "rows": [], "classes": {}}), f"'schema' must be '{SCHEMA}'"),
        (json.dumps({"schema": SCHEMA, "rows": {}, "classes": {}}), "needs 'rows' (a list)"),
    ],
)
def test_a_file_that_is_not_a_published_report_is_refused_with_what_is_wrong(tmp_path, text, message):
    path = tmp_path / "snapshot.json"
    path.write_text(text)
    with pytest.raises(ParsimError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_snapshot(path)
    assert load_snapshot(tmp_path / "missing.json") is None


# --- the shipped figure (issue 28 item 5: the Measure page opens on it without drawing) ---


def test_the_shipped_figure_is_the_shipped_snapshot_s():
    # regenerate both at once: parsim validate --published --out <snapshot_path()> --plot <figure_path()>
    data = load_snapshot()
    png = shipped_figure(data)
    assert png is not None, f"{figure_path()} is missing or drawn from another report than the snapshot's"
    assert png.startswith(b"\x89PNG") and figure_stamp(data).endswith(data["created_at"])


def test_a_figure_of_another_report_or_not_a_png_is_not_shown(tmp_path):
    data = load_snapshot()
    png = figure_path().read_bytes()
    other = tmp_path / "other.png"
    other.write_bytes(png)
    assert shipped_figure(data, other) == png
    assert shipped_figure({**data, "created_at": "2000-01-01T00:00:00+00:00"}, other) is None
    other.write_bytes(b"not a png, though it says Comment")
    assert shipped_figure(data, other) is None
    other.write_bytes(png[:60])  # cut inside its chunks
    assert shipped_figure(data, other) is None
    other.write_bytes(png + b"\0" * MAX_FIGURE_BYTES)
    assert shipped_figure(data, other) is None
    assert shipped_figure(data, tmp_path / "missing.png") is None


def _validate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "parsim", "validate", *args], capture_output=True, text=True, timeout=300
    )


def test_validate_published_plot_writes_the_figure_stamped_with_its_report(tmp_path):
    plot, out = tmp_path / "published.png", tmp_path / "published.json"
    done = _validate("--published", "--class", "copy", "--summary", "--out", str(out), "--plot", str(plot))
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    assert list(data["classes"]) == ["copy"]
    assert shipped_figure(data, plot) == plot.read_bytes()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--plot", "x.png"), "'--plot' goes with --published"),
        (("--published", "--plot", "x.txt"), "'--plot' must end in .png"),
    ],
)
def test_validate_plot_refuses_bad_use_with_exit_2(tmp_path, args, message):
    done = subprocess.run(
        [sys.executable, "-m", "parsim", "validate", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 2 and message in done.stderr
    assert not list(tmp_path.iterdir())
