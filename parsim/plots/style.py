"""Shared look of parsim's figures: colours per kind of work, large type, one finish for line charts.

Every public figure function is wrapped by ``styled``, which applies the projector-friendly
style for the duration of the call only, never to the caller's global matplotlib settings.
"""

from __future__ import annotations

import functools

import matplotlib
from matplotlib.figure import Figure  # figures are drawn without pyplot: no backend is switched
from matplotlib.patches import Patch

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
    "axes.labelsize": 13,
    "xtick.labelsize": 12,
    "ytick.labelsize": 12,
}


def styled(function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with matplotlib.rc_context(_STYLE):
            return function(*args, **kwargs)

    return wrapper


def _figure(width: float = 10, height: float = 5) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


def _finish(ax, x_label: str, y_label: str, title: str) -> None:
    """Labels, title, legend and a light grid: the same finish for every line chart."""
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    ax.set_title(title)
    ax.legend(fontsize=10)
    ax.grid(True, which="both", alpha=0.25)


def _legend_handles() -> list[Patch]:
    return [Patch(color=c, label=k) for k, c in COLORS.items()]


def _time_scale(latency: float) -> tuple[float, str]:
    for scale, unit in ((1.0, "s"), (1e3, "ms"), (1e6, "us")):
        if latency * scale >= 1:
            return scale, unit
    return 1e9, "ns"
