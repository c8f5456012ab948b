"""Inside a presented figure: at 16:9 and 1.5x type, every piece of text lies inside the figure and no
two overlap (issue 27, 7: the Flynn grid's axis label ran off the slide). The browser's side, that
the PNG itself fits the screen, is ``test_e2e_present``."""

from __future__ import annotations

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text

from parsim import plots
from parsim.app import teach
from parsim.plots.style import PRESENTATION_SIZE, presentation
from parsim.plots.teaching import flynn_grids
from parsim.studies import lessons
from parsim.studies.scenarios import load_scenario, run_scenario


def misfits(fig) -> tuple[list[str], list[tuple[str, str]]]:
    """(texts reaching outside the figure, pairs of texts drawn over each other), by their text."""
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    frame = fig.bbox
    boxes = [
        (t.get_text(), t.get_window_extent(renderer))
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip()
    ]
    outside = [
        text
        for text, box in boxes
        if box.x0 < frame.x0 - 1 or box.x1 > frame.x1 + 1 or box.y0 < frame.y0 - 1 or box.y1 > frame.y1 + 1
    ]
    over = [(a, b) for i, (a, one) in enumerate(boxes) for b, other in boxes[i + 1 :] if one.overlaps(other)]
    return outside, over


def test_misfits_sees_a_label_off_the_figure():
    import matplotlib.figure

    fig = matplotlib.figure.Figure(figsize=(2, 2))
    fig.add_subplot().set_xlabel("a label far too long for a two-inch figure, run off both edges")
    assert "a label far too long for a two-inch figure, run off both edges" in misfits(fig)[0]


@pytest.mark.slow
@pytest.mark.parametrize("at_s", [0.0, 1e-4, 1e-2])
def test_the_presented_flynn_grids_fit_the_slide(at_s):
    result = run_scenario(load_scenario("flynn_vector_add"))
    with presentation():
        fig = flynn_grids(teach.flynn_panels(result, at_s), at_s)
    assert tuple(fig.get_size_inches()) == pytest.approx(PRESENTATION_SIZE)
    assert misfits(fig) == ([], [])


def reaching_out(fig) -> list[str]:
    """The figure's parts (axes with their ticks and texts, legends, titles) whose drawn box reaches
    outside the figure: matplotlib's tight boxes count only what is drawn."""
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    frame = fig.bbox
    out = []
    for part in fig.get_children():
        box = part.get_tightbbox(renderer) if hasattr(part, "get_tightbbox") else None
        if box is not None and (
            box.x0 < frame.x0 - 1 or box.x1 > frame.x1 + 1 or box.y0 < frame.y0 - 1 or box.y1 > frame.y1 + 1
        ):
            out.append(type(part).__name__)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", lessons.names())
def test_every_presented_lesson_figure_fits_the_slide(name):
    result = run_scenario(load_scenario(name))
    with presentation():
        fig = plots.scenario(result)
    assert reaching_out(fig) == []
