"""The app's trace downloads: beside every timeline, the same Chrome Trace Event file the command
line writes (``report.chrome_trace``), within the app's budget."""

from __future__ import annotations

import json

import pytest

from parsim.app import compare, explore, scale_load
from parsim.app.cache import cached_predict
from parsim.report import chrome_trace
from tests.apptest import app

LABEL = "Download trace (Perfetto)"


def _labels(at) -> list[str]:
    return [button.proto.label for button in at.get("download_button")]


def test_the_explore_trace_is_the_prediction_s():
    call = (
        "data_parallel",
        (("batch", 16), ("gpus", 2), ("model", "resnet18")),
        "a100-80gb",
        None,
        None,
        None,
    )
    document = json.loads(chrome_trace.dumps(explore._trace(*call).build()))
    assert sum(e["ph"] == "X" for e in document["traceEvents"]) == len(cached_predict(*call).trace)


def test_the_load_trace_is_the_served_load_s_timeline():
    params = tuple(
        sorted({"model": "llama-2-7b", "prompt": 128, "output": 16, "requests": 40, "seed": 1}.items())
    )
    _, timeline = scale_load.cached_load(params, "a100-80gb", 4.0, "continuous")
    document = scale_load._load_trace(params, "a100-80gb", 4.0, "continuous").build()
    samples = [e for e in document["traceEvents"] if e["name"] == "requests"]
    assert 0 < len(samples) <= len(timeline.time_s)
    assert samples[-1]["ts"] == pytest.approx(float(timeline.time_s[-1]) * 1e6, abs=0.001)


def test_the_comparison_trace_holds_each_case_in_its_processes():
    path = compare.scenario_path("streams_overlap")
    result = compare.cached_scenario(str(path), path.stat().st_mtime, ())
    document = compare._comparison_trace(str(path), path.stat().st_mtime, (), "streams").build()
    cases = [case["label"] for case in document["otherData"]["cases"]]
    assert cases == [r.label for r in result.results]
    assert sum(e["ph"] == "X" for e in document["traceEvents"]) == sum(
        len(r.prediction.trace) for r in result.results
    )


@pytest.mark.slow
def test_the_explore_page_offers_the_trace_beside_the_timeline():
    labels = _labels(app("explore"))
    assert labels[labels.index("Download PNG") + 1] == LABEL


@pytest.mark.slow
def test_a_lesson_drawn_as_timelines_offers_its_trace():
    assert LABEL in _labels(app("learn", query={"lesson": "streams_overlap"}))
    assert LABEL not in _labels(app("learn", query={"lesson": "matmul_roofline"}))


@pytest.mark.slow
def test_the_served_load_and_the_cluster_step_offer_their_traces():
    at = app("scale", {"scale_tab": "LLM serving under load"})
    at.select_slider(key="load_requests").set_value(200).run()
    assert not at.exception and not at.error
    assert LABEL in _labels(at)
    at = app("scale", {"scale_tab": "Across nodes"})
    assert not at.exception
    assert LABEL in _labels(at)


@pytest.mark.slow
def test_an_uploaded_model_deep_enough_to_pass_the_trace_budget_is_refused_in_place():
    # issue 25's red team: the upload widget cannot be driven by AppTest, so the page is given the
    # state a valid upload leaves (its bytes and name); a 1,024-layer model (the reader's bound)
    # predicts in about 2 s, but its trace (~133,000 events) is above the app's 100,000
    deep = {
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 64,
        "num_attention_heads": 1,
        "num_hidden_layers": 1024,
        "intermediate_size": 64,
        "vocab_size": 100,
        "max_position_embeddings": 4096,
    }
    at = app("explore", {"explore_workload": "llm_serve"})
    key = "explore_llm_serve_model"
    at.session_state[f"{key}_upload_good"] = (json.dumps(deep).encode(), "deep\x1b[31m.json")
    at.selectbox(key=key).set_value("uploaded config.json").run()
    assert not at.exception
    captions = [c.value for c in at.caption]
    assert any(
        c.startswith("trace: the trace's event count is ") and "the app's budget of 100,000" in c
        for c in captions
    )
    assert any("(1024 layers, hidden 64" in c for c in captions)
    assert LABEL not in _labels(at)
