"""Reading JSON that users hand to parsim (reports, measurements): one line for anything wrong.

A file read back may be anything: a folder, megabytes of brackets, another program's JSON, a
number where a time belongs. ``read_json``/``parse_json`` bound its size and nesting and turn every
failure into a ``ParsimError`` naming the file; ``field``, ``text``, ``choice`` and ``number`` check
one field each and name it (``rows[3].median_s must be a finite number > 0: 'fast'``), so the report
and measurement checks (``validate.check_report``, ``run.check_measurement``) read as lists of rules.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from parsim.base import safefiles
from parsim.base.errors import ParsimError

MAX_JSON_BYTES = 50_000_000  # a report of the full grid is a few hundred kB; the app's upload limit too
MAX_JSON_DEPTH = 32  # real files nest 4 deep; deeper input only exhausts whatever walks it next


def read_json(path: str | Path, what: str) -> object:
    """The JSON document in ``path``, or one line saying why it cannot be ``what`` (a noun).

    Raises:
        ParsimError: ``<path>: cannot read a <what>: <reason>`` — a folder, a missing or unreadable
            file, more than ``MAX_JSON_BYTES``, not UTF-8, not JSON, or nested too deeply.
    """
    path = Path(path)
    if path.is_dir():
        raise ParsimError(f"{path}: cannot read a {what}: it is a folder, not a file")
    try:
        raw = safefiles.read_bytes(path, MAX_JSON_BYTES)  # the name itself, never through a link
    except safefiles.Unreadable as why:
        reason = {
            "missing": "no such file",
            "link": "a symbolic link; parsim does not read through links",
            "not-regular": "not a regular file",  # a device or a pipe could be read forever
            "too-big": f"more than {MAX_JSON_BYTES:,} bytes",
        }.get(why.kind, why.reason)
        raise ParsimError(f"{path}: cannot read a {what}: {reason}") from None
    return parse_json(raw, str(path), what)


def parse_json(raw: bytes | str, source: str, what: str) -> object:
    """``raw`` (UTF-8 bytes or text) as a JSON document; ``source`` names it in the one-line error."""
    if len(raw) > MAX_JSON_BYTES:
        raise ParsimError(f"{source}: cannot read a {what}: more than {MAX_JSON_BYTES:,} bytes")
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8-sig")  # a byte-order mark is harmless; other encodings are not JSON files
        except UnicodeDecodeError as exc:
            raise ParsimError(f"{source}: cannot read a {what}: not UTF-8 text (byte {exc.start})") from None
    try:
        data = json.loads(raw)
    except RecursionError:  # the C parser recurses once per bracket
        raise ParsimError(f"{source}: cannot read a {what}: JSON nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise ParsimError(
            f"{source}: cannot read a {what}: not JSON ({exc.msg}, line {exc.lineno} column {exc.colno})"
        ) from None
    except ValueError as exc:  # an integer of more than 4300 digits
        reason = " ".join(str(exc).split())[:80]
        raise ParsimError(f"{source}: cannot read a {what}: not JSON ({reason})") from None
    if _depth(data) > MAX_JSON_DEPTH:
        raise ParsimError(f"{source}: cannot read a {what}: JSON nested more than {MAX_JSON_DEPTH} deep")
    return data


def _depth(data: object) -> int:
    """How deeply lists and objects nest in ``data`` (walked without recursion)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            value = list(value.values())
        if isinstance(value, list):
            deepest = max(deepest, depth)
            if depth > MAX_JSON_DEPTH:
                break
            stack.extend((item, depth + 1) for item in value if isinstance(item, list | dict))
    return deepest


def json_kind(value: object) -> str:
    """The JSON name of ``value``'s type, as a user sees it in the file."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    kinds = ((dict, "object"), (list, "array"), (str, "string"), (int | float, "number"))
    return next((name for kind, name in kinds if isinstance(value, kind)), type(value).__name__)


def short(value: object, limit: int = 40) -> str:
    """``repr(value)``, cut to ``limit`` characters: a message stays one readable line."""
    shown = repr(value)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def finite(value: object) -> bool:
    """A JSON number that is finite (ints beyond float range are not: no time or size is that large)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return -1e300 < value < 1e300 if isinstance(value, int) else math.isfinite(value)


def _name(key: str, where: str) -> str:
    return f"'{where}.{key}'" if where else f"'{key}'"


def field(data: dict, key: str, kind: type, where: str = "") -> object:
    """``data[key]`` once it is there and of JSON type ``kind`` (dict, list, int, str)."""
    if key not in data:
        raise ParsimError(f"missing {_name(key, where)}")
    value = data[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        expected = {dict: "an object", list: "an array", int: "a whole number", str: "text"}[kind]
        raise ParsimError(f"{_name(key, where)} must be {expected}: {short(value)}")
    return value


def text(data: dict, key: str, where: str = "", empty: bool = False) -> str:
    value = field(data, key, str, where)
    if not value and not empty:
        raise ParsimError(f"{_name(key, where)} must not be empty")
    return value


def choice(data: dict, key: str, allowed: tuple[str, ...], where: str = "") -> str:
    value = field(data, key, str, where)
    if value not in allowed:
        raise ParsimError(f"{_name(key, where)} must be one of {', '.join(allowed)}: {short(value)}")
    return value


def number(
    data: dict,
    key: str,
    where: str = "",
    positive: bool = False,
    low: float | None = 0.0,
    high: float | None = None,
    optional: bool = False,
) -> float | None:
    """``data[key]`` once it is a finite number in range (``positive``: > 0, else >= ``low``)."""
    if key not in data:
        raise ParsimError(f"missing {_name(key, where)}")
    value = data[key]
    if value is None and optional:
        return None
    if finite(value):
        above = low is None or (value > low if positive else value >= low)
        if above and (high is None or value <= high):
            return value
    bounds = [f"{'>' if positive else '>='} {low:g}"] if low is not None else []
    bounds += [f"<= {high:g}"] if high is not None else []
    bound = " ".join(["a finite number", " and ".join(bounds)]).rstrip()
    raise ParsimError(f"{_name(key, where)} must be {bound}{' or null' if optional else ''}: {short(value)}")
