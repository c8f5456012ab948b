"""Every link the app prints, opened in a real headless Chromium (issue 27, defect 1).

The links are ``parsim.app.links.printed()`` (Home's class and every lesson) and the app links
the README prints: each one is opened first thing in a new session, like a bookmark, and must
show the state it promises — the tab it names selected, the comparison it names pressed, the
lesson it names as the heading, every other setting as its widget's value — without an exception.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from parsim.app import links
from parsim.studies.scenarios import load_scenario
from tests.browser import CHROMIUM, FLAGS, no_exception, open_page, serving, wait_idle
from tests.test_app_links import readme_links

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium", allow_module_level=True)
playwright = pytest.importorskip("playwright.sync_api", reason="pip install playwright (in the dev extra)")

ROOT = Path(__file__).resolve().parents[1]
EVERY = list(dict.fromkeys([*links.printed(), *readme_links()]))


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    folder = tmp_path_factory.mktemp("links")
    # --no-warm: this test opens heavy views at once itself; the server's warm-up computing them beside
    # it would only double a CI run's work (test_e2e_class starts the server as a teacher does)
    command = [sys.executable, "-m", "parsim", "app", "--headless", "--no-warm", "--port", "{port}"]
    with serving(command, folder) as url, playwright.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        yield url, chromium
        chromium.close()


def shown(page, name: str, value: str) -> str:
    """What the page shows for setting ``name`` (to compare with the link's ``value``)."""
    if name == "scale_tab":
        return page.get_by_role("tab", selected=True).first.inner_text().strip()
    if name == "compare_kind":
        return page.locator("[data-testid='stButtonGroup'] button[aria-checked='true']").first.inner_text()
    if name == "lesson":
        return page.locator("h2").first.inner_text().strip()
    # any other widget: a box's value, or a picker's label naming the id ("... (t4)", "matmul — ...")
    values = page.evaluate("() => Array.from(document.querySelectorAll('input')).map(i => i.value)")
    named = any(v == value or v.endswith(f"({value})") or v.startswith(f"{value} — ") for v in values)
    return value if named else f"none of {values}"


def promised(name: str, value: str) -> str:
    if name == "lesson":
        return load_scenario(ROOT / "parsim" / "lessons" / f"{value}.toml").title
    return value


@pytest.mark.parametrize("link", EVERY, ids=lambda link: link.url)
def test_every_link_opens_the_page_and_state_it_promises(browser, link):
    url, chromium = browser
    page = open_page(chromium, url + link.url)
    try:
        wait_idle(page)
        no_exception(page)
        assert page.get_by_text("Page not found").count() == 0
        for name, value in link.query:
            assert shown(page, name, value) == promised(name, value), (link.url, name)
    finally:
        page.close()
