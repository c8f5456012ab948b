"""Figures for the teaching visuals: a point sliding along a roofline, Amdahl's and Gustafson's laws
beside predicted speed-ups, and Flynn's taxonomy as grids of cores x lanes lit at one instant.

The numbers come from ``parsim.studies.teaching`` (the roofline bound, the two laws, the lit grid read from
a prediction's timeline); these functions only draw them, in the colours of the other figures.
"""

from __future__ import annotations

import matplotlib
import numpy
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, NullFormatter

from parsim.base.units import seconds, si
from parsim.hardware.specs import ProcessorSpec
from parsim.plots.axes import count_axis, plain, plain_axis
from parsim.plots.style import COLORS, _figure, legend, styled, suptitle, title, wrap
from parsim.studies.teaching import (
    Grid,
    amdahl_speedup,
    attainable_flops_per_s,
    gustafson_speedup,
    ridge_intensity,
    roofline_peak,
)

SHOWN_CORES = 16
"""Rows drawn per grid; more cores are summarised as "+N more" (the title counts every busy core)."""

_IDLE = "#eeeeee"
_PLAIN = FuncFormatter(lambda value, _: plain(value))


def _short(spec: ProcessorSpec) -> str:
    return spec.name.split(" (")[0]


@styled
def roofline_point(
    spec: ProcessorSpec, intensity: float, dtype: str = "float32", matrix: bool = True
) -> Figure:
    """The roofline of ``spec`` for ``dtype`` and the attainable FLOP/s at ``intensity`` FLOP/byte."""
    fig = _figure(9, 5.5)
    ax = fig.add_subplot()
    xs = numpy.geomspace(1 / 16, 4096, 200)
    vector = [attainable_flops_per_s(spec, x, dtype, matrix=False) for x in xs]
    ax.loglog(
        xs, vector, color="black", label=f"vector lanes: {si(roofline_peak(spec, dtype, False), 'FLOP/s')}"
    )
    if matrix and roofline_peak(spec, dtype, True) > roofline_peak(spec, dtype, False):
        upper = [attainable_flops_per_s(spec, x, dtype, matrix=True) for x in xs]
        label = f"matrix units: {si(roofline_peak(spec, dtype, True), 'FLOP/s')}"
        ax.loglog(xs, upper, color="black", linestyle="--", label=label)
    ridge = ridge_intensity(spec, dtype, matrix)
    ax.axvspan(xs[0], ridge, color=COLORS["memory"], alpha=0.08, label="memory-bound")
    ax.axvspan(ridge, xs[-1], color=COLORS["compute"], alpha=0.08, label="compute-bound")
    ax.axvline(ridge, color="grey", linestyle=":", label=f"ridge: {ridge:.3g} FLOP/byte")
    attained = attainable_flops_per_s(spec, intensity, dtype, matrix)
    bound = "memory" if intensity < ridge else "compute"
    ax.loglog(
        [intensity],
        [attained],
        "o",
        color=COLORS[bound],
        markersize=13,
        markeredgecolor="black",
        label=f"{intensity:g} FLOP/byte: {si(attained, 'FLOP/s')}",
    )
    ax.set_xlim(xs[0], xs[-1])
    plain_axis(ax.xaxis, "arithmetic intensity (FLOP/byte)")
    count_axis(ax.yaxis, "attainable (FLOP/s)")
    title(ax, f"Roofline of {_short(spec)}, {dtype}: {si(spec.memory.bandwidth_Bps, 'B/s')} memory")
    legend(ax, fontsize="small", loc="lower right")
    ax.grid(True, which="both", alpha=0.25)
    return fig


@styled
def scaling_laws(serial: float, cases: tuple, top: int = 64) -> Figure:
    """Amdahl's and Gustafson's speed-up for ``serial`` on 1..``top`` workers, the ideal line, and
    each case's predicted points.

    Args:
        serial: the serial fraction both laws are drawn with.
        cases: ``(label, workers, speedups)`` per case (tuples, so that the call can be cached).
    """
    fig = _figure(9, 5.5)
    ax = fig.add_subplot()
    workers = numpy.geomspace(1, top, 120)
    ax.plot([1, top], [1, top], color="grey", linestyle=":", label="ideal: speed-up = N")
    ax.plot(
        workers,
        [gustafson_speedup(serial, n) for n in workers],
        color="C2",
        linewidth=2.5,
        label=f"Gustafson (weak scaling), s = {serial:.0%}",
    )
    ax.plot(
        workers,
        [amdahl_speedup(serial, n) for n in workers],
        color="C3",
        linewidth=2.5,
        label=f"Amdahl (strong scaling), s = {serial:.0%}",
    )
    if serial > 0 and 1 / serial < top:
        ax.axhline(
            1 / serial, color="C3", linestyle="--", alpha=0.6, label=f"Amdahl's limit 1/s = {1 / serial:.3g}x"
        )
    for index, (label, xs, ys) in enumerate(cases):
        ax.plot(
            xs, ys, "o", color=f"C{index}", markersize=9, markeredgecolor="black", label=f"predicted: {label}"
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(_PLAIN)
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlim(1, top)
    ax.set_ylim(1, top * 1.1)
    ax.set_xlabel("workers N (GPUs)")
    ax.set_ylabel("speed-up vs one worker")
    title(ax, "Amdahl (fixed problem) vs Gustafson (problem grows with N)")
    legend(ax, fontsize="small", loc="upper left")
    ax.grid(True, which="both", alpha=0.25)
    return fig


def _cells(grid: Grid, rows: int) -> numpy.ndarray:
    """RGB image of the first ``rows`` cores: lit lanes in the colour of what they do."""
    image = numpy.empty((rows, grid.busy.shape[1], 3))
    image[:] = to_rgb(_IDLE)
    if grid.kind is not None:
        image[grid.busy[:rows]] = to_rgb(COLORS[grid.kind])
    return image


def _status(grid: Grid, spec: ProcessorSpec, latency_s: float) -> str:
    unit = f"{spec.core_unit}s"
    if grid.state == "working":
        cores = int(grid.busy.any(axis=1).sum())
        width = int(grid.busy.any(axis=0).sum())
        return f"{cores} of {spec.cores} {unit} x {width} of {spec.lanes_per_core} lanes ({grid.kind})"
    if grid.state == "done":
        return f"done at {seconds(latency_s)}"
    return "host issuing" if grid.state == "waiting" else "idle between kernels"


@styled
def flynn_grids(
    panels: list[tuple[str, ProcessorSpec, Grid, float]], time_s: float, until_s: float | None = None
) -> Figure:
    """One grid per case (rows: cores or SMs, columns: lanes), lit where the prediction works at
    ``time_s``; a GPU's lanes are split into warps.

    Args:
        panels: ``(label, spec, grid, latency_s)`` per case.
        time_s: the instant shown (for the title).
        until_s: the last instant showing the same lanes, when the picture holds for a while.
    """
    fig = _figure(3.4 * len(panels), 5.2)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    kinds = set()
    for ax, (label, spec, grid, latency_s) in zip(axes, panels, strict=True):
        rows = min(spec.cores, SHOWN_CORES)
        ax.imshow(_cells(grid, rows), aspect="auto", interpolation="nearest")
        lanes = spec.lanes_per_core
        # cell borders while they stay visible, a GPU's warps as heavier lines: one collection each
        # (minor ticks would cost a Tick object per cell border, most of the drawing time)
        ax.hlines(numpy.arange(0.5, rows - 1), -0.5, lanes - 0.5, color="white", linewidth=0.6)
        if lanes <= 32:
            ax.vlines(numpy.arange(0.5, lanes - 1), -0.5, rows - 0.5, color="white", linewidth=0.6)
        if spec.warp_size > 1:
            warps = numpy.arange(spec.warp_size, lanes, spec.warp_size) - 0.5
            ax.vlines(warps, -0.5, rows - 0.5, color="black", linewidth=1.2)
        unit = spec.core_unit
        ax.set_yticks(range(0, rows, 1 if rows <= 8 else 4))
        ax.set_xticks([0, lanes - 1], ["1", str(lanes)])
        ax.set_ylabel(unit + ("s" if rows > 1 else ""))
        lanes_text = f"lanes (warps of {spec.warp_size})" if spec.warp_size > 1 else "lanes"
        more = spec.cores - rows
        # each panel's share of the width: at 16:9 and 1.5x type a long label wraps instead of
        # running off the figure
        label = lanes_text + (f"\n+{more} more {unit}s not drawn" if more else "")
        room = fig.get_figwidth() / len(panels) * 0.9
        size = matplotlib.rcParams["axes.labelsize"]
        ax.set_xlabel("\n".join(wrap(line, room, size) for line in label.split("\n")))
        title(ax, f"{label}\n{_status(grid, spec, latency_s)}", fontsize="small")
        if grid.kind is not None:
            kinds.add(grid.kind)
    span = f"{seconds(time_s)} to {seconds(until_s)}" if until_s and until_s > time_s else seconds(time_s)
    suptitle(fig, f"t = {span}: lit lanes work")
    handles = [Patch(color=COLORS[k], label=f"lane working ({k}-bound)") for k in sorted(kinds)]
    handles.append(Patch(facecolor=_IDLE, edgecolor="grey", label="lane idle"))
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize="small")
    return fig
