"""Measured here beside predicted: paired bars per case, or measured points on predicted lines.

The Learn page's "Measure it here" draws this: a run on this machine and the prediction for
this machine's calibration, so the gap between them is the model's error where the class sits.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from parsim.plots import axes
from parsim.plots.style import _figure, legend, styled, title

TITLE = "Measured here, beside the prediction for this machine"


@styled
def measured(rows: list[dict], sweep_label: str | None = None, title_text: str = TITLE) -> Figure:
    """``rows``: dicts with ``case``, ``measured_s``, ``predicted_s`` (None when not predicted) and,
    for a swept lesson, ``value`` (drawn against ``sweep_label`` on a log axis)."""
    if not rows:
        raise ValueError("no measured rows to draw")
    if sweep_label is None:
        fig = _figure(10, 1.2 + 0.8 * len(rows))
        ax = fig.add_subplot()
        places = range(len(rows))
        ax.barh([p + 0.2 for p in places], [r["measured_s"] for r in rows], height=0.4, label="measured here")
        predicted = [(p, r["predicted_s"]) for p, r in zip(places, rows, strict=True) if _known(r)]
        if predicted:
            ax.barh(
                [p - 0.2 for p, _ in predicted],
                [v for _, v in predicted],
                height=0.4,
                label="predicted for this machine",
            )
        ax.set_yticks(list(places), [r["case"] for r in rows])
        ax.invert_yaxis()
        ax.set_xscale("log")
        axes.time_axis(ax.xaxis, "time, log scale")
    else:
        fig = _figure(10, 5.5)
        ax = fig.add_subplot()
        cases = list(dict.fromkeys(r["case"] for r in rows))
        for index, case in enumerate(cases):
            group = sorted((r for r in rows if r["case"] == case), key=lambda r: r["value"])
            colour = f"C{index}"
            ax.loglog(
                [r["value"] for r in group],
                [r["measured_s"] for r in group],
                "o",
                color=colour,
                label=f"{case}: measured",
            )
            with_prediction = [r for r in group if _known(r)]
            if with_prediction:
                ax.loglog(
                    [r["value"] for r in with_prediction],
                    [r["predicted_s"] for r in with_prediction],
                    "--",
                    color=colour,
                    label=f"{case}: predicted",
                )
        axes.count_axis(ax.xaxis, sweep_label)
        axes.time_axis(ax.yaxis, "time")
    title(ax, title_text)
    ax.grid(True, which="both", alpha=0.25)
    legend(ax)
    return fig


def _known(row: dict) -> bool:
    """A prediction to draw: present, and not the NaN a table's empty cell becomes."""
    value = row.get("predicted_s")
    return value is not None and value == value and value > 0


@styled
def calibration_curve(spec) -> Figure:
    """The memory bandwidth a calibration measured against working-set size, one core and all
    cores (``MemorySpec.curve``), with the cache sizes marked: the staircase a CPU climbs down
    as the data outgrows each level."""
    curve = spec.memory.curve
    if not curve:
        raise ValueError(f"{spec.id} has no measured bandwidth curve (it was not calibrated)")
    fig = _figure(10, 5)
    ax = fig.add_subplot()
    sizes = [point.working_set_B for point in curve]
    ax.loglog(sizes, [p.all_cores_Bps for p in curve], "o-", label=f"all {spec.cores} cores")
    ax.loglog(sizes, [p.one_core_Bps for p in curve], "s--", label="one core")
    for cache in spec.memory.caches:
        ax.axvline(cache.size_B, color="grey", linestyle=":", linewidth=1)
        ax.annotate(cache.name, (cache.size_B, 1.0), xycoords=("data", "axes fraction"), va="top", ha="right")
    axes.count_axis(ax.xaxis, "working set (B)")
    axes.count_axis(ax.yaxis, "bandwidth (B/s)")
    title(ax, f"Calibrated: {spec.name}")
    legend(ax)
    return fig
