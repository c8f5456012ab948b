"""Issue 23 (hardening, round 2): silent wrong answers — each test failed on the main it was filed
against."""

from __future__ import annotations

import contextlib

import pytest

import parsim
from parsim.base.errors import ParsimError
from parsim.hardware.presets import LINKS, PROCESSORS
from parsim.hardware.presets_cluster import CLUSTER_PRESETS, NIC_PRESETS
from parsim.hardware.tomlio import dumps_hardware, load_hardware, loads_hardware
from tests.processes import outliving

TINY_SCENARIO = 'lesson = "l"\n[[cases]]\nworkload = "vector_add"\ndevice = "t4"\nparams = { n = 1000 }\n'
SWEEP = ["sweep", "--set", "workload=relu", "--set", "device=t4", "--grid"]  # then the grid
EVERY_PRESET = [*PROCESSORS, *LINKS, *CLUSTER_PRESETS, *NIC_PRESETS]


@pytest.mark.parametrize("preset", EVERY_PRESET)
def test_show_toml_of_every_preset_loads_back_as_the_same_spec(cli, tmp_path, preset):
    """Item 8: ``hardware show dgx-a100 --toml`` and ``ib-hdr --toml`` wrote a [link] table."""
    code, out, err = cli("hardware", "show", preset, "--toml")
    assert code == 0, err
    path = tmp_path / f"{preset}.toml"
    path.write_text(out)
    spec = {**PROCESSORS, **LINKS, **CLUSTER_PRESETS, **NIC_PRESETS}[preset]
    assert load_hardware(path) == spec
    assert loads_hardware(dumps_hardware(spec)) == spec


def test_a_cluster_file_keeps_its_own_size(tmp_path):
    """Item 7: a cluster file's ``nodes = 4`` was ignored (the prediction ran one node)."""
    text = dumps_hardware(CLUSTER_PRESETS["dgx-a100"]).replace("\nnodes = 1\n", "\nnodes = 4\n")
    path = tmp_path / "four.toml"
    path.write_text(text)
    assert load_hardware(path).nodes == 4
    four = parsim.predict("allreduce", {"bytes": 1e9}, cluster=str(path))
    assert four.gpus == 32
    two = parsim.predict("allreduce", {"bytes": 1e9, "nodes": 2}, cluster=str(path))  # nodes= still wins
    assert two.gpus == 16


def test_a_gpu_without_nvlink_refuses_an_nvlink(cli):
    """Item 9: a T4 with an nvlink2 link was accepted (a T4 has no NVLink)."""
    with pytest.raises(ParsimError, match="'link': t4 has no NVLink, so nvlink2 cannot join its GPUs"):
        parsim.predict("data_parallel", {"gpus": 2}, device="t4", link="nvlink2")
    code, _, err = cli("predict", "data_parallel", "gpus=2", "--device", "t4", "--link", "nvlink2")
    assert code == 2 and err.count("\n") == 1
    # a board with NVLink may be given a faster one (a what-if), and any GPU a PCIe link
    assert (
        parsim.predict("data_parallel", {"gpus": 2}, device="v100-sxm2", link="nvlink3").peer_link
        == "nvlink3"
    )
    assert parsim.predict("data_parallel", {"gpus": 2}, device="t4", link="pcie4-x16").link == "pcie4-x16"


def test_numbers_are_ascii_digits(cli):
    """Item 11: ``n=١٠٠٠`` (Arabic-Indic digits) was read as 1000."""
    from parsim.base.units import parse_value

    assert parse_value("١٠٠٠") == "١٠٠٠" and parse_value("1e3") == 1000.0 and parse_value("12") == 12
    code, _, err = cli("predict", "vector_add", "n=١٠٠٠", "--device", "t4")
    assert code == 2 and "'n' input should be a valid integer" in err


def test_control_characters_from_a_file_never_reach_the_terminal(cli, tmp_path):
    code, out, _ = cli("hardware", "show", "t4", "--toml")
    evil = tmp_path / "evil.toml"
    evil.write_text(out.replace('name = "NVIDIA', 'name = "\\u001b[2J NVIDIA', 1))
    code, out, err = cli("predict", "vector_add", "n=10", "--device", str(evil))
    assert code == 2 and "\x1b" not in out + err
    assert "'processor.name' must not contain control characters" in err
    scenario = tmp_path / "evil_scenario.toml"
    scenario.write_text(
        'title = "x\\u001b[2J"\nlesson = "ok"\n[[cases]]\nworkload = "vector_add"\ndevice = "t4"\n'
    )
    code, out, err = cli("run", str(scenario))
    assert code == 2 and "\x1b" not in out + err and "must not contain control characters" in err


def test_a_byte_order_mark_is_not_part_of_the_toml(cli, tmp_path):
    code, out, _ = cli("hardware", "show", "t4", "--toml")
    marked = tmp_path / "bom.toml"
    marked.write_bytes(b"\xef\xbb\xbf" + out.encode())
    assert load_hardware(marked) == PROCESSORS["t4"]
    scenario = tmp_path / "bom_scenario.toml"
    scenario.write_bytes(b"\xef\xbb\xbf" + ('title = "t"\n' + TINY_SCENARIO).encode())
    code, _, err = cli("run", str(scenario), "--json")
    assert code == 0, err


@pytest.mark.parametrize("spec", ["linspace:1:inf:3", "logspace:1:inf:3", "linspace:-inf:1:3"])
def test_an_infinite_end_is_refused_not_warned_about(cli, spec, recwarn):
    from parsim.studies.scenarios import parse_values

    with pytest.raises(ParsimError, match="malformed values"):
        parse_values(spec)
    code, _, err = cli(*SWEEP, f"workload.n={spec}")
    assert code == 2 and "malformed values" in err and "Traceback" not in err
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_a_step_with_a_gpu_per_stage_says_so_instead_of_other_0_gpus():
    params = {"model": "gpt3-1.3b", "pp": 8, "microbatches": 8, "batch": 8, "gpus": 8, "train": True}
    notes = " ".join(parsim.predict("network", params, device="a100-80gb").notes)
    assert "other 0" not in notes and "every GPU of the step is drawn" in notes


LONG = "a" * 300


@pytest.mark.parametrize(
    "args",
    [
        ["predict", "vector_add", "n=10", "--device", f"{LONG}.toml"],
        ["predict", "vector_add", "n=10", "--device", "t4", "--link", f"{LONG}.toml"],
        ["predict", "vector_add", "n=10", "--device", "t4", "--plot", f"{LONG}.png"],
        ["predict", "allreduce", "bytes=1e6", "--cluster", f"{LONG}.toml"],
        [*SWEEP, "workload.n=1e3", "--out", f"{LONG}.csv"],
        ["run", f"{LONG}.toml"],
        ["hardware", "show", f"{LONG}.toml"],
        ["validate", "--load", f"{LONG}.json"],
    ],
)
def test_a_file_name_the_system_refuses_is_one_line(cli, args, tmp_path, monkeypatch):
    """Item 13: 300-character file names raised OSError (File name too long) with a traceback."""
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(*args)
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1, err
    assert "File name too long" in err and "..." in err  # the name is cut to its ends


def test_ctrl_c_says_in_one_line_what_was_kept(cli, monkeypatch, tmp_path):
    """Item 14: Ctrl-C exited 130 with nothing said."""
    import sys

    import parsim.studies.splits
    import parsim.studies.sweeps.api

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(parsim.studies.splits, "split_table", interrupt)
    code, _, err = cli("splits", "model=gpt2", "batch=8")
    assert (code, err) == (
        130,
        "interrupted: a split search keeps nothing until it finishes; nothing was written\n",
    )
    monkeypatch.setattr(parsim.studies.sweeps.api, "execute_plan", interrupt)
    out = tmp_path / "s.csv"
    code, _, err = cli(*SWEEP, "workload.n=1e3", "--out", str(out))
    assert code == 130 and err.splitlines()[-1] == (
        f"interrupted: 0 finished rows are kept in {out}; run the same command again to resume"
    )
    monkeypatch.setattr(sys.modules["parsim.methods.predict"], "predict", interrupt)
    code, _, err = cli("predict", "vector_add", "n=10", "--device", "t4")
    assert (code, err) == (130, "interrupted: nothing was written\n")


@pytest.mark.slow  # seconds: a real split search killed with kill -9
def test_split_workers_exit_when_the_search_is_killed():
    """Item 14: ``splits`` pool workers survived ``kill -9`` of the parent (the sweeps' already exited)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import psutil

    command = [sys.executable, "-m", "parsim", "splits", "model=gpt3-1.3b", "batch=512", "nodes=4"]
    parent = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    process, deadline = psutil.Process(parent.pid), time.monotonic() + 60
    while len([c for c in process.children(recursive=True) if "spawn" in " ".join(c.cmdline())]) < 2:
        assert parent.poll() is None and time.monotonic() < deadline, "the search did not start its workers"
        time.sleep(0.1)
    time.sleep(1.0)  # the workers are past their initializer
    children = process.children(recursive=True)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()

    assert not outliving(children), "workers outlived their search"


class _FakeScheduler:
    """A TCP server on loopback that accepts connections and then stays silent or sends junk; it
    stops by itself (bounded in time)."""

    def __init__(self, reply: bytes | None):
        import socket
        import threading

        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(4)
        self.socket.settimeout(0.2)
        self.address = f"tcp://127.0.0.1:{self.socket.getsockname()[1]}"
        self.reply, self.open, self.stop = reply, [], threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        import time

        deadline = time.monotonic() + 30
        while not self.stop.is_set() and time.monotonic() < deadline:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                continue
            self.open.append(connection)
            if self.reply is not None:
                with contextlib.suppress(OSError):
                    connection.sendall(self.reply)

    def close(self):
        self.stop.set()
        self.thread.join(5)
        for connection in self.open:
            connection.close()
        self.socket.close()


@pytest.mark.slow  # seconds: Dask's import and the timeout itself
@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (None, "within 1 s (something accepted the connection and never replied)"),
        (b"\xff" * 64, "is not a Dask scheduler"),
    ],
)
def test_a_scheduler_that_never_answers_or_answers_junk_is_one_line_in_time(cli, reply, expected):
    """Item 12: --dask-timeout was ignored by a silent peer (17 min); a junk reply raised MemoryError."""
    import time

    pytest.importorskip("distributed")
    server = _FakeScheduler(reply)
    try:
        started = time.monotonic()
        base = [*SWEEP, "workload.n=1e3,1e4"]
        code, _, err = cli(*base, "--dask", server.address, "--dask-timeout", "1")
        elapsed = time.monotonic() - started
    finally:
        server.close()
    assert code == 2 and expected in err and err.count("\n") == 1, err
    assert elapsed < 10


def test_a_local_dask_cluster_has_at_most_a_worker_per_cpu(cli):
    """Item 12: --dask local --workers 50 printed 253 lines of tracebacks."""
    pytest.importorskip("distributed")
    from parsim.measure.cpu import cores

    base = [*SWEEP, "workload.n=1e3,1e4"]
    code, _, err = cli(*base, "--dask", "local", "--workers", str(cores() + 1))
    assert code == 2 and err.count("\n") == 1
    assert f"'--workers' {cores() + 1} is more than the {cores()} CPUs this process may use" in err
