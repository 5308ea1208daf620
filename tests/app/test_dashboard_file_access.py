"""The dashboard's one rule on files (``uploads.check_file_fields``): every file field a scenario
names (``workload.trace``, each RL class's ``scaling.fit``) is the session's upload or a shipped
file by name; anything else is refused by name before it is opened, in uploads, in ``?s=`` links
and in the Edit scenario tab. Errors the decision tabs show carry no server path.

"A leak" is checked against the file itself: its lines that do not appear on a page which read
nothing are looked for on the page under test.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from apptest_helpers import key, page_strings, short
from paths import ROOT
from streamlit.testing.v1 import AppTest

import costsim
from costsim.dashboard import SCENARIO_DIR, Upload, content_key, encode_scenario, load_upload, make_upload_root, uploads
from costsim.dashboard.sidebar import REPLICATIONS_KEY
from costsim.scenario import scenario_from_yaml

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

APP = str(ROOT / "app.py")
HARNESS = str(ROOT / "tests" / "apps" / "decision_tabs_app.py")
FLAGSHIP = (SCENARIO_DIR / "flagship-scaling.yaml").read_text()
CURVE = "curve: {a: 0.72, b: 1.4, c_mid_gpu_hours: 150000, r0: 0.31}"


def with_fit(path: str) -> str:
    """The flagship scenario over 30 days, its first class's scaling fitted to ``path``."""
    assert CURVE in FLAGSHIP
    return FLAGSHIP.replace(CURVE, f"fit: {path}").replace("horizon_days: 365", "horizon_days: 30")


def file_lines(path: str) -> list[str]:
    raw = Path(path).read_bytes().decode("utf-8", "replace")
    return [line.strip() for line in re.split(r"[\n\0]", raw) if line.strip()]


def unescaped(markdown: str) -> str:
    """Text the editor shows as escaped Markdown (``literal_markdown``), as the reader sees it."""
    return re.sub(r"\\(.)", r"\1", markdown)


def secrets_of(target: str, control: str) -> list[str]:
    """Lines of ``target`` that a page which read nothing does not show (so finding one is a leak)."""
    if not Path(target).is_file() or not file_lines(target):
        pytest.skip(f"{target} is not readable here")
    found = [line for line in file_lines(target) if line not in control]
    if not found:
        pytest.skip(f"every line of {target} also appears on a page that read nothing: cannot tell")
    return found


# --- the rule itself ------------------------------------------------------------------------------


def test_file_fields_are_the_trace_and_every_fit():
    sc, _ = scenario_from_yaml(with_fit("traces/lab-year.csv").replace(  # schema only: reads no file
        "workload:\n", "workload:\n  trace: traces/slurm-lab.csv\n", 1), "x.yaml", SCENARIO_DIR)
    assert uploads.file_fields(sc) == [(("workload", "trace"), "traces/slurm-lab.csv"),
                               (("workload", "classes", 0, "scaling", "fit"), "traces/lab-year.csv")]


@pytest.mark.parametrize("fit", ["/etc/passwd", "../../../../../../../../etc/passwd",
                                 "traces/../../../../../../../../../etc/passwd", "/proc/self/environ"])
def test_a_fit_naming_a_server_file_is_refused_unread(tmp_path, fit):
    if not Path("/etc/passwd").is_file():
        pytest.skip("no /etc/passwd here")
    with pytest.raises(costsim.ScenarioError) as err:
        load_upload(Upload("u.yaml", with_fit(fit).encode()), None, tmp_path)
    text = str(err.value)
    assert [p.loc for p in err.value.problems] == [("workload", "classes", 0, "scaling", "fit")]
    assert "workload.classes.0.scaling.fit" in text and fit in text  # the field, and what the user wrote
    assert "reads only the file uploaded with the scenario" in text and "shipped files" in text
    assert "root:" not in text and "gpu_hours,score" not in text  # the points reader never ran
    for line in file_lines("/etc/passwd"):
        assert line not in text


def test_a_fit_naming_a_missing_file_says_the_same_as_an_existing_one(tmp_path):
    """Refused from the name alone: a path that exists and one that does not read alike."""
    messages = []
    for fit in ("/etc/passwd", "/nonexistent-costsim-dir/points.csv"):
        with pytest.raises(costsim.ScenarioError) as err:
            load_upload(Upload("u.yaml", with_fit(fit).encode()), None, tmp_path)
        messages.append(str(err.value).replace(fit, "PATH"))
    assert messages[0] == messages[1]


def test_an_uploaded_file_and_shipped_traces_may_be_named(tmp_path):
    root = make_upload_root()
    base = costsim.load_scenario_text(short(), "s.yaml", SCENARIO_DIR).model_dump(mode="json")
    # a shipped trace by name is read from the shipped folder, whatever folder the scenario had
    named = costsim.scenario.scenario_from_data({**base, "workload": {"trace": "traces/lab-year.csv"}}, "s", tmp_path)
    assert uploads.check_file_fields(named, "s", root).base_dir == SCENARIO_DIR.resolve()
    # the session's upload by its name, from its folder in the upload root; elsewhere it is refused
    folder = root / ("0" * 32)
    upload = costsim.scenario.scenario_from_data({**base, "workload": {"trace": "mine.csv"}}, "s", tmp_path)
    assert uploads.check_file_fields(upload, "s", root, folder / "mine.csv").base_dir == folder.resolve()
    for uploaded in (tmp_path / "x" / "mine.csv", None):  # not a folder of the root; no upload this session
        with pytest.raises(costsim.ScenarioError) as err:
            uploads.check_file_fields(upload, "s", root, uploaded)
        assert [p.loc for p in err.value.problems] == [("workload", "trace")]


# --- ?s= links ------------------------------------------------------------------------------------


def opened_on_link(text: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["s"] = encode_scenario(text)
    return at.run()


@pytest.mark.slow
def test_a_link_with_a_fit_naming_a_server_file_is_refused_unread():
    control = "\n".join(page_strings(opened_on_link(with_fit("/nonexistent-costsim-dir/points.csv"))))
    control += "\n" + unescaped(control)
    secrets = secrets_of("/etc/passwd", control)
    at = opened_on_link(with_fit("/etc/passwd"))
    page = "\n".join(page_strings(at))
    page += "\n" + unescaped(page)  # escaped Markdown shows its text
    assert not at.exception
    assert not [line for line in secrets if line in page], "a line of /etc/passwd on the page"
    assert at.error and "link cannot be used" in at.error[0].value
    problems = "\n".join(c.value for c in at.code)
    assert "workload.classes.0.scaling.fit" in problems and "reads only the file uploaded" in problems


# --- the Edit scenario tab ------------------------------------------------------------------------


def on_the_editor() -> AppTest:
    """The short baseline uploaded (no trace), one replication, on the Edit scenario tab."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["s"] = encode_scenario(short())
    at.run()
    at.sidebar.file_uploader(key="upload").upload("short.yaml", short().encode(), "application/yaml").run()
    at.number_input(key=REPLICATIONS_KEY).set_value(1)
    at.button(key="FormSubmitter:knobs-Run").click().run()
    return at.radio(key="tab").set_value("Edit scenario").run()


def typed_trace(path: str) -> AppTest:
    at = on_the_editor()
    field = f"ed-{key(short())}:0:workload.trace"
    at.toggle(key=f"{field}:default").set_value(False).run()
    return at.text_input(key=field).set_value(path).run()


@pytest.mark.slow
@pytest.mark.parametrize("target", ["/proc/self/environ", "/etc/hostname"])
def test_the_editor_refuses_a_server_file_as_trace_unread(target):
    control = "\n".join(page_strings(typed_trace("/nonexistent-costsim-dir/x.csv")))
    control += "\n" + unescaped(control)
    secrets = secrets_of(target, control)
    at = typed_trace(target)
    page = "\n".join(page_strings(at))
    page += "\n" + unescaped(page)  # escaped Markdown shows its text
    assert not at.exception
    assert not [line for line in secrets if line in page], f"a line of {target} on the page"
    shown = unescaped("\n".join(e.value for e in at.error))
    assert "reads only the file uploaded with the scenario" in shown and target in shown
    assert any(w.value.startswith("**Stale:**") for w in at.warning)  # nothing ran with it


@pytest.mark.slow
def test_the_editor_refuses_another_uploads_path(tmp_path):
    """A file in the server's upload folder that this session did not upload is not read."""
    other = make_upload_root() / ("f" * 32) / "theirs.csv"
    other.parent.mkdir()
    other.write_text("submit_h,gpus,duration_h,THEIR-SECRET-COLUMN\n1,8,2,x\n")
    at = typed_trace(str(other))
    page = "\n".join(page_strings(at))
    page += "\n" + unescaped(page)  # escaped Markdown shows its text
    assert not at.exception and "THEIR-SECRET-COLUMN" not in page
    assert "reads only the file uploaded with the scenario" in unescaped("\n".join(e.value for e in at.error))


# --- errors the decision tabs show ----------------------------------------------------------------


def test_decision_tab_errors_show_no_server_path(monkeypatch):
    """A grid whose variants are refused with the trace's path as the source (a job id reserved
    for arrival_scale's copies): the error names the trace without the server's upload folder."""
    root = make_upload_root()
    folder = root / ("a" * 32)
    folder.mkdir()
    rows = [(10.0 * k, 8, 5.0, f"j{k}") for k in range(50)] + [(600.0, 8, 5.0, "j~1")]
    pd.DataFrame(rows, columns=["submit_h", "gpus", "duration_h", "job_id"]).to_csv(folder / "trace.csv", index=False)
    data = {"name": "tiny", "horizon_days": 30, "workload": {"trace": "trace.csv"},
            "options": [{"name": "own", "kind": "owned", "gpu_type": "H100", "gpus": 8, "lead_time_days": 0},
                        {"name": "cloud", "kind": "cloud", "gpu_type": "H100", "price_per_gpu_hour": 2.99}]}
    (folder / "tiny.yaml").write_text(json.dumps(data))
    monkeypatch.setenv("COSTSIM_TABS_SCENARIO", str(folder / "tiny.yaml"))
    monkeypatch.setenv("COSTSIM_TABS_WHICH", "sweep")
    at = AppTest.from_file(HARNESS, default_timeout=60).run()
    at.multiselect(key="tabs:grid:paths").set_value(["workload.arrival_scale"]).run()
    at.text_input(key="tabs:grid:values:workload.arrival_scale").input("2").run()
    at.button(key="tabs:grid:run").click().run()
    assert not at.exception and at.error
    shown = "\n".join(c.value for c in at.code)
    assert "trace.csv" in shown and "j~1" in shown  # the problem, naming the file as the user knows it
    page = "\n".join(page_strings(at))
    page += "\n" + unescaped(page)  # escaped Markdown shows its text
    for spelling in (str(root), str(root.resolve()), "costsim-uploads-"):
        assert spelling not in page


@pytest.mark.slow
def test_the_editor_still_reads_the_sessions_uploaded_trace():
    """The rule lets through what the session uploaded: an edit of a scenario reading its uploaded
    trace runs on the same jobs as the upload did. Passes before the rule too: it guards the rule."""
    trace = b"submit_h,gpus,duration_h\n1,8,2\n5,16,3\n30,8,1\n"
    text = short().replace("workload:\n", "workload:\n  trace: mine.csv\n", 1)
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["s"] = encode_scenario(short())
    at.run()
    at.sidebar.file_uploader(key="trace_upload").upload("mine.csv", trace, "text/csv")
    at.sidebar.file_uploader(key="upload").upload("short.yaml", text.encode(), "application/yaml").run()
    prefix = f"ed-{content_key(text.encode() + bytes(1) + trace)}.0:0"
    assert not at.exception and not at.error
    jobs = at.subheader[0].value.split(", ")[1]  # "N jobs — build or rent GPUs?"
    at = at.radio(key="tab").set_value("Edit scenario").run()
    at.text_input(key=f"{prefix}:name").set_value("renamed").run()
    assert not at.exception and not at.error
    assert at.subheader[0].value == f"renamed: 30 days, {jobs}"
