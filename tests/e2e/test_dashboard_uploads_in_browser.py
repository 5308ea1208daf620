"""Uploads, files and links in the real dashboard (Debian's Chromium at 1600 × 1000, driven by
Playwright): a file chosen in the uploader reaching the app (the same-name round trip), the
scenario in the URL surviving a reload, a bad upload's error, the sidebar while an upload's run
goes on, and hostile upload names that write only in the private folder. AppTest covers the
wiring; these cover what only a browser does. Skipped where no chromium is installed.
"""

from __future__ import annotations

import os
import re
from operator import le

import pytest
from browser_helpers import BASELINE, VIEW, open_app, served, settled
from paths import ROOT

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.e2e


def test_same_name_round_trip_and_url_restore(browser, app_url, tmp_path):
    page = open_app(browser, app_url)
    short = BASELINE.replace("horizon_days: 365\n", "horizon_days: 30\n")
    edited = short.replace("{name: own-256, kind: owned, gpu_type: H100, gpus: 256,",
                           "{name: own-256, kind: owned, gpu_type: H100, gpus: 320,")
    upload = page.locator("[data-testid='stFileUploader'] input[type='file']").first
    for i, text in enumerate((short, edited)):  # the same file name twice, the second time edited
        (tmp_path / str(i)).mkdir()
        path = tmp_path / str(i) / "baseline.yaml"
        path.write_text(text)
        upload.set_input_files(str(path))
        page.wait_for_timeout(500)
        settled(page)
    expect(page.locator("input[aria-label='own-256: owned GPUs']")).to_have_value("320", timeout=60_000)
    page.locator("input[aria-label='own-256: owned GPUs']").fill("336")
    page.get_by_test_id("stSidebar").get_by_role("button", name="Run").click()
    settled(page)
    assert "s=" in page.url
    # a reload (a new session) from the URL alone: the edit comes back (own-256 holds 320 GPUs in the
    # file, so its name is not its size and is kept)
    page2 = browser.new_page(viewport=VIEW)
    page2.goto(page.url)
    page2.get_by_text("Verdict:").wait_for(timeout=120_000)
    settled(page2)
    assert page2.locator("input[aria-label='own-256: owned GPUs']").first.input_value() == "336"
    assert page2.get_by_test_id("stException").count() == 0


def test_bad_upload_shows_error_in_the_browser(browser, own_app_url, tmp_path):
    bad = tmp_path / "broken.yaml"
    bad.write_text("name: broken\nhorizon_days: [\n")
    page = open_app(browser, own_app_url)
    page.locator("[data-testid='stFileUploader'] input[type='file']").first.set_input_files(str(bad))
    page.get_by_test_id("stAlert").filter(has_text="This scenario cannot be used.").wait_for(timeout=120_000)
    details = page.get_by_test_id("stCode").filter(has_text="broken.yaml")  # the problems, verbatim
    details.wait_for(timeout=30_000)
    assert "YAML syntax error" in details.inner_text()
    assert page.get_by_test_id("stException").count() == 0


def test_each_sidebar_widget_shows_once_while_a_run_goes(browser, app_url, tmp_path):
    """An upload changes every knob's key; while the upload's run (three replications of two years
    no other test runs: its own seed, and long enough to be sampled a few times) goes on, the sidebar shows each widget once, as settled,
    not the previous run's widgets greyed beside the new ones."""
    page = open_app(browser, app_url)
    side = page.get_by_test_id("stSidebar")
    kinds = ("stNumberInput", "stSelectbox", "stFileUploader", "stButton", "stFormSubmitButton")

    def counts() -> tuple[int, ...]:
        return tuple(side.get_by_test_id(kind).count() for kind in kinds)

    # A new page draws each widget as a placeholder (stSkeleton) until the code of its kind has
    # loaded, kind by kind, on a busy machine seconds after the run has ended (once 12 of the 29
    # number inputs and no Reset button were counted here): wait until no placeholder is left.
    expect(side.get_by_test_id("stFileUploader")).to_have_count(2, timeout=60_000)
    expect(side.locator("input[aria-label='own-256: owned GPUs']")).to_be_visible(timeout=60_000)
    expect(side.get_by_test_id("stSkeleton")).to_have_count(0, timeout=60_000)
    settled_counts = counts()
    path = tmp_path / "own-seed.yaml"
    path.write_text(BASELINE.replace("seed: 0\n", "seed: 424242\n").replace("horizon_days: 365\n", "horizon_days: 730\n"))
    side.locator("[data-testid='stFileUploader'] input[type='file']").first.set_input_files(str(path))
    app, during = page.get_by_test_id("stApp"), []
    for _ in range(1200):  # 0.1 s apart: until the run has been seen and has ended
        running = app.get_attribute("data-test-script-state") == "running"
        if running:  # the new widgets are drawn within milliseconds, then the run takes seconds
            during.append(counts())
        elif during:
            break
        page.wait_for_timeout(100)
    assert len(during) >= 5, "the upload's run was not seen going on for half a second"
    # never more than settled (a widget may be missing for the moment its place is redrawn)
    assert all(all(map(le, sample, settled_counts)) for sample in during), (settled_counts, sorted(set(during)))
    assert settled_counts in during
    settled(page)
    assert counts() == settled_counts


def test_hostile_upload_names_write_only_in_the_private_folder(browser, tmp_path):
    """One page load on a server of its own whose temporary folder is under ``tmp_path``: a
    scenario reading ``x.csv`` with its trace uploaded as ``../../x.csv``, then as an absolute
    path into an existing folder. Each runs from a copy in the private upload folder and nothing
    else appears anywhere under ``tmp_path``; the page shows no server path; the bare URL in the
    scenario's description is text, not a link."""
    server_tmp, elsewhere = tmp_path / "server" / "tmp", tmp_path / "elsewhere"
    server_tmp.mkdir(parents=True)
    elsewhere.mkdir()
    text = (ROOT / "scenarios" / "lab-trace.yaml").read_text()
    text = text.replace("trace: traces/lab-year.csv", "trace: x.csv").replace("horizon_days: 365", "horizon_days: 30")
    text = re.sub(r"description: >-\n(  .*\n)+", 'description: "Docs: https://example.com/lab and www.example.org"\n', text)
    traces = {"../../x.csv": b"submit_h,gpus,duration_h\n1,8,2\n5,16,3\n30,8,1\n",
              str(elsewhere / "x.csv"): b"submit_h,gpus,duration_h\n1,8,2\n5,16,3\n30,8,1\n40,8,1\n"}
    with served({**os.environ, "TMPDIR": str(server_tmp)}) as url:
        page = open_app(browser, url)
        before = {p for p in tmp_path.rglob("*") if p.is_file()}
        uploaders = page.locator("[data-testid='stFileUploader'] input[type='file']")
        for n, (name, trace) in enumerate(traces.items()):
            uploaders.nth(1).set_input_files(files=[{"name": name, "mimeType": "text/csv", "buffer": trace}])
            page.wait_for_timeout(500)
            settled(page)
            if n == 0:
                uploaders.nth(0).set_input_files(files=[{"name": "mine.yaml", "mimeType": "application/yaml",
                                                         "buffer": text.encode()}])
                page.wait_for_timeout(500)
                settled(page)
            jobs = trace.count(b"\n") - 1  # the run read the copy it stored: waited for before the files are counted
            expect(page.get_by_text(f"{jobs} jobs", exact=False).first).to_be_visible(timeout=120_000)
            new = {p for p in tmp_path.rglob("*") if p.is_file()} - before
            assert all(p.name == "x.csv" and p.parent.parent.parent == server_tmp
                       and p.parent.parent.name.startswith("costsim-uploads-") for p in new), new
            assert len(new) == n + 1  # one stored copy per upload, under the private folder only
            body = page.locator("body").inner_text()
            assert str(tmp_path) not in body and "costsim-uploads" not in body
            assert page.get_by_test_id("stException").count() == 0
        assert not any(elsewhere.iterdir()) and not any(p.is_file() for p in server_tmp.iterdir())
        caption = page.get_by_test_id("stCaptionContainer").filter(has_text="example.com")
        expect(caption).to_have_count(1)
        assert caption.locator("a").count() == 0  # shown as text
        assert "https://example.com/lab" in caption.inner_text().replace("\u2060", "")
