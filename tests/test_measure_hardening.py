"""Issue 12: the measuring commands refuse mistakes before they wait or measure, say when they
wait (and for whom), keep the lock in a folder of the user's own, check output paths first, and read any
JSON file back without a traceback."""

from __future__ import annotations

import copy
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parsim.base.errors import ParsimError, ParsimNote
from parsim.hardware.tomlio import save_hardware
from parsim.measure import Measurement, jsonfiles, lock, run
from parsim.measure.calibrate import describe
from parsim.studies import validate as validation
from tests.systems import TINY_CPU, TINY_GPU, TINY_LINK

ROOT = Path(__file__).resolve().parents[1]
HOLDER = """
import sys, time
from pathlib import Path
from parsim.measure.lock import measurement_lock

with measurement_lock(timeout_s=30, path=Path(sys.argv[1])):
    print("held", flush=True)
    if sys.argv[2] == "stdin":
        sys.stdin.read()  # until the test closes it
    else:
        time.sleep(float(sys.argv[2]))
"""
FAST = ["--mode", "simd", "--budget", "0.01"]


@pytest.fixture
def lock_path(tmp_path, monkeypatch) -> Path:
    """A lock of this test's own: the machine's real one is left to the other tests."""
    path = tmp_path / "measure.lock"
    monkeypatch.setattr(lock, "LOCK_PATH", path)
    return path


@pytest.fixture
def holder(lock_path):
    """Start another process that holds the lock: ``holder()`` until the test ends, ``holder(1.0)``
    for one second. Returns the process once it holds the lock."""
    started = []

    def start(hold: float | None = None) -> subprocess.Popen:
        process = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(lock_path), "stdin" if hold is None else str(hold)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        started.append(process)
        assert process.stdout.readline().strip() == "held"
        return process

    yield start
    for process in started:
        process.stdin.close()
        process.wait(timeout=30)


def one_error_line(err: str) -> str:
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    return errors[0]


# --- 1. the lock --------------------------------------------------------------------------------


def test_a_wait_is_announced_once_with_the_holder_and_gives_up_in_one_line(cli, holder):
    other = holder()
    code, out, err = cli("measure", "vector_add", "n=1e4", *FAST, "--lock-timeout", "0.3")
    assert code == 2 and out == ""
    assert err.count("waiting for another measurement on this machine") == 1
    assert f"note: waiting for another measurement on this machine (pid {other.pid})" in err
    error = one_error_line(err)
    assert f"(pid {other.pid}) still holds" in error and "after a wait of 0.3 s" in error
    assert err.strip().splitlines() == [err.strip().splitlines()[0], error]  # the note, then the error


@pytest.mark.slow
def test_a_measurement_waits_for_the_other_then_runs(cli, holder):
    other = holder(1.0)
    started = time.monotonic()
    code, out, err = cli("measure", "vector_add", "n=1e4", *FAST, "--lock-timeout", "30", "--json")
    assert code == 0, err
    assert json.loads(out)["median_s"] > 0
    assert err.count(f"waiting for another measurement on this machine (pid {other.pid})") == 1
    assert time.monotonic() - started > 0.5  # it really waited for the holder


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["vector_add", "n=1e7", "--mode", "sisd"], "sisd runs a Python loop"),
        (["matmul", "m=200", "n=200", "k=200", "--mode", "sisd"], "sisd runs a Python loop"),
        (["conv2d", "--mode", "sisd"], "sisd (a Python loop) is implemented for"),
        (["mlp_train_step", "--mode", "mimd"], "simd or mimd+simd"),
        (["vector_add", "n=-1"], "'n'"),
        (["copy", "n=10"], "needs the cupy backend"),
        (["vector_add", "n=10", "dtype=bfloat16"], "NumPy has no bfloat16"),
        (["vector_add", "n=1e6", "--mode", "simd"], "more than half of the"),
    ],
)
def test_refusals_come_before_the_lock(cli, holder, monkeypatch, args, expected):
    from parsim.measure import backends

    monkeypatch.setattr(backends, "host_free_memory_B", lambda: 1e6)  # 1 MB free: n=1e6 is refused
    holder()
    code, _, err = cli("measure", *args, "--lock-timeout", "60")
    assert code == 2 and expected in one_error_line(err)
    assert "waiting" not in err  # refused before the lock: never queued behind its holder


@pytest.mark.slow
def test_calibrate_and_validate_wait_for_the_lock_too(cli, holder, tmp_path):
    other = holder()
    target = tmp_path / "me.toml"
    code, _, err = cli("calibrate", "--quick", "--no-gpu", "--out", str(target), "--lock-timeout", "0.2")
    assert code == 2 and f"(pid {other.pid}) still holds" in one_error_line(err)
    assert f"waiting for another measurement on this machine (pid {other.pid})" in err
    assert not target.exists()
    device = calibrated(tmp_path)
    code, _, err = cli("validate", "--device", str(device), "--lock-timeout", "0.2")
    assert code == 2 and f"(pid {other.pid}) still holds" in one_error_line(err)


@pytest.mark.slow
def test_the_library_warns_when_it_waits(holder, lock_path):
    other = holder()
    with (
        pytest.warns(ParsimNote, match=f"pid {other.pid}"),
        pytest.raises(ParsimError, match="still holds"),
        lock.measurement_lock(timeout_s=0.2),
    ):
        pass
    told = []
    with pytest.raises(ParsimError), lock.measurement_lock(timeout_s=0.2, on_wait=told.append):
        pass
    assert told == [lock.waiting_message(other.pid, 0.2)]


def test_the_holder_names_itself_beside_the_lock(lock_path):
    with lock.measurement_lock(timeout_s=1):
        assert lock.pid_path(lock_path).read_text().strip() == str(os.getpid())
        assert lock.holder_pid(lock_path) == os.getpid()
    assert not lock.pid_path(lock_path).exists()  # the holder's name goes with its hold
    assert lock.holder_pid(lock_path) is None


def test_the_lock_lives_in_a_folder_of_this_users_own(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    (tmp_path / "run").mkdir(mode=0o700)
    folder = lock.private_directory()
    assert folder == tmp_path / "run" / "parsim" and lock.lock_path() == folder / lock.LOCK_NAME
    info = folder.lstat()
    assert stat.S_ISDIR(info.st_mode) and stat.S_IMODE(info.st_mode) & 0o077 == 0
    assert info.st_uid == os.getuid()


def test_a_link_planted_for_the_private_folder_is_not_followed(tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "parsim").symlink_to(elsewhere)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert lock.private_directory() == tmp_path / "cache" / "parsim"  # the next candidate, not the link
    assert list(elsewhere.iterdir()) == []


def test_a_link_planted_at_the_lock_changes_nothing_it_points_to(lock_path, tmp_path):
    """Regression: the lock was chmod 0666'd, so a link planted at its path made any file of the
    user's world-writable."""
    precious = tmp_path / "precious"
    precious.write_text("secret")
    precious.chmod(0o600)
    lock_path.symlink_to(precious)
    with pytest.raises(ParsimError, match="symbolic link") as info, lock.measurement_lock(timeout_s=1):
        pass
    assert "\n" not in str(info.value)
    assert stat.S_IMODE(precious.stat().st_mode) == 0o600 and precious.read_text() == "secret"


def test_a_link_planted_at_the_pid_file_is_not_written_through(lock_path, tmp_path):
    precious = tmp_path / "precious"
    precious.write_text("secret")
    lock.pid_path(lock_path).symlink_to(precious)
    with lock.measurement_lock(timeout_s=1):
        pass
    assert precious.read_text() == "secret"


def test_parsim_never_chmods_a_lock_file(lock_path):
    lock_path.write_text("")
    lock_path.chmod(0o600)
    with lock.measurement_lock(timeout_s=1):
        assert stat.S_IMODE(lock_path.stat().st_mode) == 0o600


def test_a_stale_pid_file_names_no_one(lock_path):
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    lock.pid_path(lock_path).write_text(finished.stdout.decode())
    assert lock.holder_pid(lock_path) is None
    lock.pid_path(lock_path).write_text("not a pid")
    assert lock.holder_pid(lock_path) is None


def test_a_lock_file_that_cannot_be_opened_is_one_line_naming_it(lock_path, monkeypatch):
    def refuse(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(lock_path))

    monkeypatch.setattr(lock.filelock.FileLock, "acquire", refuse)
    lock_path.write_text("")  # another user's, say
    with pytest.raises(ParsimError) as info, lock.measurement_lock(timeout_s=1):
        pass
    message = str(info.value)
    assert (
        message
        == f"cannot use the measurement lock {lock_path} (Permission denied): remove it or give another path"
    )


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root may write anywhere")
def test_a_lock_that_cannot_be_created_is_one_line(lock_path):
    lock_path.parent.chmod(0o500)
    try:
        with pytest.raises(ParsimError) as info, lock.measurement_lock(1):
            pass
    finally:
        lock_path.parent.chmod(0o700)
    assert str(info.value).startswith(f"cannot create the measurement lock {lock_path} (Permission denied)")


@pytest.mark.parametrize("timeout", [-1, float("nan"), "10", True])
def test_bad_lock_timeouts(timeout, lock_path):
    with pytest.raises(ParsimError, match="'lock_timeout_s' must be"), lock.measurement_lock(timeout):
        pass
    with pytest.raises(ParsimError, match="'lock_timeout_s' must be"):
        run.measure("vector_add", {"n": 10}, lock_timeout_s=timeout)


@pytest.mark.parametrize("budget", [0, -1, float("inf"), float("nan")])
def test_bad_budgets(budget):
    with pytest.raises(ParsimError, match="'budget_s' must be"):
        run.measure("vector_add", {"n": 10}, budget_s=budget)


# --- 2. validate takes this machine's calibrated file only -------------------------------------


def calibrated(folder: Path, spec=TINY_CPU, name: str | None = None, **meta) -> Path:
    """A hardware file as ``parsim calibrate`` writes it here (``meta`` overrides its [meta])."""
    kind = "cpu" if spec is TINY_CPU else "gpu"
    table = {**describe({"dispatch_s": 1e-6}, quick=True, kind=kind), **meta}
    return save_hardware(spec, folder / (name or f"{spec.id}.toml"), table)


@pytest.fixture
def no_validation(monkeypatch):
    """``validation.validate`` replaced: a test of refusals must never start measuring."""
    calls = []

    def fake(cpu_spec, gpu_specs=None, **kwargs):
        calls.append({"gpu_specs": gpu_specs, **kwargs})
        point = validation.Point("vector_add", {"n": 1000}, "numpy", "simd", 2e-6, 1e-6, 3e-6, 2.2e-6)
        return validation.report([point], cpu_spec)

    monkeypatch.setattr(validation, "validate", fake)
    return calls


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda tmp: "h100-sxm", "not 'h100-sxm' (a preset"),
        (lambda tmp: "xeon-e5-2630v3", "not 'xeon-e5-2630v3' (a preset"),
        (lambda tmp: "me.json", "must be the CPU file parsim calibrate wrote on this machine"),
        (lambda tmp: calibrated(tmp, TINY_GPU), "describes a gpu, not this machine's CPU"),
        (lambda tmp: save_hardware(TINY_CPU, tmp / "plain.toml"), "it has no [meta] source"),
        (
            lambda tmp: calibrated(tmp, source="parsim calibrate (GPU)"),
            "its [meta] source is 'parsim calibrate (GPU)'",
        ),
        (
            lambda tmp: calibrated(tmp, host="elsewhere", cpu_model="Some Other CPU"),
            "was calibrated on 'elsewhere' (Some Other CPU), not on this machine",
        ),
        (lambda tmp: tmp / "missing.toml", "no such hardware file"),
    ],
)
def test_validate_refuses_anything_but_this_machines_file(cli, tmp_path, no_validation, make, expected):
    code, _, err = cli("validate", "--device", str(make(tmp_path)))
    assert code == 2 and expected in one_error_line(err), err
    assert no_validation == []  # refused before any measurement ran


def test_validate_accepts_this_machines_file_even_under_another_host_name(cli, tmp_path, no_validation):
    for device in (calibrated(tmp_path), calibrated(tmp_path, name="moved.toml", host="old-container")):
        code, out, err = cli("validate", "--device", str(device), "--lock-timeout", "7")
        assert code == 0, err
        assert "overall" in out
    assert [call["lock_timeout_s"] for call in no_validation] == [7.0, 7.0]


@pytest.mark.parametrize(
    ("option", "make", "expected"),
    [
        ("--gpu-device", lambda tmp: "h100-sxm", "'--gpu-device' must be the GPU file"),
        ("--gpu-device", lambda tmp: calibrated(tmp), "describes a cpu, not this machine's GPU"),
        ("--gpu-link", lambda tmp: "pcie4-x16", "'--gpu-link' must be the host-device link file"),
        (
            "--gpu-link",
            lambda tmp: save_hardware(TINY_LINK, tmp / "link.toml"),
            "'--gpu-link': " + "{tmp}/link.toml was not written by parsim calibrate",
        ),
    ],
)
def test_validate_refuses_gpu_files_not_calibrated_here(
    cli, tmp_path, monkeypatch, no_validation, option, make, expected
):
    from parsim.measure import backends

    monkeypatch.setattr(backends, "gpu_available", lambda: (True, ""))  # as on a machine with one
    gpu = calibrated(tmp_path, TINY_GPU)
    link = save_hardware(TINY_LINK, tmp_path / "tiny-link.toml", describe({}, True, kind="gpu"))
    files = {"--gpu-device": str(gpu), "--gpu-link": str(link), option: str(make(tmp_path))}
    code, _, err = cli(
        "validate", "--device", str(calibrated(tmp_path)), *[x for kv in files.items() for x in kv]
    )
    assert code == 2 and expected.format(tmp=tmp_path) in one_error_line(err), err
    assert no_validation == []


def test_validate_accepts_gpu_files_calibrated_here(cli, tmp_path, monkeypatch, no_validation):
    from parsim.measure import backends

    monkeypatch.setattr(backends, "gpu_available", lambda: (True, ""))
    gpu = calibrated(tmp_path, TINY_GPU)
    link = save_hardware(TINY_LINK, tmp_path / "tiny-link.toml", describe({}, True, kind="gpu"))
    cpu = calibrated(tmp_path)
    code, _, err = cli("validate", "--device", str(cpu), "--gpu-device", str(gpu), "--gpu-link", str(link))
    assert code == 0, err
    assert no_validation[0]["gpu_specs"] == {"device": TINY_GPU, "host": TINY_CPU, "link": TINY_LINK}


def test_validate_refuses_a_gpu_spec_as_the_cpu_in_the_library():
    with pytest.raises(ParsimError, match="'cpu_spec' must be the calibrated spec of this machine's CPU"):
        validation.validate(TINY_GPU)


# --- 3. output paths are checked before any work --------------------------------------------------


@pytest.fixture
def nothing_runs(monkeypatch):
    """Measuring and calibrating replaced by tripwires."""
    import parsim.measure
    import parsim.measure.calibrate

    def tripwire(*args, **kwargs):
        raise AssertionError("measured before the output path was checked")

    monkeypatch.setattr(parsim.measure, "measure", tripwire)
    monkeypatch.setattr(parsim.measure.calibrate, "calibrate", tripwire)
    monkeypatch.setattr(validation, "validate", tripwire)


@pytest.mark.parametrize(
    ("command", "out", "expected"),
    [
        ("calibrate", "/proc/c.toml", "'--out': cannot write in '/proc'"),
        ("measure", "/proc/m.json", "'--out': cannot write in '/proc'"),
        ("validate", "/proc/r.json", "'--out': cannot write in '/proc'"),
        ("calibrate", "{tmp}/no-such-folder/c.toml", "does not exist"),
        ("measure", "{tmp}/folder.json", "is a folder, not a file"),
        ("validate", "{tmp}/r.txt", "must end in .json"),
        ("calibrate", "{tmp}/me.yaml", "must end in .toml"),
        ("calibrate", "{tmp}/clash.toml", "'--out (its -gpu.toml)'"),
    ],
)
def test_output_paths_are_checked_first(cli, tmp_path, nothing_runs, command, out, expected):
    if out.startswith("/proc") and not Path("/proc").is_dir():
        pytest.skip("/proc is Linux's")
    (tmp_path / "folder.json").mkdir()
    (tmp_path / "clash-gpu.toml").mkdir()  # calibrate writes its GPU file there
    args = {
        "calibrate": ["calibrate", "--quick"],
        "measure": ["measure", "vector_add", "n=10"],
        "validate": ["validate", "--device", str(calibrated(tmp_path))],
    }[command]
    code, _, err = cli(*args, "--out", out.format(tmp=tmp_path))
    assert code == 2 and expected in one_error_line(err), err


def test_a_write_that_fails_after_measuring_is_one_line(cli, tmp_path, monkeypatch):
    import io

    from parsim.base import safefiles

    class Full(io.StringIO):
        def write(self, text):
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(safefiles, "create_new", lambda path, binary=False, option="": Full())
    code, _, err = cli("measure", "vector_add", "n=1e3", *FAST, "--out", str(tmp_path / "m.json"))
    assert code == 2 and "No space left on device" in one_error_line(err) and "m.json" in err


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root may write any file")
def test_an_existing_read_only_output_is_refused_first(cli, tmp_path, nothing_runs):
    target = tmp_path / "m.json"
    target.write_text("{}")
    target.chmod(0o444)
    code, _, err = cli("measure", "vector_add", "n=10", "--out", str(target))
    assert code == 2 and "exists and is not writable" in one_error_line(err)


# --- 4 and 5. reading reports and measurements back ---------------------------------------------


def good_report() -> dict:
    rows = [
        validation.Point("vector_add", {"n": 1000}, "numpy", "simd", 2e-6, 1e-6, 3e-6, 2.2e-6),
        validation.Point("matmul", {"m": 64, "n": 64, "k": 64}, "numpy", "sisd", 3e-3, 2e-3, 4e-3, 2.5e-3),
    ]
    return json.loads(json.dumps(validation.report(rows, TINY_CPU)))


def good_measurement() -> dict:
    return Measurement(
        "vector_add",
        {"n": 1000, "dtype": "float32", "fused": False},
        "numpy",
        "simd",
        "cpu",
        2e-6,
        1e-6,
        3e-6,
        9,
    ).to_dict()


def with_change(base: dict, change) -> bytes:
    data = copy.deepcopy(base)
    change(data)
    return json.dumps(data).encode()


BAD_REPORTS = [
    (
        b'{"schema":"parsim.validation/1","rows":5}',
        "not a valid parsim validation report: 'rows' must be an array: 5",
    ),
    (None, "cannot read a validation report: it is a folder, not a file"),
    (b"\xff\xfe\x00{", "not UTF-8 text"),
    (b"[" * 100_000 + b"]" * 100_000, "JSON nested too deeply"),
    (b"[" * 40 + b"]" * 40, "JSON nested more than 32 deep"),
    (b"{", "cannot read a validation report: not JSON (Expecting property name"),
    (b"", "not JSON"),
    (b"1" * 5000, "not JSON"),
    (b"null", "not a parsim validation report (a JSON null, expected an object)"),
    (b'{"schema": "nope"}', "not a parsim validation report (schema 'nope'"),
    (json.dumps(good_measurement()).encode(), "it is a measurement"),
    (with_change(good_report(), lambda d: d["rows"][0].pop("measured_s")), "missing 'rows[0].measured_s'"),
    (
        with_change(good_report(), lambda d: d["rows"][1].update(measured_s=float("nan"))),
        "'rows[1].measured_s' must be a finite number > 0: nan",
    ),
    (
        with_change(good_report(), lambda d: d["rows"][0].update(params={"n": "big"})),
        "'rows[0].params.n' must be a finite number > 0: 'big'",
    ),
    (
        with_change(good_report(), lambda d: d["rows"][1]["params"].update(k=None)),
        "'rows[1].params.k' must be a finite number > 0: None",
    ),
    (with_change(good_report(), lambda d: d["rows"].append([])), "'rows[2]' must be an object: a JSON array"),
    (with_change(good_report(), lambda d: d.update(classes=[])), "'classes' must be an object: []"),
    (
        with_change(good_report(), lambda d: d["overall"].update(spearman=2)),
        "'overall.spearman' must be a finite number >= -1 and <= 1: 2",
    ),
    (with_change(good_report(), lambda d: d["targets"].pop("large_s")), "missing 'targets.large_s'"),
    (with_change(good_report(), lambda d: d.update(device=7)), "'device' must be text: 7"),
]


@pytest.mark.parametrize(("content", "expected"), BAD_REPORTS)
def test_validate_load_refuses_bad_files_in_one_line(cli, tmp_path, content, expected):
    path = tmp_path / "report.json"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    code, out, err = cli("validate", "--load", str(path))
    line = one_error_line(err)
    assert code == 2 and out == "" and expected in line and str(path) in line, err
    with pytest.raises(ParsimError) as info:
        validation.load_report(path)
    assert str(info.value) == line.removeprefix("error: ")


def test_a_missing_file_says_so(cli, tmp_path):
    code, _, err = cli("validate", "--load", str(tmp_path / "none.json"))
    assert code == 2 and "cannot read a validation report: no such file" in one_error_line(err)


def test_a_good_report_loads_and_shows(cli, tmp_path):
    path = validation.save_report(good_report(), tmp_path / "r.json")
    assert validation.load_report(path) == good_report()
    code, out, _ = cli("validate", "--load", str(path))
    assert code == 0 and "matmul (numpy, sisd)" in out and "64x64x64" in out


BAD_MEASUREMENTS = [
    (lambda d: d.pop("median_s"), "missing 'median_s'"),
    (lambda d: d.update(median_s=-1.0), "'median_s' must be a finite number > 0: -1.0"),
    (lambda d: d.update(repeats=0), "'repeats' must be a whole number >= 1: 0"),
    (lambda d: d.update(repeats=True), "'repeats' must be a whole number: True"),
    (lambda d: d.update(backend="tpu"), "'backend' must be one of numpy, cupy: 'tpu'"),
    (lambda d: d.update(mode="vliw"), "'mode' must be one of"),
    (lambda d: d.update(params=[1]), "'params' must be an object: [1]"),
    (lambda d: d["params"].update(n={"deep": 1}), "'params.n' must be a number, text, true/false or null"),
    (lambda d: d.update(stages={"h2d": "fast"}), "'stages.h2d' must be a finite number >= 0: 'fast'"),
    (lambda d: d.update(predicted_s=0), "'predicted_s' must be a finite number > 0: 0"),
    (lambda d: d.update(p75_s=float("inf")), "'p75_s' must be a finite number >= 0: inf"),
]


@pytest.mark.parametrize(("change", "expected"), BAD_MEASUREMENTS)
def test_bad_measurement_files(tmp_path, change, expected):
    path = tmp_path / "m.json"
    path.write_bytes(with_change(good_measurement(), change))
    with pytest.raises(ParsimError) as info:
        run.load_measurement(path)
    message = str(info.value)
    assert message.startswith(f"{path}: not a valid parsim measurement: ") and expected in message
    assert "\n" not in message


def test_measurement_files_round_trip_and_other_documents_are_refused(tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps(good_measurement()))
    assert run.load_measurement(path) == Measurement.from_dict(good_measurement())
    with pytest.raises(ParsimError, match="it is a folder, not a file"):
        run.load_measurement(tmp_path)
    path.write_text(json.dumps(good_report()))
    with pytest.raises(ParsimError, match=r"m.json: not a parsim measurement \(schema 'parsim.validation/1'"):
        run.load_measurement(path)
    with pytest.raises(ParsimError, match="not a parsim measurement"):
        Measurement.from_dict({"schema": "other"})
    with pytest.raises(ParsimError, match="a JSON array, expected an object"):
        run.check_measurement([good_measurement()], "upload.json")


def test_parse_json_for_uploads():
    assert jsonfiles.parse_json(b"\xef\xbb\xbf{}", "u.json", "report") == {}  # a byte-order mark is fine
    with pytest.raises(ParsimError, match=r"^u.json: cannot read a report: JSON nested too deeply$"):
        jsonfiles.parse_json("[" * 100_000, "u.json", "report")


# --- the loaders against arbitrary documents ----------------------------------------------------

KEYS = sorted(
    {
        *good_report(),
        *good_report()["rows"][0],
        *good_report()["overall"],
        *good_report()["targets"],
        *good_measurement(),
        "m",
        "n",
        "k",
        "predicted_s",
        "h2d",
    }
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8)
    | st.sampled_from([validation.SCHEMA, run.SCHEMA, "numpy", "cupy", "simd", "sisd", 1e-6, 0, -1])
)
DOCUMENTS = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=4), children, max_size=6)
    ),
    max_leaves=12,
)


@st.composite
def mutated(draw, base: dict):
    """``base`` with one to three places replaced by an arbitrary document or deleted."""
    document = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        node = document
        while isinstance(node, dict | list) and node:
            key = draw(st.sampled_from(list(node) if isinstance(node, dict) else range(len(node))))
            child = node[key]
            if isinstance(child, dict | list) and child and draw(st.booleans()):
                node = child
                continue
            if draw(st.booleans()):
                del node[key]
            else:
                node[key] = draw(DOCUMENTS)
            break
    return document


KEPT = {"schema", "backend", "mode"}  # fields whose text is one of a few: varied() keeps them


def varied(base: object, key: str = "") -> st.SearchStrategy:
    """Documents shaped like ``base`` with other values in every place, most still valid: numbers
    anywhere in (0, 1] (inside every bound a report or measurement sets), any text, extra keys."""
    if isinstance(base, bool) or key in KEPT:
        return st.just(base)
    if isinstance(base, int):
        return st.integers(min_value=1, max_value=10**12)
    if isinstance(base, float) or base is None:
        numbers = st.floats(min_value=0.0, max_value=1.0, exclude_min=True)
        return numbers if base is not None else numbers | st.none()
    if isinstance(base, str):
        return st.text(min_size=1, max_size=12)
    if isinstance(base, list):
        return st.tuples(*(varied(item) for item in base)).map(list)
    fields = {name: varied(value, name) for name, value in base.items()}
    return st.fixed_dictionaries(fields, optional={"extra": DOCUMENTS})


def loads_or_refuses(document: object) -> None:
    """Each loader either accepts ``document`` (and then everything downstream works) or raises a
    one-line ``ParsimError``; nothing else may escape."""
    from parsim.report.text import validation_text

    try:
        data = jsonfiles.parse_json(json.dumps(document), "fuzz.json", "report")
    except ParsimError as exc:
        assert "\n" not in str(exc)
        return
    try:
        report = validation.check_report(data, "fuzz.json")
        text = validation_text(report)
        assert "overall" in text
    except ParsimError as exc:
        assert "\n" not in str(exc)
    try:
        measurement = Measurement.from_dict(data, "fuzz.json")
        assert measurement.median_s > 0
    except ParsimError as exc:
        assert "\n" not in str(exc)


SETTINGS = settings(max_examples=5000, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.mark.slow  # with the next test: 10,000 documents, under a minute
@SETTINGS
@given(
    st.one_of(
        DOCUMENTS,
        st.dictionaries(st.sampled_from(KEYS), DOCUMENTS, max_size=8).map(
            lambda d: {**d, "schema": validation.SCHEMA}
        ),
        mutated(good_report()),
        varied(good_report()),
    )
)
def test_fuzz_report_loader(document):
    loads_or_refuses(document)


@pytest.mark.slow
@SETTINGS
@given(
    st.one_of(
        st.dictionaries(st.sampled_from(KEYS), DOCUMENTS, max_size=8).map(
            lambda d: {**d, "schema": run.SCHEMA}
        ),
        mutated(good_measurement()),
        varied(good_measurement()),
    )
)
def test_fuzz_measurement_loader(document):
    loads_or_refuses(document)


def test_validate_reads_a_calibrated_file_once_and_never_by_name_again(
    cli, tmp_path, monkeypatch, no_validation
):
    """The spec and its [meta] come from one read through safefiles (no link followed): reading the
    name a second time would follow a link planted there in between."""
    import pathlib

    from parsim.base import safefiles

    device = calibrated(tmp_path)
    reads = []
    read_text = safefiles.read_text

    def counted(path, *args, **kwargs):
        reads.append(str(path))
        return read_text(path, *args, **kwargs)

    def refused(self, *args, **kwargs):
        raise AssertionError(f"{self} read by name, not through safefiles")

    monkeypatch.setattr(safefiles, "read_text", counted)
    monkeypatch.setattr(pathlib.Path, "read_bytes", refused)
    monkeypatch.setattr(pathlib.Path, "read_text", refused)
    code, out, err = cli("validate", "--device", str(device))
    assert code == 0, err
    assert reads.count(str(device)) == 1


def test_validate_load_refuses_a_link_to_a_good_report(cli, tmp_path):
    """A report handed to parsim is read by its name alone: a link to a good one is refused, not followed."""
    good = validation.save_report(good_report(), tmp_path / "r.json")
    link = tmp_path / "link.json"
    link.symlink_to(good)
    code, out, err = cli("validate", "--load", str(link))
    line = one_error_line(err)
    expected = f"{link}: cannot read a validation report: a symbolic link"
    assert code == 2 and out == "" and expected in line, err


def test_validate_load_refuses_a_fifo_without_hanging(tmp_path):
    """A regression guard for read_json's own open (O_NONBLOCK, the mode checked on the descriptor):
    the old code refused a FIFO too, by a check on the name before opening it."""
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    with pytest.raises(ParsimError, match="cannot read a validation report: not a regular file"):
        validation.load_report(fifo)
