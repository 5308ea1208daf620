"""Shared by the browser tests (tests/e2e/ and the browser tests of the report and the palette):
Debian's Chromium, the dashboard served on a free port, the wait for a script run to end, and the
dashboard's pages opened (plain or from a link), where an element sits and the screenshots the
docs show. Playwright itself is imported by the tests, which skip without it."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import struct
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
SHOTS = ROOT / "out" / "screenshots"
DOC_SHOTS = ROOT / "docs" / "screenshots"  # the screenshots README.md and docs/dashboard.md show
BASELINE = (ROOT / "scenarios" / "baseline.yaml").read_text()


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


def open_app(browser, url: str):
    page = browser.new_page(viewport=VIEW)
    page.goto(url)
    page.get_by_text("Verdict:").wait_for(timeout=120_000)
    settled(page)
    return page


def open_link(browser, url: str, text: str, page=None):
    """The dashboard opened from a link carrying scenario ``text`` (``?s=``), its first run settled:
    in ``page``, or a new page at 1600 × 1000."""
    from costsim.dashboard.sharing import encode_scenario

    page = page if page is not None else browser.new_page(viewport=VIEW)
    page.goto(f"{url}/?s={encode_scenario(text)}")
    page.get_by_text("Verdict:").wait_for(timeout=180_000)
    settled(page)
    return page


def publish(png: bytes, name: str) -> None:
    """Write a viewport screenshot the docs show to docs/screenshots/``name``: whole or not at all
    (a temporary file renamed over the old one), and always the viewport's size, so a stale or
    half-written picture cannot reach the docs."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    assert struct.unpack(">II", png[16:24]) == (VIEW["width"], VIEW["height"])
    DOC_SHOTS.mkdir(parents=True, exist_ok=True)
    tmp = DOC_SHOTS / f".{name}.{os.getpid()}.tmp"
    tmp.write_bytes(png)
    os.replace(tmp, DOC_SHOTS / name)


def in_view(page, locator) -> bool:
    box = locator.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= VIEW["height"]
