"""Render time of each app page with default settings, measured with Streamlit's AppTest.

Run: ``python benchmarks/bench_app.py``. Target: <= 1 s per page on a 2-core machine.
``cold`` is the first render in a fresh process (imports, first predictions); ``warm`` is the
median of later fresh sessions in the same server process, as when people move between pages
(imports loaded, ``st.cache_data`` filled).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["explore", "compare", "scale", "measure", "learn"]


def render(page: str) -> float:
    start = time.perf_counter()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    if page == "explore":
        at.run()
    else:
        at.switch_page(str(ROOT / "parsim" / "app" / "pages" / f"{page}.py")).run()
    if at.exception:
        raise RuntimeError(f"{page}: {at.exception[0].value}")
    return time.perf_counter() - start


def main() -> None:
    rows = []
    for page in PAGES:
        cold = render(page)
        warm = statistics.median(render(page) for _ in range(3))
        rows.append((page, cold, warm))
    print(f"{'page':<10}{'cold s':>9}{'warm s':>9}")
    for page, cold, warm in rows:
        print(f"{page:<10}{cold:>9.2f}{warm:>9.2f}")


if __name__ == "__main__":
    main()
