"""Timelines, rooflines and bar comparisons of predictions."""

from __future__ import annotations

import textwrap

from matplotlib.figure import Figure
from matplotlib.patches import Patch

from parsim.hardware.specs import ProcessorSpec
from parsim.model.outcome import CATEGORIES
from parsim.plots.style import COLORS, _figure, _legend_handles, _time_scale, styled
from parsim.prediction import Prediction
from parsim.resources import Resource
from parsim.units import seconds, si
from parsim.workloads.base import HOST

_ON_ONE_DEVICE = {"h2d": 1, "cores": 3, "memory": 5, "d2h": 6, "ring": 8}


def _row_order(resource: Resource) -> tuple:
    """Host rows first; then each device's rows in the order work flows: copies in, cores, memory,
    copies out, the all-reduce ring (PCIe before NVLink); several GPUs one after another."""
    if resource.device == HOST and (resource.kind == "thread" or resource.tagged):
        return (0, 0, 0, resource.label)
    step = _ON_ONE_DEVICE[resource.direction or resource.kind]
    return (1 if not resource.tagged else 2, resource.device, step, resource.unit != "PCIe", resource.label)


def _rows(prediction: Prediction) -> list[Resource]:
    return sorted({e.resource.group for e in prediction.trace}, key=_row_order)


def _draw_timeline(ax, prediction: Prediction, scale: float) -> None:
    """One row per resource; a core-group bar is as tall as the share of cores it keeps busy."""
    rows = _rows(prediction)
    for index, row in enumerate(rows):
        events = [e for e in prediction.trace if e.resource.group == row]
        ax.barh(
            [index] * len(events),
            [max(e.duration_s * scale, 0.0) for e in events],
            left=[e.start_s * scale for e in events],
            height=[0.8 * min(max(e.weight, 0.08), 1.0) for e in events],
            color=[COLORS[e.kind] for e in events],
            edgecolor="white",
            linewidth=0.3,
        )
    ax.set_yticks(range(len(rows)), [row.label for row in rows])
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.grid(axis="x", alpha=0.3)


@styled
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


@styled
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


@styled
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


@styled
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


def _describe(prediction: Prediction) -> str:
    params = " ".join(f"{k}={v}" for k, v in prediction.params.items())
    where = f"{prediction.device} ({prediction.mode})"
    text = f"{prediction.workload} {params} on {where}: {seconds(prediction.latency_s)}"
    return "\n".join(textwrap.wrap(text, 72))  # many parameters wrap instead of running off the figure
