"""One measurement at a time per machine: an inter-process file lock.

Two timings on one machine at once would each measure the other's interference. The app may
serve several users, and a sweep may run beside it, so every measurement holds an exclusive lock
on one file in the temporary directory (``filelock``: ``flock`` on Unix, ``msvcrt`` on Windows);
a second one waits for it (up to a limit) and then says plainly that the machine is busy. The
file is created readable and writable by everyone, so a second user's measurement waits instead
of failing on permissions.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

import filelock

from parsim.errors import ParsimError

LOCK_PATH = Path(tempfile.gettempdir()) / "parsim-measure.lock"


@contextlib.contextmanager
def measurement_lock(timeout_s: float = 600.0, path: Path = LOCK_PATH) -> Iterator[None]:
    """Hold the machine's measurement lock; wait at most ``timeout_s`` for it."""
    lock = filelock.FileLock(path, timeout=timeout_s, mode=0o666)
    try:
        lock.acquire()
    except filelock.Timeout:
        raise ParsimError(
            f"another measurement has held {path} for over {timeout_s:g} s; try again when it has finished"
        ) from None
    try:
        yield
    finally:
        lock.release()
