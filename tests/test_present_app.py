"""The app on a GPU machine (issue 30, defect 10): every CuPy measurement of the Measure page and of
a lesson's "Measure it here" is predicted for the GPU that ran it, and the spec is named. The GPU is
the CuPy stand-in reporting an H100 SXM's name, SMs and memory."""

from __future__ import annotations

import pytest

from parsim.methods.predict import predict
from tests import cupy_standin
from tests.apptest import app

H100_LABEL = "predicted for h100-sxm (matched NVIDIA H100 80GB HBM3)"


@pytest.fixture
def h100(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no calibration here: the preset is matched
    return cupy_standin.install(monkeypatch, device=cupy_standin.H100_SXM)


@pytest.mark.slow
def test_measure_page_predicts_a_cupy_row_for_the_h100_and_names_it(h100):
    at = app("measure")
    at.selectbox(key="measure_backend").set_value("cupy")
    at.number_input(key="measure_size").set_value(10**6)
    at.button(key="measure_submit").click().run()
    assert not at.exception
    (message,) = [s.value for s in at.success if "median" in s.value]
    assert message.endswith(H100_LABEL)
    (table,) = [f.value for f in at.dataframe if "predicted_for" in f.value.columns]
    expected = predict("vector_add", {"n": 10**6}, device="h100-sxm").latency_s
    assert table["predicted_s"].iloc[-1] == pytest.approx(expected * 1e3, rel=1e-9)  # shown in ms
    assert table["predicted_for"].iloc[-1] == H100_LABEL


@pytest.mark.slow
def test_a_lessons_gpu_case_is_predicted_for_the_gpu_here_not_the_lessons(h100):
    # the Flynn lesson's SIMT case names a GTX 1080; this machine's GPU is an H100
    at = app("learn", query={"lesson": "flynn_vector_add"})
    at.button(key="learn_measure").click().run()
    assert not at.exception
    (table,) = [f.value for f in at.dataframe if "how" in f.value.columns]
    gpu_rows = table[table["how"].str.contains("GPU")]
    assert len(gpu_rows) >= 1
    assert (gpu_rows["predicted for"] == H100_LABEL).all()
    assert gpu_rows["how"].str.contains("the lesson's case is a gtx-1080").all()
    (row,) = gpu_rows.to_dict("records")  # vector_add n=1e6, the lesson's size
    here = predict("vector_add", {"n": 1e6}, device="h100-sxm").latency_s
    lessons = predict("vector_add", {"n": 1e6}, device="gtx-1080").latency_s
    assert row["predicted_s"] == pytest.approx(here * 1e3, rel=1e-9)  # shown in ms
    assert abs(here / lessons - 1) > 0.3  # (the two GPUs differ: the test can tell them apart)


# --- what was measured on a real GPU, for everyone -----------------------------------------------


@pytest.mark.slow
def test_measure_page_shows_the_h100_measurements_without_a_gpu(monkeypatch, tmp_path):
    import sys

    from parsim.studies import measured

    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "cupy", None)  # no GPU here
    at = app("measure")
    assert any("No GPU here" in w.value for w in at.warning)
    texts = " ".join(m.value for m in at.markdown)
    assert (
        "Measured on an NVIDIA H100 80GB HBM3 (2026-11-25), predicted beside it with the h100-sxm preset"
        in texts
    )
    captions = " ".join(c.value for c in at.caption)
    assert "132 SMs" in captions and "cupy 14.2.0" in captions and "numpy 2.5.2" in captions
    data = measured.load("h100-sxm-2026-11-25")
    (classes,) = [f.value for f in at.dataframe if "MAPE (>= 100 us)" in f.value.columns]
    assert list(classes["class"]) == [*data["classes"], "overall"]
    matmul = classes.set_index("class").loc["matmul (cupy, simt)", "MAPE (>= 100 us)"]
    assert matmul == pytest.approx(data["classes"]["matmul (cupy, simt)"]["mape_large"])
    (rows,) = [  # the H100's rows (the published comparison below them names a source per row)
        f.value
        for f in at.dataframe
        if "error" in f.value.columns and "params" in f.value.columns and "source" not in f.value.columns
    ]
    assert len(rows) == len(data["rows"])
    first = data["rows"][0]
    assert rows["measured_s"].iloc[0] == pytest.approx(first["measured_s"] * 1e3)
    assert rows["predicted_s"].iloc[0] == pytest.approx(
        predict(first["workload"], first["params"], device="h100-sxm").latency_s * 1e3
    )
    assert len(at.get("image")) >= 1  # the predicted-vs-measured figure
    at.selectbox(key="shipped_name").set_value("h100-sxm-2026-11-25-calibrated").run()
    assert not at.exception
    assert any("GPU calibration" in m.value for m in at.markdown)


@pytest.mark.slow
def test_an_uploaded_shipped_report_is_predicted_again(monkeypatch, tmp_path):
    from importlib import resources

    from parsim.studies import measured

    monkeypatch.chdir(tmp_path)
    text = resources.files("parsim").joinpath("data/measured/h100-sxm-2026-11-25.json").read_bytes()
    at = app("measure")
    at.file_uploader(key="measure_load").set_value(("h100.json", text, "application/json")).run()
    assert not at.exception
    loaded = at.session_state["loaded_rows"]
    today = measured.load("h100-sxm-2026-11-25")["rows"]
    assert len(loaded) == len(today) and [r["predicted_s"] for r in loaded] == [
        r["predicted_s"] for r in today
    ]
