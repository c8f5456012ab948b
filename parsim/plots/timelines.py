"""Timelines, rooflines and bar comparisons of predictions.

A timeline is read on a projector and on a phone, so its type is sized from the figure's width
(``legible_rc``) rather than fixed in points, its row labels wrap in two short lines, its time
axis reads in s/ms/us, and its colour key lists only the kinds of work it shows. Stacked
timelines share one time axis, so a run ten times longer is drawn ten times longer.
"""

from __future__ import annotations

import textwrap

import matplotlib
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from parsim.base.units import seconds, si
from parsim.hardware.specs import ProcessorSpec
from parsim.model.outcome import CATEGORIES
from parsim.plots.axes import count_axis, time_axis
from parsim.plots.style import (
    COLORS,
    _figure,
    _legend_handles,
    legend,
    legible_rc,
    points,
    styled,
    suptitle,
    wrap,
)
from parsim.plots.style import title as style_title
from parsim.results.prediction import Prediction
from parsim.results.resources import Resource
from parsim.studies.teaching import attainable_flops_per_s, ridge_intensity, roofline_peak
from parsim.workloads.base import HOST

_WIDTH = 11  # inches; type is sized from it (legible_rc), so the figure reads when shrunk
_LABEL = 16  # characters per line of a row label
_ON_ONE_DEVICE = {"h2d": 1, "cores": 3, "memory": 5, "d2h": 6, "ring": 8, "network": 9}
"""Where each row of a device sits; a cluster node's network row follows GPU0's ring."""


def _row_order(resource: Resource) -> tuple:
    """Host rows first; then each device's rows in the order work flows: copies in, cores, memory,
    copies out, the all-reduce ring (PCIe before NVLink); several GPUs one after another."""
    if resource.device == HOST and (resource.kind == "thread" or resource.tagged):
        return (0, 0, 0, resource.label)
    step = _ON_ONE_DEVICE[resource.direction or resource.kind]
    return (1 if not resource.tagged else 2, resource.device, step, resource.unit != "PCIe", resource.label)


def _rows(prediction: Prediction) -> list[Resource]:
    return sorted({e.resource.group for e in prediction.trace}, key=_row_order)


def _row_label(resource: Resource) -> str:
    """A row's name in at most two short lines: a long one wraps rather than running off the figure,
    at the parenthesis when that fits (``memory`` over ``(device memory)``)."""
    label = resource.label
    head, paren, tail = label.partition(" (")
    if len(label) > _LABEL and paren and len(head) <= _LABEL and len(tail) + 1 <= _LABEL:
        return f"{head}\n({tail}"
    return "\n".join(textwrap.wrap(label, _LABEL, break_long_words=False))


def _draw_timeline(ax, prediction: Prediction) -> set[str]:
    """One row per resource (times in seconds); a core-group bar is as tall as the share of cores it
    keeps busy. Returns the kinds of work drawn, for the legend."""
    rows = _rows(prediction)
    where = {row: index for index, row in enumerate(rows)}
    boxes, colors = [], []
    for (y, half, kind), x0, x1 in _merged(prediction, where):
        boxes.append(((x0, y - half), (x0, y + half), (x1, y + half), (x1, y - half)))
        colors.append(COLORS[kind])
    # One collection, not a Rectangle per event: a training step has thousands of them, and
    # a collection draws them in a fraction of the time.
    ax.add_collection(PolyCollection(boxes, facecolors=colors, edgecolors="white", linewidths=0.3))
    ax.set_yticks(range(len(rows)), [_row_label(row) for row in rows])
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.grid(axis="x", alpha=0.3)
    return {e.kind for e in prediction.trace}


# Events closer than this share of the time axis would meet within one pixel of a 1400 px figure:
# drawn as one bar, which looks the same and draws a training step's thousands of events quickly.
_SUBPIXEL = 1 / 4000


def _merged(prediction: Prediction, where: dict) -> list[tuple[tuple, float, float]]:
    """The trace's busy intervals per (row, bar height, kind), neighbours closer than a pixel joined."""
    span = max((e.start_s + max(e.duration_s, 0.0) for e in prediction.trace), default=0.0)
    gap = span * _SUBPIXEL
    bars: dict[tuple, list[list[float]]] = {}
    for e in sorted(prediction.trace, key=lambda e: e.start_s):
        key = (where[e.resource.group], 0.4 * min(max(e.weight, 0.08), 1.0), e.kind)
        x0, x1 = e.start_s, e.start_s + max(e.duration_s, 0.0)
        runs = bars.setdefault(key, [])
        if runs and x0 - runs[-1][1] <= gap:
            runs[-1][1] = max(runs[-1][1], x1)
        else:
            runs.append([x0, x1])
    return [(key, x0, x1) for key, runs in bars.items() for x0, x1 in runs]


def _kinds_legend(fig, kinds: set[str]) -> None:
    """The colour key under the figure, listing only the kinds of work drawn."""
    handles = _legend_handles(kinds)
    if not handles:
        return
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    # The key's width needs only a renderer to measure its text, not a drawing of the whole figure
    # (which would draw every bar twice: here and when the figure is saved).
    renderer = FigureCanvasAgg(fig).get_renderer()
    for columns in range(len(handles), 0, -1):  # one row, unless it is wider than the figure (a slide)
        key = fig.legend(handles=handles, loc="outside lower center", ncols=columns)
        if columns == 1 or key.get_window_extent(renderer).width <= fig.bbox.width:
            return
        key.remove()


def _row_height() -> float:
    """Inches per timeline row: room for a two-line label at the current tick size."""
    return max(0.55, 2.6 * points(matplotlib.rcParams["ytick.labelsize"]) / 72)


@styled
def timeline(prediction: Prediction, title: str | None = None) -> Figure:
    """Gantt chart: one row per resource, one bar per busy interval, coloured by kind.

    Type is at least ``legible(width)`` points, so row labels read on a 1400 px screen and a
    420 px phone alike.
    """
    with matplotlib.rc_context(legible_rc(_WIDTH)):
        fig = _figure(_WIDTH, 1.6 + _row_height() * max(len(_rows(prediction)), 2), grow=True)
        with matplotlib.rc_context(legible_rc(fig.get_figwidth())):
            ax = fig.add_subplot()
            kinds = _draw_timeline(ax, prediction)
            ax.set_xlim(0, prediction.latency_s * 1.02 if prediction.latency_s > 0 else 1)
            time_axis(ax.xaxis)
            style_title(ax, title or _describe(prediction))
            _kinds_legend(fig, kinds)
    return fig


@styled
def roofline(prediction: Prediction, spec: ProcessorSpec, dtype: str = "float32") -> Figure:
    """The device's roofline (peak FLOP/s and memory bandwidth) with this workload's point."""
    fig = _figure(8, 5.5)
    ax = fig.add_subplot()
    bandwidth = spec.memory.bandwidth_Bps
    ceilings = {"vector": False}  # name -> matrix units allowed
    if dtype in dict(spec.matrix_flops_per_s):
        ceilings["matrix units"] = True
    intensity = prediction.flops / prediction.bytes if prediction.bytes else 1.0
    lo = min(1 / 16, intensity / 4)
    hi = max(4096, intensity * 4)
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    for name, matrix in ceilings.items():
        peak = roofline_peak(spec, dtype, matrix)
        ax.loglog(
            xs,
            [attainable_flops_per_s(spec, x, dtype, matrix) for x in xs],
            label=f"{name} peak {si(peak, 'FLOP/s')}",
        )
    effective = " effective" if prediction.executed_flops is not None else ""
    ax.loglog(
        [intensity],
        [max(prediction.flops_per_s, 1e-30)],
        "o",
        color=COLORS["compute"],
        markersize=10,
        label=f"{prediction.workload}: {si(prediction.flops_per_s, 'FLOP/s')}{effective}",
    )
    if prediction.executed_flops is not None:  # Winograd/FFT: the work done sits under the roof
        executed_intensity = prediction.executed_flops / prediction.bytes if prediction.bytes else 1.0
        ax.loglog(
            [executed_intensity],
            [max(prediction.executed_flops_per_s, 1e-30)],
            "o",
            markerfacecolor="none",
            color=COLORS["compute"],
            markersize=10,
            label=f"executed (fewer multiplications): {si(prediction.executed_flops_per_s, 'FLOP/s')}",
        )
    ax.axvline(ridge_intensity(spec, dtype, matrix=False), color="grey", linestyle=":", label="ridge point")
    count_axis(ax.xaxis, "arithmetic intensity (FLOP/byte)")
    count_axis(ax.yaxis, "compute (FLOP/s)")
    style_title(ax, f"Roofline of {spec.name} ({si(bandwidth, 'B/s')} memory)")
    legend(ax)
    ax.grid(True, which="both", alpha=0.25)
    return fig


@styled
def bars(labels: list[str], predictions: list[Prediction], title: str = "") -> Figure:
    """Latency of each case, log axis when they span more than 100x, bottleneck annotated."""
    if not predictions or len(labels) != len(predictions):
        raise ValueError(f"bars needs one label per prediction; got {len(labels)} and {len(predictions)}")
    with matplotlib.rc_context(legible_rc(_WIDTH - 1)):
        fig = _figure(_WIDTH - 1, 1.5 + 0.7 * len(labels))
        with matplotlib.rc_context(legible_rc(fig.get_figwidth())):
            ax = fig.add_subplot()
            latencies = [p.latency_s for p in predictions]
            ax.barh(range(len(labels)), latencies, color=[COLORS[p.bottleneck] for p in predictions])
            ax.set_yticks(range(len(labels)), [textwrap.fill(label, 24) for label in labels])
            ax.invert_yaxis()
            if max(latencies) > 100 * min(latencies) > 0:
                ax.set_xscale("log")
            notes = [
                ax.text(
                    prediction.latency_s,
                    index,
                    f"  {seconds(prediction.latency_s)} ({prediction.bottleneck})",
                    va="center",
                    fontsize="small",
                )
                for index, prediction in enumerate(predictions)
            ]
            ax.set_xlim(right=max(latencies) * (8 if ax.get_xscale() == "log" else 1.45))
            _room_for(ax, notes)  # before the time axis picks its ticks for the final limits
            time_axis(ax.xaxis, "latency")
            _title_over(ax, title)
            drawn = {p.bottleneck for p in predictions}
            ax.legend(
                handles=[Patch(color=COLORS[k], label=f"{k}-bound") for k in CATEGORIES if k in drawn],
                loc="lower right",
            )
    return fig


def _title_over(ax, text: str) -> None:
    """The title wrapped to the axes as laid out: long case labels narrow the axes, and a title
    wrapped to the grid cell would then run past the figure's edge on a slide."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = ax.get_figure()
    FigureCanvasAgg(fig).draw()
    width_in = ax.get_window_extent(fig.canvas.get_renderer()).width / fig.dpi
    ax.set_title(wrap(text, width_in * 0.95, matplotlib.rcParams["axes.titlesize"]))


def _room_for(ax, texts: list) -> None:
    """Widen the x axis until every label after a bar ends inside the axes (at 1.5x type on a 16:9
    slide the labels are wider than the fixed margin allowed), measured as the renderer lays it out."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = ax.get_figure()
    for _ in range(3):  # the layout moves a little as the axis grows; settles in one or two
        FigureCanvasAgg(fig).draw()
        renderer = fig.canvas.get_renderer()
        box = ax.get_window_extent(renderer)
        reach = max(text.get_window_extent(renderer).x1 for text in texts)
        if reach <= box.x1 - 2:
            return
        share = (reach - box.x0) / box.width * 1.05  # the axis width the labels need, as a share
        left, right = ax.get_xlim()
        if ax.get_xscale() == "log":
            ax.set_xlim(left, left * (right / left) ** share)
        else:
            ax.set_xlim(left, left + (right - left) * share)


@styled
def timelines(labels: list[str], predictions: list[Prediction], title: str = "") -> Figure:
    """Several timelines stacked on one shared time axis (same scale and limits), so a run ten
    times longer than another is drawn ten times longer."""
    if not predictions or len(labels) != len(predictions):
        raise ValueError(f"timelines needs one label per prediction; got {len(labels)}, {len(predictions)}")
    heights = [max(len(_rows(p)), 2) for p in predictions]
    with matplotlib.rc_context(legible_rc(_WIDTH)):
        rows = _row_height()
        fig = _figure(_WIDTH, 1.6 + sum(rows * h + 0.7 for h in heights), grow=True)
        with matplotlib.rc_context(legible_rc(fig.get_figwidth())):
            axes = fig.subplots(len(predictions), 1, sharex=True, height_ratios=heights, squeeze=False)[:, 0]
            kinds = set()
            for ax, label, prediction in zip(axes, labels, predictions, strict=True):
                kinds |= _draw_timeline(ax, prediction)
                style_title(ax, f"{label}: {seconds(prediction.latency_s)}", fontsize="medium", loc="left")
            longest = max(p.latency_s for p in predictions)
            axes[-1].set_xlim(0, longest * 1.02 if longest > 0 else 1)
            time_axis(axes[-1].xaxis)
            suptitle(fig, title)
            _kinds_legend(fig, kinds)
    return fig


def _describe(prediction: Prediction) -> str:
    params = " ".join(f"{k}={_value(v)}" for k, v in prediction.params.items())
    where = f"{prediction.device} ({prediction.mode})"
    return f"{prediction.workload} {params} on {where}: {seconds(prediction.latency_s)}"


def _value(value) -> str:
    """A parameter as a title shows it: 100 M, not 100000000 (a whole number of 10,000 and more)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 10_000:
        return si(value)
    return str(value)
