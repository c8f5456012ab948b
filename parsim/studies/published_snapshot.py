"""The published comparison as shipped: predicted once, shown at once.

Predicting every published run (``parsim validate --published``) takes about a minute, and the
Measure page must open on its figure, not on a button. So parsim ships that report as it was when
the package was made, ``parsim/data/published_snapshot.json``, written by the same command
(``parsim validate --published --out parsim/data/published_snapshot.json``), the way a printed
timetable is posted at the stop while the live one is a phone call away. The page shows the
snapshot with its date; pressing a button predicts again with the installed model.

Its figure (a panel per class) takes seconds to draw, so it ships too, as
``parsim/data/published_snapshot.png`` (``--plot`` of the same command), stamped with the report's
``created_at``: ``shipped_figure`` hands it out only beside the report it was drawn from.

A snapshot can fall behind ``published.csv``: rows added, changed or removed since it was made.
``behind`` counts them from the two files alone (no prediction), so the page can say so in one
line instead of quietly showing an old comparison as today's.
"""

from __future__ import annotations

import json
import struct
from importlib import resources
from pathlib import Path
from typing import Any

from parsim.base.errors import ParsimError
from parsim.studies.published import SCHEMA, Row, load_rows

MAX_SNAPSHOT_BYTES = 20_000_000
"""A snapshot of a few hundred rows is well under a megabyte; anything this large is not one."""
MAX_FIGURE_BYTES = 8_000_000
"""The figure of a few hundred rows is under a megabyte."""
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


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


def figure_stamp(data: dict[str, Any]) -> str:
    """The text a figure of the report ``data`` carries (a PNG ``Comment``), naming the report."""
    return f"parsim published report {data.get('created_at', '')}"


def figure_path() -> Path:
    """Where the shipped figure lives (beside the snapshot)."""
    return snapshot_path().with_suffix(".png")


def shipped_figure(data: dict[str, Any], path: str | Path | None = None) -> bytes | None:
    """The shipped PNG of the report ``data``, or None: no file, or one drawn from another report
    (its stamp differs), or not a PNG — then the caller draws the figure itself."""
    path = Path(path) if path is not None else figure_path()
    try:
        if not path.is_file() or path.stat().st_size > MAX_FIGURE_BYTES:
            return None
        png = path.read_bytes()
    except OSError:
        return None
    return png if _png_comment(png) == figure_stamp(data) else None


def _png_comment(png: bytes) -> str | None:
    """The ``Comment`` text chunk of a PNG (chunks: 4-byte length, 4-byte type, data, 4-byte CRC)."""
    if not png.startswith(_PNG_SIGNATURE):
        return None
    at = len(_PNG_SIGNATURE)
    while at + 8 <= len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        kind, body = png[at + 4 : at + 8], png[at + 8 : at + 8 + length]
        if kind == b"tEXt":
            key, _, text = body.partition(b"\0")
            if key == b"Comment":
                return text.decode("latin-1")
        if kind == b"IEND":
            return None
        at += 12 + length
    return None
