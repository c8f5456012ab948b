"""Sweep output that survives interruption, stays small in memory, and is never mixed up.

Every finished row is appended to a JSON-lines journal beside the output and flushed at once,
so Ctrl-C, ``kill -9`` or a killed worker loses no finished row. The requested file (``.csv``,
``.parquet`` or ``.jsonl``) is rebuilt from the previous file and the journal's new rows, chunk
by chunk (``parsim.studies.sweeps.tables``), now and then while the sweep runs and at the end, when the
journal is removed. Rerunning the same sweep reads both, and only the missing points are
computed.

Memory does not grow with the sweep: the store remembers each row's point id (8 bytes) and
whether it failed, not the row; only a caller that wants the rows back (``keep``: the Python
API, measuring) holds them. The journal is locked while a sweep writes, so a second sweep on
the same output is refused in one line instead of interleaving its rows; and an output that
belongs to another sweep (other workloads, other grid fields, not a sweep at all) is refused
naming the difference instead of being resumed into.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import numpy
import pandas

from parsim.base import safefiles
from parsim.base.errors import ParsimError
from parsim.base.paths import output_path
from parsim.studies.sweeps.grid import among, id_numbers
from parsim.studies.sweeps.tables import header, json_frames, json_lines, read_chunks, write_chunks

try:  # POSIX; elsewhere sweeps on one output are not guarded against each other
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

SUFFIXES = (".csv", ".parquet", ".jsonl")
WRITE_SHARE = 0.1  # at most this share of a sweep's time goes to rewriting its file before the end
ROW_S = 20e-6  # a first guess of the seconds a rewrite takes per row (then measured)


def check_output(path: str | Path | None) -> Path | None:
    """Refuse an output path with an unknown suffix, in a missing or read-only folder, or a folder."""
    return None if path is None else output_path(path, SUFFIXES, "out")


@attrs.frozen
class Shape:
    """What a sweep's output holds: its grid fields, the columns it may have, its workloads."""

    fields: tuple[str, ...]
    columns: frozenset[str]
    workloads: frozenset[str]


class Store:
    """Rows of one sweep, one per point id: those finished before (resumed) and those added now."""

    def __init__(self, path: Path | None, keep: bool = True, shape: Shape | None = None, flush_every_s=2.0):
        self.path, self.keep, self.flush_every_s = path, keep, flush_every_s
        self.parts: list[pandas.DataFrame] = []  # kept rows, oldest first (``keep`` only)
        self._rows: list[dict] = []  # kept rows not yet gathered into a part (one DataFrame per row is slow)
        self._ids: list[numpy.ndarray] = []  # every row's point id and failure, in arrival order
        self._failed: list[numpy.ndarray] = []
        self._count = 0  # rows in the arrays above
        self._written = (-1, 0, 0)  # (rows tracked then, rows, rows with an error) at the last write
        self._columns: dict[str, None] = {}
        self._journal = None
        self._tail = 0  # rows (of those above) not yet in the output file
        self._offset = 0  # the journal's bytes already in the output file
        self._last_write, self._row_s = time.monotonic(), ROW_S
        self.resumed = self.resumed_failed = 0
        self.measured: list[dict] = []  # rows this run tried to measure (``measure_note`` says why not)
        self.done = numpy.zeros(0, dtype=numpy.uint64)  # sorted ids finished without error before
        if path is None:
            return
        safefiles.refuse_link(path, "--out")  # neither read for resuming nor replaced: refused
        self._journal = _locked(self.journal_path, path)
        try:
            self._resume(shape)
        except BaseException:
            self._release(drop=False)
            raise

    @property
    def journal_path(self) -> Path:
        return self.path.with_name(self.path.name + ".journal.jsonl")

    def _resume(self, shape: Shape | None) -> None:
        """Read what earlier runs finished (the output, then the journal), refusing another sweep's."""
        workloads: set[str] = set()
        columns = {"point_id", "error", "workload"}
        try:
            file_rows = 0
            if self.path.exists():
                self._columns.update(dict.fromkeys(header(self.path)))
                if "point_id" not in self._columns:
                    listed = ", ".join(list(self._columns)[:8]) or "none"
                    raise ParsimError(
                        f"{self.path} is not a parsim sweep output (no 'point_id' column; "
                        f"columns: {listed}): move it away or give another --out"
                    )
                wanted = None if self.keep else [c for c in self._columns if c in columns]
                for chunk in read_chunks(self.path, wanted):
                    self._track(chunk, workloads, keep=self.keep)
                    file_rows += len(chunk)
            if self.journal_path.stat().st_size:
                for frame in json_frames(self.journal_path):
                    self._track(frame, workloads, keep=self.keep)
                _end_line(self._journal, self.journal_path)
        except ParsimError:
            raise
        except Exception as exc:  # a damaged file must not be overwritten silently
            raise ParsimError(
                f"{self.path}: cannot resume from it ({type(exc).__name__}: {exc}); "
                "move it away to start afresh"
            ) from None
        self._tail = file_rows  # the journal's rows are all newer than the file
        if shape is not None and self._ids:
            _check_belongs(self.path, shape, list(self._columns), workloads)
        ids, failed = self._latest()
        self.resumed, self.resumed_failed = len(ids), int(failed.sum())
        self.done = numpy.sort(ids[~failed])

    def _track(self, frame: pandas.DataFrame, workloads: set | None = None, keep: bool = False) -> None:
        """Remember the ids and failures of ``frame``'s rows (and the rows themselves with ``keep``)."""
        frame = _identified(frame)
        errors = frame["error"] if "error" in frame else pandas.Series("", index=frame.index)
        self._remember(id_numbers(frame["point_id"]), (errors.fillna("").astype(str) != "").to_numpy())
        self._columns.update(dict.fromkeys(frame.columns))
        if workloads is not None and "workload" in frame:
            workloads.update(str(w) for w in frame["workload"].dropna().unique())
        if keep:
            self._gather()
            self.parts.append(frame)

    def _gather(self) -> None:
        """Kept single rows become one part, before anything newer is kept."""
        if self._rows:
            self.parts.append(pandas.DataFrame.from_records(self._rows))
            self._rows = []

    def _remember(self, ids: numpy.ndarray, failed: numpy.ndarray) -> None:
        self._ids.append(ids)
        self._failed.append(failed)
        self._count += len(ids)
        if len(self._ids) > 1024:  # rows one at a time: a few arrays, not one per row
            self._ids, self._failed = [numpy.concatenate(self._ids)], [numpy.concatenate(self._failed)]

    def _latest(self) -> tuple[numpy.ndarray, numpy.ndarray]:
        """Each point's id once, and whether its newest row failed."""
        if not self._ids:
            return numpy.zeros(0, dtype=numpy.uint64), numpy.zeros(0, dtype=bool)
        ids, failed = numpy.concatenate(self._ids), numpy.concatenate(self._failed)
        last = _last(ids)
        return ids[last], failed[last]

    def counts(self) -> tuple[int, int]:
        """``(rows, rows with an error)`` of the whole output, resumed rows included."""
        if self._written[0] == self._count:
            return self._written[1:]  # counted while writing: no sort of every id again
        ids, failed = self._latest()
        return len(ids), int(failed.sum())

    def add_frame(self, frame: pandas.DataFrame) -> None:
        """Many finished rows at once (the vectorised path), journaled in one write."""
        if self._journal is not None:
            self._journal.write(json_lines(frame))
            self._journal.flush()
        self._track(frame, keep=self.keep)
        self._maybe_write()

    def add_rows(self, rows: list[dict]) -> None:
        """Finished rows, appended to the journal (flushed, so a killed process keeps them)."""
        if not rows:
            return
        if self._journal is not None:
            self._journal.write("".join(_json_row(row) + "\n" for row in rows))
            self._journal.flush()
        failed = numpy.array([_text(row.get("error")) != "" for row in rows], dtype=bool)
        self._remember(id_numbers([row["point_id"] for row in rows]), failed)
        for row in rows:
            self._columns.update(dict.fromkeys(row))
        if self.keep:
            self._rows.extend(rows)
        self._maybe_write()

    def add(self, row: dict) -> None:
        """One finished row."""
        self.add_rows([row])

    def frame(self) -> pandas.DataFrame:
        """Every kept row; a point computed twice keeps its newest row."""
        self._gather()
        if not self.parts:
            return pandas.DataFrame()
        frame = pandas.concat(self.parts, ignore_index=True) if len(self.parts) > 1 else self.parts[0]
        frame = frame.drop_duplicates("point_id", keep="last", ignore_index=True)
        self.parts = [frame]
        return frame

    def _maybe_write(self) -> None:
        # Rebuilding the file rewrites every row: wait long enough (judged by the rows it would
        # write now) that rewrites take at most WRITE_SHARE of the sweep; the journal has the rows.
        cost = self._count * self._row_s
        wait = max(self.flush_every_s, cost / WRITE_SHARE)
        if self._journal is not None and time.monotonic() - self._last_write > wait:
            self.write()

    def write(self) -> None:
        """Rebuild the output file from itself and the journal's newer rows (replaced atomically)."""
        if self.path is None or self._journal is None:
            return
        if not self._ids and not self.path.exists():
            return  # nothing finished yet: no empty file
        start = time.monotonic()
        self._journal.flush()
        end = self._journal.tell()
        tail = _concatenated(self._ids, self._tail)
        counted = [0, 0]
        write_chunks(self.path, self._merged(tail, counted), list(self._columns))
        self._written = (self._count, *counted)
        os.fsync(self._journal.fileno())  # the journal reaches the disk with each rewrite
        self._offset, self._tail = end, self._count
        self._last_write = time.monotonic()
        self._row_s = (self._last_write - start) / max(self._tail, 1)

    def _merged(self, tail: numpy.ndarray, counted: list[int]) -> Iterator[pandas.DataFrame]:
        """The file's rows not redone since, then the journal's newer rows (each point's last).

        ``counted`` receives the rows and the rows with an error as they go by.
        """
        for chunk in self._merged_parts(tail):
            counted[0] += len(chunk)
            if "error" in chunk:
                counted[1] += int((chunk["error"].fillna("").astype(str) != "").sum())
            yield chunk

    def _merged_parts(self, tail: numpy.ndarray) -> Iterator[pandas.DataFrame]:
        order = numpy.argsort(tail, kind="stable")  # one sort answers both questions below
        redone = tail[order]
        keep = numpy.zeros(len(tail), dtype=bool)
        if len(tail):
            keep[order[numpy.append(redone[1:] != redone[:-1], True)]] = True  # each id's last row
        del order
        if self.path.exists():
            for chunk in read_chunks(self.path):
                yield chunk[~among(id_numbers(chunk["point_id"]), redone)]
        seen = 0
        for chunk in map(_identified, json_frames(self.journal_path, self._offset)):
            yield chunk[keep[seen : seen + len(chunk)]]
            seen += len(chunk)

    def close(self, finished: bool) -> None:
        """Write the output; drop the journal once every point is in it."""
        if self._journal is None:
            return
        try:
            self.write()
        except BaseException:
            self._release(drop=False)  # the file may lack rows: the journal keeps them
            raise
        self._release(drop=finished)

    def _release(self, drop: bool) -> None:
        """Unlock; the journal goes when asked (all is in the file) or when it holds nothing."""
        try:
            if drop or not self.journal_path.stat().st_size:
                self.journal_path.unlink(missing_ok=True)  # still locked: no other sweep sees it go
        finally:
            self._journal.close()
            self._journal = None


def _identified(frame: pandas.DataFrame) -> pandas.DataFrame:
    """The rows that have a point id (a stray line in a journal has none and is not a row)."""
    if "point_id" not in frame:
        return frame.iloc[:0].assign(point_id=pandas.Series(dtype=object))
    ids = frame["point_id"]
    return frame[ids.notna()] if ids.isna().any() else frame


def _concatenated(arrays: list[numpy.ndarray], start: int) -> numpy.ndarray:
    """``numpy.concatenate(arrays)[start:]`` without building the part before ``start``."""
    parts, seen = [], 0
    for array in arrays:
        if seen + len(array) > start:
            parts.append(array[max(0, start - seen) :])
        seen += len(array)
    return numpy.concatenate(parts) if parts else numpy.zeros(0, dtype=numpy.uint64)


def _last(ids: numpy.ndarray) -> numpy.ndarray:
    """Positions of each id's last occurrence, in order."""
    _, first_from_end = numpy.unique(ids[::-1], return_index=True)
    return numpy.sort(len(ids) - 1 - first_from_end)


def _locked(journal: Path, path: Path):
    """The journal opened for appending and locked; another sweep holding it is refused in one line."""
    while True:
        handle = safefiles.open_append(journal, "--out")  # never through a link; open for the whole sweep
        if fcntl is None:
            return handle
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise ParsimError(
                f"another sweep is writing {path}: wait for it to finish or give another --out"
            ) from None
        try:  # the sweep that held it may have finished and removed it: lock the live file
            if os.fstat(handle.fileno()).st_ino == os.stat(journal).st_ino:
                return handle
        except FileNotFoundError:
            pass
        handle.close()


def _end_line(journal, path: Path) -> None:
    """After a kill mid-line, start the next row on a line of its own (the torn line stays unread)."""
    with os.fdopen(os.open(path, os.O_RDONLY | safefiles.NOFOLLOW), "rb") as raw:
        raw.seek(-1, os.SEEK_END)
        torn = raw.read(1) != b"\n"
    if torn:
        journal.write("\n")
        journal.flush()


def _check_belongs(path: Path, shape: Shape, columns: list[str], workloads: set[str]) -> None:
    """Refuse to resume into an output that another sweep wrote, naming how they differ."""
    advice = "give another --out or move it away"
    if workloads and not workloads <= shape.workloads:
        theirs, ours = ", ".join(sorted(workloads)), ", ".join(sorted(shape.workloads))
        raise ParsimError(f"{path} holds a sweep of {theirs}, this one is of {ours}: {advice}")
    missing = [f for f in shape.fields if f not in columns]
    if missing:
        raise ParsimError(
            f"{path} holds another sweep: this one varies {', '.join(missing)}, "
            f"which its columns lack: {advice}"
        )
    foreign = [c for c in columns if c not in shape.columns]
    if foreign:
        raise ParsimError(
            f"{path} holds another sweep: its columns {', '.join(foreign[:6])} "
            f"are not among this one's: {advice}"
        )


def _text(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def _json_row(row: dict) -> str:
    """One row as strict JSON (NaN as null, so Arrow reads the journal at full speed)."""
    return json.dumps(
        {k: None if isinstance(v, float) and v != v else v for k, v in row.items()}, default=_json_default
    )


def _json_default(value):
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return str(value)
