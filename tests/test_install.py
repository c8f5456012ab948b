"""parsim installed as users install it — ``pip install .``, not editable — still has its lessons.

An editable install reads the source tree, so it cannot notice a data file that a wheel leaves
out. This test copies the package's sources to a temporary folder (so the build writes nothing
into the checkout), installs them without ``-e`` into a fresh virtual environment that sees
the test environment's dependencies through a ``.pth`` line (no download of numpy & co.), and
from an empty working directory runs ``parsim run flynn_vector_add`` and opens every lesson the
way the Learn page does. ``.ci/run``'s ``pytest`` runs it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

OPEN_EVERY_LESSON = """
import parsim
from parsim.app.cache import scenario_folder
from parsim.studies.scenarios import load_scenario, run_scenario, scenario_paths

paths = scenario_paths(scenario_folder())  # what the Learn page lists and opens
assert parsim.__file__.startswith(sys.prefix), parsim.__file__
for path in paths:
    result = run_scenario(load_scenario(path))
    assert result.results, path
print(len(paths), "lessons", parsim.__file__)
"""


def _builds_offline() -> bool:
    """Whether this environment's setuptools can build the wheel itself (>= 70.1 has bdist_wheel);
    otherwise pip fetches the build backend into an isolated build environment."""
    try:
        import setuptools
    except ImportError:
        return False
    major, minor = (int(part) for part in setuptools.__version__.split(".")[:2])
    return (major, minor) >= (70, 1)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh virtual environment with parsim installed from a copy of the sources (not -e)."""
    work = tmp_path_factory.mktemp("install")
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "parsim", source / "parsim", ignore=shutil.ignore_patterns("__pycache__"))
    env = work / "venv"
    venv.create(env, with_pip=False)
    python = env / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    deps = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    (site / "_parsim_test_deps.pth").write_text("\n".join(deps) + "\n")  # numpy & co. from here
    command = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--quiet"]
    if _builds_offline():
        command.append("--no-build-isolation")
    built = subprocess.run([*command, str(source)], capture_output=True, text=True, cwd=work, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    return env


@pytest.mark.slow
def test_a_non_editable_install_runs_a_lesson_by_name(installed, tmp_path):
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    run = subprocess.run(
        [installed / "bin" / "parsim", "run", "flynn_vector_add", "--no-lesson"],
        capture_output=True,
        text=True,
        cwd=empty,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "SISD" in run.stdout and "SIMT" in run.stdout
    wrong = subprocess.run(
        [installed / "bin" / "parsim", "run", "flyn_vector_add"], capture_output=True, text=True, cwd=empty
    )
    assert wrong.returncode == 2 and "did you mean flynn_vector_add?" in wrong.stderr


@pytest.mark.slow
def test_a_non_editable_install_opens_every_lesson(installed, tmp_path):
    opened = subprocess.run(
        [installed / "bin" / "python", "-c", "import sys\n" + OPEN_EVERY_LESSON],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert opened.returncode == 0, opened.stderr[-3000:]
    count = len(list((ROOT / "parsim" / "lessons").glob("*.toml")))
    assert opened.stdout.startswith(f"{count} lessons {installed}")
