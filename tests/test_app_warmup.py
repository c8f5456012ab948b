"""The server's warm-up (``parsim.app.warmup``) computes what the heavy first views compute."""

from __future__ import annotations

import pytest
import streamlit as st

from parsim.app import cache, learn, scale_cluster, scale_load, scale_splits, warmup, widgets
from parsim.base import caching
from parsim.methods import predict as predict_module
from parsim.studies import splits
from tests.apptest import app


def test_a_view_that_fails_is_said_in_one_line_and_the_next_is_computed():
    lines, done = [], []

    def broken() -> None:
        raise ValueError("no preset 'h300'")

    seconds = warmup.warm([("broken", broken), ("fine", lambda: done.append(True))], say=lines.append)
    assert done == [True] and seconds >= 0
    assert lines[0] == "parsim app: not computed ahead: broken: no preset 'h300'"
    assert lines[1].startswith("parsim app: computed ahead: fine (") and len(lines) == 2


def test_the_warm_up_covers_each_heavy_tab_and_the_cluster_lessons():
    labels = [label for label, _ in warmup.views()]
    assert labels == [
        "Learn: the cluster lessons",
        "Scale out: Across nodes",
        "Scale out: LLM serving under load",
        "Scale out: (tp, pp, dp) explorer",
    ]


@pytest.mark.slow
def test_after_the_warm_up_the_heavy_first_views_compute_nothing(monkeypatch):
    st.cache_data.clear()
    st.cache_resource.clear()
    caching.clear_caches()  # nothing left from other tests: the warm-up alone fills the caches
    warmup.warm(say=lambda line: None)
    computed: list[str] = []
    real = predict_module._predict_request

    def counted(*args, **kwargs):
        computed.append(f"predict {args[0]}")
        return real(*args, **kwargs)

    def refused(name: str):
        def call(*args, **kwargs):
            computed.append(name)
            raise AssertionError(f"{name} ran after the warm-up")

        return call

    monkeypatch.setattr(predict_module, "_predict_request", counted)
    # the pages' own cached functions must hit too (a miss there would still find parsim's caches)
    monkeypatch.setattr(scale_cluster, "predict", refused("scale_cluster.predict"))
    monkeypatch.setattr(cache, "run_scenario", refused("run_scenario"))
    monkeypatch.setattr(scale_load, "run_load", refused("run_load"))
    monkeypatch.setattr(scale_load, "capacity_search", refused("capacity_search"))
    monkeypatch.setattr(scale_splits, "split_table", refused("split_table"))
    drawn: list[str] = []
    real_png = widgets.png_bytes

    def watched(figure):  # which figures are drawn on first open: not the ones the warm-up drew
        drawn.append(figure.axes[0].get_title() if figure.axes else "")
        return real_png(figure)

    monkeypatch.setattr(widgets, "png_bytes", watched)
    tables = splits._table.cache_info().misses
    lessons = [path.stem for path in learn.scenario_paths(learn.scenario_folder()) if "cluster" in path.stem]
    assert len(lessons) >= 4  # the lessons whose cases run on clusters
    for stem in lessons:
        assert not app("learn", {"lesson": stem}).exception
    lessons_drawn = len(drawn)
    assert lessons_drawn == 0  # each lesson's figure came from the warm-up
    across = app("scale", {"scale_tab": "Across nodes"})
    assert not across.exception and len(drawn) == 0  # its efficiency curve and its step's timeline
    assert not app("scale", {"scale_tab": "LLM serving under load"}).exception
    explorer = app("scale", {"scale_tab": "(tp, pp, dp) explorer"})
    explorer.button(key="split_find").click().run()
    assert not explorer.exception and explorer.dataframe
    assert computed == []
    assert splits._table.cache_info().misses == tables


@pytest.mark.parametrize(("flag", "started"), [((), 1), (("--no-warm",), 0)])
def test_parsim_app_starts_the_warm_up_unless_told_not_to(cli, monkeypatch, flag, started):
    from streamlit.web import cli as streamlit_cli

    calls = []
    monkeypatch.setattr(warmup, "start", lambda: calls.append("warm-up"))
    monkeypatch.setattr(streamlit_cli, "main", lambda: 0)  # the server itself is not started here
    code, _, _ = cli("app", "--headless", "--port", "8599", *flag)
    assert code == 0 and len(calls) == started
