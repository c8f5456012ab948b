"""Where a sweep's points are evaluated: here, on a process pool, or on any map-like executor.

Work arrives as a stream of items (``parsim.studies.sweeps.api`` makes them chunk by chunk): finished
DataFrames from the vectorised path, which pass straight through, and batches of points for
``evaluate_many``. No executor is handed the whole sweep at once, because ``Executor.map`` and
most map-likes list their input first, and a sweep may hold ten million points: a pool keeps
a few batches per worker in flight, a map-like callable gets ``WINDOW`` batches per call.

Pool workers watch the sweep that started them and exit when it dies, even by ``kill -9``
(on Linux the kernel sends them SIGKILL; everywhere a daemon thread sees their parent change),
so no idle worker outlives its sweep.
"""

from __future__ import annotations

import collections
import concurrent.futures
import ctypes
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator

import pandas

from parsim.base.errors import ParsimError
from parsim.studies.sweeps.points import evaluate, evaluate_many

WINDOW = 256  # batches handed to a map-like callable per call
IN_FLIGHT = 4  # batches per pool worker queued or running at once
POLL_S = 0.5  # how often a pool worker checks that its sweep is alive
PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def execute(work: Iterable, workers) -> Iterator[pandas.DataFrame | list[dict]]:
    """Rows of every item of ``work``: DataFrames as they are, batches of tasks evaluated by ``workers``."""
    if workers is None or workers == 1:
        for item in work:  # serially, row by row: Ctrl-C loses nothing finished
            if isinstance(item, pandas.DataFrame):
                yield item
            else:
                yield from ([evaluate(task)] for task in item)
    elif isinstance(workers, bool) or not (isinstance(workers, int) or callable(workers)):
        raise ParsimError(f"'workers' must be an int or a map-like callable: {workers!r}")
    elif isinstance(workers, int):
        if workers < 1:
            raise ParsimError(f"'workers' must be >= 1: {workers}")
        yield from _pooled(work, workers)
    else:
        yield from _mapped(work, workers)


def _pooled(work: Iterable, workers: int) -> Iterator[pandas.DataFrame | list[dict]]:
    pool = concurrent.futures.ProcessPoolExecutor(
        max_workers=workers, initializer=watch_parent, initargs=(os.getpid(),)
    )
    pending: collections.deque = collections.deque()
    try:
        for item in work:
            if isinstance(item, pandas.DataFrame):
                yield item
                continue
            pending.append(pool.submit(evaluate_many, item))
            if len(pending) >= workers * IN_FLIGHT:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:  # Ctrl-C or an error: queued batches are dropped, not run
        pool.shutdown(wait=True, cancel_futures=True)


def _mapped(work: Iterable, mapper: Callable) -> Iterator[pandas.DataFrame | list[dict]]:
    window: list = []
    for item in work:
        if isinstance(item, pandas.DataFrame):
            yield item
            continue
        window.append(item)
        if len(window) >= WINDOW:
            yield from mapper(evaluate_many, window)
            window = []
    if window:
        yield from mapper(evaluate_many, window)


def _connect(client_type, address: str, timeout_s: float):
    """A ``Client`` of the scheduler at ``address`` within ``timeout_s``, or one line saying why not."""
    outcome: dict = {}

    def attempt() -> None:
        try:
            outcome["client"] = client_type(address, timeout=timeout_s)
        except BaseException as exc:  # MemoryError from a junk reply's frame sizes included
            outcome["error"] = exc

    thread = threading.Thread(target=attempt, daemon=True, name="parsim-dask-connect")
    thread.start()
    thread.join(timeout_s + 1.0)
    if thread.is_alive():
        raise ParsimError(
            f"no Dask scheduler answered at {address} within {timeout_s:g} s "
            "(something accepted the connection and never replied)"
        )
    error = outcome.get("error")
    if isinstance(error, (OSError, TimeoutError)):
        raise ParsimError(f"no Dask scheduler answered at {address} within {timeout_s:g} s ({error})")
    if error is not None:
        reason = f"{type(error).__name__}: {str(error)[:80]}"
        raise ParsimError(f"what answered at {address} is not a Dask scheduler ({reason})")
    return outcome["client"]


def watch_parent(parent: int) -> None:
    """Pool initializer: this worker exits as soon as the sweep process ``parent`` is gone."""
    if sys.platform.startswith("linux"):
        try:  # the kernel kills us when the process that forked us dies
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    started_by = os.getppid()  # the sweep, or a fork server that it started
    if not _alive(parent):
        os._exit(1)  # it died before the signal was armed
    threading.Thread(target=_poll, args=(parent, started_by), daemon=True, name="parsim-parent").start()


def _poll(parent: int, started_by: int) -> None:
    while True:
        time.sleep(POLL_S)
        if os.getppid() != started_by or not _alive(parent):
            os._exit(1)  # orphaned: nobody will ever read our results


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def dask_map(address: str, workers: int = 2, timeout_s: float = 10.0):
    """A map-like callable on Dask ``distributed``: ``local`` starts a LocalCluster of processes.

    Every wait is bounded: a scheduler that accepts the connection and never answers, or answers
    with something that is not Dask, is one line after at most ``timeout_s`` (distributed's own
    timeout does not cover a silent peer); a local cluster has at most one worker per CPU this
    process may use, and distributed's log is kept to errors of its own.

    Returns ``(map_function, close)``; results arrive as tasks finish.
    """
    try:
        from distributed import Client, LocalCluster, as_completed
        from distributed.comm.addressing import parse_address
    except ImportError:
        raise ParsimError("Dask is not installed: pip install 'parsim[dask]'") from None
    logging.getLogger("distributed").setLevel(logging.CRITICAL)  # worker tracebacks are not for the user
    cluster = None
    if address == "local":
        from parsim.measure.cpu import cores

        cpus = cores()
        if workers > cpus:
            raise ParsimError(
                f"'--workers' {workers} is more than the {cpus} CPUs this process may use for --dask local"
            )
        try:
            cluster = LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
            )
            client = Client(cluster)
        except Exception as exc:
            if cluster is not None:
                cluster.close()
            raise ParsimError(f"could not start a local Dask cluster of {workers} workers ({exc})") from None
    else:
        try:
            _, location = parse_address(address)
            host, _, port = location.rpartition(":")
            if not host or not port.isdigit():
                raise ValueError("expected host:port")
        except (ValueError, TypeError) as exc:  # not an address at all: "nonsense", "tcp://host" ...
            usage = "'--dask' must be 'local' or a scheduler address such as tcp://host:8786"
            raise ParsimError(f"{usage}: {address!r} ({exc})") from None
        client = _connect(Client, address, timeout_s)

    def map_function(function, iterable: Iterable):
        futures = client.map(function, list(iterable), pure=False)
        for _, result in as_completed(futures, with_results=True):
            yield result

    def close():
        client.close()
        if cluster is not None:
            cluster.close()

    return map_function, close
