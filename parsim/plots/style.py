"""Shared look of parsim's figures: colours per kind of work, type large enough to read, titles that fit.

Every public figure function is wrapped by ``styled``, which applies the style for the duration of
the call only, never to the caller's global matplotlib settings. Two styles: the everyday one
(large type for a projector), and ``presentation()``, a context manager under which figures are
16:9 with type 1.5x larger, one figure per screen. The choice travels in a ``ContextVar``, so a
notebook or the app switches it for a block of code without passing a flag through every call.

Sizes are relative: explicit sizes in the figure code are ``"small"``, ``"medium"`` and so on,
which follow ``font.size``, so the presentation style enlarges every piece of text at once.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math

import matplotlib
from matplotlib.figure import Figure  # figures are drawn without pyplot: no backend is switched
from matplotlib.font_manager import FontProperties
from matplotlib.patches import Patch
from matplotlib.textpath import text_to_path

COLORS = {
    "compute": "#d95f02",
    "memory": "#1b9e77",
    "transfer": "#7570b3",
    "overhead": "#999999",
    "wait": "#dddddd",
}
# Large type for the projector; applied per call, never to the caller's global settings.
_STYLE = {
    "font.size": 13,
    "axes.titlesize": 15,
    "figure.titlesize": 15,
    "axes.labelsize": 13,
    "xtick.labelsize": 12,
    "ytick.labelsize": 12,
    "legend.fontsize": 11,
    "axes.formatter.useoffset": False,  # no "1e-3" in a corner, whatever the axis
}
_SCALE = 1.5  # presentation type against the everyday style
_PRESENTATION = {k: v if isinstance(v, bool) else v * _SCALE for k, v in _STYLE.items()}
PRESENTATION_SIZE = (13.333, 7.5)  # 16:9, a slide's shape
_PRESENTING = contextvars.ContextVar("parsim_plots_presenting", default=False)

# Where figures are looked at: (display width in px, least text height in px). The app stores
# PNGs at 110 dpi and stretches them to the column, so what counts is the text's share of the
# figure's width, not its size in points: a phone (420 px) asks the most.
DISPLAYS = ((1400, 11), (420, 7))


@contextlib.contextmanager
def presentation():
    """Figures drawn inside are 16:9 with type at least 1.5x larger (one figure per screen)."""
    token = _PRESENTING.set(True)
    try:
        yield
    finally:
        _PRESENTING.reset(token)


def presenting() -> bool:
    return _PRESENTING.get()


def styled(function):
    """Draw ``function``'s figure in the current style (everyday, or presentation())."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with matplotlib.rc_context(_PRESENTATION if presenting() else _STYLE):
            return function(*args, **kwargs)

    return wrapper


def _figure(width: float = 10, height: float = 5, grow: bool = False) -> Figure:
    """A figure ``width`` x ``height`` inches; 16:9 under presentation(). ``grow``: a figure whose
    height holds rows of text (a timeline) may be taller than a slide, so its rows never overlap."""
    if presenting():
        slide_w, slide_h = PRESENTATION_SIZE
        width, height = slide_w, max(slide_h, height) if grow else slide_h
    return Figure(figsize=(width, height), layout="constrained")


def points(size) -> float:
    """A font size (``12``, ``"small"``, an rc name's value) in points, under the current style."""
    return FontProperties(size=size).get_size_in_points()


def legible(width_in: float) -> float:
    """The least font size (points) readable on every display in ``DISPLAYS`` for a figure
    ``width_in`` inches wide shown stretched to the display width.

    A font of ``f`` points is ``f / 72`` inches of a ``width_in``-inch figure, so shown ``d`` px
    wide it is ``f * d / (72 * width_in)`` px tall, whatever the dpi.
    """
    return max(px * 72 * width_in / shown for shown, px in DISPLAYS)


def legible_rc(width_in: float) -> dict:
    """rc sizes raised (never lowered) to ``legible(width_in)``: for figures read on a phone.

    Under presentation() the least size is 1.5x larger too, so a presented timeline's type is
    1.5x the everyday one, not merely the phone minimum of a wider figure.
    """
    least = math.ceil(legible(width_in) * (_SCALE if presenting() else 1) * 2) / 2
    keys = (
        "font.size",
        "axes.titlesize",
        "figure.titlesize",
        "axes.labelsize",
        "xtick.labelsize",
        "ytick.labelsize",
        "legend.fontsize",
    )
    return {key: max(points(matplotlib.rcParams[key]), least) for key in keys}


def wrap(text: str, width_in: float, size) -> str:
    """``text`` broken at spaces into lines no wider than ``width_in`` inches at font ``size``.

    Widths are measured with the font's own metrics (as the renderer will draw them), so a line
    is broken only when it would not fit; a word wider than the line stands alone.
    """
    prop = FontProperties(size=size)
    room = width_in * 72 * 0.97  # points; a little slack for the title's padding

    def fits(line: str) -> bool:
        return text_to_path.get_text_width_height_descent(line, prop, ismath=False)[0] <= room

    lines = []
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split(" "):
            candidate = f"{line} {word}" if line else word
            if line and not fits(candidate):
                lines.append(line)
                candidate = word
            line = candidate
        lines.append(line)
    return "\n".join(lines)


def title(ax, text: str, **kwargs) -> None:
    """An axes title wrapped to the width of the axes' grid cell (less room for tick labels: the
    constrained layout, not yet run, decides the axes' final width)."""
    size = kwargs.get("fontsize", matplotlib.rcParams["axes.titlesize"])
    spec = ax.get_subplotspec()
    share = 1.0
    if spec is not None:
        columns = spec.get_gridspec().ncols
        share = (spec.colspan.stop - spec.colspan.start) / columns
    ax.set_title(wrap(text, ax.get_figure().get_figwidth() * share * 0.85, size), **kwargs)


def suptitle(fig, text: str) -> None:
    """A figure title wrapped to the figure's width."""
    if text:
        fig.suptitle(wrap(text, fig.get_figwidth() * 0.95, matplotlib.rcParams["figure.titlesize"]))


def legend(ax, **kwargs) -> None:
    """A legend only when something drawn carries a label: never an empty box."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        ax.legend(handles, labels, **kwargs)


def _finish(ax, x_label: str, y_label: str, title_text: str) -> None:
    """Labels, title, legend and a light grid: the same finish for every line chart."""
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    title(ax, title_text)
    legend(ax)
    ax.grid(True, which="both", alpha=0.25)


def _legend_handles(kinds=None) -> list[Patch]:
    """Patches for the kinds of work drawn (all of them when ``kinds`` is None), in COLORS' order."""
    return [Patch(color=c, label=k) for k, c in COLORS.items() if kinds is None or k in kinds]
