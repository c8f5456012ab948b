"""TOML a user wrote (a scenario, a hardware file), parsed with one line for anything wrong.

``tomllib`` raises its own exception for a syntax error and recurses once per nested bracket, so
text of thousands of ``[`` exhausts the stack slowly before failing. ``parse_toml`` counts the
brackets first (a real file has a few dozen) and turns both failures into a ``ParsimError`` that
names the file, as every entry point's messages do.
"""

from __future__ import annotations

import tomllib
from typing import Any

from parsim.base.errors import ParsimError

MAX_SCENARIO_BYTES = 1_000_000
"""A scenario file (a lesson too, and a hardware file beside one) is read up to this size."""
MAX_SCENARIO_BRACKETS = 5_000
"""A scenario file's bound on brackets: a real one, a lesson included, has a few dozen."""


def parse_toml(text: str, source: str, kind: str, max_brackets: int) -> dict[str, Any]:
    """The tables of TOML ``text`` (``source`` names it, ``kind`` says what it should be: ``scenario``,
    ``hardware``), refused in one line above ``max_brackets`` brackets or when malformed."""
    if text.count("[") > max_brackets:  # a real file has a few dozen; thousands only nest (slowly) to fail
        raise ParsimError(f"{source}: more than {max_brackets} brackets: not a {kind} file")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ParsimError(f"{source}: malformed TOML: {exc}") from None
    except RecursionError:
        raise ParsimError(f"{source}: malformed TOML: arrays or tables nested too deeply") from None
