"""Issue 23, item 15: ``parsim app`` starts anywhere — without a terminal, with no Streamlit settings
of the user's (no first-run e-mail prompt) — and the app fetches nothing from the internet:
classrooms are often offline. In a real headless Chromium (Debian's package, driven by Playwright)."""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.browser import CHROMIUM, FLAGS, no_exception, serving, wait_idle

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium", allow_module_level=True)
playwright = pytest.importorskip("playwright.sync_api", reason="pip install playwright (in the dev extra)")

PAGES = ["", "explore", "compare", "scale", "measure", "learn"]


def test_the_app_starts_without_a_terminal_and_stays_on_this_machine(tmp_path):
    home = tmp_path / "home"  # a new user: no ~/.streamlit/credentials.toml, so Streamlit would ask
    home.mkdir()
    command = [sys.executable, "-m", "parsim", "app", "--port", "{port}"]  # as the README says: no --headless
    with serving(command, tmp_path, env={"HOME": str(home)}) as url, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        requested: list[str] = []
        try:
            for path in PAGES:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.on("request", lambda request: requested.append(request.url))
                page.goto(f"{url}/{path}", wait_until="load", timeout=60_000)
                page.wait_for_selector("h1", timeout=60_000)
                wait_idle(page)
                no_exception(page)
                page.close()
        finally:
            browser.close()
    app = urlsplit(url).netloc
    outside = sorted(
        {
            u
            for u in requested
            if urlsplit(u).scheme in ("http", "https", "ws", "wss") and urlsplit(u).netloc != app
        }
    )
    assert requested and outside == []
