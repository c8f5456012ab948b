"""A parsim app server and a headless Chromium for the real-browser tests (Debian's package,
driven by Playwright; Playwright's own browser download is not used)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def serving(command: list[str], cwd: Path, env: dict | None = None):
    """Run ``command`` (a Streamlit server; ``{port}`` is filled in) until it answers its health check.

    It has no standard input, as under CI or a service manager; ``env`` adds to the environment.
    """
    port = free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    process = subprocess.Popen(
        [part.format(port=port) for part in command],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline, healthy = time.monotonic() + 90, False
    while not healthy and process.poll() is None and time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as answer:
                healthy = answer.read().strip() == b"ok"
        except OSError:
            time.sleep(0.5)
    if not healthy:
        process.kill()
        raise RuntimeError(f"streamlit did not become healthy: {process.stdout.read().decode()[-2000:]}")
    try:
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


def open_page(browser, url: str, width: int = 1400, height: int = 1000):
    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(url, wait_until="domcontentloaded", timeout=60_000)
    page.wait_for_selector("[data-testid='stAppViewContainer']", timeout=60_000)
    page.wait_for_selector("h1", timeout=60_000)
    wait_idle(page)
    return page


def wait_idle(page, timeout_s: float = 90) -> None:
    """Wait until Streamlit has finished the script run (no 'running' status widget)."""
    deadline = time.monotonic() + timeout_s
    time.sleep(0.5)
    while time.monotonic() < deadline:
        if page.locator("[data-testid='stStatusWidget']").count() == 0:
            return
        time.sleep(0.3)


def no_exception(page) -> None:
    assert page.locator("[data-testid='stException']").count() == 0, page.locator(
        "[data-testid='stException']"
    ).first.inner_text()


def shot(page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
