"""A sweep over devices names each point's own device, draws each line once, and its crossover
markers hide no curve (issue 27, defect 5)."""

import pandas
import pytest

import parsim
from parsim.plots.lines import MARKER_Z, sweep_lines
from parsim.studies.sweeps.points import case_label

GRID = {"workload.n": [10**3, 10**6, 10**9], "device": ["v100-pcie", "h100-pcie"]}


@pytest.fixture(scope="module", params=["engine", "analytic"])
def swept(request):
    return parsim.sweep("gpu_offload_crossover", grid=GRID, method=request.param)


def test_every_gpu_row_is_labelled_with_the_gpu_that_ran_it(swept):
    names = {"v100-pcie": "(Tesla V100 PCIe 16 GB)", "h100-pcie": "(H100 PCIe 80 GB)"}
    gpu = swept[swept["device_used"].isin(names)]
    assert len(gpu) == 2 * 2 * 3  # two GPU cases, two GPUs, three sizes
    for row in gpu.itertuples():
        assert row.case.endswith(names[row.device_used]), row.case
    cpu = swept[swept["device_used"] == "xeon-e5-2630v3"]
    assert set(cpu["case"]) == {"CPU: relu, all cores (Xeon E5-2630 v3)"}


def test_the_cpu_baseline_swept_beside_two_gpus_is_one_line(swept):
    for hue in (None, "device"):
        figure = parsim.plots.sweep(swept, x="workload.n", y="latency_s", hue=hue)
        labels = [line.get_label() for line in figure.axes[0].get_lines() if line.get_label()[0] != "_"]
        assert len(labels) == 5, labels  # CPU once; two GPU cases on two GPUs
        assert sum(label.startswith("CPU") for label in labels) == 1
        assert len(set(labels)) == 5


def test_a_line_never_has_two_points_at_one_x():
    frame = pandas.DataFrame(
        {"case": list("aabb"), "device": list("xxxx"), "n": [1, 2, 1, 2], "latency_s": [1, 2, 3, 4]}
    )
    figure = parsim.plots.sweep(frame, x="n", y="latency_s", hue="device")  # device alone mixes cases
    lines = [line for line in figure.axes[0].get_lines() if line.get_label()[0] != "_"]
    assert sorted(list(line.get_ydata()) for line in lines) == [[1, 2], [3, 4]]


def test_crossover_markers_sit_under_the_curves_without_a_box():
    series = {"cpu": ([1, 10, 100], [1.0, 10.0, 100.0]), "gpu": ([1, 10, 100], [5.0, 6.0, 7.0])}
    figure = sweep_lines(series, "workload.n", "latency_s", [(10, "gpu", "cpu")], "crossing")
    ax = figure.axes[0]
    curves = [line for line in ax.get_lines() if line.get_label() in series]
    markers = [line for line in ax.get_lines() if line not in curves]
    assert len(curves) == 2 and len(markers) == 1
    assert max(m.get_zorder() for m in markers) == MARKER_Z < min(c.get_zorder() for c in curves)
    (text,) = [t for t in ax.texts if "wins from" in t.get_text()]
    assert text.get_bbox_patch() is None and text.get_zorder() < min(c.get_zorder() for c in curves)


def test_a_label_without_fields_stays_as_written_one_with_fields_names_the_device():
    assert case_label("plain", "plain", {"device": "t4"}) == "plain"
    assert case_label("on {device}", "on X", {"workload": "relu", "device": "t4"}) == "on Tesla T4"
