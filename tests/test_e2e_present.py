"""Presentation mode on a projector, in a real headless Chromium: at 16:9 every figure and every label
fits (issue 27, 7: the Flynn grid's labels were cut).

A projector is 16:9 (1280x720, 1920x1080). For each, the pages a class presents are opened with
``?present=true`` and the browser's own layout is asked: each figure's box lies inside the page's main
container and inside one screen's height, is drawn whole (its shown shape is its PNG's shape: nothing
cropped), and no heading, caption, label or paragraph runs past its container. The type is 1.5 times
the everyday 16 px. Inside the PNGs, matplotlib's own boxes are checked by ``test_present_fit``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.browser import CHROMIUM, FLAGS, no_exception, open_page, serving, shot, wait_idle

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium", allow_module_level=True)
playwright = pytest.importorskip("playwright.sync_api", reason="pip install playwright (in the dev extra)")

VIEWPORTS = [(1280, 720), (1920, 1080)]
PAGES = ["learn?lesson=flynn_vector_add", "learn?lesson=conv3x3", "explore"]

# The browser's layout, measured in the page: figures (their box, the container's box, the PNG's own
# shape) and every text element whose content is wider than its box.
MEASURE = """
() => {
  const APP = "[data-testid='stAppViewContainer']";
  const main = document.querySelector("[data-testid='stMainBlockContainer']").getBoundingClientRect();
  const shown = (el) => el.getBoundingClientRect().width > 0 && el.getBoundingClientRect().height > 0;
  const figures = [...document.querySelectorAll("[data-testid='stImage'] img")].filter(shown).map((img) => {
    const box = img.getBoundingClientRect();
    return {left: box.left, right: box.right, top: box.top, bottom: box.bottom, width: box.width,
            height: box.height, natural: img.naturalWidth / img.naturalHeight,
            fit: getComputedStyle(img).objectFit};
  });
  const selectors = "h1, h2, h3, h4, [data-testid='stCaptionContainer'], [data-testid='stWidgetLabel'], "
    + "[data-testid='stMarkdownContainer'] p, [data-testid='stMarkdownContainer'] li";
  const overflowing = [...document.querySelectorAll(selectors)]
    .filter((el) => el.offsetParent !== null)
    .filter((el) => el.scrollWidth > el.clientWidth + 1
      || el.getBoundingClientRect().right > main.right + 1 || el.getBoundingClientRect().left < main.left - 1)
    .map((el) => el.innerText.slice(0, 60));
  return {main: {left: main.left, right: main.right}, figures, overflowing,
          font: parseFloat(getComputedStyle(document.querySelector(APP)).fontSize),
          width: window.innerWidth, height: window.innerHeight};
}
"""


LOADED = "() => [...document.querySelectorAll(\"[data-testid='stImage'] img\")].every((i) => i.complete)"


@pytest.fixture(scope="module")
def browser():
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", "{port}"]
    command += ["--server.headless", "true", "--browser.gatherUsageStats", "false"]
    with serving(command, Path(__file__).resolve().parents[1]) as url, playwright.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        yield url, chromium
        chromium.close()


@pytest.mark.parametrize(("width", "height"), VIEWPORTS, ids=lambda v: str(v))
@pytest.mark.parametrize("path", PAGES)
def test_presented_figures_and_labels_fit_a_16_9_screen(browser, path, width, height):
    url, chromium = browser
    joiner = "&" if "?" in path else "?"
    page = open_page(chromium, f"{url}/{path}{joiner}present=true", width=width, height=height)
    try:
        wait_idle(page)
        page.wait_for_selector("[data-testid='stImage'] img", timeout=90_000)
        page.wait_for_function(LOADED)
        no_exception(page)
        layout = page.evaluate(MEASURE)
    finally:
        shot(page, f"present-{path.split('?')[-1].replace('=', '-')}-{width}x{height}")
        page.close()
    assert layout["font"] >= 1.5 * 16  # the projector's type: 1.5x the everyday 16 px
    assert layout["figures"], "no figure on the presented page"
    main = layout["main"]
    for figure in layout["figures"]:
        assert main["left"] - 1 <= figure["left"] and figure["right"] <= main["right"] + 1, figure
        assert figure["right"] <= layout["width"] and figure["height"] <= layout["height"], figure
        assert figure["fit"] in ("fill", "contain")  # no object-fit: cover crops the PNG's edges
        assert figure["width"] / figure["height"] == pytest.approx(figure["natural"], rel=0.02), figure
    assert layout["overflowing"] == []
