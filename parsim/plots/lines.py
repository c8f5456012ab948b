"""Line charts: sweeps with crossovers, scaling with Amdahl's law, batching trade-offs, validation."""

from __future__ import annotations

from matplotlib.figure import Figure

from parsim.plots.axes import column_axis, count, count_axis, plain_axis, time_axis
from parsim.plots.style import _figure, _finish, legend, styled
from parsim.plots.style import title as style_title
from parsim.studies.scenarios import crossovers
from parsim.studies.teaching import amdahl_speedup

MARKER_Z = 1.5
"""Where crossover markers are drawn: above the grid, under the curves (lines are at 2)."""


def _axes_share(ax, value: float, log_x: bool) -> float:
    """Where ``value`` sits across the x axis, 0 at the left edge and 1 at the right."""
    import math

    low, high = ax.get_xlim()
    if log_x and low > 0 and value > 0:
        return (math.log(value) - math.log(low)) / (math.log(high) - math.log(low))
    return (value - low) / (high - low) if high != low else 0.5


@styled
def sweep_lines(
    series: dict[str, tuple[list, list]],
    x_label: str,
    y_label: str = "latency (s)",
    crossovers: list[tuple] = (),
    title: str = "",
    log_x: bool = True,
    log_y: bool = True,
) -> Figure:
    """One line per series; crossover points marked with a vertical line and a label.

    The axes read by what they show: ``x_label`` and ``y_label`` are sweep columns or axis titles
    (``latency_s``, ``latency (s)``, ``bytes_per_s``, ``workload.n``), and times come out in
    s/ms/us, bandwidths in GB/s or TB/s, counts on a log axis as 1k, 1M.
    """
    fig = _figure(10, 6)
    ax = fig.add_subplot()
    for label, (xs, ys) in series.items():
        ax.plot(xs, ys, marker="o", markersize=4, label=label)
    if log_x:
        ax.set_xscale("log")
    if log_y:
        ax.set_yscale("log")
    for value, winner, _loser in crossovers:
        # drawn under the curves (zorder below the lines' 2), without a box: a marker never hides a line
        ax.axvline(float(value), color="black", linestyle="--", alpha=0.5, linewidth=1, zorder=MARKER_Z)
        # read across, not rotated (a rotated label as long as the plot is tall leaves the slide at
        # 1.5x type), at the foot of the line (the legend takes a top corner), on its roomier side
        right = _axes_share(ax, float(value), log_x) > 0.5
        ax.annotate(
            f"{winner}\nwins from {count(float(value))}",
            (float(value), 0.03),
            xycoords=("data", "axes fraction"),
            xytext=(-4 if right else 4, 0),
            textcoords="offset points",
            fontsize="small",
            ha="right" if right else "left",
            va="bottom",
            color="dimgrey",
            zorder=MARKER_Z,
        )
    _finish(ax, x_label, y_label, title)
    column_axis(ax.xaxis, x_label)
    column_axis(ax.yaxis, y_label)
    return fig


@styled
def scaling(
    labels: list[str],
    gpus: list[list[int]],
    speedups: list[list[float]],
    serial: list[float],
    title: str = "",
) -> Figure:
    """Speed-up against GPU count per case, with the ideal line and Amdahl's law for each case.

    Args:
        labels: one per case.
        gpus: GPU counts of each case's points.
        speedups: predicted speed-up at each point.
        serial: the serial fraction Amdahl's law is drawn with, per case (fitted at the largest G).
    """
    fig = _figure(10, 6)
    ax = fig.add_subplot()
    top = max(max(g) for g in gpus)
    ax.plot([1, top], [1, top], color="grey", linestyle=":", label="ideal (speed-up = G)")
    for index, (label, xs, ys, fraction) in enumerate(zip(labels, gpus, speedups, serial, strict=True)):
        color = f"C{index}"
        ax.plot(xs, ys, marker="o", color=color, label=f"{label}")
        curve = [1 + i * (top - 1) / 100 for i in range(101)]
        ax.plot(
            curve,
            # a super-linear run implies a negative serial part: Amdahl's curve is then the ideal line
            [amdahl_speedup(min(max(fraction, 0.0), 1.0), g) for g in curve],
            color=color,
            linestyle="--",
            alpha=0.7,
            label=f"Amdahl, serial part {fraction:.1%}",
        )
        ax.annotate(
            f"{ys[-1] / xs[-1]:.0%} efficient",
            (xs[-1], ys[-1]),
            textcoords="offset points",
            xytext=(-10, 8),
            ha="right",
            fontsize="small",
            color=color,
        )
    _finish(ax, "GPUs (G)", "speed-up vs one GPU", title)
    plain_axis(ax.xaxis, "GPUs (G)")
    plain_axis(ax.yaxis, "speed-up vs one GPU")
    return fig


@styled
def tradeoff(
    labels: list[str],
    latencies: list[list[float]],
    rates: list[list[float]],
    batches: list[list],
    title: str = "",
) -> Figure:
    """Latency of one batch against samples per second: what batching buys and what it costs."""
    fig = _figure(10, 6)
    ax = fig.add_subplot()
    for index, (label, ys, xs, tags) in enumerate(zip(labels, latencies, rates, batches, strict=True)):
        ax.plot(xs, ys, marker="o", color=f"C{index}", label=label)
        for x, y, tag in zip(xs, ys, tags, strict=True):
            ax.annotate(f"{tag}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize="x-small")
    ax.set_xscale("log")
    ax.set_yscale("log")
    _finish(ax, "", "", title + "  (labels: batch size)")
    count_axis(ax.xaxis, "throughput (samples/s)")
    time_axis(ax.yaxis, "latency of one batch")
    return fig


@styled
def sweep(frame, x: str, y: str = "latency_s", hue: str | list[str] | None = None, title: str = "") -> Figure:
    """A sweep DataFrame as lines: ``y`` against ``x``, one line per series, crossovers marked.

    Args:
        frame: rows from ``parsim.sweep`` (rows with an error are left out).
        x: the numeric column along the x axis (a grid field).
        y: the column plotted.
        hue: column(s) telling the series apart; default: the case and every other grid field.
    """
    data = frame[frame["error"].fillna("") == ""] if "error" in frame else frame
    if x not in data or y not in data:
        raise ValueError(f"columns {x!r} and {y!r} must be in the sweep")
    if hue is None:
        hue = [
            c
            for c in ["case", *frame.attrs.get("grid", [])]
            if c != x and c in data and data[c].nunique() > 1
        ]
        hue = _enough(data, hue, x, y)  # fields the case labels already tell apart say nothing more
    hue = [hue] if isinstance(hue, str) else list(hue)
    if "case" in data and "case" not in hue and _several_per_x(data, hue, x, y):
        hue = ["case", *hue]  # a line has one point per x: several cases are several lines
    series = _series(data, hue, x, y)
    xs = data[x].astype(float)
    log_x = x in frame.attrs.get("log", []) or (xs.min() > 0 and xs.max() / xs.min() > 100)
    ys = data[y].astype(float)
    log_y = bool(ys.min() > 0 and ys.max() / ys.min() > 100)
    return sweep_lines(series, x, y, crossovers=crossovers(series), title=title, log_x=log_x, log_y=log_y)


def _several_per_x(data, hue: list[str], x: str, y: str) -> bool:
    """Whether some line of ``hue`` would have several different ``y`` at one ``x``."""
    return bool(data.groupby([*hue, x], sort=False, dropna=False)[y].nunique().gt(1).any())


def _enough(data, hue: list[str], x: str, y: str) -> list[str]:
    """``hue`` without the fields that tell no two lines apart: a grid ``device`` once every case's
    label names its device, or that leaves a CPU baseline unchanged (its rows repeat per GPU)."""
    kept = list(hue)
    for field in [h for h in hue if h != "case"]:
        fewer = [h for h in kept if h != field]
        if fewer and not _several_per_x(data, fewer, x, y):
            kept = fewer
    return kept


def _series(data, hue: list[str], x: str, y: str) -> dict[str, tuple[list, list]]:
    """One line per ``hue`` group, points in ``x`` order; lines with the same points are drawn once,
    named by what their labels share (a CPU baseline swept beside two GPUs is one line)."""
    drawn: dict[tuple, list[tuple]] = {}
    for key, part in data.groupby(hue, sort=False, dropna=False) if hue else [((), data)]:
        key = key if isinstance(key, tuple) else (key,)
        part = part.drop_duplicates(x).sort_values(x)
        points = (tuple(part[x].astype(float)), tuple(part[y].astype(float)))
        drawn.setdefault(points, []).append(key)
    series = {}
    for (xs, ys), keys in drawn.items():
        common = [str(k) for k in keys[0] if all(str(k) in map(str, other) for other in keys) and str(k)]
        label = ", ".join(common) or ", ".join(str(k) for k in keys[0] if str(k)) or y
        series[label] = (list(xs), list(ys))
    return series


@styled
def validation(rows: list[dict], title: str = "Predicted vs measured") -> Figure:
    """Measured against predicted times (log-log), the y = x line, and +-30 % bands."""
    fig = _figure(8, 7)
    ax = fig.add_subplot()
    classes = sorted({row.get("class", row.get("workload", "")) for row in rows})
    for index, name in enumerate(classes):
        part = [row for row in rows if row.get("class", row.get("workload", "")) == name]
        ax.loglog(
            [r["measured_s"] for r in part],
            [r["predicted_s"] for r in part],
            "o",
            color=f"C{index % 10}",
            label=name,
            markersize=6,
        )
    values = [v for row in rows for v in (row["measured_s"], row["predicted_s"]) if v > 0]
    if not values:
        raise ValueError("nothing to plot: no row has a positive measured or predicted time")
    lo, hi = min(values) / 2, max(values) * 2
    ax.plot([lo, hi], [lo, hi], color="black", linewidth=1, label="predicted = measured")
    ax.fill_between(
        [lo, hi], [lo * 0.7, hi * 0.7], [lo * 1.3, hi * 1.3], color="grey", alpha=0.15, label="+-30 %"
    )
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    time_axis(ax.xaxis, "measured")
    time_axis(ax.yaxis, "predicted")
    style_title(ax, title)
    legend(ax, loc="upper left")
    ax.grid(True, which="both", alpha=0.25)
    return fig
