"""Sweep output that survives interruption: a row journal, and the file the user asked for.

Every finished row is appended to a JSON-lines journal beside the output and flushed at once,
so Ctrl-C or a killed worker loses no finished row. The requested file (``.csv``, ``.parquet``
or ``.jsonl``) is rewritten from everything finished every few seconds and at the end, when the
journal is removed. Running the same sweep with the same output again reads both, and only the
missing points are computed.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import pandas

from parsim.errors import ParsimError
from parsim.paths import output_path

SUFFIXES = (".csv", ".parquet", ".jsonl")


def check_output(path: str | Path | None) -> Path | None:
    """Refuse an output path with an unknown suffix, in a missing or read-only folder, or a folder."""
    return None if path is None else output_path(path, SUFFIXES, "out")


def read_table(path: Path) -> pandas.DataFrame:
    """A finished sweep file as a DataFrame."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return pandas.read_csv(path, keep_default_na=False, na_values=[""])
    if suffix == ".parquet":
        return pandas.read_parquet(path)
    return pandas.read_json(path, lines=True)


class Store:
    """Rows of one sweep, one per point id: those finished before (resumed) and those added now."""

    def __init__(self, path: Path | None, flush_every_s: float = 2.0):
        self.path = path
        self.by_id: dict[str, dict] = {}
        self.frames: list[pandas.DataFrame] = []
        self.flush_every_s = flush_every_s
        self._last_flush = time.monotonic()
        self._journal = None
        if path is None:
            return
        if path.exists():
            try:
                self._keep(read_table(path).to_dict("records"))
            except Exception as exc:  # a damaged file must not be overwritten silently
                raise ParsimError(
                    f"{path}: cannot resume from it ({exc}); move it away to start afresh"
                ) from None
        journal = self.journal_path
        if journal.exists():
            for line in journal.read_text().splitlines():
                try:
                    self._keep([json.loads(line)])
                except json.JSONDecodeError:
                    continue  # the line being written when the process died
        self._journal = open(journal, "a")  # noqa: SIM115 - held open for the whole sweep

    def _keep(self, rows: list[dict]) -> None:
        for row in rows:
            self.by_id[row["point_id"]] = row  # a later row of the same point replaces the earlier one

    @property
    def rows(self) -> list[dict]:
        return list(self.by_id.values())

    @property
    def journal_path(self) -> Path:
        return self.path.with_name(self.path.name + ".journal.jsonl")

    @property
    def done(self) -> set[str]:
        """Points finished earlier (error rows are retried)."""
        done = {pid for pid, row in self.by_id.items() if not _text(row.get("error"))}
        for frame in self.frames:
            done.update(frame.loc[frame["error"].fillna("") == "", "point_id"])
        return done

    def add_frame(self, frame: pandas.DataFrame) -> None:
        """Many finished rows at once (the vectorised path), kept as a DataFrame."""
        self.frames.append(frame)
        if self._journal is not None:
            frame.to_json(self._journal, orient="records", lines=True)
            self._journal.write("\n")
            self._journal.flush()

    def add(self, row: dict) -> None:
        """One finished row: kept, and appended to the journal (flushed, so a killed process keeps it)."""
        self.by_id[row["point_id"]] = row
        if self._journal is not None:
            self._journal.write(json.dumps(row, default=_json_default) + "\n")
            self._journal.flush()
            if time.monotonic() - self._last_flush > self.flush_every_s:
                self.write()

    def frame(self) -> pandas.DataFrame:
        """Every finished row; a point computed twice keeps its newest row."""
        parts = ([pandas.DataFrame(self.rows)] if self.by_id else []) + self.frames
        if not parts:
            return pandas.DataFrame()
        frame = pandas.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0].reset_index(drop=True)
        return frame.drop_duplicates("point_id", keep="last", ignore_index=True)

    def write(self) -> None:
        """Rewrite the output file from every finished row (atomically, through a temporary file)."""
        if self.path is None:
            return
        frame = self.frame()
        temporary = self.path.with_name(self.path.name + ".tmp")
        suffix = self.path.suffix.lower()
        if suffix == ".csv":
            frame.to_csv(temporary, index=False)
        elif suffix == ".parquet":
            frame.to_parquet(temporary, index=False)
        else:
            frame.to_json(temporary, orient="records", lines=True)
        os.replace(temporary, self.path)
        if self._journal is not None:
            os.fsync(self._journal.fileno())  # the journal reaches the disk with each rewrite
        self._last_flush = time.monotonic()

    def close(self, finished: bool) -> None:
        """Write the output; drop the journal once every point is in it."""
        self.write()
        if self._journal is not None:
            self._journal.close()
            self._journal = None
            if finished:
                self.journal_path.unlink(missing_ok=True)


def _text(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def _json_default(value):
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return str(value)
