"""Figures (matplotlib only): timelines, rooflines, comparisons and sweeps.

Every function returns a ``matplotlib.figure.Figure`` and never calls ``plt.show``, so the same
figure serves the CLI (``--plot FILE.png``), the app (PNG) and notebooks. Sizes and fonts are
chosen to stay readable on a projector and, for timelines, on a phone; axes read in s/ms/us,
GB/s and 1k/1M (``parsim.plots.axes``); ``with plots.presentation():`` draws one 16:9 figure
per screen with larger type.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from parsim.plots.lines import scaling, sweep, sweep_lines, tradeoff, validation
from parsim.plots.measured import calibration_curve, measured
from parsim.plots.published import published, published_png
from parsim.plots.style import COLORS, presentation, styled
from parsim.plots.timelines import bars, roofline, timeline, timelines
from parsim.workloads.records import Scaling, Throughput

__all__ = [
    "COLORS",
    "bars",
    "calibration_curve",
    "measured",
    "presentation",
    "published",
    "published_png",
    "roofline",
    "scaling",
    "scenario",
    "sweep",
    "sweep_lines",
    "timeline",
    "timelines",
    "tradeoff",
    "validation",
]


@styled
def scenario(result) -> Figure:
    """The figure a scenario asks for (``plot = bars | timeline | sweep | scaling | tradeoff``)."""
    spec = result.scenario
    if spec.plot in ("scaling", "tradeoff"):
        series = [result.series(label) for label in result.labels]
        if spec.plot == "scaling":
            return scaling(
                result.labels,
                [[r.prediction.gpus for r in s] for s in series],  # a sweep over nodes counts every GPU
                [[r.prediction.record(Scaling).speedup for r in s] for s in series],
                [s[-1].prediction.record(Scaling).serial_fraction for s in series],
                spec.title,
            )
        return tradeoff(
            result.labels,
            [[r.prediction.latency_s for r in s] for s in series],
            [[r.prediction.record(Throughput).samples_per_s for r in s] for s in series],
            [[r.value for r in s] for s in series],
            spec.title,
        )
    if spec.sweep is not None and all("ttft_p50_s" in r.prediction.metrics for r in result.results):
        from parsim.plots.serving import cases_vs_rate  # requests under load: TTFT and TPOT

        return cases_vs_rate(
            {
                label: (
                    [r.value for r in result.series(label)],
                    [r.prediction.metrics for r in result.series(label)],
                )
                for label in result.labels
            },
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
