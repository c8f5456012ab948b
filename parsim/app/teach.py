"""Interactive teaching visuals shown under a lesson's figure: the anchors a class is taught with.

- ``matmul_roofline`` and ``conv3x3``: an intensity slider moves a point along a chip's roofline;
- ``data_parallel_scaling``: a serial-fraction slider bends Amdahl's and Gustafson's curves beside
  the lesson's predicted speed-ups;
- ``flynn_vector_add``: Flynn's taxonomy as grids of cores x lanes, lit as the lesson's predictions
  say at each step of a shared clock.

Every number comes from the model (``parsim.studies.teaching`` reads specs and predictions); figures are
drawn once per choice (``cached_png``), so moving a slider back and forth stays instant.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from parsim.app import teach_tables
from parsim.app.cache import as_changes, cached_scenario, scenario_path
from parsim.app.widgets import cached_png, show_png
from parsim.base.dtypes import DTYPES
from parsim.base.errors import ParsimError
from parsim.base.units import seconds, si
from parsim.hardware import registry
from parsim.hardware.presets import PROCESSORS
from parsim.hardware.specs import ProcessorSpec
from parsim.plots.teaching import flynn_grids, roofline_point, scaling_laws
from parsim.studies.scenarios import load_scenario, resolve
from parsim.studies.teaching import (
    Grid,
    amdahl_speedup,
    attainable_flops_per_s,
    flynn_grid,
    gustafson_speedup,
    ridge_intensity,
    roofline_peak,
    time_steps,
)

INTENSITIES = [2.0**k for k in range(-3, 11)]
"""The roofline slider's stops: 1/8 to 1024 FLOP/byte, doubling."""
LENGTHS = [10**k for k in range(3, 9)]
"""Vector lengths the Flynn visual offers."""
STEPS = 24
"""Stops of the Flynn clock (a fixed count, so the slider keeps its place when n changes)."""


def panel(stem: str) -> None:
    """Draw the interactive visual that belongs to lesson ``stem``, if it has one."""
    if stem in _VISUALS:
        _fragment(stem)


@st.fragment
def _fragment(stem: str) -> None:
    """The visual reruns alone when its widgets move: the lesson above it is not drawn again."""
    path = scenario_path(stem)
    if not path.is_file():
        st.warning(f"the interactive visual needs the lesson file {path.name}, which is missing")
        return
    try:
        _VISUALS[stem](path)
    except ParsimError as exc:  # a lesson edited into something the visual cannot read
        st.warning(f"the interactive visual is not available: {exc}")


# --- the roofline -------------------------------------------------------------------------------


def lesson_gpu(path: Path) -> tuple[str, str]:
    """The lesson's first GPU (else its first device) and that case's dtype."""
    scenario = load_scenario(path)
    cases = [resolve(scenario, case) for case in scenario.cases]
    gpus = [c for c in cases if isinstance(c.device, str) and registry.kind_of(c.device) == "gpu"]
    case = (gpus or cases)[0]
    device = case.device if isinstance(case.device, str) and case.device in PROCESSORS else "a100-80gb"
    return device, str(case.params.get("dtype", "float32"))


def roofline_sentence(spec: ProcessorSpec, intensity: float, dtype: str, matrix: bool) -> str:
    """What the point on the roofline says, in one sentence."""
    ridge = ridge_intensity(spec, dtype, matrix)
    peak = roofline_peak(spec, dtype, matrix)
    units = "matrix units" if peak > roofline_peak(spec, dtype, False) else "vector lanes"
    bound = "memory-bound" if intensity < ridge else "compute-bound"
    attained = attainable_flops_per_s(spec, intensity, dtype, matrix)
    name = spec.name.split(" (")[0]
    return (
        f"At {intensity:g} FLOP/byte the {name} is **{bound}**: attainable {si(attained, 'FLOP/s')} "
        f"of {si(peak, 'FLOP/s')} peak ({dtype}, {units}); the ridge is at {ridge:.3g} FLOP/byte."
    )


def _roofline_figure(device: str, intensity: float, dtype: str, matrix: bool):
    return roofline_point(registry.processor(device), intensity, dtype, matrix)


def _roofline(path: Path) -> None:
    device, dtype = lesson_gpu(path)
    stem = path.stem
    st.markdown("#### Try it: slide along the roofline")
    ids = list(PROCESSORS)
    dtypes = list(DTYPES)
    left, middle, right = st.columns([2, 1, 1])
    device = left.selectbox("device", ids, index=ids.index(device), key=f"teach_roofline_device_{stem}")
    dtype = middle.selectbox(
        "dtype",
        dtypes,
        index=dtypes.index(dtype) if dtype in dtypes else 0,
        key=f"teach_roofline_dtype_{stem}",
    )
    matrix = right.toggle(
        "matrix units",
        value=True,
        key=f"teach_roofline_matrix_{stem}",
        help="tensor cores (or AMX) where the chip has them for this dtype",
    )
    intensity = st.select_slider(
        "arithmetic intensity (FLOP/byte)",
        INTENSITIES,
        value=1.0,
        format_func=lambda x: f"{x:g}",
        key=f"teach_roofline_intensity_{stem}",
    )
    png = cached_png(_roofline_figure, device, intensity, dtype, matrix)
    show_png(png, f"roofline-{device}-{dtype}", key=f"teach_roofline_png_{stem}")
    st.markdown(roofline_sentence(registry.processor(device), intensity, dtype, matrix))


# --- Amdahl and Gustafson -----------------------------------------------------------------------


def scaling_cases(result) -> tuple:
    """``(label, workers, speed-ups, fitted serial fraction)`` per case of a scaling lesson run.

    The fitted fraction is the model's own (``metrics["serial_fraction"]``, Karp-Flatt) at the
    largest worker count, as the lesson figure draws it.
    """
    cases = []
    for label in result.labels:
        series = result.series(label)
        cases.append(
            (
                label,
                tuple(int(r.value) for r in series),
                tuple(float(r.prediction.metrics["speedup"]) for r in series),
                float(series[-1].prediction.metrics["serial_fraction"]),
            )
        )
    return tuple(cases)


def scaling_sentence(serial: float, cases: tuple) -> str:
    """The predictions' fitted serial fractions against the slider's, and what the laws then say."""
    largest = max(max(workers) for _, workers, _, _ in cases)
    fitted = "; ".join(
        f"{label}: {fraction:.1%} ({speedups[-1]:.2f}x)" for label, _, speedups, fraction in cases
    )
    closest = min(cases, key=lambda case: abs(case[3] - serial))[0]
    limit = f"at most {1 / serial:.3g}x on any number" if serial > 0 else "no limit"
    amdahl, gustafson = amdahl_speedup(serial, largest), gustafson_speedup(serial, largest)
    return (
        f"Fitted serial fraction of the prediction at N = {largest}: {fitted}. "
        f"With your s = {serial:.0%}, Amdahl allows {amdahl:.2f}x on {largest} workers "
        f"({limit}); Gustafson gives {gustafson:.2f}x. "
        f"Closest to your s: {closest}."
    )


@st.cache_data(show_spinner=False, max_entries=8)
def _scaling_data(path: str, stamp: float) -> tuple:
    # the few numbers, cached on their own: reading the run back from its cache copies every trace
    return scaling_cases(cached_scenario(path, stamp))


def _scaling_figure(path: str, stamp: float, serial: float):
    cases = _scaling_data(path, stamp)
    return scaling_laws(serial, tuple((label, xs, ys) for label, xs, ys, _ in cases))


def _scaling(path: Path) -> None:
    stamp = path.stat().st_mtime
    cases = _scaling_data(str(path), stamp)
    st.markdown("#### Try it: how much serial work can you afford?")
    serial = st.slider(
        "serial fraction s",
        min_value=0.0,
        max_value=0.5,
        value=0.1,
        step=0.01,
        format="%.2f",
        key="teach_scaling_serial",
        help="the share of one worker's time that cannot be split (Amdahl) or does not grow (Gustafson)",
    )
    show_png(
        cached_png(_scaling_figure, str(path), stamp, serial), "amdahl-gustafson", key="teach_scaling_png"
    )
    st.markdown(scaling_sentence(serial, cases))


# --- Flynn's taxonomy ---------------------------------------------------------------------------


def flynn_panels(result, time_s: float) -> list[tuple[str, ProcessorSpec, Grid, float]]:
    """``(label, spec, grid, latency)`` of each case of the Flynn lesson at ``time_s``."""
    panels = []
    for case in result.results:
        spec = registry.processor(case.prediction.device)
        panels.append(
            (case.label, spec, flynn_grid(case.prediction, spec, time_s), case.prediction.latency_s)
        )
    return panels


def flynn_sentence(time_s: float, panels: list) -> str:
    """Who works at ``time_s``, and with how many lanes."""
    parts = []
    for label, _, grid, latency_s in panels:
        name = label.split(":")[0]
        if grid.state == "working":
            count = int(grid.busy.sum())
            parts.append(f"{name} {count:,} lane{'s' if count > 1 else ''} working ({grid.kind}-bound)")
        elif grid.state == "done":
            parts.append(f"{name} done at {seconds(latency_s)}")
        else:
            parts.append(f"{name} {'waiting for the host' if grid.state == 'waiting' else 'idle'}")
    return f"At t = {seconds(time_s)}: " + "; ".join(parts) + "."


def _flynn_run(path: str, stamp: float, n: int):
    return cached_scenario(path, stamp, as_changes({"params": {"n": n}}))


def _flynn_figure(path: str, stamp: float, n: int, start_s: float, end_s: float):
    return flynn_grids(flynn_panels(_flynn_run(path, stamp, n), start_s), start_s, end_s)


def _same_picture(pictures: list, step: int) -> tuple[int, int]:
    """The run of steps around ``step`` that light the same lanes (drawn once for all of them)."""

    def signature(index: int) -> tuple:
        return tuple((grid.state, grid.kind, grid.busy.tobytes()) for _, _, grid, _ in pictures[index])

    low, high = step, step
    while low > 0 and signature(low - 1) == signature(step):
        low -= 1
    while high < len(pictures) - 1 and signature(high + 1) == signature(step):
        high += 1
    return low, high


def _flynn(path: Path) -> None:
    stamp = path.stat().st_mtime
    scenario = load_scenario(path)
    lesson_n = int(resolve(scenario, scenario.cases[0]).params.get("n", 10**6))
    st.markdown("#### Try it: which lanes work, and when?")
    lengths = sorted(set(LENGTHS) | {lesson_n})
    n = st.select_slider(
        "vector length n", lengths, value=lesson_n, format_func=lambda v: f"{v:,}", key="teach_flynn_n"
    )
    result = _flynn_run(str(path), stamp, n)
    times = time_steps([r.prediction for r in result.results], STEPS)
    pictures = [flynn_panels(result, t) for t in times]
    everyone = [i for i, panels in enumerate(pictures) if all(p[2].state == "working" for p in panels)]
    step = st.select_slider(
        "time (a shared clock, log steps)",
        list(range(STEPS)),
        value=everyone[0] if everyone else 0,
        format_func=lambda i: seconds(times[i]),
        key="teach_flynn_step",
    )
    # steps that light the same lanes share one figure: moving within them costs no drawing
    low, high = _same_picture(pictures, step)
    png = cached_png(_flynn_figure, str(path), stamp, n, times[low], times[high])
    show_png(png, f"flynn-n{n}-t{seconds(times[step]).replace(' ', '')}", key="teach_flynn_png")
    st.markdown(flynn_sentence(times[step], pictures[step]))
    teach_tables.flynn_boxes()


_VISUALS = {
    "matmul_roofline": _roofline,
    "conv3x3": _roofline,
    "data_parallel_scaling": _scaling,
    "flynn_vector_add": _flynn,
    **teach_tables.VISUALS,
}
"""The lessons that have a visual, and the function drawing it from the lesson's file."""
