"""The ``parsim`` command line: the README's commands work, and user mistakes exit 2 in one line."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_hardware_list(cli):
    code, out, _ = cli("hardware", "list")
    assert code == 0
    for preset in ("laptop-4c-avx2", "h100-sxm", "pcie3-x16", "nvlink4", "k80"):
        assert preset in out


def test_every_preset_says_where_its_numbers_come_from(cli):
    from parsim.hardware.presets import LINKS, PROCESSORS
    from parsim.hardware.presets_cluster import CLUSTER_PRESETS, NIC_PRESETS
    from parsim.hardware.sources import SOURCES

    ids = {*PROCESSORS, *LINKS, *NIC_PRESETS, *CLUSTER_PRESETS}
    assert ids == set(SOURCES), "a preset without its line in parsim/hardware/sources.py, or a stale line"
    code, out, _ = cli("hardware", "list", "--json")
    rows = json.loads(out)
    assert code == 0 and {row["id"] for row in rows} == ids
    assert all(row["source"] == SOURCES[row["id"]] and len(row["source"]) > 20 for row in rows)


def test_hardware_list_json_by_kind(cli):
    code, out, _ = cli("hardware", "list", "--kind", "link", "--json")
    assert code == 0 and {row["kind"] for row in json.loads(out)} == {"link"}


def test_hardware_show_json(cli):
    code, out, _ = cli("hardware", "show", "h100-sxm", "--json")
    data = json.loads(out)
    assert (
        code == 0
        and data["id"] == "h100-sxm"
        and data["kind"] == "gpu"
        and data["memory"]["bandwidth_Bps"] > 1e12
    )


def test_hardware_show_toml_round_trips_through_predict(cli, tmp_path):
    code, out, _ = cli("hardware", "show", "t4", "--toml")
    assert code == 0
    path = tmp_path / "my-t4.toml"
    path.write_text(out)
    code, out, _ = cli("predict", "vector_add", "n=1e6", "--device", str(path), "--json")
    assert code == 0 and json.loads(out)["device"] == "t4"


def test_predict_json_fields(cli):
    code, out, _ = cli("predict", "vector_add", "n=1e8", "--device", "h100-sxm", "--json")
    data = json.loads(out)
    assert code == 0
    for key in (
        "latency_s",
        "throughput_per_s",
        "flops_per_s",
        "bytes_per_s",
        "bottleneck",
        "breakdown",
        "utilization",
        "events",
        "method",
    ):
        assert key in data
    assert data["bottleneck"] == "memory" and data["method"] == "engine"
    assert sum(data["breakdown"].values()) == pytest.approx(data["latency_s"])


@pytest.mark.parametrize(
    "args",
    [
        ["matmul", "m=4096", "n=4096", "k=4096", "dtype=float16", "--device", "a100-80gb"],
        [
            "offload",
            "op=relu",
            "n=1e6",
            "streams=4",
            "--device",
            "v100-pcie",
            "--host",
            "xeon-e5-2630v3",
            "--link",
            "pcie3-x16",
        ],
        ["vector_add", "n=1e6", "--device", "laptop-4c-avx2", "--mode", "sisd"],
        ["vector_add", "n=1e6", "--device", "laptop-4c-avx2", "--mode", "simd"],
        ["vector_add", "n=1e6", "--device", "laptop-4c-avx2", "--mode", "mimd"],
        ["vector_add", "n=1e6", "--device", "laptop-4c-avx2", "--mode", "mimd+simd"],
        ["vector_add", "n=1e6", "--device", "h100-sxm", "--method", "analytic"],
    ],
)
def test_readme_predictions(cli, args):
    code, out, err = cli("predict", *args)
    assert code == 0, err
    assert "latency" in out and "bottleneck" in out


def test_predict_plot(cli, tmp_path):
    target = tmp_path / "t.png"
    code, _, err = cli(
        "predict",
        "offload",
        "n=1e6",
        "streams=2",
        "--device",
        "t4",
        "--plot",
        str(target),
    )
    assert code == 0, err
    assert target.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_run_scenario_with_plot(cli, tmp_path):
    target = tmp_path / "flynn.png"
    code, out, err = cli("run", "flynn_vector_add", "--plot", str(target))
    assert code == 0, err
    assert "SISD" in out and "speed-up" in out and target.exists()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["predict", "vector_add", "n=-1"], "'n' input should be greater than 0: -1"),
        (["predict", "vector_add", "n=0"], "'n'"),
        (["predict", "vectr_add", "n=1"], "did you mean vector_add"),
        (["predict", "vector_add", "n=1", "size=3"], "unknown parameter 'size'"),
        (["predict", "vector_add", "n=1", "dtype=int4"], "'dtype'"),
        (["predict", "vector_add", "n=1", "--mode", "vliw"], "'--mode' must be one of sisd, simd, mimd"),
        (["predict", "vector_add", "n=1", "--mode", "simt"], "simt needs a GPU"),
        (["predict", "vector_add", "n=1", "--device", "h100"], "closest: "),
        (["predict", "vector_add", "n=1", "--device", "t4", "--link", "pcie9"], "unknown link 'pcie9'"),
        (["predict", "vector_add", "n=1", "--method", "guess"], "'--method' must be one of engine, analytic"),
        (
            ["predict", "vector_add", "n=1", "--gpus", "0"],
            "'--gpus' input should be greater than or equal to 1",
        ),
        (["predict", "vector_add", "--nope"], "No such option: --nope"),
        (
            ["predict", "vector_add", "n=1.2e10", "--device", "h100-pcie"],
            "needs 134.1 GiB, h100-pcie has 80.0 GiB",
        ),
        (["predict", "copy", "n=10"], "needs a GPU device"),
        (["predict", "vector_add", "n"], "key=value"),
        (["predict", "vector_add", "n=1", "--device", "missing.toml"], "no such hardware file"),
        (["predict", "vector_add", "n=1", "--plot", "out.svg"], "must end in .png"),
        (["run", "nope.toml"], "no such scenario file"),
        (["hardware", "show", "h100"], "closest: "),
        (
            ["hardware", "list", "--kind", "fpga"],
            "'--kind' must be one of cpu, gpu, tpu, link, nic, cluster: 'fpga'",
        ),
    ],
)
def test_user_mistakes_exit_2_with_one_line(cli, args, expected):
    code, out, err = cli(*args)
    assert code == 2
    assert expected in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_malformed_hardware_file_names_file_and_line(cli, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[processor]\nid = = 1\n")
    code, _, err = cli("predict", "vector_add", "n=1", "--device", str(bad))
    assert code == 2 and "bad.toml" in err and "line 2" in err


def test_typer_usage_errors_exit_2(cli):
    code, _, _ = cli("predict", "vector_add", "--no-such-flag")
    assert code == 2


@pytest.mark.slow
def test_python_dash_m_entry_point():
    done = subprocess.run(
        [sys.executable, "-m", "parsim", "predict", "relu", "n=1e3", "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0 and json.loads(done.stdout)["workload"] == "relu"


def test_hardware_show_reads_a_link_file(cli, tmp_path):
    code, out, _ = cli("hardware", "show", "pcie4-x16", "--toml")
    path = tmp_path / "link.toml"
    path.write_text(out)
    code, out, err = cli("hardware", "show", str(path), "--json")
    assert code == 0, err
    assert json.loads(out)["id"] == "pcie4-x16"


def test_the_cli_starts_without_the_model():
    # `parsim --help` stays quick because the CLI imports no NumPy, model or predictor until a
    # command needs them (benchmarks/bench_startup.py times it)
    import subprocess
    import sys

    heavy = "{'numpy', 'parsim.methods.predict', 'simpy'}"
    code = f"import sys, parsim.cli.main; sys.exit(sorted({heavy} & set(sys.modules)) != [])"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
