"""Every link the app prints, as data: the class on Home, and a link to each lesson.

A link is a page and the settings it opens with (``/scale?scale_tab=...``), like a bookmark on
a teacher's slide. The settings name widgets' values exactly as the widgets know them (a tab by
its label, a comparison by its name, a lesson by its file's stem): a link that names a value the
page does not offer would open the page's default instead, quietly. ``problems`` says which
settings of a link name nothing, and the tests open every link of ``printed`` in a real browser
and check that the page shows what the link promises.
"""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import parse_qsl, urlencode


class Link(NamedTuple):
    """A page's URL path (``"scale"``) and the settings in its query string."""

    page: str
    query: tuple[tuple[str, str], ...] = ()

    @property
    def url(self) -> str:
        """The link as the browser's address bar shows it: ``/scale?scale_tab=Across+nodes``."""
        return f"/{self.page}" + (f"?{urlencode(self.query)}" if self.query else "")

    @property
    def params(self) -> dict[str, str]:
        return dict(self.query)


class Step(NamedTuple):
    """One step of the class on Home: its topic, what the class sees, and its link."""

    topic: str
    what: str
    link: Link


def lesson(stem: str) -> Link:
    """The Learn page opened on lesson ``stem`` (its file's name without ``.toml``)."""
    return Link("learn", (("lesson", stem),))


def class_steps() -> tuple[Step, ...]:
    """The 45-minute class on Home, a step per link (the tab and comparison names come from the
    pages themselves, so a renamed tab renames its link)."""
    from parsim.app.scale import BATCHING, TRAINING

    crossover, pcie = "CPU vs GPU (PCIe paid)", "pinned vs pageable"  # compare.COMPARISONS' names
    return (
        Step(
            "Flynn's taxonomy",
            "one vector add as SISD, SIMD, MIMD, MIMD+SIMD and SIMT: which lanes and cores work",
            lesson("flynn_vector_add"),
        ),
        Step(
            "CPU vs GPU",
            "the same operation on a laptop CPU and a GPU, PCIe paid: where the GPU starts to win",
            Link("compare", (("compare_kind", crossover),)),
        ),
        Step(
            "Latency vs throughput",
            "batching: each request waits longer, the GPU serves more per second",
            Link("scale", (("scale_tab", BATCHING),)),
        ),
        Step(
            "The cost of PCIe copies",
            "pinned vs pageable host memory, and streams that hide copies behind kernels",
            Link("compare", (("compare_kind", pcie),)),
        ),
        Step(
            "Multi-GPU training",
            "data-parallel training on 1 to 8 GPUs: where the all-reduce eats the speed-up",
            Link("scale", (("scale_tab", TRAINING),)),
        ),
    )


def lesson_stems() -> list[str]:
    from parsim.app.cache import scenario_folder
    from parsim.studies.scenarios import scenario_paths

    return [path.stem for path in scenario_paths(scenario_folder())]


def printed() -> list[Link]:
    """Every link the app prints: the class's steps and a link to every lesson (Explore prints
    those under a workload, Learn's bookmarks are the same)."""
    every = [step.link for step in class_steps()] + [lesson(stem) for stem in lesson_stems()]
    return list(dict.fromkeys(every))  # once each (the class's first step is a lesson)


def parse(url: str) -> Link:
    """A link from its text (``/scale?scale_tab=Across+nodes``), as a README or a slide writes it."""
    path, _, query = url.partition("?")
    return Link(path.strip("/"), tuple(parse_qsl(query, keep_blank_values=True)))


def choices() -> dict[str, list[str]]:
    """The values a link's settings may take, by setting: tabs, comparisons, lessons."""
    from parsim.app import compare_llm
    from parsim.app.compare import COMPARISONS
    from parsim.app.scale import TABS

    return {
        "scale_tab": list(TABS),
        "compare_kind": [*COMPARISONS, *compare_llm.COMPARISONS],
        "lesson": lesson_stems(),
    }


def problems(link: Link) -> list[str]:
    """What is wrong with ``link``: an unknown page, or a setting naming a value the page lacks."""
    from parsim.app.entry import PAGES

    pages = {url for _, _, url in PAGES.values()}
    found = [] if link.page in pages else [f"{link.url}: no page '{link.page}' (pages: {sorted(pages)})"]
    offered = choices()
    for name, value in link.query:
        if name in offered and value not in offered[name]:
            found.append(f"{link.url}: '{name}' names no {name.replace('_', ' ')} {value!r}")
    return found
