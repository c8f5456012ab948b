"""Every link the app prints names a page and values that page offers (issue 27, defect 1).

The links are data (``parsim.app.links``): Home's class, a link per lesson, and the app links
the README prints. The real browser opens each of them in ``test_e2e_links.py``.
"""

import re
from pathlib import Path

import pytest

from parsim.app import links

ROOT = Path(__file__).resolve().parents[1]
APP_LINK = re.compile(r"`(/(?:home|explore|compare|scale|measure|learn)\?[^`\s]+)`")


def readme_links() -> list[links.Link]:
    return [links.parse(url) for url in APP_LINK.findall((ROOT / "README.md").read_text())]


def test_the_readme_prints_app_links_and_the_parser_reads_them_back():
    found = readme_links()
    assert len(found) >= 3
    assert links.Link("learn", (("lesson", "conv3x3"),)) in found
    for link in found:
        assert links.parse(link.url) == link


@pytest.mark.parametrize("link", [*links.printed(), *readme_links()], ids=lambda link: link.url)
def test_every_printed_link_names_what_its_page_offers(link):
    assert links.problems(link) == []


def test_the_old_home_batching_link_is_caught():
    # Home's step 3 was /scale?scale_tab=batching: no such tab, the page opened on another one
    (problem,) = links.problems(links.parse("/scale?scale_tab=batching"))
    assert "scale_tab" in problem and "'batching'" in problem
    assert links.problems(links.parse("/lab?lesson=conv3x3"))[0].startswith("/lab?lesson=conv3x3: no page")
    assert links.problems(links.parse("/learn?lesson=no_such_lesson"))


def test_the_class_has_five_steps_each_on_its_own_tab_or_comparison():
    steps = links.class_steps()
    assert [step.link.page for step in steps] == ["learn", "compare", "scale", "compare", "scale"]
    assert len({step.link for step in steps}) == 5
    assert links.class_steps()[2].link.url == "/scale?scale_tab=Batching%3A+latency+vs+throughput"
