"""Issue 12's attacks, each a regression test: a hardware file cannot make parsim open another file,
bad input of every shape is one line, nothing non-finite is printed, model bugs found on the way."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import parsim
from parsim.base import jsontext
from parsim.base.errors import ParsimError
from parsim.hardware.presets import PROCESSORS
from parsim.hardware.tomlio import dumps_hardware, load_hardware, loads_hardware
from parsim.studies.scenarios import load_scenario, loads_scenario

SECRET = "hunter2-in-value"


def evil_gpu(tmp_path: Path, field: str = "default_link") -> tuple[Path, Path]:
    """A GPU file whose link points at a 'secrets' file holding TOML that would echo its values."""
    secrets = tmp_path / "secrets.toml"
    secrets.write_text(f'[api_key]\nbandwidth_Bps = "{SECRET}"\n')
    text = dumps_hardware(PROCESSORS["t4"]).replace('default_link = "pcie3-x16"', "")
    path = tmp_path / "evil.toml"
    path.write_text(text.replace("[processor]\n", f'[processor]\n{field} = "{secrets}"\n', 1))
    return path, secrets


@pytest.mark.parametrize("field", ["default_link", "peer_link"])
def test_a_hardware_file_cannot_name_another_file(tmp_path, cli, monkeypatch, field):
    path, secrets = evil_gpu(tmp_path, field)
    opened = []
    original = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: opened.append(self) or original(self))
    code, out, err = cli("predict", "vector_add", "n=1000", "--device", str(path), "--gpus", "2")
    assert code == 2 and out == ""
    assert f"'{field}' must be a link preset id" in err
    assert SECRET not in err and "api_key" not in err and str(secrets) not in err
    assert secrets not in opened


def test_the_app_upload_path_refuses_the_same_file(tmp_path):
    path, _ = evil_gpu(tmp_path)
    with pytest.raises(ParsimError) as caught:
        loads_hardware(path.read_text(), source="evil.toml")  # what the app's upload widget runs
    assert SECRET not in str(caught.value) and "secrets" not in str(caught.value)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("bandwidth_Bps = 1e-300", "'bandwidth_Bps' must be in [1000, 1e+15] B/s: 1e-300"),
        ("bandwidth_Bps = 1e300", "'bandwidth_Bps' must be in [1000, 1e+15] B/s: 1e+300"),
        ("latency_s = 5.0", "'latency_s' must be in [1e-10, 0.01] s: 5.0"),
        ("capacity_B = 0.5", "'capacity_B' must be in [1, 1e+16] B: 0.5"),
    ],
)
def test_spec_fields_are_physically_bounded(line, message):
    text = dumps_hardware(PROCESSORS["t4"])
    key = line.split(" = ")[0]
    lines = [
        line if row.startswith(f"{key} = ") and not row.startswith("peak") else row
        for row in text.splitlines()
    ]
    with pytest.raises(ParsimError, match=message.replace("[", r"\[").replace("+", r"\+")):
        loads_hardware("\n".join(lines))


def test_json_output_is_standard_json():
    assert jsontext.dumps({"a": math.inf, "b": [math.nan, 1.5], "c": (2,)}) == jsontext.dumps(
        {"a": None, "b": [None, 1.5], "c": [2]}
    )
    text = jsontext.dumps(parsim.predict("vector_add", {"n": 1}, device="t4").to_dict())
    assert "NaN" not in text and "Infinity" not in text and json.loads(text)["latency_s"] > 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("processor = 5", "'processor' must be a table, not an integer"),
        ('processor = "abc"', "'processor' must be a table, not a string"),
        ("[processor]\nmemory = 5", "'processor.memory' must be a table, not an integer"),
        (
            "[processor]\n[processor.memory]\ncaches = [1, 2]",
            r"'processor.memory.caches\[0\]' must be a table",
        ),
        (
            "[processor]\nmatrix_flops_per_s = 5\n[processor.memory]\nbandwidth_Bps = 1e9",
            "'processor.matrix_flops_per_s' must be a table of name = rate, not an integer",
        ),
        ("[processor]\nx = " + "[" * 5000 + "]" * 5000, "more than 2000 brackets"),
        ('[processor]\n"a\nb" = 1', "malformed TOML"),
    ],
)
def test_hardware_toml_of_the_wrong_shape_is_one_line(text, message):
    with pytest.raises(ParsimError, match=message) as caught:
        loads_hardware(text)
    assert "\n" not in str(caught.value)


def test_a_directory_is_not_a_hardware_file(tmp_path):
    (tmp_path / "x.toml").mkdir()
    with pytest.raises(ParsimError, match="is a directory, not a hardware file"):
        load_hardware(tmp_path / "x.toml")


def test_a_key_with_a_line_break_stays_one_line():
    with pytest.raises(ParsimError) as caught:
        loads_hardware('["\\nsecret"]\nx = 1')
    assert "\n" not in str(caught.value) and "\\n" in str(caught.value)


SCENARIO = (
    'title = "t"\nlesson = "x"\n[defaults]\nworkload = "vector_add"\ndevice = "t4"\n[[cases]]\nlabel = "a"\n'
)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ("[]", "'sweep.values' is empty"),
        ('""', "'sweep.values' is empty"),
        ('"range:1:1e15"', "hold 999,999,999,999,999 points, more than the 10,000,000 allowed"),
        ('"linspace:1:10:1e9"', "more than the 10,000,000 allowed"),
        ('"range:1"', "expected range:START:STOP"),
    ],
)
def test_scenario_sweep_values_are_checked_at_load(values, message):
    with pytest.raises(ParsimError, match=message):
        loads_scenario(SCENARIO + f'[sweep]\nparam = "n"\nvalues = {values}\n')


def test_hardware_in_a_scenario_is_found_beside_it(tmp_path, monkeypatch):
    folder = tmp_path / "lessons"
    folder.mkdir()
    (folder / "gpu.toml").write_text(dumps_hardware(PROCESSORS["t4"]))
    (folder / "lesson.toml").write_text(SCENARIO.replace('device = "t4"', 'device = "gpu.toml"'))
    monkeypatch.chdir(tmp_path)  # not the scenario's folder
    scenario = load_scenario(folder / "lesson.toml")
    assert scenario.defaults.device == str(folder / "gpu.toml")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["predict", "vector_add", "n=true"], "vector_add: 'n' must be a number, not true"),
        (["predict", "vector_add", "n=1e30"], "vector_add: 'n' must be <= 1e+15: 1e+30"),
        (["predict", "vector_add", "n=10", "--gpus", "0"], "'--gpus'"),
        (["predict", "vector_add", "n=10", "--plot", "/proc/x.png"], "'--plot': cannot write in '/proc'"),
        (["run", "flynn_vector_add", "--plot", "/proc/x.png"], "'--plot': cannot write"),
    ],
)
def test_cli_mistakes_are_one_line(cli, args, message):
    code, out, err = cli(*args)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err


def test_plot_into_a_directory_or_a_read_only_folder(cli, tmp_path):
    folder = tmp_path / "figure.png"
    folder.mkdir()
    code, _, err = cli("predict", "vector_add", "n=10", "--plot", str(folder))
    assert code == 2 and "'--plot'" in err and "folder" in err
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    code, _, err = cli("predict", "vector_add", "n=10", "--plot", str(locked / "t.png"))
    if code == 0:  # root may write anywhere: nothing to refuse
        pytest.skip("running as root: a read-only folder is still writable")
    assert code == 2 and "'--plot'" in err


def test_matrix_vector_products_are_not_padded_on_a_cpu():
    # issue 12: m=4096 n=1 k=4096 was 11x too slow, m=1 n=1 k=3e6 383x (padded to square tiles); a
    # BLAS blocks to the matrix's edge, so both are now bound by reading the matrix once
    cpu = PROCESSORS["laptop-4c-avx2"]
    for m, n, k in ((4096, 1, 4096), (1, 1, 3_000_000)):
        p = parsim.predict("matmul", {"m": m, "n": n, "k": k}, device=cpu)
        streamed = (m * k + k * n) * 4 / cpu.memory.bandwidth_Bps
        assert p.latency_s < 1.5 * streamed + 20e-6


def test_host_memory_holds_only_what_crosses_the_link():
    # issue 12: refused for "102.7 GiB of host memory" although the host holds only the batch
    p = parsim.predict("network", {"model": "resnet50", "batch": 700, "dtype": "float16"}, device="h200")
    assert p.latency_s > 0


@pytest.mark.parametrize(
    "content",
    [
        "h100-sxm.toml",  # a name that looks like a file: read as content, not opened
        "x" * 300,  # a long line: was "OSError: File name too long"
        'processor = { id = "mine" }',  # one line of valid TOML: content, never a preset name or a path
    ],
)
def test_an_uploaded_text_is_content_never_a_name_or_a_path(content, monkeypatch):
    """Issue 23, item 5: the app's sources are preset ids or file contents, told apart by the ids."""
    from parsim.app.cache import resolve

    opened = []
    monkeypatch.setattr(Path, "read_bytes", lambda self: opened.append(self))
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: opened.append(self))
    with pytest.raises(ParsimError) as caught:
        resolve(content)
    assert str(caught.value).startswith("hardware file: ") and opened == []


def test_a_preset_id_stays_a_preset_in_the_app():
    from parsim.app.cache import resolve

    assert resolve("h100-sxm") == "h100-sxm" and resolve("pcie4-x16") == "pcie4-x16" and resolve(None) is None
