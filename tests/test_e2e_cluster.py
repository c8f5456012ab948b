"""The Scale out page's cluster tabs in a real headless Chromium, against ``python -m parsim app``.

Opens ``/scale``, switches to "Across nodes" by its tab, moves the nodes slider with the keyboard
(16 -> 32 nodes: the caption and the figures follow), then opens the (tp, pp, dp) explorer, finds
the fastest split (split_table's process pool under the app's server) and checks that its table
and timeline render; and the all-reduce panel. No step may show an exception; each saves a
screenshot in ``test-artifacts/cluster-*.png``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from tests.browser import CHROMIUM, FLAGS, ROOT, no_exception, open_page, serving, shot, wait_idle

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium", allow_module_level=True)
playwright = pytest.importorskip("playwright.sync_api", reason="pip install playwright (in the dev extra)")


@pytest.fixture(scope="module")
def cluster_app():
    # --no-warm: this test opens heavy views at once itself; the server's warm-up computing them beside
    # it would only double a CI run's work (test_e2e_class starts the server as a teacher does)
    command = [sys.executable, "-m", "parsim", "app", "--headless", "--no-warm", "--port", "{port}"]
    with serving(command, ROOT) as url, playwright.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        yield url, chromium
        chromium.close()


def images_loaded(page, count: int) -> None:
    """Wait for at least ``count`` figures, each decoded and wider than a thumbnail."""
    images = page.locator("[data-testid='stImage'] img")
    images.nth(count - 1).wait_for(timeout=90_000)
    for index in range(count):
        images.nth(index).wait_for(timeout=60_000)
        # a rerun swaps each figure's src: the new one decodes a moment after the element is there
        # (CI caught it mid-swap once, 2026-11-28), so wait for the decode rather than sample it
        deadline = time.monotonic() + 60
        while not images.nth(index).evaluate("img => img.complete && img.naturalWidth > 100"):
            assert time.monotonic() < deadline, f"figure {index} never finished loading"
            time.sleep(0.25)


def test_across_nodes_follows_the_nodes_slider(cluster_app):
    url, browser = cluster_app
    page = open_page(browser, f"{url}/scale")
    try:
        page.get_by_role("tab", name="Across nodes").click()
        page.get_by_role("heading", name="Data-parallel training across nodes").wait_for(timeout=60_000)
        page.get_by_text("16 x 8 = 128 GPUs").first.wait_for(timeout=60_000)
        images_loaded(page, 2)  # efficiency vs nodes, one node's step
        no_exception(page)
        assert "scale_tab=Across+nodes" in page.url or "scale_tab=Across%20nodes" in page.url
        slider = page.get_by_role("slider", name="nodes")
        slider.focus()
        slider.press("ArrowRight")  # 16 -> 32 nodes
        page.get_by_text("32 x 8 = 256 GPUs").first.wait_for(timeout=60_000)
        wait_idle(page)
        no_exception(page)
        assert "nodes_nodes=32" in page.url
        images_loaded(page, 2)
        assert page.get_by_text("efficiency vs 1 GPU").count() >= 1
    finally:
        shot(page, "cluster-across-nodes")
        page.close()


def test_the_explorer_finds_the_fastest_split(cluster_app):
    url, browser = cluster_app
    page = open_page(browser, f"{url}/scale?scale_tab=%28tp%2C+pp%2C+dp%29+explorer")
    try:
        page.get_by_text("Press the button").first.wait_for(timeout=60_000)  # the tab has rendered
        wait_idle(page)
        found = page.get_by_text("the fastest is highlighted").first
        for attempt in range(2):  # a click landing in a rerun that was still starting can be lost
            page.get_by_role("button", name="Find the fastest split").click()
            try:
                found.wait_for(timeout=60_000 * (attempt + 1))
                break
            except playwright.TimeoutError:
                if attempt:
                    raise
        wait_idle(page, timeout_s=120)
        no_exception(page)
        # the chosen split's figures (the table's hidden header has the same words)
        metric = page.locator("[data-testid='stMetricLabel']", has_text="TFLOP/s per GPU")
        metric.first.wait_for(timeout=60_000)
        images_loaded(page, 1)  # the chosen split's pipeline timeline
        assert page.locator("[data-testid='stDataFrame']").count() >= 2  # the splits, the shares
    finally:
        shot(page, "cluster-explorer")
        page.close()


def test_the_allreduce_panel_draws_ring_and_tree(cluster_app):
    url, browser = cluster_app
    page = open_page(browser, f"{url}/scale?scale_tab=All-reduce+bandwidth")
    try:
        page.get_by_text("ring: bus bandwidth").first.wait_for(timeout=60_000)
        images_loaded(page, 1)
        no_exception(page)
    finally:
        shot(page, "cluster-allreduce")
        page.close()
