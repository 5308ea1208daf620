"""Hostile uploads to the dashboard: no server file's contents on the page, user text
shown literally, non-finite numbers as field errors, runs bounded in time, no traceback ever.

"The page" is every string in every element AppTest received (sidebar included), so a leak
anywhere fails the test, not only in the error box.
"""

from __future__ import annotations

import html
import math
import os
import pickle
import re
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
from apptest_helpers import page_strings
from hypothesis import given, settings
from hypothesis import strategies as st_
from markdown_it import MarkdownIt
from paths import APP
from streamlit.testing.v1 import AppTest

import costsim
from costsim import dashboard
from costsim.dashboard import SCENARIO_DIR, Limits, Upload, literal_markdown, load_upload, run_key
from costsim.present.headline import WORD_JOINER
from costsim.runs import isolated

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

BASELINE = (SCENARIO_DIR / "baseline.yaml").read_text()
LAB_TRACE = (SCENARIO_DIR / "lab-trace.yaml").read_text()
COMMONMARK = MarkdownIt("commonmark")  # an independent Markdown renderer (HTML blocks and tags enabled)


def upload(text: str, trace: tuple[str, bytes] | None = None, timeout: float = 120) -> AppTest:
    """The app opened on a link to a 30-day baseline (not the full year), then ``text`` uploaded."""
    at = AppTest.from_file(APP, default_timeout=timeout)
    at.query_params["s"] = dashboard.encode_scenario(BASELINE.replace("horizon_days: 365\n", "horizon_days: 30\n"))
    at.run()
    if trace is not None:
        at.sidebar.file_uploader(key="trace_upload").upload(trace[0], trace[1], "text/csv")
    at.sidebar.file_uploader(key="upload").upload("mine.yaml", text.encode(), "application/yaml").run()
    return at


def shown_problems(at: AppTest) -> str:
    """The problems the app listed (verbatim, in code blocks)."""
    return "\n".join(c.value for c in at.code)


def file_lines(path: str) -> list[str]:
    raw = Path(path).read_bytes().decode("utf-8", "replace")
    return [line.strip() for line in re.split(r"[\n\0]", raw) if line.strip()]


def with_trace(path: str) -> str:
    return LAB_TRACE.replace("trace: traces/lab-year.csv", f"trace: {path}")


# --- 1. no server file on the page -----------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("target, written", [
    ("/etc/hostname", "/etc/hostname"),
    ("/proc/self/environ", "/proc/self/environ"),
    ("/etc/hostname", "../../../../../../../../../../etc/hostname"),
    ("/etc/hostname", "traces/../../../../../../../../../etc/hostname"),
])
def test_upload_never_shows_a_server_file(target, written):
    if not Path(target).is_file() or not file_lines(target):
        pytest.skip(f"{target} is not readable here")
    # the same page for a path that exists nowhere: what it shows was certainly not read from disk
    control = "\n".join(page_strings(upload(with_trace("/nonexistent-costsim-dir/x.csv"))))
    secrets = [line for line in file_lines(target) if line not in control]
    assert secrets, f"every line of {target} also appears on a page that read nothing: cannot tell"
    at = upload(with_trace(written))
    page = "\n".join(page_strings(at))
    leaked = [line for line in secrets if line in page]
    assert not leaked, f"{len(leaked)} line(s) of {target} on the page"
    assert not at.exception
    assert at.error and "cannot be used" in at.error[0].value
    problems = shown_problems(at)
    assert "workload.trace" in problems and written in problems  # names the field and what the user wrote
    assert not at.metric  # nothing ran


def test_loader_opens_nothing_outside(tmp_path):
    """Absolute, ``../`` and shipped-looking paths to a file outside are refused before reading."""
    secret = tmp_path / "secret.csv"
    secret.write_text("submit_h,gpus,duration_h,SECRET-COLUMN-7731\n0,8,1,x\n")
    relative = os.path.relpath(secret, SCENARIO_DIR)
    for written in (str(secret), relative, f"traces/{os.path.relpath(secret, SCENARIO_DIR / 'traces')}"):
        with pytest.raises(costsim.ScenarioError) as err:
            load_upload(Upload("mine.yaml", with_trace(written).encode()), None, tmp_path)
        assert "SECRET" not in str(err.value)
        assert [p.loc for p in err.value.problems] == [("workload", "trace")]


@pytest.mark.slow
def test_uploaded_trace_is_read_from_the_upload(tmp_path):
    trace = b"submit_h,gpus,duration_h\n1,8,2\n5,16,3\n30,8,1\n"  # three jobs, all within the horizon
    at = upload(with_trace("mine.csv"), trace=("mine.csv", trace))
    assert not at.exception and not at.error
    assert any("3 jobs" in s.value for s in at.subheader)
    # the same trace named differently in the scenario: refused, naming the field
    at = upload(with_trace("other.csv"), trace=("mine.csv", trace))
    assert at.error and "workload.trace" in shown_problems(at) and not at.metric


@pytest.mark.slow
def test_bad_uploaded_trace_is_named_as_uploaded():
    trace = b"submit_h,gpus,duration_h\n1,8,2\n5,eight,3\n"
    at = upload(with_trace("mine.csv"), trace=("mine.csv", trace))
    assert not at.exception and at.error
    problems = shown_problems(at)
    assert "mine.csv:3: gpus: 'eight' is not a whole number" in problems
    assert "costsim-uploads" not in "\n".join(page_strings(at))  # the server's temporary path is not shown


@pytest.mark.slow
def test_shipped_trace_by_name_runs():
    at = upload(LAB_TRACE.replace("name: lab-trace", "name: mine"))
    assert not at.exception and not at.error
    jobs = pd.read_csv(SCENARIO_DIR / "traces" / "lab-year.csv")
    within = int((jobs.submit_h < 365 * 24).sum())
    assert any(f"{within:,} jobs" in s.value for s in at.subheader)


# --- 5. user text literally; non-finite numbers; no traceback ---------------------------------------


def rendered(at: AppTest) -> list[str]:
    """HTML a CommonMark renderer makes of every Markdown body the app sent."""
    bodies = [e.value for kind in ("markdown", "error", "warning", "info", "success", "caption", "title",
                                   "header", "subheader") for e in getattr(at, kind)]
    return [COMMONMARK.render(b) for b in bodies]


@pytest.mark.slow
def test_markdown_in_an_unknown_key_is_shown_literally():
    key = "x\\n```\\n# Heading\\n![img](http://example.invalid/x.png)\\n<img src=x onerror=alert(1)>"
    at = upload(BASELINE.replace("seed: 0", f'seed: 0\n"{key}": 1'))
    assert not at.exception and at.error
    for out in rendered(at):
        assert "<h1" not in out and "<img" not in out, out
    problems = shown_problems(at)
    assert "# Heading" in problems and "![img](http://example.invalid/x.png)" in problems  # as typed


@pytest.mark.slow
def test_markdown_in_names_is_shown_literally():
    name = "# Big ![i](http://example.invalid/i.png) <b>bold</b> :red[x] $y$"
    text = (BASELINE.replace("name: baseline", f'name: "{name}"')
            .replace("horizon_days: 365", "horizon_days: 45")
            .replace("description: >-", f'description: "{name}"\nold_description: >-'))
    text = re.sub(r"old_description: >-\n(  .*\n)+", "", text)
    at = upload(text)
    assert not at.exception and not at.error
    shown = [s.value for s in at.subheader] + [c.value for c in at.caption]
    for body in shown:
        out = COMMONMARK.renderInline(body)
        assert "<img" not in out and "<b>" not in out and "<h1" not in out, out
    # as typed, but for the invisible word joiners that keep a URL from becoming a link
    texts = [html.unescape(re.sub(r"<[^>]+>", "", COMMONMARK.renderInline(b))).replace(WORD_JOINER, "") for b in shown]
    assert any(t.startswith(name + ":") for t in texts)  # the subheader shows the name as typed
    assert name in texts  # and the description


@given(st_.text(st_.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60))
@settings(max_examples=300, deadline=None)
def test_literal_markdown_renders_back_to_the_text(text):
    expected = " ".join(text.split())  # whitespace runs become one space: no line can start a block
    out = COMMONMARK.renderInline(literal_markdown(text))
    # word joiners (invisible) are the only characters added: they keep URLs from becoming links
    assert html.unescape(out).replace(WORD_JOINER, "") == expected.replace("\0", "\ufffd").replace(WORD_JOINER, "")


@pytest.mark.slow
@pytest.mark.parametrize("old, new, field", [
    ("horizon_days: 365", "horizon_days: .inf", "horizon_days"),
    ("iterations: {mean: 300, cv: 0.5}", "iterations: {mean: 1e400, cv: 0.5}", "workload.classes.0.iterations"),
    ("provisioning_delay_h: 0.25", "provisioning_delay_h: .inf", "options.3.provisioning_delay_h"),
])
def test_non_finite_numbers_are_field_errors(old, new, field):
    assert old in BASELINE
    at = upload(BASELINE.replace(old, new, 1))
    assert not at.exception
    assert at.error and field in shown_problems(at)
    assert not any("Traceback" in s for s in page_strings(at))


def test_error_details_are_hidden_from_users():
    """The app's config hides server tracebacks (`false` would still show the stack)."""
    import tomllib

    import streamlit as st

    toml = tomllib.loads((Path(APP).parent / ".streamlit" / "config.toml").read_text())
    assert toml["client"]["showErrorDetails"] == "none"
    if Path.cwd() != Path(APP).parent:
        pytest.skip("Streamlit reads .streamlit/config.toml from the working directory (`make app` runs from the root)")
    assert st.get_option("client.showErrorDetails") == "none"  # what AppTest and `streamlit run` here use


# --- 4. bounded work ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_absurd_horizon_is_refused_quickly():
    start = time.monotonic()
    at = upload(BASELINE.replace("horizon_days: 365", "horizon_days: 1e30"), timeout=60)
    assert time.monotonic() - start < 60  # refused by validation or stopped, never a hang
    assert not at.exception and at.error and not at.metric


@pytest.mark.slow
def test_long_run_is_stopped_at_the_time_limit(monkeypatch):
    monkeypatch.setenv("COSTSIM_RUN_SECONDS", "2")
    start = time.monotonic()
    at = upload(BASELINE.replace("horizon_days: 365", "horizon_days: 3650"), timeout=60)  # ten years: ≫ 2 s
    elapsed = time.monotonic() - start
    assert not at.exception and not at.metric
    assert at.error and "did not finish within the dashboard's limit of 2 s" in at.error[0].value
    assert elapsed < 2 + 30  # the limit, plus the app's first run and the child's start


def test_interrupted_run_kills_its_process(monkeypatch):
    """Streamlit stops a script by raising from an element call: on_wait here. The child dies."""
    started: list[subprocess.Popen] = []
    real = subprocess.Popen

    def recording(*args, **kwargs):
        started.append(real(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(isolated.subprocess, "Popen", recording)

    class Rerun(Exception):
        pass

    def interrupt(seconds: float) -> None:
        if seconds > 0.5:
            raise Rerun

    scenario = costsim.load_scenario(SCENARIO_DIR / "baseline.yaml")
    with pytest.raises(Rerun):
        dashboard.simulate_bounded(scenario, Limits(), on_wait=interrupt)
    (child,) = started
    assert child.returncode is not None and child.returncode < 0  # killed by a signal, and reaped


@pytest.mark.slow
def test_bounded_run_equals_simulate():
    scenario = costsim.load_scenario(SCENARIO_DIR / "baseline.yaml")
    scenario = costsim.scenario.scenario_from_data(
        {**scenario.model_dump(mode="json"), "horizon_days": 30, "warmup_days": 0}, "short", SCENARIO_DIR)
    res = pickle.loads(dashboard.simulate_bounded(scenario))
    pd.testing.assert_frame_equal(res.summary, costsim.simulate(scenario).summary)


def test_run_key_keeps_every_value():
    sc = costsim.load_scenario(SCENARIO_DIR / "baseline.yaml")
    nudged = sc.model_copy(update={"horizon_days": math.nextafter(365.0, 400.0)})
    infinite = sc.model_copy(update={"horizon_days": math.inf})  # unvalidated: what pydantic's JSON makes null
    keys = {run_key(s) for s in (sc, nudged, infinite, sc.model_copy(update={"horizon_days": 1e308}))}
    assert len(keys) == 4
    assert run_key(sc) == run_key(costsim.load_scenario(SCENARIO_DIR / "baseline.yaml"))
    assert '"horizon_days": Infinity' in run_key(infinite)


def test_limits_from_env():
    assert Limits.from_env({}) == Limits()
    assert Limits.from_env({"COSTSIM_RUN_SECONDS": "600"}).run_seconds == 600
    for bad in ("abc", "0", "-1", "inf", "nan"):
        with pytest.raises(costsim.ScenarioError, match="COSTSIM_UPLOAD_MB"):
            Limits.from_env({"COSTSIM_UPLOAD_MB": bad})


def test_upload_size_limit(tmp_path):
    big = BASELINE + "#" + "x" * (2**20) + "\n"  # a little over 1 MiB
    with pytest.raises(costsim.ScenarioError, match="at most 1 MiB"):
        load_upload(Upload("mine.yaml", big.encode()), None, tmp_path, Limits(upload_mb=1))
