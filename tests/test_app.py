"""The app through Streamlit's AppTest: every page renders, widgets change the numbers, bad input
is reported in place."""

from pathlib import Path

import pytest

from tests.apptest import app, seconds

pytestmark = pytest.mark.slow  # every test starts the app in AppTest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("page", ["explore", "compare", "scale", "measure", "learn"])
def test_every_page_renders(page):
    at = app(page)
    assert at.title[0].value.lower().startswith(page[:5])
    if page != "measure":
        assert len(at.get("image")) >= 1, "the page's main figure is missing"


def test_home_links_every_step_of_the_class_to_its_page():
    at = app("home")
    links = at.get("page_link")
    assert len(links) == 6
    assert {link.proto.page.rsplit("/", 1)[-1] for link in links} == {"learn", "compare", "scale"}
    for link in links:
        assert link.proto.query_string, link.proto.label  # each step carries its settings


def test_explore_doubling_n_doubles_a_memory_bound_latency():
    at = app()
    assert "memory-bound" in at.info[0].value
    before = seconds(at.metric[0].value)
    at.number_input(key="explore_vector_add_n").set_value(2 * 10**8).run()
    after = seconds(at.metric[0].value)
    assert after / before == pytest.approx(2, rel=0.05)


def test_explore_a_new_device_brings_its_own_link_and_mode():
    # issue 13 bug 3: h100-sxm -> t4 kept pcie5-x16; SISD on the laptop then t4 ran the GPU in SISD
    at = app()
    assert at.selectbox(key="explore_link__h100-sxm").value == "pcie5-x16"
    at.selectbox(key="explore_device").set_value("t4").run()
    assert at.selectbox(key="explore_link__t4").value == "pcie3-x16"
    at.selectbox(key="explore_device").set_value("laptop-4c-avx2").run()
    at.selectbox(key="explore_mode__laptop-4c-avx2").set_value("sisd").run()
    sisd = seconds(at.metric[0].value)
    at.selectbox(key="explore_device").set_value("t4").run()
    assert at.selectbox(key="explore_mode__t4").value == "simt"
    assert seconds(at.metric[0].value) < sisd / 100
    at.selectbox(key="explore_device").set_value("laptop-4c-avx2").run()
    assert at.selectbox(key="explore_mode__laptop-4c-avx2").value == "sisd"  # picked for this device
    assert seconds(at.metric[0].value) == pytest.approx(sisd)
    assert not at.exception


def test_explore_opens_with_the_settings_of_its_url():
    at = app(
        "explore",
        query={"explore_device": "t4", "explore_workload": "matmul", "explore_matmul_m": "512"},
    )
    assert at.selectbox(key="explore_device").value == "t4"
    assert at.selectbox(key="explore_workload").value == "matmul"
    assert at.number_input(key="explore_matmul_m").value == 512
    assert "T4" in at.info[0].value or "SM" in at.info[0].value
    bad = app("explore", query={"explore_device": "no-such-gpu", "explore_workload": "; rm -rf /"})
    assert bad.selectbox(key="explore_device").value == "h100-sxm"  # unknown values are ignored
    assert bad.selectbox(key="explore_workload").value == "vector_add"


def test_explore_asks_for_an_upload_instead_of_showing_another_device():
    at = app()
    at.selectbox(key="explore_device").set_value("uploaded hardware file").run()
    assert any("upload a hardware TOML" in i.value for i in at.info)
    assert not at.metric and not at.exception  # nothing predicted for a device nobody gave


def test_explore_offers_only_what_runs_without_a_gpu_on_a_cpu():
    at = app()
    assert {"copy", "offload", "data_parallel"} <= workloads_offered(at)
    at.selectbox(key="explore_device").set_value("laptop-4c-avx2").run()
    offered = workloads_offered(at)
    assert not {"copy", "offload", "data_parallel"} & offered
    assert {"vector_add", "matmul", "network"} <= offered


def workloads_offered(at) -> set[str]:
    return {label.split(" — ")[0] for label in at.selectbox(key="explore_workload").options}


def test_devices_are_grouped_cpu_then_gpu_by_their_full_names():
    at = app()
    shown = at.selectbox(key="explore_device").options
    kinds = [label.split(" · ")[0] for label in shown if " · " in label]
    assert kinds == sorted(kinds, key=lambda k: k != "CPU") and {"CPU", "GPU", "TPU"} == set(kinds)
    assert "GPU · NVIDIA Tesla T4 (TU104, Turing) (t4)" in shown


def test_hardware_editor_writes_every_preset_figure_back_exactly():
    # issue 13: the editor wrote capacity rounded to 6 digits, as a float
    import tomllib

    from parsim.app.editor import FIELDS, _build, _get, _shown
    from parsim.base.units import parse_value
    from parsim.hardware.presets import PROCESSORS
    from parsim.hardware.tomlio import dumps_hardware

    for base in PROCESSORS.values():
        values = {path: parse_value(_shown(_get(base, path))) for path, _ in FIELDS}
        assert _build(base, values) == base, base.id
    written = tomllib.loads(dumps_hardware(_build(PROCESSORS["h100-sxm"], values_of("h100-sxm"))))
    assert tomllib.loads(dumps_hardware(PROCESSORS["h100-sxm"])) == written
    at = app()
    assert at.text_input(key="editor_h100-sxm_memory.capacity_B").value == "85899345920"
    assert at.text_input(key="editor_h100-sxm_clock_Hz").value == "1.98e+9"


def values_of(preset: str) -> dict:
    from parsim.app.editor import FIELDS, _get, _shown
    from parsim.base.units import parse_value
    from parsim.hardware.presets import PROCESSORS

    return {path: parse_value(_shown(_get(PROCESSORS[preset], path))) for path, _ in FIELDS}


def test_explore_framework_choice_moves_a_host_bound_network():
    at = app()
    at.selectbox(key="explore_workload").set_value("network").run()
    at.checkbox(key="explore_network_train").uncheck().run()
    layers = next(frame.value for frame in at.dataframe if "kind" in frame.value.columns)
    assert "algorithms" in layers.columns  # each convolution's algorithm, in words
    assert set(layers["algorithms"].dropna()) <= {"implicit-gemm", "gemm", "winograd", "fft"}
    eager = seconds(at.metric[0].value)
    assert "overhead" in at.info[0].value or "host" in at.info[0].value
    at.selectbox(key="explore_network_framework").set_value("cuda-graph").run()
    assert not at.exception
    assert seconds(at.metric[0].value) < eager / 2  # no framework on the host per operator


def test_explore_reports_a_size_that_does_not_fit():
    at = app()
    at.number_input(key="explore_vector_add_n").set_value(10**13).run()
    assert not at.exception
    assert any("needs" in e.value and "GiB" in e.value for e in at.error)


def test_hardware_editor_marks_the_bad_field_and_raises_nothing():
    at = app()
    at.text_input(key="editor_h100-sxm_memory.latency_s").set_value("-1").run()
    assert not at.exception
    assert any("'latency_s' must be in [1e-10, 0.01] s: -1" in e.value for e in at.error)
    at.text_input(key="editor_h100-sxm_memory.latency_s").set_value("500e-9").run()
    at.text_input(key="editor_h100-sxm_clock_Hz").set_value("fast").run()
    assert any("'clock_Hz' must be a number" in e.value for e in at.error)
    at.text_input(key="editor_h100-sxm_clock_Hz").set_value("1.98e9").run()
    at.text_input(key="editor_h100-sxm_memory.bandwidth_Bps").set_value("9e12").run()
    assert any("peak_bandwidth_Bps" in e.value for e in at.error)  # above the peak
    assert not at.exception


def test_measure_page_without_gpu_says_so_plainly():
    at = app("measure")
    # why, in the words of gpu_available: CuPy missing (what to install) or no device
    assert any(
        "No GPU here" in w.value and ("pip install" in w.value or "no CUDA GPU" in w.value)
        for w in at.warning
    )


def test_measure_page_measures_the_cpu():
    at = app("measure")
    at.number_input(key="measure_size").set_value(10**5)
    at.button(key="measure_submit").click().run()
    assert not at.exception
    assert any("median" in s.value for s in at.success)


def test_compare_kinds_and_crossover_message():
    at = app("compare")
    assert any("GPU" in s.value for s in [*at.success, *at.warning])
    for kind in ["CPU vs GPU (PCIe paid)", "pinned vs pageable", "1 vs several streams"]:
        at.segmented_control(key="compare_kind").set_value(kind).run()
        assert not at.exception, kind


def test_learn_every_lesson():
    at = app("learn")
    for title in at.selectbox(key="learn_lesson").options:
        at.selectbox(key="learn_lesson").set_value(title).run()
        assert not at.exception, title
        assert len(at.markdown) >= 2  # the title and the lesson text


def test_scale_out_tabs():
    at = app("scale")
    at.selectbox(key="scale_model").set_value("resnet18").run()
    assert not at.exception
    (table,) = at.dataframe  # only the open tab is computed
    assert set(table.value["gpus"]) == {1, 2, 4, 8}
    serving = app("scale", query={"scale_tab": "Batching: latency vs throughput"})
    (table,) = serving.dataframe
    assert list(table.value["batch"]) == [1, 2, 4, 8, 16, 32, 64, 128] * 2


def test_explore_offers_this_machine_from_the_working_directory(tmp_path, monkeypatch):
    import attrs

    from parsim.hardware.presets import PROCESSORS
    from parsim.hardware.tomlio import save_hardware

    save_hardware(
        attrs.evolve(PROCESSORS["laptop-4c-avx2"], id="this-machine"), tmp_path / "this-machine.toml"
    )
    monkeypatch.chdir(tmp_path)
    at = app()
    assert "this machine (calibrated)" in at.selectbox(key="explore_device").options
    at.selectbox(key="explore_device").set_value("this machine (calibrated)").run()
    assert not at.exception and "DRAM" in at.info[0].value


def test_compare_renders_the_shipped_lessons_on_the_chosen_hardware():
    # Before: the page rebuilt the Flynn, pinned and streams lessons as its own tuples.
    from parsim.studies.scenarios import case_labels, load_scenario, retarget

    at = app("compare")
    at.selectbox(key="compare_op").set_value("relu").run()
    flynn = retarget(
        load_scenario(ROOT / "parsim" / "lessons" / "flynn_vector_add.toml"),
        cpu="laptop-4c-avx2",
        gpu="v100-pcie",
        workloads={"vector_add": "relu"},
    )
    assert at.dataframe[0].value["configuration"].tolist() == case_labels(flynn)
    # the crossover lesson: resident data wins from some size; the offloaded relu never does
    assert any("data already resident" in s.value and "beats" in s.value for s in at.success)
    assert any("H2D + relu + D2H" in w.value and "never faster" in w.value for w in at.warning)


def test_scale_out_takes_the_chosen_gpus_own_link_for_the_ring():
    # Before: the ring all-reduce always ran over nvlink3, whatever the GPU.
    at = app("scale")
    at.number_input(key="scale_batch").set_value(32).run()
    at.selectbox(key="scale_gpu").set_value("t4").run()
    assert set(at.dataframe[0].value["case"]) == {
        "host averaging over PCIe 3.0 x16",
        "ring all-reduce over PCIe 3.0 x16",  # a T4 has no NVLink: peers talk over PCIe
    }
    at.selectbox(key="scale_gpu").set_value("h100-sxm").run()
    assert "ring all-reduce over NVLink 4" in set(at.dataframe[0].value["case"])
    assert not at.exception


@pytest.mark.parametrize("device", ["h100-sxm", "laptop-4c-avx2"])
def test_explore_takes_every_workload_without_an_exception(device):
    # issue 13: choosing matmul crashed the page (its 'n' bound is below the page's default n);
    # issue 23: data_parallel opened on an error (its zero=0 box offered 1): every default predicts
    at = app()
    at.selectbox(key="explore_device").set_value(device).run()
    for name in workloads_offered(at):
        at.selectbox(key="explore_workload").set_value(name).run()
        assert not at.exception, (device, name, at.exception[0].value if at.exception else "")
        assert not at.error, (device, name, at.error[0].value)


def test_compare_offers_the_transformer_lessons_on_the_chosen_model_and_gpu():
    at = app("compare")
    at.segmented_control(key="compare_kind").set_value("FlashAttention vs unfused").run()
    assert not at.exception and len(at.get("image")) == 1
    table = at.dataframe[0].value
    assert set(table["seq"]) == {256, 512, 1024, 2048, 4096}  # llama-2-7b's context allows them all
    at.selectbox(key="compare_llm_model").set_value("gpt2").run()
    assert set(at.dataframe[0].value["seq"]) == {256, 512, 1024}  # gpt2 stops at its context
    # a 7B model's prompt is compute-bound on an H100 (GPT-2's 124M-parameter products sit below the
    # ridge since stream-K took the H100's tail wave away: memory-bound too)
    at.selectbox(key="compare_llm_model").set_value("llama-2-7b").run()
    at.segmented_control(key="compare_kind").set_value("LLM prefill vs decode").run()
    at.selectbox(key="compare_llm_gpu").set_value("h100-sxm").run()
    table = at.dataframe[0].value
    assert not at.exception and {"first_token_ms", "tokens_per_s"} <= set(table.columns)
    assert "per_token_ms" not in table.columns  # one-token requests: no time per output token (was 0 ms)
    prefill, decode = table["bottleneck"].iloc[0], table["bottleneck"].iloc[1]
    assert prefill.startswith("compute-bound (") and decode.startswith("memory-bound (")


def test_explore_serves_a_70b_model_over_8_gpus_with_its_request_figures():
    # the form hid 'gpus' for every workload but data_parallel: llm_serve owns its GPU count too
    at = app(
        "explore",
        query={
            "explore_workload": "llm_serve",
            "explore_llm_serve_model": "llama-2-70b",
            "explore_llm_serve_gpus": "8",
            "explore_llm_serve_batch": "64",
        },
    )
    assert at.number_input(key="explore_llm_serve_gpus").value == 8
    assert not at.error and not at.exception
    shown = {m.label: m.value for m in at.metric}
    assert {"first token", "per output token", "tokens/s, all", "KV cache", "max batch"} <= set(shown)
    assert int(shown["max batch"]) > 64


def test_the_measure_page_shows_no_server_folder(tmp_path, monkeypatch):
    """Issue 23, item 6: the Measure page printed the server's working folder."""
    monkeypatch.chdir(tmp_path)
    at = app("measure")
    shown = [
        str(element.value)
        for kind in ("markdown", "caption", "info", "success", "warning", "error", "text")
        for element in at.get(kind)
        if hasattr(element, "value")
    ]
    assert shown and not any(str(tmp_path) in text for text in shown)
    assert any("the folder the app was started from" in text for text in shown)


def test_explore_leads_an_llm_request_with_its_end_to_end_time_ttft_tpot_and_tokens_per_s():
    """Issue 24: the headline 'latency' was the prefill and one step (43 ms), not the request (1.04 s)."""
    at = app("explore", query={"explore_workload": "llm_serve", "explore_llm_serve_model": "llama-2-7b"})
    assert not at.exception and not at.error
    labels = [m.label for m in at.metric]
    assert labels[:4] == ["end to end", "first token", "per output token", "tokens/s, all"]
    assert "latency" not in labels and labels.count("first token") == 1
    timed = ("end to end", "first token", "per output token")
    shown = {m.label: seconds(m.value) for m in at.metric if m.label in timed}
    # e2e = TTFT + (output - 1) x TPOT, output 128 by default
    e2e = shown["first token"] + 127 * shown["per output token"]
    assert shown["end to end"] == pytest.approx(e2e, rel=0.02)
    sentence = at.info[0].value
    assert "prefill compute-bound" in sentence and "decode memory-bound" in sentence


def test_compare_llm_batching_shows_no_zero_per_token_time():
    """Issue 24: a one-token request has no time per output token; the table showed 0 ms."""
    at = app("compare")
    at.segmented_control(key="compare_kind").set_value("LLM batching decode").run()
    table = at.dataframe[0].value
    assert not at.exception
    assert "per_token_ms" not in table.columns or not (table["per_token_ms"] == 0).any()
    assert (table["first_token_ms"] > 0).all()


def test_explore_shows_the_figures_a_workload_declares_and_its_lessons():
    # issue 22: a definition owns the figures that explain it; its lessons are found from the lessons
    at = app()
    assert [tab.label for tab in at.tabs] == ["Timeline", "Roofline", "Breakdown"]
    assert any("[Flynn" in c.value and "/learn?lesson=flynn_vector_add" in c.value for c in at.caption)
    at.selectbox(key="explore_workload").set_value("copy").run()
    assert not at.exception
    assert [tab.label for tab in at.tabs] == ["Timeline", "Breakdown"]  # a copy does no arithmetic


def test_explore_asks_for_a_config_json_upload_for_a_model_of_ones_own():
    at = app("explore")
    at.selectbox(key="explore_workload").set_value("llm_serve").run()
    at.selectbox(key="explore_llm_serve_model").set_value("uploaded config.json").run()
    assert not at.exception
    assert any("upload a model's config.json" in i.value for i in at.info)
    at.selectbox(key="explore_llm_serve_model").set_value("mistral-7b").run()
    assert not at.exception and at.metric
    assert not any("upload a model's config.json" in i.value for i in at.info)
