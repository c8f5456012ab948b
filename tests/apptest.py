"""Starting the app in Streamlit's AppTest on one page (shared by the app's test files)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
VIEWS = ROOT / "parsim" / "app" / "views"
UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def app(page: str = "explore", query: dict | None = None) -> AppTest:
    """The app opened on ``page`` (a script name in ``views/``), with ``query`` as URL parameters."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for name, value in (query or {}).items():
        at.query_params[name] = value
    at.run()
    if page != "home":
        at.switch_page(str(VIEWS / f"{page}.py")).run()
    assert not at.exception, at.exception[0].value
    return at


def seconds(text: str) -> float:
    """A duration as parsim prints it ("1.2 ms") in seconds."""
    value, unit = text.split()
    return float(value) * UNIT[unit]
