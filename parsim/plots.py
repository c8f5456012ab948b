"""Figures (matplotlib only): timelines, rooflines, comparisons and sweeps.

Every function returns a ``matplotlib.figure.Figure`` and never calls ``plt.show``, so the same
figure serves the CLI (``--plot FILE.png``), the app (``st.pyplot``) and notebooks. Sizes and
fonts are chosen to stay readable on a projector.
"""

from __future__ import annotations

import functools

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from parsim.hardware.specs import ProcessorSpec  # noqa: E402
from parsim.prediction import Prediction  # noqa: E402
from parsim.timeline import CATEGORIES, resource_group  # noqa: E402
from parsim.units import seconds, si  # noqa: E402

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


def _styled(function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with matplotlib.rc_context(_STYLE):
            return function(*args, **kwargs)

    return wrapper


def _figure(width: float = 10, height: float = 5) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


def _row_order(resource: str) -> tuple[int, str]:
    order = ("host", "PCIe h2d", "NVLink h2d", "core", "SM", "memory", "PCIe d2h", "NVLink d2h")
    for rank, prefix in enumerate(order):
        if resource.startswith(prefix):
            return rank, resource
    return 99, resource


def _rows(prediction: Prediction) -> list[str]:
    return sorted({resource_group(e.resource) for e in prediction.trace}, key=_row_order)


def _draw_timeline(ax, prediction: Prediction, scale: float) -> None:
    """One row per resource; a core-group bar is as tall as the share of cores it keeps busy."""
    rows = _rows(prediction)
    for index, row in enumerate(rows):
        events = [e for e in prediction.trace if resource_group(e.resource) == row]
        ax.barh(
            [index] * len(events),
            [max(e.duration_s * scale, 0.0) for e in events],
            left=[e.start_s * scale for e in events],
            height=[0.8 * min(max(e.weight, 0.08), 1.0) for e in events],
            color=[COLORS[e.kind] for e in events],
            edgecolor="white",
            linewidth=0.3,
        )
    ax.set_yticks(range(len(rows)), rows)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.grid(axis="x", alpha=0.3)


def _finish(ax, x_label: str, y_label: str, title: str) -> None:
    """Labels, title, legend and a light grid: the same finish for every line chart."""
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    ax.set_title(title)
    ax.legend(fontsize=10)
    ax.grid(True, which="both", alpha=0.25)


def _legend_handles() -> list[Patch]:
    return [Patch(color=c, label=k) for k, c in COLORS.items()]


@_styled
def timeline(prediction: Prediction, title: str | None = None) -> Figure:
    """Gantt chart: one row per resource, one bar per busy interval, coloured by kind."""
    scale, unit = _time_scale(prediction.latency_s)
    fig = _figure(11, 1.4 + 0.55 * max(len(_rows(prediction)), 2))
    ax = fig.add_subplot()
    _draw_timeline(ax, prediction, scale)
    ax.set_xlim(0, prediction.latency_s * scale * 1.02 if prediction.latency_s > 0 else 1)
    ax.set_xlabel(f"time ({unit})")
    ax.set_title(title or _describe(prediction))
    fig.legend(handles=_legend_handles(), loc="outside lower center", ncols=len(COLORS), fontsize=10)
    return fig


@_styled
def roofline(prediction: Prediction, spec: ProcessorSpec, dtype: str = "float32") -> Figure:
    """The device's roofline (peak FLOP/s and memory bandwidth) with this workload's point."""
    fig = _figure(8, 5.5)
    ax = fig.add_subplot()
    bandwidth = spec.memory.bandwidth_Bps
    peaks = {"vector": spec.vector_flops_per_s(dtype)}
    if dtype in dict(spec.matrix_flops_per_s):
        peaks["matrix units"] = spec.peak_flops_per_s(dtype, matrix=True)
    intensity = prediction.flops / prediction.bytes if prediction.bytes else 1.0
    lo = min(1 / 16, intensity / 4)
    hi = max(4096, intensity * 4)
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    for name, peak in peaks.items():
        ax.loglog(xs, [min(peak, bandwidth * x) for x in xs], label=f"{name} peak {si(peak, 'FLOP/s')}")
    ax.loglog(
        [intensity],
        [max(prediction.flops_per_s, 1e-30)],
        "o",
        color=COLORS["compute"],
        markersize=10,
        label=f"{prediction.workload}: {si(prediction.flops_per_s, 'FLOP/s')}",
    )
    ax.axvline(peaks["vector"] / bandwidth, color="grey", linestyle=":", label="ridge point")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("FLOP/s")
    ax.set_title(f"Roofline of {spec.name} ({si(bandwidth, 'B/s')} memory)")
    ax.legend(fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    return fig


@_styled
def bars(labels: list[str], predictions: list[Prediction], title: str = "") -> Figure:
    """Latency of each case, log axis when they span more than 100x, bottleneck annotated."""
    fig = _figure(10, 1.5 + 0.7 * len(labels))
    ax = fig.add_subplot()
    latencies = [p.latency_s for p in predictions]
    colors = [COLORS[p.bottleneck] for p in predictions]
    ax.barh(range(len(labels)), latencies, color=colors)
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    if max(latencies) > 100 * min(latencies):
        ax.set_xscale("log")
    for index, prediction in enumerate(predictions):
        ax.text(
            prediction.latency_s,
            index,
            f"  {seconds(prediction.latency_s)} ({prediction.bottleneck})",
            va="center",
            fontsize=11,
        )
    ax.set_xlabel("latency (s)")
    ax.set_xlim(right=max(latencies) * (8 if ax.get_xscale() == "log" else 1.45))
    ax.set_title(title)
    ax.legend(
        handles=[Patch(color=COLORS[k], label=f"{k}-bound") for k in CATEGORIES],
        fontsize=10,
        loc="lower right",
    )
    return fig


@_styled
def sweep_lines(
    series: dict[str, tuple[list, list]],
    x_label: str,
    y_label: str = "latency (s)",
    crossovers: list[tuple] = (),
    title: str = "",
    log_x: bool = True,
    log_y: bool = True,
) -> Figure:
    """One line per series; crossover points marked with a vertical line and a label."""
    fig = _figure(10, 6)
    ax = fig.add_subplot()
    for label, (xs, ys) in series.items():
        ax.plot(xs, ys, marker="o", markersize=4, label=label)
    if log_x:
        ax.set_xscale("log")
    if log_y:
        ax.set_yscale("log")
    for value, winner, _loser in crossovers:
        ax.axvline(float(value), color="black", linestyle="--", alpha=0.6)
        ax.annotate(
            f"{winner} wins from {si(float(value))}",
            (float(value), 0.92),
            xycoords=("data", "axes fraction"),
            fontsize=10,
            rotation=90,
            ha="right",
            va="top",
            bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none"},
        )
    _finish(ax, x_label, y_label, title)
    return fig


@_styled
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
            [1 / (fraction + (1 - fraction) / g) for g in curve],
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
            fontsize=10,
            color=color,
        )
    _finish(ax, "GPUs (G)", "speed-up vs one GPU", title)
    return fig


@_styled
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
        ax.plot(xs, [y * 1e3 for y in ys], marker="o", color=f"C{index}", label=label)
        for x, y, tag in zip(xs, ys, tags, strict=True):
            ax.annotate(f"{tag}", (x, y * 1e3), textcoords="offset points", xytext=(4, 4), fontsize=9)
    ax.set_xscale("log")
    ax.set_yscale("log")
    _finish(ax, "throughput (samples/s)", "latency of one batch (ms)", title + "  (labels: batch size)")
    return fig


@_styled
def scenario(result) -> Figure:
    """The figure a scenario asks for (``plot = bars | timeline | sweep | scaling | tradeoff``)."""
    spec = result.scenario
    if spec.plot in ("scaling", "tradeoff"):
        series = [result.series(label) for label in result.labels]
        if spec.plot == "scaling":
            return scaling(
                result.labels,
                [[r.value for r in s] for s in series],
                [[r.prediction.metrics["speedup"] for r in s] for s in series],
                [s[-1].prediction.metrics["serial_fraction"] for s in series],
                spec.title,
            )
        return tradeoff(
            result.labels,
            [[r.prediction.latency_s for r in s] for s in series],
            [[r.prediction.metrics["samples_per_s"] for r in s] for s in series],
            [[r.value for r in s] for s in series],
            spec.title,
        )
    if spec.sweep is not None or spec.plot == "sweep":
        series = {
            label: (
                [r.value for r in result.series(label)],
                [r.prediction.latency_s for r in result.series(label)],
            )
            for label in result.labels
        }
        numeric = all(isinstance(r.value, (int, float)) for r in result.results)
        return sweep_lines(
            series,
            spec.sweep.label if spec.sweep else "value",
            crossovers=result.crossovers(),
            title=spec.title,
            log_x=numeric,
        )
    if spec.plot == "timeline":
        return timelines(
            [r.label for r in result.results], [r.prediction for r in result.results], spec.title
        )
    return bars([r.label for r in result.results], [r.prediction for r in result.results], spec.title)


@_styled
def timelines(labels: list[str], predictions: list[Prediction], title: str = "") -> Figure:
    """Several timelines stacked on one shared time axis, so their lengths compare at a glance."""
    heights = [max(len(_rows(p)), 2) for p in predictions]
    fig = _figure(11, 1.2 + sum(0.5 * h + 0.6 for h in heights))
    axes = fig.subplots(len(predictions), 1, sharex=True, height_ratios=heights, squeeze=False)[:, 0]
    longest = max(p.latency_s for p in predictions)
    scale, unit = _time_scale(longest)
    for ax, label, prediction in zip(axes, labels, predictions, strict=True):
        _draw_timeline(ax, prediction, scale)
        ax.set_title(f"{label}: {seconds(prediction.latency_s)}", fontsize=12, loc="left")
    axes[-1].set_xlim(0, longest * scale * 1.02)
    axes[-1].set_xlabel(f"time ({unit})")
    fig.suptitle(title)
    fig.legend(handles=_legend_handles(), loc="outside lower center", ncols=len(COLORS))
    return fig


def _time_scale(latency: float) -> tuple[float, str]:
    for scale, unit in ((1.0, "s"), (1e3, "ms"), (1e6, "us")):
        if latency * scale >= 1:
            return scale, unit
    return 1e9, "ns"


def _describe(prediction: Prediction) -> str:
    params = " ".join(f"{k}={v}" for k, v in prediction.params.items())
    where = f"{prediction.device} ({prediction.mode})"
    return f"{prediction.workload} {params} on {where}: {seconds(prediction.latency_s)}"


@_styled
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
    hue = [hue] if isinstance(hue, str) else list(hue)
    series = {}
    for key, part in data.groupby(hue, sort=False) if hue else [((), data)]:
        key = key if isinstance(key, tuple) else (key,)
        label = ", ".join(str(k) for k in key if str(k)) or y
        part = part.sort_values(x)
        series[label] = (part[x].astype(float).tolist(), part[y].astype(float).tolist())
    xs = data[x].astype(float)
    log_x = x in frame.attrs.get("log", []) or (xs.min() > 0 and xs.max() / xs.min() > 100)
    ys = data[y].astype(float)
    log_y = bool(ys.min() > 0 and ys.max() / ys.min() > 100)
    return sweep_lines(series, x, y, crossovers=_crossovers(series), title=title, log_x=log_x, log_y=log_y)


def _crossovers(series: dict) -> list[tuple]:
    """Where each series overtakes the first one (for latencies: becomes lower)."""
    if len(series) < 2:
        return []
    (_, (base_x, base_y)), *others = series.items()
    reference = dict(zip(base_x, base_y, strict=True))
    found = []
    for label, (xs, ys) in others:
        ahead = None
        for value, other in zip(xs, ys, strict=True):
            if value not in reference:
                continue
            now = other < reference[value]
            if ahead is not None and now and not ahead:
                found.append((value, label, "first"))
            ahead = now
    return found


@_styled
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
    lo, hi = min(values) / 2, max(values) * 2
    ax.plot([lo, hi], [lo, hi], color="black", linewidth=1, label="predicted = measured")
    ax.fill_between(
        [lo, hi], [lo * 0.7, hi * 0.7], [lo * 1.3, hi * 1.3], color="grey", alpha=0.15, label="+-30 %"
    )
    ax.set_xlabel("measured (s)")
    ax.set_ylabel("predicted (s)")
    ax.set_title(title)
    ax.legend(fontsize=9, loc="upper left")
    ax.grid(True, which="both", alpha=0.25)
    return fig
