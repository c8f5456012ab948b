"""Child processes in tests: which of them outlive their parent (shared by the kill -9 tests)."""

from __future__ import annotations

import time

import psutil


def running(child: psutil.Process) -> bool:
    try:
        return child.is_running() and child.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def outliving(children: list[psutil.Process], wait_s: float = 5.0) -> list[int]:
    """The pids of ``children`` still running after at most ``wait_s`` seconds."""
    deadline = time.monotonic() + wait_s
    while any(running(child) for child in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [child.pid for child in children if running(child)]
