"""The model core type-checks under ``mypy --strict`` (the modules are listed in pyproject.toml)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # mypy needs ~20 s on a cold cache
def test_the_model_core_type_checks_strictly():
    mypy = shutil.which("mypy", path=str(Path(sys.executable).parent)) or shutil.which("mypy")
    if mypy is None:
        pytest.fail("mypy is missing: pip install -e '.[dev]'")
    result = subprocess.run([mypy], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:]
