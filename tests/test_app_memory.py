"""The app shows what fills a GPU's memory as a stacked bar: Explore, and the Scale out pages.

The bar's data are the prediction's ``memory`` breakdown in GiB (``model.footprint``), one row per
part and the free room, so the bar is as long as the GPU's memory.
"""

from __future__ import annotations

import pyarrow
import pytest

from parsim.workloads.llms import LLMS
from tests.apptest import app

GiB = 2**30


def bar_data(at, index: int = 0):
    """The rows of the ``index``-th stacked bar chart of the page."""
    (dataset,) = at.get("vega_lite_chart")[index].proto.datasets
    return pyarrow.ipc.open_stream(dataset.data.data).read_pandas()


def test_explore_shows_the_memory_of_a_served_model_as_a_stacked_bar():
    at = app("explore", query={"explore_workload": "llm_serve", "explore_llm_serve_model": "llama-2-7b"})
    assert not at.exception and not at.error
    rows = bar_data(at).set_index("part")["GiB"]
    assert rows["weights"] == pytest.approx(LLMS["llama-2-7b"].params * 2 / GiB)  # float16 on the H100
    assert rows["kv cache"] > 0 and rows["runtime"] == 1.0
    assert rows.sum() == pytest.approx(80.0)  # the parts and the free room: the H100's 80 GiB
    assert any(m.value.startswith("**Memory**: ") and "weights 12.6" in m.value for m in at.markdown)


def test_explore_shows_no_bar_for_a_kernel_without_parts():
    at = app("explore", query={"explore_workload": "vector_add"})
    assert not at.exception and not at.get("vega_lite_chart")


def test_the_split_explorer_shows_the_chosen_splits_memory():
    at = app("scale", {"scale_tab": "(tp, pp, dp) explorer"})
    at.button(key="split_find").click().run()
    assert not at.exception and not at.error
    parts = set(bar_data(at)["part"])
    assert {"weights", "gradients", "optimizer", "activations", "runtime"} <= parts
