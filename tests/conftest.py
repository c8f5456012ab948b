"""Fixtures shared by the tests (the tiny systems themselves live in ``tests/systems.py``)."""

from __future__ import annotations

import sys

import pytest
from hypothesis import settings

from parsim.hardware.specs import SystemSpec
from tests.systems import TINY_CPU, TINY_GPU, TINY_LINK

# The same examples on every run: a property test must not turn CI red by chance. Explore new
# examples locally with --hypothesis-seed=random.
settings.register_profile("parsim", derandomize=True)
settings.load_profile("parsim")


@pytest.fixture
def gpu_system() -> SystemSpec:
    return SystemSpec(host=TINY_CPU, device=TINY_GPU, link=TINY_LINK)


@pytest.fixture
def cpu_system() -> SystemSpec:
    return SystemSpec(host=TINY_CPU)


@pytest.fixture
def cli(capsys, monkeypatch):
    """Run the ``parsim`` console entry point in-process: ``cli("predict", ...) -> (code, out, err)``."""
    from parsim.cli.main import main

    def run(*args):
        monkeypatch.setattr(sys, "argv", ["parsim", *args])
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code or 0
        out, err = capsys.readouterr()
        return code, out, err

    return run


def pytest_collection_modifyitems(config, items):
    """GPU tests run only where CuPy reaches a CUDA device; elsewhere they skip, saying why."""
    if not any("gpu" in item.keywords for item in items):
        return
    from parsim.measure.backends import gpu_available

    available, why = gpu_available()
    if available:
        return
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(pytest.mark.skip(reason=why))
