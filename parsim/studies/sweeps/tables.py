"""Sweep tables on disk, read and written in chunks: a sweep's file may hold millions of rows.

Nothing here holds a whole table: outputs (``.csv``, ``.parquet``, ``.jsonl``) and the row
journal are read ``ROWS`` rows at a time, and ``write_chunks`` writes a file from a stream of
DataFrames through a uniquely named temporary file that replaces the target at once (a reader
never sees half a file, and two writers never share a temporary name). Parquet needs one schema
for the whole file, so its chunks are first spilled as small Parquet parts, their schemas
unified (integers and floats to floats, anything else that disagrees to text), then copied.

Point ids are read as text everywhere: an id of sixteen decimal digits is not a number.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pandas

from parsim.base import safefiles

ROWS = 50_000  # rows per chunk read or written
BLOCK = 16 << 20  # bytes of JSON lines parsed at once (~30,000 rows)
TEXT = {"point_id": str, "case": str, "error": str}


def header(path: Path) -> list[str]:
    """The columns of an existing output, reading no more rows than needed."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return list(pandas.read_csv(path, nrows=0).columns)
    if suffix == ".parquet":
        import pyarrow.parquet

        return list(pyarrow.parquet.read_schema(path).names)
    columns: dict[str, None] = {}
    for chunk in read_chunks(path):
        columns.update(dict.fromkeys(chunk.columns))
    return list(columns)


def read_chunks(path: Path, columns: list[str] | None = None) -> Iterator[pandas.DataFrame]:
    """An output file as DataFrames of at most ``ROWS`` rows (only ``columns`` where given)."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        yield from pandas.read_csv(
            path,
            keep_default_na=False,
            na_values=[""],
            dtype={k: v for k, v in TEXT.items() if columns is None or k in columns},
            usecols=columns,
            chunksize=ROWS,
        )
    elif suffix == ".parquet":
        import pyarrow.parquet

        for batch in pyarrow.parquet.ParquetFile(path).iter_batches(batch_size=ROWS, columns=columns):
            yield batch.to_pandas()
    else:
        for frame in json_frames(path):
            yield frame if columns is None else frame.reindex(columns=columns)


def json_frames(path: Path, offset: int = 0) -> Iterator[pandas.DataFrame]:
    """The rows of a JSON-lines file (an output or the journal) from byte ``offset``, a block at a time.

    Arrow parses a block at C speed; a block it refuses — a line torn by a kill, a column whose
    type changes inside it — is read line by line, where a line that does not parse (the one being
    written when a process died) is skipped. Either way each whole JSON object is one row.
    """
    with open(path, "rb") as raw:
        raw.seek(offset)
        rest = b""
        while block := raw.read(BLOCK):
            block = rest + block
            cut = block.rfind(b"\n") + 1
            block, rest = block[:cut], block[cut:]
            if block:
                yield from _parsed(block)
        if rest.strip():
            yield from _parsed(rest)


def _parsed(block: bytes) -> Iterator[pandas.DataFrame]:
    import pyarrow
    import pyarrow.json

    text = pyarrow.schema([(name, pyarrow.string()) for name in TEXT])
    options = pyarrow.json.ParseOptions(explicit_schema=text, unexpected_field_behavior="infer")
    try:
        table = pyarrow.json.read_json(io.BytesIO(block), parse_options=options)
    except pyarrow.ArrowInvalid:
        rows = []
        for line in block.decode("utf-8", "replace").splitlines():
            try:
                row = json.loads(line) if line.strip() else None
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict):
                rows.append(row)
        if rows:
            yield pandas.DataFrame.from_records(rows)
        return
    for start in range(0, table.num_rows, ROWS):
        yield table.slice(start, ROWS).to_pandas()


def read_table(path: Path) -> pandas.DataFrame:
    """A whole sweep file as one DataFrame (for callers that want every row in memory)."""
    chunks = list(read_chunks(path))
    if not chunks:
        return pandas.DataFrame()
    return pandas.concat(chunks, ignore_index=True) if len(chunks) > 1 else chunks[0]


def json_lines(frame: pandas.DataFrame) -> str:
    """``frame``'s rows as JSON lines, floats to the last digit (``to_json`` keeps 10 or 15).

    Built column by column, so it costs about what ``to_json`` does; NaN and None are ``null``.
    """
    if not len(frame):
        return ""
    columns = []
    for name in frame.columns:
        key = json.dumps(str(name)) + ":"
        columns.append([key + text for text in _json_values(frame[name])])
    return "".join("{" + ",".join(row) + "}\n" for row in zip(*columns, strict=True))


def _json_values(column: pandas.Series) -> list[str]:
    kind = column.dtype.kind
    if kind == "f":
        return [repr(v) if v == v and v not in (INF, -INF) else _special(v) for v in column.tolist()]
    if kind in "iu":
        return [str(v) for v in column.tolist()]
    if kind == "b":
        return ["true" if v else "false" for v in column.tolist()]
    values = column.tolist()
    try:
        plain = not _ESCAPED.search("".join(values))  # a TypeError: not all text
    except TypeError:
        plain = False
    if plain:
        return ['"' + v + '"' for v in values]  # ids and names: plain ASCII, nothing to escape
    known: dict = {}  # most text columns repeat a few values (device, workload, mode)
    return [known[v] if v in known else known.setdefault(v, _json_value(v)) for v in map(_hashable, values)]


def _hashable(value):
    return value if isinstance(value, (str, int, float, bool, type(None))) else _Raw(value)


class _Raw:
    """A value that cannot be a dict key: encoded on its own each time (never equal to another)."""

    def __init__(self, value):
        self.value = value

    def __eq__(self, other) -> bool:
        return False

    def __hash__(self) -> int:
        return id(self)


def _json_value(value) -> str:
    if isinstance(value, _Raw):
        value = value.value
    if value is None or (isinstance(value, float) and value != value):
        return "null"
    if hasattr(value, "item"):  # numpy scalars
        value = value.item()
    return json.dumps(value, default=str)


def _special(value: float) -> str:
    return "null" if value != value else json.dumps(value)  # NaN is no number; inf as Python writes it


INF = float("inf")
_ESCAPED = re.compile(r'["\\\x00-\x1f\x7f-\U0010ffff]')  # what JSON would escape (ensure_ascii)


def write_chunks(path: Path, chunks: Iterable[pandas.DataFrame], columns: list[str]) -> None:
    """Write ``path`` (its suffix says the format) from DataFrames, every row with ``columns``.

    Through a new temporary file moved over ``path`` at the end (``safefiles.replacing``): never
    through a link, never half-written.
    """
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        _write_parquet(path, chunks, columns)
        return
    with safefiles.replacing(path, option="--out") as out:
        first = True
        for chunk in chunks:
            chunk = chunk.reindex(columns=columns)
            if suffix == ".csv":
                chunk.to_csv(out, index=False, header=first)
            else:
                out.write(json_lines(chunk))
            first = False
        if first and suffix == ".csv":
            pandas.DataFrame(columns=columns).to_csv(out, index=False)


def _write_parquet(path: Path, chunks: Iterable[pandas.DataFrame], columns: list[str]) -> None:
    import pyarrow
    import pyarrow.parquet

    parts: list[Path] = []
    try:
        for chunk in chunks:  # spilled with their own schemas; one schema for all is known at the end
            part = safefiles.temporary_name(path, f".part{len(parts)}")
            with safefiles.create_new(part, binary=True, option="--out") as handle:
                parts.append(part)
                pyarrow.parquet.write_table(_arrow(chunk), handle)
        schemas = [pyarrow.parquet.read_schema(part) for part in parts]
        types = {name: [s.field(name).type for s in schemas if name in s.names] for name in columns}
        schema = pyarrow.schema([(name, _unified(types[name], pyarrow)) for name in columns])
        with (
            safefiles.replacing(path, binary=True, option="--out") as out,
            pyarrow.parquet.ParquetWriter(out, schema) as writer,
        ):
            for part in parts:
                table = pyarrow.parquet.read_table(part)
                arrays = [
                    table.column(f.name).cast(f.type)
                    if f.name in table.column_names
                    else pyarrow.nulls(len(table), f.type)
                    for f in schema
                ]
                writer.write_table(pyarrow.Table.from_arrays(arrays, schema=schema))
                part.unlink()
            if not parts:
                writer.write_table(schema.empty_table())
    finally:
        for part in parts:
            part.unlink(missing_ok=True)


def _arrow(frame: pandas.DataFrame):
    """A chunk as an Arrow table; a column mixing text and numbers is written as text."""
    import pyarrow

    # a float column with nothing in it (a CSV's empty column) is no evidence of its type
    empty = [c for c in frame.columns if frame[c].dtype.kind == "f" and frame[c].isna().all()]
    if empty:
        frame = frame.assign(**{c: pandas.Series(None, index=frame.index, dtype=object) for c in empty})
    try:
        return pyarrow.Table.from_pandas(frame, preserve_index=False)
    except (pyarrow.ArrowTypeError, pyarrow.ArrowInvalid):
        mixed = frame.copy()
        for name in [c for c in mixed.columns if mixed[c].dtype.kind == "O"]:
            mixed[name] = [None if v is None or v != v else str(v) for v in mixed[name]]
        return pyarrow.Table.from_pandas(mixed, preserve_index=False)


def _unified(types: list, pyarrow):
    """One Arrow type for a column whose chunks were written with ``types``."""
    known = {t for t in types if not pyarrow.types.is_null(t)}
    if not known:
        return pyarrow.null()
    if len(known) == 1:
        return known.pop()
    if all(pyarrow.types.is_integer(t) or pyarrow.types.is_floating(t) for t in known):
        return pyarrow.float64()
    return pyarrow.large_string()
