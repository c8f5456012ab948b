"""One measurement at a time per machine: an inter-process file lock.

Two timings on one machine at once would each measure the other's interference. The app may
serve several users, and a sweep may run beside it, so every measurement takes an exclusive
``flock`` on a file in the temporary directory; a second one waits for it (up to a limit)
and then says plainly that the machine is busy.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import time
from pathlib import Path

from parsim.errors import ParsimError

LOCK_PATH = Path(tempfile.gettempdir()) / "parsim-measure.lock"


@contextlib.contextmanager
def measurement_lock(timeout_s: float = 600.0, path: Path = LOCK_PATH):
    """Hold the machine's measurement lock; wait at most ``timeout_s`` for it."""
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ParsimError(
                        f"another measurement has held {path} for over {timeout_s:g} s; "
                        "try again when it has finished"
                    ) from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(descriptor, fcntl.LOCK_UN)
    finally:
        os.close(descriptor)
