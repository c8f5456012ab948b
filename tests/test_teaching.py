"""The teaching visuals: the laws against hand-computed values, the Flynn grid against the timeline,
and the Learn page's panels through AppTest (each slider moves the figure and the sentence)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from parsim.app import teach
from parsim.base.errors import ParsimError
from parsim.hardware import registry
from parsim.methods.predict import predict
from parsim.plots.teaching import flynn_grids, roofline_point, scaling_laws
from parsim.studies.scenarios import load_scenario, run_scenario
from parsim.studies.teaching import (
    amdahl_speedup,
    attainable_flops_per_s,
    core_events,
    flynn_grid,
    gustafson_speedup,
    ridge_intensity,
    roofline_peak,
    time_steps,
)
from tests.apptest import ROOT

A100 = registry.processor("a100-80gb")
LAPTOP = registry.processor("laptop-4c-avx2")  # 4 cores x 16 lanes
GTX = registry.processor("gtx-1080")  # 20 SMs x 128 lanes


# --- Amdahl and Gustafson ---------------------------------------------------------------------


def test_amdahl_at_a_tenth_serial_on_ten_workers():
    assert amdahl_speedup(0.1, 10) == pytest.approx(1 / (0.1 + 0.9 / 10))
    assert amdahl_speedup(0.1, 10) == pytest.approx(5.263, abs=1e-3)
    assert amdahl_speedup(0.1, 1e9) == pytest.approx(10, rel=1e-6)  # the limit 1/s
    assert amdahl_speedup(0.0, 64) == 64


def test_gustafson_at_a_tenth_serial_on_ten_workers():
    assert gustafson_speedup(0.1, 10) == pytest.approx(9.1)
    assert gustafson_speedup(0.5, 64) == pytest.approx(32.5)
    assert gustafson_speedup(0.0, 64) == 64


@pytest.mark.parametrize("serial", [-0.1, 1.5])
def test_a_serial_fraction_outside_zero_to_one_is_refused(serial):
    with pytest.raises(ParsimError, match="between 0 and 1"):
        amdahl_speedup(serial, 4)
    with pytest.raises(ParsimError, match="between 0 and 1"):
        gustafson_speedup(serial, 4)


# --- the roofline -----------------------------------------------------------------------------


def test_the_roofline_is_bandwidth_below_the_ridge_and_the_peak_above():
    # A100 float32 on CUDA cores: 108 SMs x 64 lanes x 2 (FMA) x 1.41 GHz = 19.49 TFLOP/s; 1.75 TB/s
    peak = 108 * 64 * 2 * 1.41e9
    assert A100.memory.bandwidth_Bps == 1.75e12
    assert attainable_flops_per_s(A100, 0.5, "float32") == pytest.approx(0.5 * 1.75e12)
    assert attainable_flops_per_s(A100, 1024, "float32") == pytest.approx(peak)
    assert ridge_intensity(A100, "float32") == pytest.approx(peak / 1.75e12)  # 11.1 FLOP/byte
    # float16 on tensor cores: the 312 TFLOP/s ceiling moves the ridge to 178 FLOP/byte
    assert attainable_flops_per_s(A100, 1024, "float16") == pytest.approx(312e12)
    assert ridge_intensity(A100, "float16") == pytest.approx(312e12 / 1.75e12)
    assert roofline_peak(A100, "float16", matrix=False) == pytest.approx(4 * peak)


def test_a_non_positive_intensity_is_refused():
    with pytest.raises(ParsimError, match="positive"):
        attainable_flops_per_s(A100, 0.0)


def test_the_roofline_sentence_names_the_bound_and_the_ridge():
    low = teach.roofline_sentence(A100, 1.0, "float32", True)
    assert "memory-bound" in low and "1.75 TFLOP/s of 19.5 TFLOP/s" in low and "11.1 FLOP/byte" in low
    high = teach.roofline_sentence(A100, 1024.0, "float16", True)
    assert "compute-bound" in high and "312 TFLOP/s of 312 TFLOP/s" in high and "matrix units" in high


def _labels(fig) -> list[str]:
    return [text.get_text() for ax in fig.axes if ax.get_legend() for text in ax.get_legend().get_texts()]


def test_the_roofline_figure_draws_matrix_units_only_where_the_chip_has_them():
    assert any(label.startswith("matrix units") for label in _labels(roofline_point(A100, 4.0, "float16")))
    assert not any(label.startswith("matrix units") for label in _labels(roofline_point(LAPTOP, 4.0)))
    assert "4 FLOP/byte: 7 TFLOP/s" in _labels(roofline_point(A100, 4.0, "float16"))


# --- the scaling lesson -----------------------------------------------------------------------


@pytest.mark.slow
def test_the_scaling_sentence_gives_the_predictions_fitted_fraction_and_the_sliders():
    result = run_scenario(load_scenario(ROOT / "parsim" / "lessons" / "data_parallel_scaling.toml"))
    cases = teach.scaling_cases(result)
    host = result.series(result.labels[0])
    assert cases[0][1] == (1, 2, 4, 8)
    assert cases[0][3] == host[-1].prediction.metrics["serial_fraction"]
    sentence = teach.scaling_sentence(0.1, cases)
    assert f"{cases[0][3]:.1%}" in sentence and f"{cases[1][3]:.1%}" in sentence
    assert "Amdahl allows 4.71x on 8 workers" in sentence  # 1 / (0.1 + 0.9 / 8)
    assert "Gustafson gives 7.30x" in sentence  # 8 - 0.1 x 7
    assert "at most 10x" in sentence


def test_the_scaling_figure_has_amdahls_limit_only_when_there_is_one():
    cases = (("a case", (1, 2), (1.0, 1.9)),)
    assert any("1/s = 4x" in label for label in _labels(scaling_laws(0.25, cases)))
    assert not any("1/s" in label for label in _labels(scaling_laws(0.0, cases)))


# --- Flynn's taxonomy -------------------------------------------------------------------------


def _at_work(device, mode):
    prediction = predict("vector_add", {"n": 10**6}, device=device.id, mode=mode)
    event = core_events(prediction, device)[0]
    return prediction, (event.start_s + event.end_s) / 2


def test_sisd_lights_exactly_one_lane_of_one_core_while_the_core_works():
    prediction, middle = _at_work(LAPTOP, "sisd")
    grid = flynn_grid(prediction, LAPTOP, middle)
    assert grid.busy.shape == (4, 16)
    assert grid.busy.sum() == 1 and grid.busy[0, 0]
    assert grid.state == "working" and grid.kind == "compute"  # the interpreter, not memory


def test_simd_lights_all_lanes_of_one_core():
    prediction, middle = _at_work(LAPTOP, "simd")
    grid = flynn_grid(prediction, LAPTOP, middle)
    assert grid.busy.sum() == 16 and grid.busy[0].all()
    assert not grid.busy[1:].any()


def test_mimd_lights_one_lane_of_every_core_and_mimd_simd_every_lane():
    prediction, middle = _at_work(LAPTOP, "mimd")
    grid = flynn_grid(prediction, LAPTOP, middle)
    assert grid.busy[:, 0].all() and grid.busy.sum() == 4
    prediction, middle = _at_work(LAPTOP, "mimd+simd")
    assert flynn_grid(prediction, LAPTOP, middle).busy.all()


def test_simt_lights_every_lane_of_every_sm():
    prediction, middle = _at_work(GTX, "simt")
    grid = flynn_grid(prediction, GTX, middle)
    assert grid.busy.shape == (20, 128) and grid.busy.sum() == 20 * 128
    assert grid.kind == "memory"  # a vector add streams


def test_the_grid_is_dark_before_the_first_kernel_and_after_the_last():
    prediction, _ = _at_work(LAPTOP, "simd")
    first = core_events(prediction, LAPTOP)[0].start_s
    assert first > 0  # the host issues the kernel first
    before = flynn_grid(prediction, LAPTOP, first / 2)
    assert before.state == "waiting" and not before.busy.any()
    after = flynn_grid(prediction, LAPTOP, prediction.latency_s * 1.01)
    assert after.state == "done" and not after.busy.any()


def test_the_clock_starts_before_any_core_and_ends_after_the_slowest():
    predictions = [_at_work(LAPTOP, "sisd")[0], _at_work(GTX, "simt")[0]]
    steps = time_steps(predictions, 24)
    assert len(steps) == 24 and steps == sorted(steps)
    starts = [core_events(p, d)[0].start_s for p, d in zip(predictions, (LAPTOP, GTX), strict=True)]
    assert steps[0] < min(starts)
    assert steps[-1] > max(p.latency_s for p in predictions)


def test_the_flynn_figure_caps_rows_and_has_a_legend_for_what_is_lit():
    prediction, middle = _at_work(GTX, "simt")
    fig = flynn_grids([("SIMT", GTX, flynn_grid(prediction, GTX, middle), prediction.latency_s)], middle)
    assert fig.axes[0].get_images()[0].get_array().shape[:2] == (16, 128)
    assert "+4 more SMs not drawn" in fig.axes[0].get_xlabel()
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["lane working (memory-bound)", "lane idle"]


def test_steps_that_light_the_same_lanes_share_one_figure():
    result = run_scenario(load_scenario(ROOT / "parsim" / "lessons" / "flynn_vector_add.toml"))
    times = time_steps([r.prediction for r in result.results], teach.STEPS)
    pictures = [teach.flynn_panels(result, t) for t in times]

    def lit(index):
        return [(grid.state, grid.busy.sum()) for _, _, grid, _ in pictures[index]]

    runs = {teach._same_picture(pictures, step) for step in range(teach.STEPS)}
    assert 3 <= len(runs) < teach.STEPS  # the picture changes, but not at every step
    for low, high in runs:
        assert all(lit(i) == lit(low) for i in range(low, high + 1))
        assert low == 0 or lit(low - 1) != lit(low)
        assert high == teach.STEPS - 1 or lit(high + 1) != lit(high)


# --- the panels in the app --------------------------------------------------------------------


def _script(stem):
    from parsim.app import teach

    teach.panel(stem)


def _panel(stem: str) -> AppTest:
    at = AppTest.from_function(_script, args=(stem,), default_timeout=120).run()
    assert not at.exception, at.exception[0].value
    return at


def _shown(at: AppTest) -> tuple[str, str]:
    """The figure (its media URL, a hash of the PNG) and the sentence under it (not the taxonomy's
    four-box table that follows the Flynn panel)."""
    grid = ("|", "#### The four boxes")
    sentences = [m.value for m in at.markdown if not m.value.lstrip().startswith(grid)]
    return at.get("image")[0].proto.imgs[0].url, sentences[-1]


@pytest.mark.slow
def test_the_roofline_panel_moves_with_intensity_device_and_dtype():
    at = _panel("matmul_roofline")
    assert at.selectbox(key="teach_roofline_device_matmul_roofline").value == "a100-80gb"
    first = _shown(at)
    assert "memory-bound" in first[1] and "at 11.1 FLOP/byte" in first[1]
    at.select_slider(key="teach_roofline_intensity_matmul_roofline").set_value(1024.0).run()
    second = _shown(at)
    assert second[0] != first[0] and "compute-bound" in second[1] and "19.5 TFLOP/s of 19.5" in second[1]
    at.selectbox(key="teach_roofline_dtype_matmul_roofline").set_value("float16").run()
    assert "312 TFLOP/s" in _shown(at)[1]
    at.selectbox(key="teach_roofline_device_matmul_roofline").set_value("laptop-4c-avx2").run()
    assert not at.exception and "Generic 4-core AVX2 laptop" in _shown(at)[1]


@pytest.mark.slow
def test_the_conv_lesson_starts_its_roofline_on_its_gpu():
    at = _panel("conv3x3")
    assert at.selectbox(key="teach_roofline_device_conv3x3").value == "v100-pcie"
    assert "V100" in _shown(at)[1]


@pytest.mark.slow
def test_the_scaling_panel_follows_the_serial_fraction():
    at = _panel("data_parallel_scaling")
    first = _shown(at)
    assert "s = 10%" in first[1]
    at.slider(key="teach_scaling_serial").set_value(0.25).run()
    second = _shown(at)
    assert second[0] != first[0]
    assert "s = 25%" in second[1] and "Amdahl allows 2.91x on 8 workers" in second[1]  # 1/(0.25+0.75/8)


@pytest.mark.slow
def test_the_flynn_panel_steps_through_time_and_sizes():
    at = _panel("flynn_vector_add")
    first = _shown(at)
    assert first[1].count("working") == 5  # the default step finds every mode at work
    at.select_slider(key="teach_flynn_step").set_value(teach.STEPS - 1).run()
    last = _shown(at)
    assert last[0] != first[0] and last[1].count("done at") == 5
    at.select_slider(key="teach_flynn_n").set_value(10**8).run()
    bigger = _shown(at)
    assert bigger[1] != last[1] and not at.exception


@pytest.mark.slow
def test_a_lesson_without_a_visual_draws_nothing_and_a_broken_one_says_why(tmp_path, monkeypatch):
    assert len(_panel("streams_overlap").main) == 0
    (tmp_path / "flynn_vector_add.toml").write_text("title = [broken")
    monkeypatch.setenv("PARSIM_LESSONS", str(tmp_path))  # the app reads a course's own lessons
    at = _panel("flynn_vector_add")
    assert "not available" in at.warning[0].value
    (tmp_path / "flynn_vector_add.toml").unlink()
    assert "missing" in _panel("flynn_vector_add").warning[0].value


# --- one source of truth for the Flynn lesson's lanes (issue 27, 14) -----------------------------


def test_the_flynn_lessons_words_say_the_lanes_and_cores_its_grids_draw():
    # Before: the text said 8 lanes (4 x 8 = 32) while the grids drew the laptop's 16.
    from parsim.studies.scenarios import lesson_text, retarget

    flynn = load_scenario("flynn_vector_add")
    text = lesson_text(flynn)
    panels = teach.flynn_panels(run_scenario(flynn), 0.0)
    simd_spec = panels[1][1]  # the SIMD case's processor, as its grid draws it
    assert (simd_spec.cores, simd_spec.lanes_per_core) == (4, 16)
    assert "all its 16 vector lanes" in text and "every core (4 here)" in text
    assert "not 4 x 16 = 64 times faster" in text and "{" not in text
    xeon = lesson_text(retarget(flynn, cpu="xeon-8480"))  # 56 cores x 32 AVX-512 lanes
    assert "all its 32 vector lanes" in xeon and "not 56 x 32 = 1792 times faster" in xeon


def test_a_lesson_text_keeps_braces_it_does_not_know():
    from parsim.studies.scenarios import lesson_text, loads_scenario

    scenario = loads_scenario(
        'title = "t"\nlesson = "{lanes} lanes, {unknown} and {x: 1}"\n'
        '[defaults]\ndevice = "laptop-4c-avx2"\n[[cases]]\nworkload = "vector_add"\n'
    )
    assert lesson_text(scenario) == "16 lanes, {unknown} and {x: 1}"
