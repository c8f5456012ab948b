"""One exception type for every mistake a user can make.

A simulator is only trusted when bad input is refused loudly and precisely: the message names the
field, the bound and the value (``'bandwidth_Bps' must be > 0: -3.0``). The CLI turns a
``ParsimError`` into one line on stderr and exit code 2; library callers can catch it like any
``ValueError``.
"""

from __future__ import annotations

from collections.abc import Iterable


class ParsimError(ValueError):
    """A user-facing error: bad spec, bad workload parameter, unknown preset, misfit size.

    Always one line: a key or value taken from a user's file may hold line breaks or control
    characters, which are shown escaped (``\\n``) rather than breaking the message.
    """

    def __init__(self, message: object = "") -> None:
        super().__init__(printable(message))


def printable(text: object) -> str:
    """``text`` with line breaks and control characters escaped (``\\n``, ``\\x1b``): one line that
    no terminal reads as a command, for anything echoed from a user's file or file name."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def field_error(field: str, bound: str, value: object) -> ParsimError:
    """Build the canonical message ``'<field>' must be <bound>: <value>``."""
    return ParsimError(f"'{field}' must be {bound}: {value!r}")


def closest(name: str, known: Iterable[str]) -> str:
    """``did you mean a, b?`` with the known names closest to ``name``, else ``known: ...`` (all)."""
    import difflib

    names = list(known)
    close = difflib.get_close_matches(name, names, n=3)
    return f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(names)}"


class Interrupted(ParsimError):
    """Ctrl-C during a long command: the one line says what was kept (the CLI exits with 130)."""


class ParsimNote(UserWarning):
    """A remark about the input that is not an error (a hardware file read by an older rule, say).

    Raised with ``warnings.warn``; the CLI prints it as one ``note:`` line on stderr.
    """
