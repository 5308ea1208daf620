"""Shared by the browser tests (tests/e2e/ and the browser tests of the report and the palette):
Debian's Chromium, the dashboard served on a free port, and the wait for a script run to end.
Playwright itself is imported by the tests, which skip without it."""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from paths import ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
VIEW = {"width": 1600, "height": 1000}


@contextlib.contextmanager
def served(env: dict[str, str] | None = None):
    """``streamlit run app.py`` on a free local port, until the block ends: its URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("streamlit did not start")
        yield url
    finally:
        proc.terminate()
        proc.wait(20)


def settled(page, timeout: float = 120_000) -> None:
    """Wait until the script has run to the end (Streamlit marks the app notRunning)."""
    page.wait_for_timeout(200)
    page.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for(timeout=timeout)


def launched_chromium():
    """Debian's Chromium, headless, launched by Playwright (the test skipped without it): a
    generator for a fixture to ``yield from``, closing the browser after its last test."""
    if CHROMIUM is None:
        pytest.skip("Debian chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield browser
        browser.close()
