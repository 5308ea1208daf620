"""Browser smoke tests: the real dashboard in Debian's Chromium, driven by Playwright.

AppTest covers the wiring; this covers what only a browser does: the page renders, the Plotly
figures draw, and a file chosen in the uploader reaches the app. Skipped where no chromium is
installed (CI installs it: see .ci/run).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def app_url():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("streamlit did not start")
        yield url
    finally:
        proc.terminate()
        proc.wait(20)


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("Debian chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


def wait_for_run(page):
    page.wait_for_timeout(300)
    page.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for(timeout=90_000)


def test_dashboard_renders_baseline_with_figures(browser, app_url, tmp_path):
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    page.goto(app_url)
    page.get_by_text("Verdict:").wait_for(timeout=90_000)
    wait_for_run(page)
    assert page.get_by_test_id("stMetric").count() >= 15
    page.locator(".js-plotly-plot").first.wait_for(timeout=30_000)
    # Long series draw with WebGL: count the legend entries of the drawn figures instead of SVG paths.
    page.locator(".js-plotly-plot .legend .traces").nth(2).wait_for(timeout=30_000)
    assert page.locator(".js-plotly-plot .legend .traces").count() >= 3
    page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)
    assert page.get_by_test_id("stException").count() == 0


def test_bad_upload_shows_error_in_the_browser(browser, app_url, tmp_path):
    bad = tmp_path / "broken.yaml"
    bad.write_text("name: broken\nhorizon_days: [\n")
    page = browser.new_page()
    page.goto(app_url)
    page.get_by_text("Verdict:").wait_for(timeout=90_000)
    # The first uploader takes the scenario (the second, a trace CSV to go with it).
    page.locator("[data-testid='stFileUploader'] input[type='file']").first.set_input_files(str(bad))
    page.get_by_test_id("stAlert").filter(has_text="This scenario cannot be used.").wait_for(timeout=60_000)
    details = page.get_by_test_id("stCode").filter(has_text="broken.yaml")  # the problems, verbatim
    details.wait_for(timeout=30_000)
    assert "YAML syntax error" in details.inner_text()
    assert page.get_by_test_id("stException").count() == 0
