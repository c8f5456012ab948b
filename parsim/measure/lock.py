"""One measurement at a time per machine: an inter-process file lock.

Two timings on one machine at once would each measure the other's interference. The app may
serve several users, and a sweep may run beside it, so every measurement holds an exclusive lock
on one file (``filelock``: ``flock`` on Unix, ``msvcrt`` on Windows); a second one waits for it
(up to a limit) and then says plainly that the machine is busy.

The lock is only useful if every user of the machine finds the same file, so it lives in a
directory every user can write — the world-writable, sticky ``/tmp`` (``/var/tmp``) rather than
``tempfile.gettempdir()``, which ``TMPDIR`` or macOS may make private to one user — and it is
created readable and writable by everyone (mode 0666 whatever the umask), so a second user's
measurement waits instead of failing on permissions. Where that fails anyway (a file an older
version left with the creator's umask), the answer is one line naming the file.

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

from parsim.errors import ParsimError, ParsimNote, field_error

POLL_S = 0.05  # how often a waiter retries; also filelock's default
PID_GRACE_S = 0.5  # a holder writes its pid just after taking the lock: give it this long before "unknown"


def shared_directory() -> Path:
    """A directory every user of this machine can write and finds under the same name."""
    for candidate in ("/tmp", "/var/tmp"):
        try:
            mode = os.stat(candidate).st_mode
        except OSError:
            continue
        # world-writable and sticky: every user may create files, none may remove another's
        if stat.S_ISDIR(mode) and mode & stat.S_IWOTH and mode & stat.S_ISVTX:
            return Path(candidate)
    return Path(tempfile.gettempdir())  # Windows, or a system without a shared /tmp


LOCK_PATH = shared_directory() / "parsim-measure.lock"


def pid_path(path: Path) -> Path:
    """The file beside the lock that names the process holding it."""
    return path.with_name(path.name + ".pid")


def holder_pid(path: Path | None = None) -> int | None:
    """The pid of the process holding the lock at ``path``, when it recorded one and still runs."""
    try:
        pid = int(pid_path(path or LOCK_PATH).read_text(encoding="ascii").strip())
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
        path: the lock file (default ``LOCK_PATH``, shared by every user of the machine).
        on_wait: called once with a one-line message when the lock is taken by another process;
            by default the message is a ``ParsimNote`` warning, which the CLI prints on stderr.

    Raises:
        ParsimError: the wait ran out, or the lock file cannot be used (one line naming it).
    """
    check_timeout(timeout_s)
    path = Path(path or LOCK_PATH)
    lock = filelock.FileLock(path, mode=0o666)
    _share(path)  # before taking it: a file of ours an older version left private would refuse others
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
            f"cannot use the measurement lock {path} ({reason}): its owner must let every user write it "
            f"(chmod 666 {path}) or remove it"
        )
    if isinstance(exc, PermissionError):
        return ParsimError(f"cannot create the measurement lock {path} ({reason}) in {path.parent}")
    return ParsimError(f"cannot use the measurement lock {path} ({reason})")


def _share(path: Path) -> None:
    """Make a file this process owns readable and writable by everyone (heals one an older version
    created with the owner's umask); another user's file is left as it is."""
    with contextlib.suppress(OSError, AttributeError):  # os.getuid: Unix only
        info = os.stat(path)
        if info.st_uid == os.getuid() and info.st_mode & 0o666 != 0o666:
            os.chmod(path, 0o666)


def _write_pid(path: Path) -> None:
    """Record this process as the holder; only a courtesy to waiters, so failures are ignored."""
    target = pid_path(path)
    try:
        # An existing file is opened without O_CREAT: in a sticky directory Linux refuses O_CREAT on
        # another user's file (fs.protected_regular) even when its mode allows writing.
        fd = os.open(target, os.O_WRONLY | os.O_TRUNC)
    except FileNotFoundError:
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except OSError:
            return
        _share(target)  # whatever the umask: the next holder may be another user
    except OSError:
        return
    try:
        os.write(fd, f"{os.getpid()}\n".encode("ascii"))
    except OSError:
        pass
    finally:
        os.close(fd)
