"""How long the dashboard takes in a browser: Debian's Chromium, driven by Playwright, against a
dashboard this script starts as ``make app`` does (``python -m costsim.dashboard.launch app.py``:
``streamlit run app.py`` with the server's warm workers started first), on a free local port, at
1600 × 1000.

    .venv/bin/python benchmarks/dashboard_timing.py [--skip-lab]

1. **First screen on a cold server** (a fresh server, nothing cached, nothing on disk): from opening
   the page, as soon as the server answers its health check, to the verdict and every option's
   cards shown (the baseline, 3 replications; also from the server's start), then on
   to the page settled (the script ended, the Overview tab's figure drawn below the fold). Then
   once more on a server **started again** (``make app`` stopped and run again: a new process
   whose runs an earlier one kept on disk, ``costsim.dashboard.disk_runs``), in a fresh browser
   context.
2. **Each tab after the run**: from the click on a tab to its rerun ended and every figure on it
   drawn by plotly in the browser (the baseline, as it opened).
3. **The 3-year lab end to end**: ``benchmarks/serving-lab.yaml`` over 1,095 days (``three_years``:
   about 9,100 jobs on six options, 32 serving GPUs growing 50 % a year), uploaded, from the upload
   to its first screen drawn and settled, 3 replications; then each of its tabs.

Each step prints its wall time against its target (first screen <= 5 s, every tab <= 2 s, the
3-year lab <= 20 s) and the CPU seconds it took: the server process, its worker processes (the
simulations) and the browser. This machine has 2 cores that other work shares, so wall times
stretch with the load average printed beside them; the CPU seconds say where the time went.
Needs Chromium (``apt-get install chromium``) and Playwright (the ``test`` extra); without
Chromium it says so and stops.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import costsim
from costsim.present.headline import CARD_METRICS

ROOT = Path(__file__).resolve().parent.parent
ONE_YEAR_LAB = Path(__file__).resolve().parent / "serving-lab.yaml"
LAB_NAME, LAB_DAYS = "serving-lab-3y", 1095
VIEW = {"width": 1600, "height": 1000}
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
FIRST_SCREEN_S, TAB_S, LAB_S = 5.0, 2.0, 20.0
TABS = ["Overview", "Cost", "Capacity", "Iteration speed", "Time to target", "Failures", "Data"]
WAIT_MS = 300_000  # a bound for a stuck page, far beyond any target: the figure printed is what counts
# How often the page is asked whether a step is done, ms: often for the short steps; four times a
# second while the lab runs, as each question costs the browser and Playwright CPU the runs share.
POLL_MS, LAB_POLL_MS = 50, 250

# Watches the app's script state from before an action, so a rerun that starts and ends between two
# looks is still seen: window.ran is true once a run has started and ended since.
WATCH = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  window.started = false; window.ran = false;
  if (window.watcher) window.watcher.disconnect();
  window.watcher = new MutationObserver(() => {
    const state = app.getAttribute('data-test-script-state');
    if (state === 'running') window.started = true;
    else if (window.started && state === 'notRunning') window.ran = true;
  });
  window.watcher.observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
}"""
# True once the watched rerun has ended and every plotly chart on the page has drawn its SVG
# (plotly adds .main-svg when it has).
DONE = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!window.ran || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  const charts = document.querySelectorAll('[data-testid="stPlotlyChart"]');
  return Array.from(charts).every(c => c.querySelector('.main-svg') !== null);
}"""
# True once no script has run for half a second (window.calm: when the state last changed).
QUIET = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  const state = app.getAttribute('data-test-script-state');
  if (window.calmState !== state) { window.calmState = state; window.calm = performance.now(); }
  return state === 'notRunning' && performance.now() - window.calm > 500;
}"""
# The same for the first run of a page, which starts as the page loads.
FIRST_DONE = DONE.replace("!window.ran || ", "")


def process_table() -> dict[int, tuple[int, float]]:
    """pid -> (parent pid, CPU seconds of the process and of its children it has waited for)."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        # after the name: state, ppid, ..., utime (14th field of the line), stime, cutime, cstime
        out[int(entry)] = (int(fields[1]), sum(int(v) for v in fields[11:15]) / tick)
    return out


def tree_cpu(root: int, table: dict[int, tuple[int, float]]) -> float:
    """CPU seconds used so far by ``root`` and every process under it."""
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += table.get(pid, (0, 0.0))[1]
        todo += children.get(pid, [])
    return total


class Meter:
    """CPU seconds since the last reading of the dashboard's server process, of its worker
    processes (everything under it), and of the browser (everything else this script started:
    Playwright's driver and Chromium)."""

    def __init__(self, server_pid: int) -> None:
        self.server_pid = server_pid
        self.last = self.now()

    def now(self) -> tuple[float, float, float]:
        table = process_table()
        own = table[self.server_pid][1]
        server_tree = tree_cpu(self.server_pid, table)
        return own, server_tree - own, tree_cpu(os.getpid(), table) - server_tree - table[os.getpid()][1]

    def since(self) -> tuple[float, float, float]:
        """(server, workers, browser) CPU seconds since the last call (or the start)."""
        now = self.now()
        server, workers, browser = (max(0.0, a - b) for a, b in zip(now, self.last, strict=True))  # ticks: >= 0
        self.last = now
        return server, workers, browser


@contextlib.contextmanager
def served(cache_dir: Path) -> Iterator[tuple[str, float, int]]:
    """The dashboard as ``make app`` starts it, on a free local port, keeping its runs on
    disk in ``cache_dir`` (``COSTSIM_CACHE_DIR``), until the block ends: (its URL, seconds from the
    process's start to its health check answering, its pid)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "costsim.dashboard.launch", "app.py", "--server.headless", "true", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "COSTSIM_CACHE_DIR": str(cache_dir), "COSTSIM_DISK_CACHE_MB": "2048"})
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                if time.monotonic() - start > 120:
                    raise RuntimeError("streamlit did not start within 120 s") from None
                time.sleep(0.05)
        yield url, time.monotonic() - start, proc.pid
    finally:
        proc.terminate()
        proc.wait(20)


@dataclass(frozen=True)
class Timing:
    """One step: wall seconds, and the CPU seconds the dashboard's server process, its worker
    processes and the browser spent on it."""

    wall_s: float
    server_cpu_s: float
    workers_cpu_s: float
    browser_cpu_s: float

    def against(self, target_s: float) -> str:
        met = "met" if self.wall_s <= target_s else "NOT met"
        return (f"{self.wall_s:6.2f} s  (target <= {target_s:g} s: {met:7}; CPU s: server {self.server_cpu_s:5.2f}, "
                f"workers {self.workers_cpu_s:5.2f}, browser {self.browser_cpu_s:5.2f})")

    def __add__(self, other: Timing) -> Timing:
        return Timing(self.wall_s + other.wall_s, self.server_cpu_s + other.server_cpu_s,
                      self.workers_cpu_s + other.workers_cpu_s, self.browser_cpu_s + other.browser_cpu_s)


def timed(meter: Meter, action, wait) -> Timing:
    """``action()`` then ``wait()``, timed."""
    meter.since()
    start = time.monotonic()
    action()
    wait()
    wall = time.monotonic() - start
    return Timing(wall, *meter.since())


def quiet(page) -> None:
    """Until no script runs and none has started for half a second (a rerun the app asks for itself,
    after a run, must not swallow the next click)."""
    page.wait_for_function(QUIET, timeout=WAIT_MS, polling=POLL_MS)


def rerun(page, meter: Meter, action) -> Timing:
    """From ``action()`` (a click, an upload) to the rerun it starts ended and every chart drawn."""
    quiet(page)
    page.evaluate(WATCH)
    return timed(meter, action, lambda: page.wait_for_function(DONE, timeout=WAIT_MS, polling=POLL_MS))


def first_screen(page, meter: Meter, url: str) -> tuple[Timing, Timing]:
    """From opening ``url`` to the first screen shown (the verdict and every option's cards), and
    on to the page settled (the script ended, the Overview tab's figure drawn below the fold)."""
    cards = len(costsim.load_scenario(ROOT / "scenarios" / "baseline.yaml").options) * len(CARD_METRICS)

    def shown() -> None:
        page.get_by_text("Verdict:").first.wait_for(timeout=WAIT_MS)
        page.wait_for_function(f"() => document.querySelectorAll('[data-testid=\"stMetric\"]').length >= {cards}",
                               timeout=WAIT_MS, polling=POLL_MS)

    first = timed(meter, lambda: page.goto(url), shown)
    rest = timed(meter, lambda: None, lambda: page.wait_for_function(FIRST_DONE, timeout=WAIT_MS, polling=POLL_MS))
    return first, first + rest


def tab_timings(page, meter: Meter) -> dict[str, Timing]:
    """From a click on each tab to its rerun ended with its figures drawn: the page opens on the
    first tab, so it is timed last, coming back to it."""
    main = page.get_by_test_id("stMain")
    out = {tab: rerun(page, meter, main.get_by_text(tab, exact=True).first.click) for tab in [*TABS[1:], TABS[0]]}
    if page.get_by_test_id("stException").count():
        raise RuntimeError("a tab raised an exception")
    return out


def three_years(folder: Path) -> Path:
    """``serving-lab.yaml`` over ``LAB_DAYS`` days, named ``LAB_NAME``, written into ``folder``."""
    text = ONE_YEAR_LAB.read_text()
    for old, new in (("name: serving-lab\n", f"name: {LAB_NAME}\n"), ("horizon_days: 365\n", f"horizon_days: {LAB_DAYS}\n")):
        if old not in text:
            raise RuntimeError(f"{ONE_YEAR_LAB.name} has no line {old.strip()!r} to change")
        text = text.replace(old, new)
    text = text.replace("One year of RL runs", "Three years of RL runs")  # its description, where it says so
    path = folder / f"{LAB_NAME}.yaml"
    path.write_text(text)
    return path


def lab_timing(page, meter: Meter, lab: Path) -> Timing:
    """From uploading the 3-year lab to its first screen drawn (its title names its horizon once
    its runs are in) and the script ended."""
    upload = page.locator("[data-testid='stFileUploader'] input[type='file']").first
    quiet(page)
    page.evaluate(WATCH)

    def wait() -> None:
        page.get_by_text(f"{LAB_NAME}: {LAB_DAYS:,} days").first.wait_for(timeout=WAIT_MS)
        page.wait_for_function(DONE, timeout=WAIT_MS, polling=LAB_POLL_MS)
    return timed(meter, lambda: upload.set_input_files(str(lab)), wait)


def show_tabs(times: dict[str, Timing]) -> None:
    for tab, timing in times.items():
        print(f"    {tab:18} {timing.against(TAB_S)}")
    print(f"    {'slowest':18} {max(t.wall_s for t in times.values()):6.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--skip-lab", action="store_true", help="only the first screen and the baseline's tabs")
    args = ap.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("dashboard timing: skipped (no chromium: apt-get install chromium)")
        return
    from playwright.sync_api import sync_playwright

    print(f"dashboard in Chromium at {VIEW['width']} x {VIEW['height']}, wall time with the CPU it took; "
          f"load average before: {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs)")
    with sync_playwright() as p, tempfile.TemporaryDirectory() as cache:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS, headless=True)
        with served(Path(cache)) as (url, server_s, pid):
            page = browser.new_page(viewport=VIEW)
            meter = Meter(pid)
            first, settled = first_screen(page, meter, url)
            print(f"  server start to health check {server_s:.2f} s")
            print(f"  first screen, cold server, nothing on disk (baseline, 3 replications) {first.against(FIRST_SCREEN_S)}")
            print(f"  ... from the server's start (`make app`), the page opened at its health check {server_s + first.wall_s:6.2f} s")
            print(f"  ... and settled (script ended, figure drawn)         {settled.wall_s:6.2f} s")
            print("  each tab after the run (baseline):")
            show_tabs(tab_timings(page, meter))
            if not args.skip_lab:
                with tempfile.TemporaryDirectory() as folder:
                    lab = lab_timing(page, meter, three_years(Path(folder)))
                print(f"  3-year lab with serving, 3 replications, upload to first screen {lab.against(LAB_S)}")
                print("  each tab after the run (3-year lab):")
                show_tabs(tab_timings(page, meter))
            page.close()
        # The server started again, as after `make app` is stopped and run again: its runs on disk
        # from the first; a fresh browser context, so nothing the browser cached helps either.
        with served(Path(cache)) as (url, server_s, pid):
            context = browser.new_context(viewport=VIEW)
            page = context.new_page()
            first, settled = first_screen(page, meter := Meter(pid), url)
            print(f"  first screen, cold server started again (the runs on disk)   {first.against(FIRST_SCREEN_S)}")
            print(f"  ... and settled (script ended, figure drawn)         {settled.wall_s:6.2f} s")
            context.close()
        browser.close()
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
