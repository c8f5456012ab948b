"""Files parsim writes: only where the user pointed, never through a link it did not create.

A shared folder such as ``/tmp`` lets anyone plant a symbolic link at the name an output, a
journal or a temporary file will have; a program that opens that name for writing then writes
into whatever the link points to (a root user's file, when parsim runs as root). So every file
parsim creates is opened with ``O_NOFOLLOW`` (a link at the last component is refused by the
kernel, ``ELOOP``), temporaries with ``O_EXCL`` too (a name that exists, link or not, is never
reused), and a finished file replaces its target by ``os.replace`` — which renames over the
directory entry and never writes through a link — after the target was checked not to be one.
A refusal is one line naming the file and the option it came from.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from parsim.base.errors import ParsimError

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
BINARY = getattr(os, "O_BINARY", 0)


def _is_link(path: Path) -> bool:
    """Whether ``path`` is a symbolic link; False when it cannot even be looked up (a name too long
    raises ENAMETOOLONG from ``lstat`` on Python 3.11), which the caller's own error then names."""
    try:
        return Path(path).is_symlink()
    except OSError:
        return False


def shown_name(name: str | Path) -> str:
    """A file name as errors show it: a name above 80 characters cut to its ends (the system
    refuses such names anyway, and a 4,000-character one must not fill the terminal)."""
    text = str(name)
    return f"{text[:40]}...{text[-30:]}" if len(text) > 80 else text


def refuse_link(path: Path, option: str = "") -> None:
    """Refuse ``path`` in one line when it is a symbolic link (parsim does not follow links)."""
    if _is_link(path):
        where = f"'{option}': " if option else ""
        raise ParsimError(f"{where}{path} is a symbolic link; parsim does not write through links")


def _refused(path: Path, option: str, exc: OSError) -> ParsimError:
    where = f"'{option}': " if option else ""
    if _is_link(path):
        return ParsimError(f"{where}{path} is a symbolic link; parsim does not write through links")
    return ParsimError(f"{where}cannot write {shown_name(path)} ({exc.strerror or exc.__class__.__name__})")


def open_append(path: Path, option: str = "") -> IO[str]:
    """``path`` opened for appending text (created if missing), never through a link."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | NOFOLLOW | BINARY, 0o666)
    except OSError as exc:
        raise _refused(path, option, exc) from None
    return os.fdopen(fd, "a", encoding="utf-8")


def create_new(path: Path, binary: bool = False, option: str = "") -> IO[Any]:
    """A file that did not exist (``O_EXCL``: a planted file or link makes this fail)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | BINARY, 0o666)
    except OSError as exc:
        raise _refused(path, option, exc) from None
    if binary:
        return os.fdopen(fd, "wb")
    return os.fdopen(fd, "w", encoding="utf-8", newline="")


def temporary_name(path: Path, suffix: str = ".tmp") -> Path:
    """A fresh, unguessable name beside ``path`` (hidden, with this process's id)."""
    return path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}{suffix}")


@contextlib.contextmanager
def replacing(path: Path, binary: bool = False, option: str = "") -> Iterator[IO[Any]]:
    """Write ``path`` through a new temporary file beside it, moved over ``path`` when the block
    ends without error (removed if it fails): readers never see half a file, and neither the
    temporary nor the target is ever a link followed."""
    path = Path(path)
    refuse_link(path, option)
    temporary = temporary_name(path)
    handle = create_new(temporary, binary, option)
    try:
        with handle:
            yield handle
        refuse_link(path, option)  # planted while we wrote: still not followed
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_text(path: Path, text: str, option: str = "") -> Path:
    """Write ``text`` to ``path`` (see ``replacing``)."""
    with replacing(path, option=option) as out:
        out.write(text)
    return Path(path)


def write_with(path: Path, writer: Callable[[IO[bytes]], object], option: str = "") -> Path:
    """Let ``writer`` fill a binary file object that becomes ``path`` (a figure's ``savefig``)."""
    with replacing(path, binary=True, option=option) as out:
        writer(out)
    return Path(path)


class Unreadable(ParsimError):
    """Why ``read_bytes`` refused a file: ``kind`` is ``missing``, ``link``, ``folder``,
    ``not-regular``, ``too-big`` or ``os``, ``reason`` the system's words (``size``: the file's bytes, for
    ``too-big``). Each caller words it in its own one line; uncaught, it is still one line (a
    ``ParsimError`` naming the file), never a traceback."""

    def __init__(self, path: Path, kind: str, reason: str = "", size: int = 0) -> None:
        super().__init__(f"cannot read {shown_name(path)}: {reason or kind.replace('-', ' ')}")
        self.kind, self.reason, self.size = kind, reason, size


def read_bytes(path: Path, max_bytes: int) -> bytes:
    """The bytes of the regular file ``path`` itself, never through a link: at most ``max_bytes + 1``
    (more than ``max_bytes`` back: the file grew while it was read).

    Read-only, ``O_NOFOLLOW`` (a link at the name is refused, not followed) and ``O_NONBLOCK`` (a
    FIFO planted at the name does not hang the open); anything but a regular file (a FIFO, a device
    such as ``/dev/zero``) and a file above ``max_bytes`` are refused before reading.

    Raises:
        Unreadable: what stopped it (``Unreadable.kind``).
    """
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW | BINARY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        reason = exc.strerror or exc.__class__.__name__
        if _is_link(path):
            raise Unreadable(path, "link", reason) from None
        raise Unreadable(path, "missing" if isinstance(exc, FileNotFoundError) else "os", reason) from None
    info = os.fstat(fd)  # before fdopen, which refuses a folder naming the descriptor ('3')
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise Unreadable(path, "folder" if stat.S_ISDIR(info.st_mode) else "not-regular")
    with os.fdopen(fd, "rb") as handle:
        if info.st_size > max_bytes:
            raise Unreadable(path, "too-big", size=info.st_size)
        try:
            return handle.read(max_bytes + 1)
        except OSError as exc:
            raise Unreadable(path, "os", exc.strerror or exc.__class__.__name__) from None


def read_text(path: Path, max_bytes: int, option: str = "", said: Mapping[str, str] | None = None) -> str:
    """The UTF-8 text of the regular file ``path`` itself (``read_bytes``), or one line saying why
    not, naming ``option`` when given; ``said`` words some refusals (by ``Unreadable.kind``) in the
    caller's own whole line instead."""
    where = f"'{option}': " if option else ""
    try:
        data = read_bytes(path, max_bytes)
    except Unreadable as why:
        if said and why.kind in said:
            raise ParsimError(said[why.kind]) from None
        line = {
            "link": f"{path} is a symbolic link; parsim does not read through links",
            "folder": f"{path} is not a regular file",
            "not-regular": f"{path} is not a regular file",
            "too-big": f"{path} has {why.size:,} bytes, above the {max_bytes:,} parsim reads",
        }.get(why.kind, f"cannot read {shown_name(path)} ({why.reason})")
        raise ParsimError(where + line) from None
    if len(data) > max_bytes:  # grew while we read
        raise ParsimError(f"{where}{path} has more than the {max_bytes:,} bytes parsim reads")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ParsimError(f"{where}{path} is not UTF-8 text (byte {exc.start})") from None
