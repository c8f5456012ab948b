"""Figures readable from the back row: human axes, legible labels, titles inside, honest legends.

Each test draws a real figure from a small prediction and reads what the renderer put on it: tick
label text, the axis label, font sizes against the figure's width, window extents of titles.
"""

from __future__ import annotations

import re

import pandas
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from parsim import plots
from parsim.hardware import registry
from parsim.methods.predict import predict
from parsim.plots import axes as plot_axes
from parsim.plots.style import COLORS, DISPLAYS, legend

# A tick is a plain number, optionally with its own time unit; never "1e-05", "x10^" or "$".
PLAIN_TICK = re.compile(r"^-?\d+(\.\d+)?[kMGTP]?( (ns|us|ms|s))?$")


@pytest.fixture(scope="module")
def gpu():
    return predict("vector_add", {"n": 10**6}, device="h100-sxm")


@pytest.fixture(scope="module")
def cpu():
    return predict("vector_add", {"n": 10**7}, device="xeon-8480")


@pytest.fixture(scope="module")
def many_rows():
    """Four GPUs and four host threads: 26 rows, the longest labels a timeline gets."""
    return predict("data_parallel", {"gpus": 4}, device="h100-sxm")


def drawn(fig: Figure, dpi: float = 110):
    """Render ``fig`` as the app does (Agg at 110 dpi) and return its renderer."""
    fig.set_dpi(dpi)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def ticks(axis) -> list[str]:
    """The major tick labels inside the axis's limits (matplotlib also keeps one either side)."""
    lo, hi = sorted(axis.get_view_interval())
    slack = (hi - lo) * 1e-9
    return [
        t.get_text()
        for loc, t in zip(axis.get_majorticklocs(), axis.get_majorticklabels(), strict=True)
        if lo - slack <= loc <= hi + slack and t.get_visible() and t.get_text()
    ]


def assert_human_time_axis(ax, axis, unit: str) -> None:
    labels = ticks(axis)
    assert labels and all(PLAIN_TICK.match(text) for text in labels), labels
    assert axis.get_offset_text().get_text() == ""
    assert axis.get_label().get_text().endswith(f"({unit})")


def test_plain_numbers_have_no_exponent():
    assert plot_axes.plain(0.0005) == "0.0005"
    assert plot_axes.plain(1500.0) == "1500"
    assert plot_axes.plain(0.1 + 0.2) == "0.3"
    assert plot_axes.plain(1e-7) == "0.0000001"
    assert plot_axes.plain(-0.0) == "0"
    assert [plot_axes.count(v) for v in (2, 999, 316_000, 1e6, 1.5e9)] == ["2", "999", "316k", "1M", "1.5G"]


def test_axis_helpers_pick_the_unit_from_the_range():
    fig = Figure()
    ax = fig.add_subplot()
    ax.plot([0, 3e-3], [0, 3.35e12])
    ax.set_xlim(0, 3e-3)
    ax.set_ylim(0, 3.5e12)
    assert plot_axes.time_axis(ax.xaxis) == "ms"
    assert plot_axes.rate_axis(ax.yaxis, "bandwidth") == "TB/s"
    drawn(fig)
    assert ticks(ax.xaxis) == ["0", "0.5", "1", "1.5", "2", "2.5", "3"]
    assert ticks(ax.yaxis) == ["0", "0.5", "1", "1.5", "2", "2.5", "3", "3.5"]
    assert ax.get_xlabel() == "time (ms)" and ax.get_ylabel() == "bandwidth (TB/s)"
    # 0.0000-0.0030 s was the old way; the offset text would have said 1e-3.
    assert ax.xaxis.get_offset_text().get_text() == "" and ax.yaxis.get_offset_text().get_text() == ""


def test_counts_and_wide_log_times_carry_their_units_on_the_ticks():
    fig = Figure()
    ax = fig.add_subplot()
    ax.loglog([1e3, 1e9], [1e-6, 1.0])
    ax.set_xlim(1e3, 1e9)
    ax.set_ylim(1e-6, 1.0)
    plot_axes.count_axis(ax.xaxis, "n")
    plot_axes.time_axis(ax.yaxis, "latency")
    drawn(fig)
    assert ticks(ax.xaxis) == ["1k", "10k", "100k", "1M", "10M", "100M", "1G"]
    assert ticks(ax.yaxis) == ["1 us", "10 us", "100 us", "1 ms", "10 ms", "100 ms", "1 s"]
    assert ax.get_ylabel() == "latency (us to s)"


def test_a_log_axis_under_one_decade_still_has_labels():
    fig = Figure()
    ax = fig.add_subplot()
    ax.loglog([1, 2], [3e-4, 8e-4])
    ax.set_ylim(3e-4, 8e-4)
    plot_axes.time_axis(ax.yaxis, "latency")
    drawn(fig)
    assert ticks(ax.yaxis) == ["300", "400", "500", "600", "700", "800"]  # not 3x10^-4 minor labels
    assert ax.get_ylabel() == "latency (us)"


@pytest.mark.parametrize(
    ("column", "label"),
    [
        ("latency_s", "latency (ms)"),
        ("latency (s)", "latency (ms)"),
        ("bytes_per_s", "bandwidth (GB/s)"),
        ("flops_per_s", "compute (FLOP/s)"),
        ("throughput_per_s", "throughput (/s)"),
    ],
)
def test_sweep_columns_get_their_units(column, label):
    fig = Figure()
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 0.0042 if "_s" in column or "(s)" in column else 0])
    ax.set_ylim(0, 4.2e-3 if not column.endswith("per_s") else 420e9)
    plot_axes.column_axis(ax.yaxis, column)
    assert ax.get_ylabel() == label


def test_timeline_time_axis_is_in_microseconds(gpu, cpu):
    assert 1e-6 < gpu.latency_s < 2e-5  # 10.9 us: the axis must read 0 2 4 6 (us), not 0.000002 s
    fig = plots.timeline(gpu)
    drawn(fig)
    ax = fig.axes[0]
    assert_human_time_axis(ax, ax.xaxis, "us")
    assert {"0", "2", "4", "6"} <= set(ticks(ax.xaxis))
    fig = plots.timeline(predict("vector_add", {"n": 10**8}, device="xeon-8480"))
    drawn(fig)
    assert_human_time_axis(fig.axes[0], fig.axes[0].xaxis, "ms")


def test_bars_and_sweeps_read_in_time_units(gpu, cpu):
    fig = plots.bars(["GPU", "CPU"], [gpu, cpu], "vector add")
    drawn(fig)
    assert_human_time_axis(fig.axes[0], fig.axes[0].xaxis, "us")
    frame = pandas.DataFrame(
        {"case": ["a"] * 3 + ["b"] * 3, "x": [1, 2, 3] * 2, "latency_s": [2e-4, 3e-4, 4e-4, 1e-4, 3e-4, 5e-4]}
    )
    frame.attrs["grid"] = ["x"]
    fig = plots.sweep(frame, x="x")
    drawn(fig)
    ax = fig.axes[0]
    assert_human_time_axis(ax, ax.yaxis, "us")
    assert {"200", "300", "400", "500"} <= set(ticks(ax.yaxis))


def test_timeline_legend_lists_only_the_kinds_drawn(gpu, cpu):
    for prediction in (gpu, cpu):
        kinds = {e.kind for e in prediction.trace}
        fig = plots.timeline(prediction)
        (box,) = fig.legends
        assert [t.get_text() for t in box.get_texts()] == [k for k in COLORS if k in kinds]
    assert {e.kind for e in gpu.trace} == {"memory", "overhead"}  # no compute, transfer, wait
    fig = plots.timelines(["CPU", "GPU"], [cpu, gpu])
    (box,) = fig.legends
    both = {e.kind for p in (cpu, gpu) for e in p.trace}
    assert [t.get_text() for t in box.get_texts()] == [k for k in COLORS if k in both]


def test_bars_legend_names_only_the_bottlenecks_shown(gpu, cpu):
    fig = plots.bars(["GPU", "CPU"], [gpu, cpu])
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert (gpu.bottleneck, cpu.bottleneck) == ("overhead", "memory")  # 6.6 us of launch; 0.5 ms of DRAM
    assert texts == ["memory-bound", "overhead-bound"]  # no compute-bound, no transfer-bound
    fig = plots.bars(["GPU", "GPU again"], [gpu, gpu])
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["overhead-bound"]


def test_no_empty_legend():
    fig = Figure()
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1])
    legend(ax)
    assert ax.get_legend() is None
    ax.plot([0, 1], [1, 0], label="drawn")
    legend(ax)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["drawn"]


def inside(extent, fig_box) -> bool:
    return (
        extent.x0 >= fig_box.x0 - 0.5
        and extent.x1 <= fig_box.x1 + 0.5
        and extent.y0 >= fig_box.y0 - 0.5
        and extent.y1 <= fig_box.y1 + 0.5
    )


@pytest.mark.slow
@pytest.mark.parametrize("presenting", [False, True], ids=["everyday", "presentation"])
def test_a_long_title_stays_inside_the_figure(gpu, cpu, presenting):
    long = ("A title much longer than any figure is wide, " * 4)[:150]
    assert len(long) == 150
    series = {"a": ([1, 10, 100], [1e-3, 2e-3, 3e-3])}

    def figures():
        yield plots.timeline(gpu, long), lambda f: f.axes[0].title
        yield plots.timelines(["CPU", "GPU"], [cpu, gpu], long), lambda f: f._suptitle
        yield plots.bars(["GPU", "CPU"], [gpu, cpu], long), lambda f: f.axes[0].title
        yield plots.sweep_lines(series, "n", title=long), lambda f: f.axes[0].title

    if presenting:
        with plots.presentation():
            made = list(figures())
    else:
        made = list(figures())
    for fig, title_of in made:
        renderer = drawn(fig)
        title = title_of(fig)
        assert title.get_text().replace("\n", " ") == long.strip()
        assert "\n" in title.get_text()
        assert inside(title.get_window_extent(renderer), fig.bbox)


def test_timelines_share_one_time_axis(gpu, cpu):
    assert cpu.latency_s > 10 * gpu.latency_s
    fig = plots.timelines(["CPU", "GPU"], [cpu, gpu], "one axis")
    drawn(fig)
    top, bottom = fig.axes[:2]
    assert top.get_shared_x_axes().joined(top, bottom)
    assert top.get_xlim() == bottom.get_xlim() == pytest.approx((0, cpu.latency_s * 1.02))
    # The longer run's bars end proportionally further right: same scale on screen.
    ends = []
    for ax in (top, bottom):
        (boxes,) = ax.collections
        right = max(vertex[0] for path in boxes.get_paths() for vertex in path.vertices)
        ends.append(ax.transData.transform((right, 0))[0] - ax.transData.transform((0, 0))[0])
    assert ends[0] / ends[1] == pytest.approx(cpu.latency_s / gpu.latency_s, rel=0.01)
    assert_human_time_axis(bottom, bottom.xaxis, "us")


def test_timelines_reject_mismatched_labels(gpu):
    with pytest.raises(ValueError, match="one label per prediction"):
        plots.timelines(["only one"], [gpu, gpu])


def sizes(fig) -> list[float]:
    ax = fig.axes[0]
    texts = (*ax.get_yticklabels(), *ax.get_xticklabels(), ax.xaxis.label, ax.title)
    return [t.get_fontsize() for t in texts]


def test_presentation_enlarges_type_and_is_16_by_9(gpu):
    series = {"a": ([1, 10, 100], [1e-3, 2e-3, 3e-3])}
    everyday = [plots.timeline(gpu), plots.sweep_lines(series, "n", title="t")]
    with plots.presentation():
        presented = [plots.timeline(gpu), plots.sweep_lines(series, "n", title="t")]
    for small, large in zip(everyday, presented, strict=True):
        drawn(small), drawn(large)
        assert min(b / a for a, b in zip(sizes(small), sizes(large), strict=True)) >= 1.5
        width, height = large.get_size_inches()
        assert width / height == pytest.approx(16 / 9, rel=0.01)
    assert not plots.style.presenting()  # the switch ends with the block


def displayed_px(points: float, fig: Figure, shown: int) -> float:
    """Height in px of ``points``-point text when ``fig``'s PNG is stretched to ``shown`` px wide."""
    return points * 110 / 72 * shown / (fig.get_figwidth() * 110)


@pytest.mark.slow
@pytest.mark.parametrize("presenting", [False, True], ids=["everyday", "presentation"])
def test_timeline_row_labels_read_on_a_screen_and_a_phone(gpu, many_rows, presenting):
    if presenting:
        with plots.presentation():
            figs = [plots.timeline(gpu), plots.timeline(many_rows)]
    else:
        figs = [plots.timeline(gpu), plots.timeline(many_rows)]
    for fig in figs:
        renderer = drawn(fig, dpi=110)
        labels = fig.axes[0].get_yticklabels()
        assert len(labels) >= 3
        for label in labels:
            for shown, least in DISPLAYS:
                assert displayed_px(label.get_fontsize(), fig, shown) >= least
                # the rendered line, not just the nominal size: one line of a wrapped label
                lines = label.get_text().count("\n") + 1
                height = label.get_window_extent(renderer).height / lines
                assert height * shown / (fig.get_figwidth() * 110) >= least
            assert inside(label.get_window_extent(renderer), fig.bbox)  # never cut off
            assert all(len(line) <= 16 for line in label.get_text().split("\n"))
    texts = [t.get_text() for t in figs[1].axes[0].get_yticklabels()]
    assert "GPU3 memory\n(device memory)" in texts  # wrapped, not cut


@pytest.mark.slow
def test_figures_keep_their_signatures(gpu):
    """The app, the CLI and the notebooks call these; each still returns a drawable Figure."""
    spec = registry.processor("h100-sxm")
    figs = [
        plots.timeline(gpu),
        plots.timeline(gpu, "titled"),
        plots.roofline(gpu, spec, dtype="float32"),
        plots.scaling(["a"], [[1, 2, 4]], [[1, 1.9, 3.5]], [0.05], "scaling"),
        plots.tradeoff(["a"], [[1e-3, 2e-3]], [[100, 1000]], [[1, 8]], "batching"),
        plots.validation([{"workload": "w", "measured_s": 1e-4, "predicted_s": 1.2e-4}]),
    ]
    for index, fig in enumerate(figs):
        drawn(fig)
        for ax in fig.axes:
            for axis in (ax.xaxis,) if index < 2 else (ax.xaxis, ax.yaxis):  # a timeline's rows are names
                assert axis.get_offset_text().get_text() == ""
                assert all(PLAIN_TICK.match(t) for t in ticks(axis)), ticks(axis)
    assert figs[2].axes[0].get_ylabel() == "compute (FLOP/s)"
    assert figs[4].axes[0].get_ylabel() == "latency of one batch (ms)"


def test_measured_beside_predicted_reads_in_time_units_and_draws_only_what_exists():
    rows = [
        {"case": "SISD", "measured_s": 0.0327, "predicted_s": 0.0188},
        {"case": "SIMD", "measured_s": 95e-6, "predicted_s": float("nan")},  # an empty table cell
    ]
    fig = plots.measured(rows)
    drawn(fig)
    ax = fig.axes[0]
    assert ticks(ax.xaxis) and all(PLAIN_TICK.match(t) for t in ticks(ax.xaxis)), ticks(ax.xaxis)
    assert "time" in ax.get_xlabel()
    bars = [p for p in ax.patches if p.get_width() > 0]
    assert sorted(round(b.get_width(), 6) for b in bars) == [95e-6, 0.0188, 0.0327]  # no bar for NaN
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "measured here",
        "predicted for this machine",
    ]
    swept = plots.measured(
        [{"case": "relu", "value": v, "measured_s": v * 1e-9, "predicted_s": None} for v in (1e5, 1e6, 1e7)],
        sweep_label="n",
    )
    drawn(swept)
    assert [t.get_text() for t in swept.axes[0].get_legend().get_texts()] == ["relu: measured"]
    assert all(PLAIN_TICK.match(t) for t in ticks(swept.axes[0].xaxis) + ticks(swept.axes[0].yaxis))
    with pytest.raises(ValueError, match="no measured rows"):
        plots.measured([])


def test_timeline_joins_only_events_closer_than_a_pixel(many_rows):
    from parsim.plots.timelines import _merged, _rows

    where = {row: index for index, row in enumerate(_rows(many_rows))}
    bars = _merged(many_rows, where)
    assert len(bars) < len(many_rows.trace)  # a training step's back-to-back kernels join up
    span = max(e.start_s + e.duration_s for e in many_rows.trace)
    # every event lies inside a drawn bar of its row, height and kind: nothing is lost
    for e in many_rows.trace[::97]:
        key = (where[e.resource.group], 0.4 * min(max(e.weight, 0.08), 1.0), e.kind)
        assert any(k == key and x0 <= e.start_s and e.start_s + e.duration_s <= x1 for k, x0, x1 in bars)
    # and bars of one row and kind stay apart by more than a pixel's worth of time
    by_key: dict = {}
    for key, x0, x1 in bars:
        by_key.setdefault(key, []).append((x0, x1))
    for runs in by_key.values():
        runs.sort()
        assert all(b[0] - a[1] > span / 4000 for a, b in zip(runs, runs[1:], strict=False))


def test_the_published_figure_names_every_metric_the_set_may_hold():
    # CI found the figure raising KeyError on the LLM rows' 'tokens_per_s'
    from parsim.plots.published import UNITS
    from parsim.studies.published import METRICS

    assert set(METRICS) <= set(UNITS)
