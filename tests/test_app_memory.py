"""The app shows what fills a GPU's memory as a stacked bar: Explore, and the Scale out pages.

The bar's data are the prediction's ``memory`` breakdown in GiB (``model.footprint``), one row per
part and the free room, so the bar is as long as the GPU's memory.
"""

from __future__ import annotations

import numpy
import pyarrow
import pytest

from parsim.workloads.llms import LLMS
from tests.apptest import app

GiB = 2**30


def bar_data(at, index: int = 0):
    """The rows of the ``index``-th stacked bar chart of the page."""
    (dataset,) = at.get("vega_lite_chart")[index].proto.datasets
    return pyarrow.ipc.open_stream(dataset.data.data).read_pandas()


@pytest.mark.slow
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


@pytest.mark.slow
def test_the_split_explorer_shows_the_chosen_splits_memory():
    at = app("scale", {"scale_tab": "(tp, pp, dp) explorer"})
    at.button(key="split_find").click().run()
    assert not at.exception and not at.error
    parts = set(bar_data(at)["part"])
    assert {"weights", "gradients", "optimizer", "activations", "runtime"} <= parts


def calibrated_laptop():
    """The laptop preset as ``parsim calibrate`` writes a machine: with a measured bandwidth curve."""
    import attrs

    from parsim.hardware.presets import PROCESSORS
    from parsim.hardware.specs import BandwidthPoint

    laptop = PROCESSORS["laptop-4c-avx2"]
    curve = (
        BandwidthPoint(4096, 100e9, 300e9),
        BandwidthPoint(2**20, 40e9, 120e9),
        BandwidthPoint(2**30, 12e9, 40e9),
    )
    return attrs.evolve(laptop, id="this-machine", memory=attrs.evolve(laptop.memory, curve=curve))


def test_the_bandwidth_curve_holds_its_first_point_for_an_empty_working_set_without_a_warning():
    # Before: numpy.log(0) of a kernel that touches no memory warned "divide by zero" (issue 27, 8).
    import warnings

    from parsim.model.memory import interpolate

    curve = calibrated_laptop().memory.curve
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert interpolate(curve, 0.0) == (300e9, 100e9)
        swept = interpolate(curve, numpy.array([0.0, 4096.0, 2.0**40]))
    assert swept[0].tolist() == [300e9, 300e9, 40e9] and swept[1].tolist() == [100e9, 100e9, 12e9]


@pytest.mark.slow
@pytest.mark.parametrize("workload", ["network", "llm_serve"])
def test_explore_on_a_calibrated_machine_raises_no_warning(workload, tmp_path, monkeypatch):
    from parsim.hardware.tomlio import save_hardware

    save_hardware(calibrated_laptop(), tmp_path / "this-machine.toml")
    monkeypatch.chdir(tmp_path)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        at = app("explore", query={"explore_workload": workload})
        at.selectbox(key="explore_device").set_value("this machine (calibrated)").run()
    assert not at.exception and not at.error
    assert any(m.value.startswith("**Memory**: ") for m in at.markdown)
