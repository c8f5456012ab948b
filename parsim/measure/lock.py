"""One measurement at a time per machine: an inter-process file lock.

Two timings on one machine at once would each measure the other's interference. The app may
serve several users, and a sweep may run beside it, so every measurement holds an exclusive lock
on one file (``filelock``: ``flock`` on Unix, ``msvcrt`` on Windows); a second one waits for it
(up to a limit) and then says plainly that the machine is busy.

The lock lives in a folder of this user's own (``$XDG_RUNTIME_DIR/parsim``, else
``~/.cache/parsim``, else ``/tmp/parsim-<uid>``), created by parsim with mode 0700 and refused in one
line when it is a link, another user's, or open to others: a shared folder such as ``/tmp`` would let
anyone plant a link at the lock's path, and a lock that changed the permissions of what it points to
would make any file of the user's world-writable. Everyone who serves or runs measurements on a
machine as the same user (the app and its classroom of browsers, a sweep beside it) finds the same
file; parsim never changes the permissions of a file, and the lock file is created by the lock
library itself (``filelock``).

A wait is never silent: once the first attempt finds the lock taken, the waiter is told, once,
which process holds it. The holder writes its pid to a file beside the lock (not into the lock
file itself, which older ``filelock`` versions truncate on every attempt to take it) and removes
it before letting go.
"""

from __future__ import annotations

import contextlib
import math
import os
import stat
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import filelock

from parsim.base.errors import ParsimError, ParsimNote, field_error

POLL_S = 0.05  # how often a waiter retries; also filelock's default
PID_GRACE_S = 0.5  # a holder writes its pid just after taking the lock: give it this long before "unknown"


LOCK_NAME = "parsim-measure.lock"
LOCK_PATH: Path | None = None
"""The lock file; None: ``LOCK_NAME`` in ``private_directory()`` (tests point it elsewhere)."""


def candidate_directories() -> list[Path]:
    """Where this user's private parsim folder may live, the preferred first."""
    candidates = []
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        candidates.append(Path(runtime) / "parsim")
    cache = os.environ.get("XDG_CACHE_HOME")
    if cache and os.path.isabs(cache):
        candidates.append(Path(cache) / "parsim")
    with contextlib.suppress(RuntimeError, KeyError):  # no home directory
        candidates.append(Path.home() / ".cache" / "parsim")
    uid = os.getuid() if hasattr(os, "getuid") else os.getpid()
    candidates.append(Path(tempfile.gettempdir()) / f"parsim-{uid}")
    return candidates


def private_directory() -> Path:
    """This user's own folder for the lock (created 0700 when missing; see the module docstring).

    Raises:
        ParsimError: no candidate can be created or used; the first reason, in one line.
    """
    reasons = []
    for folder in candidate_directories():
        try:
            return _private(folder)
        except OSError as exc:
            reasons.append(f"{folder}: {exc.strerror or exc.__class__.__name__}")
        except ParsimError as exc:
            reasons.append(str(exc))
    raise ParsimError(f"no private folder for the measurement lock: {reasons[0]}")


def _private(folder: Path) -> Path:
    """``folder`` once it is a real directory of this user's, closed to others (made so if new)."""
    with contextlib.suppress(FileExistsError):
        folder.parent.mkdir(parents=True, exist_ok=True)
        folder.mkdir(mode=0o700)
    info = os.lstat(folder)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise ParsimError(f"{folder}: not a directory (a link or a file stands there); remove it")
    if hasattr(os, "getuid") and (info.st_uid != os.getuid() or info.st_mode & 0o022):
        raise ParsimError(f"{folder}: another user's, or writable by others; parsim keeps its lock elsewhere")
    return folder


def lock_path() -> Path:
    """The lock file in use (``LOCK_PATH``, else in this user's private folder)."""
    return LOCK_PATH if LOCK_PATH is not None else private_directory() / LOCK_NAME


def pid_path(path: Path) -> Path:
    """The file beside the lock that names the process holding it."""
    return path.with_name(path.name + ".pid")


def holder_pid(path: Path | None = None) -> int | None:
    """The pid of the process holding the lock at ``path``, when it recorded one and still runs."""
    try:
        pid = int(pid_path(path or lock_path()).read_text(encoding="ascii").strip())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    import psutil

    return pid if pid > 0 and psutil.pid_exists(pid) else None  # a stale file names no one


def waiting_message(pid: int | None, timeout_s: float) -> str:
    holder = f"pid {pid}" if pid is not None else "pid unknown"
    return f"waiting for another measurement on this machine ({holder}) to finish, at most {timeout_s:g} s"


def _warn(message: str) -> None:
    warnings.warn(ParsimNote(message), stacklevel=2)


@contextlib.contextmanager
def measurement_lock(
    timeout_s: float = 600.0, path: Path | None = None, on_wait: Callable[[str], None] | None = None
) -> Iterator[None]:
    """Hold the machine's measurement lock; wait at most ``timeout_s`` for it.

    Args:
        timeout_s: the longest wait, in seconds (0: one attempt).
        path: the lock file (default ``lock_path()``, this user's).
        on_wait: called once with a one-line message when the lock is taken by another process;
            by default the message is a ``ParsimNote`` warning, which the CLI prints on stderr.

    Raises:
        ParsimError: the wait ran out, or the lock file cannot be used (one line naming it).
    """
    check_timeout(timeout_s)
    path = Path(path or lock_path())
    if path.is_symlink():  # parsim never follows a link it did not create
        raise ParsimError(
            f"the measurement lock {path} is a symbolic link; parsim does not follow it: remove it"
        )
    lock = filelock.FileLock(path)  # the library creates the file (no chmod of ours, ever)
    _acquire(lock, path, timeout_s, on_wait or _warn)
    try:
        _write_pid(path)
        yield
    finally:
        with contextlib.suppress(OSError):  # before the release: a next holder's file must survive
            pid_path(path).unlink()
        lock.release()


def check_timeout(timeout_s: float) -> None:
    """Refuse a lock timeout that is not a number of seconds >= 0."""
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or not timeout_s >= 0:
        raise field_error("lock_timeout_s", "a number of seconds >= 0", timeout_s)


def _acquire(lock: filelock.FileLock, path: Path, timeout_s: float, on_wait: Callable[[str], None]) -> None:
    """Take ``lock``, telling ``on_wait`` once if it has to wait; polls itself so it can tell."""
    started = time.monotonic()
    deadline = started + timeout_s if math.isfinite(timeout_s) else math.inf
    told = False
    while True:
        try:
            lock.acquire(timeout=0)
            return
        except filelock.Timeout:
            pass
        except OSError as exc:
            raise _unusable(path, exc) from None
        now = time.monotonic()
        if not told and timeout_s > 0:
            pid = holder_pid(path)
            if pid is not None or now - started >= min(PID_GRACE_S, timeout_s):
                on_wait(waiting_message(pid, timeout_s))
                told = True
        if now >= deadline:
            pid = holder_pid(path)
            holder = f" (pid {pid})" if pid is not None else ""
            raise ParsimError(
                f"another measurement on this machine{holder} still holds {path} after a wait of "
                f"{timeout_s:g} s; try again when it has finished"
            )
        time.sleep(min(POLL_S, max(deadline - now, 0.0)))


def _unusable(path: Path, exc: OSError) -> ParsimError:
    reason = exc.strerror or exc.__class__.__name__
    if isinstance(exc, PermissionError) and path.exists():
        return ParsimError(
            f"cannot use the measurement lock {path} ({reason}): remove it or give another path"
        )
    if isinstance(exc, PermissionError):
        return ParsimError(f"cannot create the measurement lock {path} ({reason}) in {path.parent}")
    return ParsimError(f"cannot use the measurement lock {path} ({reason})")


def _write_pid(path: Path) -> None:
    """Record this process as the holder; only a courtesy to waiters, so failures are ignored."""
    target = pid_path(path)
    nofollow = getattr(os, "O_NOFOLLOW", 0)  # a link planted there is refused (ELOOP), not written through
    try:
        fd = os.open(target, os.O_WRONLY | os.O_TRUNC | nofollow)
    except FileNotFoundError:
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | nofollow, 0o644)
        except OSError:
            return
    except OSError:
        return
    try:
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
    except OSError:
        pass
    finally:
        os.close(fd)
