"""The published comparison shipped with parsim: read at once, refused when it is not one, and
counted behind ``published.csv`` when rows were added or changed since it was made (issue 27, 10)."""

from __future__ import annotations

import json
import time

import pytest

from parsim.base.errors import ParsimError
from parsim.studies.published import SCHEMA, Row, load_rows
from parsim.studies.published_snapshot import behind, load_snapshot, snapshot_path


def row(id: str, value: float) -> Row:
    return Row(id, "kernels", "matmul", {}, "v100-pcie", None, None, "latency_s", value, "src")


def report(*rows: tuple[str, float]) -> dict:
    return {"schema": SCHEMA, "rows": [{"id": i, "published": v} for i, v in rows], "classes": {}}


def test_behind_counts_added_changed_and_removed_rows():
    shipped = report(("a", 1.0), ("b", 2.0), ("gone", 3.0))
    assert behind(shipped, (row("a", 1.0), row("b", 2.0), row("gone", 3.0))) == 0
    # "b" changed, "new" added, "gone" removed
    assert behind(shipped, (row("a", 1.0), row("b", 2.5), row("new", 4.0))) == 3


def test_the_shipped_snapshot_loads_quickly_and_covers_the_shipped_rows():
    started = time.perf_counter()
    data = load_snapshot()
    assert time.perf_counter() - started < 1.0  # a page opens on it: no prediction
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
