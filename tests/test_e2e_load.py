"""Scale's "LLM serving under load" tab in a real headless Chromium, against ``python -m parsim app``.

Opens ``/scale`` on the tab, waits for its three figures and the capacity answer, then moves the
request-rate slider with the keyboard (one step up: a higher rate) and checks that the view
follows with no exception; a screenshot is saved in ``test-artifacts/load-*.png``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.browser import CHROMIUM, FLAGS, ROOT, no_exception, open_page, serving, shot, wait_idle

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium", allow_module_level=True)
playwright = pytest.importorskip("playwright.sync_api", reason="pip install playwright (in the dev extra)")


@pytest.fixture(scope="module")
def load_app():
    # --no-warm: this test opens heavy views at once itself; the server's warm-up computing them beside
    # it would only double a CI run's work (test_e2e_class starts the server as a teacher does)
    command = [sys.executable, "-m", "parsim", "app", "--headless", "--no-warm", "--port", "{port}"]
    with serving(command, ROOT) as url, playwright.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        yield url, chromium
        chromium.close()


def test_the_serving_view_follows_the_rate_slider(load_app):
    url, browser = load_app
    page = open_page(browser, f"{url}/scale")
    try:
        page.get_by_role("tab", name="LLM serving under load").click()
        page.get_by_role("heading", name="LLM serving under load").wait_for(timeout=60_000)
        page.get_by_text("Capacity: ").first.wait_for(timeout=120_000)
        images = page.locator("[data-testid='stImage'] img")
        images.nth(2).wait_for(timeout=90_000)
        for index in range(3):
            assert images.nth(index).evaluate("img => img.complete && img.naturalWidth > 100")
        no_exception(page)
        page.get_by_text("(60% of saturation)").first.wait_for(timeout=30_000)
        slider = page.get_by_role("slider", name="request rate")
        slider.focus()
        slider.press("ArrowRight")  # 60 % -> 80 % of saturation
        page.get_by_text("(80% of saturation)").first.wait_for(timeout=60_000)
        wait_idle(page)
        no_exception(page)
        shot(page, "load-rate")
    except Exception:
        shot(page, "load-failure")
        raise
