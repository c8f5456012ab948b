"""The published comparison as shipped: predicted once, shown at once.

Predicting every published run (``parsim validate --published``) takes about a minute, and the
Measure page must open on its figure, not on a button. So parsim ships that report as it was when
the package was made, ``parsim/data/published_snapshot.json``, written by the same command
(``parsim validate --published --out parsim/data/published_snapshot.json``), the way a printed
timetable is posted at the stop while the live one is a phone call away. The page shows the
snapshot with its date; pressing a button predicts again with the installed model.

A snapshot can fall behind ``published.csv``: rows added, changed or removed since it was made.
``behind`` counts them from the two files alone (no prediction), so the page can say so in one
line instead of quietly showing an old comparison as today's.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from parsim.base.errors import ParsimError
from parsim.studies.published import SCHEMA, Row, load_rows

MAX_SNAPSHOT_BYTES = 20_000_000
"""A snapshot of a few hundred rows is well under a megabyte; anything this large is not one."""


def snapshot_path() -> Path:
    """Where the shipped snapshot lives (package data beside ``published.csv``)."""
    return Path(str(resources.files("parsim") / "data" / "published_snapshot.json"))


def load_snapshot(path: str | Path | None = None) -> dict[str, Any] | None:
    """The shipped report, or None when there is none (a source tree where it was never written).

    Raises:
        ParsimError: a file that is too large, not JSON, or not a published report (its schema,
            its ``rows`` and ``classes``), named with what is wrong.
    """
    path = Path(path) if path is not None else snapshot_path()
    if not path.is_file():
        return None
    if path.stat().st_size > MAX_SNAPSHOT_BYTES:
        raise ParsimError(f"{path}: larger than {MAX_SNAPSHOT_BYTES} bytes: not a published snapshot")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ParsimError(f"{path}: cannot read the published snapshot ({exc})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ParsimError(f"{path}: 'schema' must be {SCHEMA!r}: not a published report")
    if not isinstance(data.get("rows"), list) or not isinstance(data.get("classes"), dict):
        raise ParsimError(f"{path}: a published report needs 'rows' (a list) and 'classes' (a table)")
    return data


def behind(data: dict[str, Any], rows: tuple[Row, ...] | None = None) -> int:
    """How many published rows the snapshot does not describe as ``published.csv`` has them now:
    rows added or whose value changed since it was made, plus rows it has that were removed."""
    current = {row.id: row.value for row in (rows if rows is not None else load_rows())}
    shipped = {row.get("id"): row.get("published") for row in data["rows"] if isinstance(row, dict)}
    changed = sum(1 for key, value in current.items() if shipped.get(key) != value)
    removed = sum(1 for key in shipped if key not in current)
    return changed + removed
