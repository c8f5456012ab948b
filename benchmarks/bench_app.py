"""Render time of each app page, measured with Streamlit's AppTest, cold and warm, plus interactions.

Run: ``python benchmarks/bench_app.py``. Targets (issue 13, on a 2-core machine): the first open
of any page <= 2 s, every interaction <= 1 s.

``cold`` is the page opened first in a fresh process that has imported what a freshly started
``parsim app`` server has (Streamlit, and ``parsim.app.preload``: pandas, matplotlib, the model),
so its first predictions and figures are counted;
``warm`` is the median of later fresh sessions in the same process, as when people move between
pages (``st.cache_data`` filled); ``interaction`` is one widget change on an open page.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["home", "explore", "compare", "scale", "measure", "learn"]
# one interaction per page: (widget kind, key, new value)
INTERACTIONS = {
    "explore": ("selectbox", "explore_device", "t4"),
    "compare": ("number_input", "compare_n", 10**6),
    "scale": ("select_slider", "scale_step_gpus", 8),
    "learn": ("selectbox", "learn_lesson", None),  # the next lesson in the list
}

CHILD = """
import json, statistics, sys, time
sys.path.insert(0, {root!r})
import streamlit  # a server started by `parsim app` has Streamlit and the preloaded modules
from parsim.app import preload
preload()
from tests.apptest import app
page = {page!r}
start = time.perf_counter(); at = app(page); cold = time.perf_counter() - start
warm = []
for _ in range(3):
    start = time.perf_counter(); app(page); warm.append(time.perf_counter() - start)
interaction = None
if {action!r} is not None:
    kind, key, value = {action!r}
    widget = getattr(at, kind)(key=key)
    if value is None:
        value = widget.options[1]
    start = time.perf_counter(); widget.set_value(value).run(); interaction = time.perf_counter() - start
    assert not at.exception, at.exception[0].value
print(json.dumps([cold, statistics.median(warm), interaction]))
"""


def measure(page: str) -> tuple[float, float, float | None]:
    code = CHILD.format(root=str(ROOT), page=page, action=INTERACTIONS.get(page))
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return tuple(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    print(f"{'page':<10}{'cold s':>9}{'warm s':>9}{'interaction s':>15}")
    for page in PAGES:
        cold, warm, interaction = measure(page)
        shown = "-" if interaction is None else f"{interaction:.2f}"
        print(f"{page:<10}{cold:>9.2f}{warm:>9.2f}{shown:>15}", flush=True)


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"({time.perf_counter() - start:.0f} s in all)")
