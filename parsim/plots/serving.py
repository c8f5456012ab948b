"""Figures of a server under load (issue 24): tail latency against request rate, the server's state
over time, and the three schedulers side by side.

The numbers come from ``methods.serving`` (``LoadMetrics`` per simulated load, ``LoadTimeline``);
these functions only draw them (any object with ``LoadMetrics``' field names will do: the
``LoadRecord`` of ``llm_load`` too). Where the latency "knee" is, is one rule written here
(``knee_rate``) so that the figure, the app and the lessons mark the same rate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy
from matplotlib.figure import Figure

from parsim.methods.serving.metrics import LoadTimeline
from parsim.plots.axes import count_axis, plain_axis, time_axis
from parsim.plots.style import _figure, legend, styled, suptitle, title

LATENCIES = {
    "ttft": ("time to first token", "ttft"),
    "tpot": ("time per output token", "tpot"),
    "e2e": ("end-to-end latency", "e2e"),
}
"""What a latency figure can draw: its name for people and its ``LoadMetrics`` field prefix."""
KNEE_FACTOR = 2.0
"""The knee: the first rate whose P99 is this many times the P99 at the lowest rate drawn."""
SCHEDULER_COLORS = {"static": "#7570b3", "continuous": "#1b9e77", "chunked": "#d95f02"}


def knee_rate(rates: Sequence[float], p99_s: Sequence[float], factor: float = KNEE_FACTOR) -> float | None:
    """The lowest rate at which ``p99_s`` reaches ``factor`` times its value at the lowest rate
    (``rates`` ascending), or None when the tail never grows that much on the rates given.

    Below the knee the tail is the work itself (a prefill, a decode step); past it, queueing
    dominates and the tail grows without bound as the rate nears the server's capacity.
    """
    if not rates:
        return None
    base = p99_s[0]
    for rate, value in zip(rates, p99_s, strict=True):
        if numpy.isfinite(value) and value >= factor * base:
            return float(rate)
    return None


def _values(metrics: Sequence[Any], field: str) -> list[float]:
    """``field`` of each: a record's attribute, or a prediction's ``metrics`` mapping's entry."""
    return [float(m[field] if isinstance(m, Mapping) else getattr(m, field)) for m in metrics]


@styled
def latency_vs_rate(
    rates: Sequence[float],
    metrics: Sequence[Any],
    latency: str = "ttft",
    slo_s: float | None = None,
    current_rate: float | None = None,
    title_text: str = "",
) -> Figure:
    """P50 and P99 of ``latency`` (``ttft``, ``tpot`` or ``e2e``) against request rate, the knee
    (``knee_rate`` of the P99) and the SLO marked, and ``current_rate`` (the app's slider) drawn."""
    name, prefix = LATENCIES[latency]
    p50, p99 = _values(metrics, f"{prefix}_p50_s"), _values(metrics, f"{prefix}_p99_s")
    fig = _figure(9, 5.5)
    ax = fig.add_subplot()
    ax.plot(rates, p50, "o-", color="#1b9e77", linewidth=2.5, label=f"P50 {latency.upper()}")
    ax.plot(rates, p99, "s-", color="#d95f02", linewidth=2.5, label=f"P99 {latency.upper()}")
    ax.set_yscale("log")
    knee = knee_rate(list(rates), p99)
    if knee is not None:
        ax.axvline(
            knee, color="grey", linestyle="--", label=f"knee: {knee:g} requests/s (P99 x{KNEE_FACTOR:g})"
        )
    if slo_s is not None:
        ax.axhline(slo_s, color="black", linestyle=":", linewidth=2, label=f"SLO {slo_s:g} s")
    if current_rate is not None:
        ax.axvline(
            current_rate, color="#e7298a", linewidth=2, alpha=0.7, label=f"now: {current_rate:g} requests/s"
        )
    plain_axis(ax.xaxis, "request rate (requests/s)")
    time_axis(ax.yaxis, name)
    title(ax, title_text or f"{name.capitalize()} against request rate")
    legend(ax, fontsize="small", loc="upper left")
    ax.grid(True, which="both", alpha=0.25)
    return fig


@styled
def load_timeline(timeline: LoadTimeline, title_text: str = "") -> Figure:
    """Requests waiting, requests running (the batch) and the KV cache's use over time: three
    step plots on one time axis (each value holds until the next sample)."""
    fig = _figure(10, 7)
    axes = fig.subplots(3, 1, sharex=True)
    rows = (
        (timeline.waiting, "waiting", "#7570b3"),
        (timeline.running, "running (batch)", "#1b9e77"),
        (timeline.kv_fraction * 100, "KV cache used (%)", "#d95f02"),
    )
    for ax, (values, label, color) in zip(axes, rows, strict=True):
        ax.step(timeline.time_s, values, where="post", color=color, linewidth=1.5)
        ax.fill_between(timeline.time_s, values, step="post", color=color, alpha=0.25)
        ax.set_ylim(bottom=0)
        plain_axis(ax.yaxis, label)
        ax.grid(True, alpha=0.25)
    axes[2].set_ylim(0, 100)
    time_axis(axes[2].xaxis, "time")
    suptitle(fig, title_text or "The server over time: queue, running batch and KV cache")
    return fig


@styled
def schedulers(results: Mapping[str, Any], title_text: str = "") -> Figure:
    """Each scheduler's P50/P99 TTFT and TPOT and its output tokens/s, side by side (one panel per
    figure, one bar group per scheduler), on the same requests."""
    names = list(results)
    fig = _figure(12, 5)
    axes = fig.subplots(1, 3)
    x = numpy.arange(len(names))
    colors = [SCHEDULER_COLORS.get(n, "#999999") for n in names]
    for ax, prefix, name in ((axes[0], "ttft", "time to first token"), (axes[1], "tpot", "time per token")):
        p50 = [getattr(results[n], f"{prefix}_p50_s") for n in names]
        p99 = [getattr(results[n], f"{prefix}_p99_s") for n in names]
        ax.bar(x - 0.2, p50, 0.4, color=colors, label="P50")
        ax.bar(x + 0.2, p99, 0.4, color=colors, alpha=0.5, hatch="//", label="P99")
        ax.set_xticks(x, names)
        time_axis(ax.yaxis, name)
        legend(ax, fontsize="small")
        ax.grid(True, axis="y", alpha=0.25)
    axes[2].bar(x, [results[n].tokens_per_s for n in names], 0.6, color=colors)
    axes[2].set_xticks(x, names)
    count_axis(axes[2].yaxis, "output tokens/s")
    axes[2].grid(True, axis="y", alpha=0.25)
    suptitle(fig, title_text or "Schedulers on the same requests")
    return fig


@styled
def cases_vs_rate(
    series: Mapping[str, tuple[Sequence[float], Sequence[Any]]], title_text: str = ""
) -> Figure:
    """Each case's P50 (solid) and P99 (dashed) time to first token and time per output token
    against request rate, one panel each: a serving lesson's figure (``plots.scenario``), where
    the trade between the two is the point and one latency would hide it.

    Args:
        series: per case label, its rates and the figures (``LoadMetrics`` names) at each.
    """
    fig = _figure(12, 5.5)
    axes = fig.subplots(1, 2)
    for index, (label, (rates, metrics)) in enumerate(series.items()):
        color = f"C{index}"
        for ax, prefix in zip(axes, ("ttft", "tpot"), strict=True):
            p50 = _values(metrics, f"{prefix}_p50_s")
            p99 = _values(metrics, f"{prefix}_p99_s")
            ax.plot(rates, p50, "o-", color=color, linewidth=2, label=f"{label}: P50")
            ax.plot(rates, p99, "s--", color=color, linewidth=1.5, alpha=0.8, label=f"{label}: P99")
    for ax, prefix in zip(axes, ("ttft", "tpot"), strict=True):
        ax.set_yscale("log")
        plain_axis(ax.xaxis, "request rate (requests/s)")
        time_axis(ax.yaxis, LATENCIES[prefix][0])
        ax.grid(True, which="both", alpha=0.25)
    legend(axes[0], fontsize="small", loc="upper left")
    suptitle(fig, title_text)
    return fig
