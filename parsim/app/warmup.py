"""Compute the heavy first views ahead, while the server starts, so the first visitor finds them cached.

Most pages open in well under a second, but a few first views predict whole clusters: the
"Across nodes" tab (22 data-parallel steps of 8 to 8,192 GPUs), the lessons whose cases run on a
cluster, the serving-under-load tab (a dozen simulated loads) and the (tp, pp, dp) explorer's
table. A teacher starts ``parsim app`` before the class; the server then computes exactly those
views, with the settings they open with, through the same cached functions the pages call (each
page module's ``warm``), and the first student to open one reads it from the cache.

It runs in one background thread once the Streamlit runtime exists (Streamlit's caches belong to
it), one view after another, never failing the server: a view that cannot be computed is said in
one line and skipped (the page will say why when it is opened). Pages opened while it runs still
work; for those seconds they share the interpreter with it (and the split table's worker
processes share the cores). ``parsim app --no-warm`` leaves it out.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Sequence

Say = Callable[[str], None]
THREAD = "parsim-warm-up"
RUNTIME_WAIT_S = 60.0  # the runtime exists within a second of the server starting


def tell(line: str) -> None:
    """One line on the server's standard error, at once."""
    print(line, file=sys.stderr, flush=True)


def views() -> list[tuple[str, Callable[[], None]]]:
    """The first views computed ahead, in the order a class meets them, each with its page's
    ``warm``."""
    from parsim.app import learn, scale_cluster, scale_load, scale_splits

    return [
        ("Learn: the cluster lessons", learn.warm),
        ("Scale out: Across nodes", scale_cluster.warm),
        ("Scale out: LLM serving under load", scale_load.warm),
        ("Scale out: (tp, pp, dp) explorer", scale_splits.warm),
    ]


def warm(chosen: Sequence[tuple[str, Callable[[], None]]] | None = None, say: Say = tell) -> float:
    """Compute each view (``views()`` by default); return the seconds it took. A view that raises
    is said in one line and the next one computed."""
    start = time.perf_counter()
    for label, compute in views() if chosen is None else chosen:
        began = time.perf_counter()
        try:
            compute()
        except Exception as exc:  # noqa: BLE001 - a warm-up must never take the server down
            say(f"parsim app: not computed ahead: {label}: {exc}")
            continue
        say(f"parsim app: computed ahead: {label} ({time.perf_counter() - began:.1f} s)")
    return time.perf_counter() - start


class _OwnThreadOnly(logging.Filter):
    """Drops Streamlit's "missing ScriptRunContext" warnings of the warm-up thread: it calls the
    pages' cached functions outside any page run on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.threadName == THREAD and "ScriptRunContext" in record.getMessage())


def _wait_for_runtime(wait_s: float) -> bool:
    from streamlit.runtime import Runtime

    deadline = time.monotonic() + wait_s
    while not Runtime.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _run(say: Say) -> None:
    if not _wait_for_runtime(RUNTIME_WAIT_S):
        say("parsim app: the server did not start in time; nothing computed ahead")
        return
    for name in ("streamlit.runtime.scriptrunner_utils.script_run_context", "streamlit"):
        logging.getLogger(name).addFilter(_OwnThreadOnly())
    seconds = warm(say=say)
    say(f"parsim app: the heavy first views are computed ({seconds:.0f} s)")


def start(say: Say = tell) -> threading.Thread:
    """Start the warm-up in a background thread (``parsim app`` calls this as the server starts)."""
    thread = threading.Thread(target=_run, args=(say,), name=THREAD, daemon=True)
    thread.start()
    return thread
