"""Render time of each app page and of the heavy tabs, measured with Streamlit's AppTest, cold and warm,
plus one interaction each.

Run: ``python benchmarks/bench_app.py`` (add ``--skip-published`` to leave out predicting every
published run again, about a minute). Targets (issues 13 and 28 item 5, on a 2-core machine): the
first open of any page or tab <= 2 s, every interaction <= 1 s warm.

``cold`` is the page opened first in a fresh process that has imported what a freshly started
``parsim app`` server has (Streamlit, and ``parsim.app.preload``: pandas, matplotlib, the model),
so its first predictions and figures are counted;
``warm`` is the median of later fresh sessions in the same process, as when people move between
pages (the caches filled); ``interaction`` is one widget change on an open page (a button: pressed).
Each case runs in its own process, so one case's caches never warm another's.
A second table opens the heavy views again on a process whose warm-up has run first
(``parsim.app.warmup``: what ``parsim app`` computes in the background as the server starts), as
their first visitor finds them once the server has been up for its half a minute.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# (label, page, URL parameters, interaction: (widget kind, key, new value) or None)
CASES = [
    ("home", "home", {}, None),
    ("explore", "explore", {}, ("selectbox", "explore_device", "t4")),
    ("compare", "compare", {}, ("number_input", "compare_n", 10**6)),
    ("scale", "scale", {}, ("select_slider", "scale_step_gpus", 8)),
    ("scale: across nodes", "scale", {"scale_tab": "Across nodes"}, None),
    ("scale: split button", "scale", {"scale_tab": "(tp, pp, dp) explorer"}, ("button", "split_find", None)),
    ("scale: all-reduce", "scale", {"scale_tab": "All-reduce bandwidth"}, None),
    ("scale: serving load", "scale", {"scale_tab": "LLM serving under load"}, None),
    ("measure", "measure", {}, None),
    ("learn", "learn", {}, ("selectbox", "learn_lesson", None)),  # the next lesson in the list
    *[
        (f"lesson {stem}", "learn", {"lesson": stem}, None)
        for stem in (
            "cluster_allreduce_overlap",
            "cluster_amdahl_gustafson",
            "cluster_pipeline_bubble",
            "cluster_ring_vs_tree",
        )
    ],
]
WARMED = {label for label, *_ in CASES if label.startswith(("scale: ", "lesson cluster_"))} - {
    "scale: all-reduce"
}
"""The cases whose first view ``parsim app`` computes as it starts (``parsim.app.warmup``)."""
PUBLISHED = ("measure: predict the published runs again", "measure", {}, ("button", "published_show", None))

CHILD = """
import json, statistics, sys, time
sys.path.insert(0, {root!r})
import streamlit  # a server started by `parsim app` has Streamlit and the preloaded modules
from parsim.app import preload
preload()
from tests.apptest import app
page, query, action = {page!r}, {query!r}, {action!r}
if {warmed!r}:  # the server's warm-up has run (parsim.app.warmup), as `parsim app` does at start
    from parsim.app import warmup
    warmup.warm(say=lambda line: None)
start = time.perf_counter(); at = app(page, query); cold = time.perf_counter() - start
warm = []
for _ in range(3):
    start = time.perf_counter(); app(page, query); warm.append(time.perf_counter() - start)
interaction = None
if action is not None:
    kind, key, value = action
    widget = getattr(at, kind)(key=key)
    if kind == "button":
        widget = widget.click()
    else:
        widget = widget.set_value(widget.options[1] if value is None else value)
    start = time.perf_counter(); widget.run(); interaction = time.perf_counter() - start
    assert not at.exception, at.exception[0].value
print(json.dumps([cold, statistics.median(warm), interaction]))
"""


def measure(
    page: str, query: dict, action: tuple | None, warmed: bool = False
) -> tuple[float, float, float | None]:
    code = CHILD.format(root=str(ROOT), page=page, query=query, action=action, warmed=warmed)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return tuple(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-published", action="store_true", help="leave out the minute-long recompute")
    args = parser.parse_args()
    cases = CASES if args.skip_published else [*CASES, PUBLISHED]
    print("targets: cold <= 2 s, interaction <= 1 s")
    print(f"{'case':<44}{'cold s':>8}{'warm s':>8}{'interaction s':>15}")
    for label, page, query, action in cases:
        cold, warm, interaction = measure(page, query, action)
        shown = "-" if interaction is None else f"{interaction:.2f}"
        missed = cold > 2 or (interaction is not None and interaction > 1)
        print(f"{label:<44}{cold:>8.2f}{warm:>8.2f}{shown:>15}{'   over' if missed else ''}", flush=True)
    print("\nthe same first opens on a server whose warm-up has run (`parsim app`; --no-warm: as above)")
    print(f"{'case':<44}{'cold s':>8}{'warm s':>8}{'interaction s':>15}")
    for label, page, query, action in [case for case in cases if case[0] in WARMED]:
        cold, warm, interaction = measure(page, query, action, warmed=True)
        shown = "-" if interaction is None else f"{interaction:.2f}"
        missed = cold > 2 or (interaction is not None and interaction > 1)
        print(f"{label:<44}{cold:>8.2f}{warm:>8.2f}{shown:>15}{'   over' if missed else ''}", flush=True)


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"({time.perf_counter() - start:.0f} s in all)")
