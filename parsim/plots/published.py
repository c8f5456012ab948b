"""Predicted against published: one panel per class of published measurements.

Each panel plots predicted / published for every row of a class on a log axis, with the line of
perfect agreement and a band as wide as the class's MAPE target, so a point outside the band is a
miss one can read off the projector. Ratios rather than raw figures, because a class mixes units
(images/s and seconds per step, say).
"""

from __future__ import annotations

import io
import math

from matplotlib.figure import Figure

from parsim.plots.axes import plain_axis
from parsim.plots.style import _figure, legend, styled, suptitle
from parsim.plots.style import title as style_title
from parsim.studies.published_snapshot import figure_stamp

UNITS = {
    "samples_per_s": "samples/s",
    "latency_s": "time per step",
    "seconds": "kernel time",
    "efficiency": "scaling efficiency",
    "bytes_per_s": "bandwidth",
    "tokens_per_s": "tokens/s (total)",
    "tokens_per_s_per_user": "tokens/s per user",
    "time_to_first_token_s": "time to first token",
    "time_per_output_token_s": "time per output token",
    "bus_bandwidth_Bps": "nccl-tests bus bandwidth",
    "collective_s": "nccl-tests time",
    "megatron_tflops_per_gpu": "TFLOP/s per GPU (Megatron's count)",
    "mcore_tflops_per_gpu": "TFLOP/s per GPU (Megatron-Core's count)",
    "mcore_causal_tflops_per_gpu": "TFLOP/s per GPU (Megatron-Core's causal count)",
    "tokens_per_s_per_gpu": "tokens/s per GPU (training)",
    "step_s": "seconds per training step",
    **{
        f"{what}_{percentile}_s": f"{label} {percentile.upper()}"
        for what, label in (("ttft", "first token"), ("tpot", "per token"), ("e2e", "end to end"))
        for percentile in ("p50", "p90", "p99")
    },
    "itl_p50_s": "between streamed tokens P50",
    "itl_p99_s": "between streamed tokens P99",
}
"""A legend label for each metric of ``parsim.studies.published.METRICS`` (a test keeps them in step)."""


@styled
def published(data: dict, title: str = "Predicted vs published measurements") -> Figure:
    """A ``parsim.studies.published.report`` as a grid of panels, one per class.

    Each panel shows predicted / published for every row (log scale; 1 is perfect), rows ordered
    by their published figure, one colour per metric, and the class's MAPE target as a band.
    """
    classes = list(data["classes"])
    columns = min(3, max(1, len(classes)))
    rows = math.ceil(len(classes) / columns)
    fig = _figure(5 * columns, 4.2 * rows)
    for index, name in enumerate(classes):
        ax = fig.add_subplot(rows, columns, index + 1)
        summary = data["classes"][name]
        part = [r for r in data["rows"] if r["class"] == name and r["predicted"] is not None]
        start = 0
        for number, metric in enumerate(sorted({r["metric"] for r in part})):
            points = sorted((r for r in part if r["metric"] == metric), key=lambda r: r["published"])
            ax.plot(
                range(start, start + len(points)),
                [r["predicted"] / r["published"] for r in points],
                "o",
                color=f"C{number}",
                markersize=6,
                label=UNITS[metric],
            )
            start += len(points)
        band = summary["target"]
        ax.axhline(1.0, color="black", linewidth=1)
        ax.axhspan(1 - band, 1 + band, color="grey", alpha=0.2, label=f"+-{band:.0%} target")
        ax.set_yscale("log")
        ratios = [r["predicted"] / r["published"] for r in part] or [1.0]
        ax.set_ylim(min(0.5, min(ratios) / 1.2), max(2.0, max(ratios) * 1.2))
        plain_axis(ax.yaxis, "predicted / published")
        plain_axis(ax.xaxis, "rows, smallest published first")
        points = summary.get("unit") == "points"  # scored in percentage points of efficiency
        mape = "-" if summary["mape"] is None else f"{summary['mape']:.1%}"
        if points and summary["mape"] is not None:
            mape = f"{summary['mape'] * 100:.1f} points"
        score = "mean error" if points else "MAPE"
        style_title(ax, f"{summary['what']}\n{summary['rows']} rows, {score} {mape}", fontsize="medium")
        legend(ax, fontsize="x-small", loc="upper left")
        ax.grid(True, which="both", alpha=0.25)
    suptitle(fig, title)
    return fig


def published_png(data: dict, dpi: int = 110) -> bytes:
    """``published(data)`` as PNG bytes, stamped with the report's ``created_at`` (a ``Comment``
    text chunk: ``studies.published_snapshot.shipped_figure`` shows a shipped figure only beside
    the report it was drawn from). 110 dpi, as the app draws its figures."""
    buffer = io.BytesIO()
    published(data).savefig(buffer, format="png", dpi=dpi, metadata={"Comment": figure_stamp(data)})
    return buffer.getvalue()
