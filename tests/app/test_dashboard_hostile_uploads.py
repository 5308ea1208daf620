"""Hostile input to the dashboard's uploads, links and text: an uploaded file's name is never a
server path and no message shows one; a bare URL in user text is never a link; damaged sweep
metadata is a message naming the file, never the error page; a ``?s=`` that is not ours says so.

"Nothing created outside": every file under a sandbox folder (holding the private upload folder
and the targets a hostile name points at) is listed before and after, so a file written anywhere
in it is seen, wherever the name led.
"""

from __future__ import annotations

import io
import re
import tempfile
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import one_node_scenario_file
from hypothesis import given
from hypothesis import strategies as st_
from markdown_it import MarkdownIt
from paths import ROOT
from streamlit.testing.v1 import AppTest

import costsim
from costsim.dashboard import (
    LINK,
    SCENARIO_DIR,
    Upload,
    decode_scenario,
    encode_scenario,
    literal_markdown,
    load_upload,
    safe_upload_name,
)
from costsim.dashboard.sweep_upload import MAX_JSON_DEPTH, read_uploads_here
from costsim.scenario import ScenarioError

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")

APP = str(ROOT / "app.py")
HARNESS = str(ROOT / "tests" / "apps" / "decision_tabs_app.py")
BASELINE = (SCENARIO_DIR / "baseline.yaml").read_text()
TRACE = b"submit_h,gpus,duration_h\n1,8,2\n5,16,3\n30,8,1\n"  # three jobs


def uses_trace(name: str) -> str:
    """The shipped lab-trace scenario over 30 days, reading the trace ``name``."""
    text = (SCENARIO_DIR / "lab-trace.yaml").read_text()
    assert "trace: traces/lab-year.csv" in text and "horizon_days: 365" in text
    return text.replace("trace: traces/lab-year.csv", f"trace: {name}").replace("horizon_days: 365", "horizon_days: 30")


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


# ------------------------------------------------------------------ upload names (finding 8)


@pytest.mark.parametrize("raw, name", [
    ("x.csv", "x.csv"), ("../../x.csv", "x.csv"), ("/abs/x.csv", "x.csv"), ("a/../../b/x.csv", "x.csv"),
    ("C:\\Users\\me\\x.csv", "x.csv"), ("C:x.csv", "x.csv"), ("..\\..\\x.csv", "x.csv"), ("d/C:x.csv", "x.csv"),
    ("my trace (2).csv", "my trace (2).csv"), ("é.csv", "é.csv"),
])
def test_upload_names_are_reduced_to_their_last_component(raw, name):
    assert safe_upload_name(raw) == name


@pytest.mark.parametrize("raw, why", [
    ("", "has no file name"), (".", "has no file name"), ("..", "has no file name"), ("../", "has no file name"),
    ("/", "has no file name"), ("C:", "has no file name"), ("x\x00.csv", "control character"),
    ("x\n.csv", "control character"), ("\x1b[31mx.csv", "control character"), ("a" * 252 + ".csv", "longer than 255"),
])
def test_unusable_upload_names_are_refused_with_the_reason(raw, why):
    with pytest.raises(ScenarioError) as err:
        safe_upload_name(raw)
    assert why in str(err.value) and "rename the file" in str(err.value)
    assert "\x00" not in str(err.value) and "\x1b" not in str(err.value)  # shown escaped


@pytest.mark.parametrize("hostile", ["../../x.csv", "ABSOLUTE", "..\\..\\x.csv", "C:\\x.csv"])
def test_a_hostile_trace_name_writes_only_in_the_private_folder(tmp_path, hostile):
    sandbox = tmp_path / "sandbox"
    root = sandbox / "srv" / "uploads"
    root.mkdir(parents=True)
    (sandbox / "abs").mkdir()
    if hostile == "ABSOLUTE":
        hostile = str(sandbox / "abs" / "x.csv")  # a folder that exists: the old code wrote there
    before = files_under(sandbox)
    scenario = load_upload(Upload("mine.yaml", uses_trace("x.csv").encode()), Upload(hostile, TRACE), root)
    (stored,) = files_under(sandbox) - before
    assert stored.parent.parent == root and stored.name == "x.csv" and stored.read_bytes() == TRACE
    assert scenario.base_dir == stored.parent
    assert costsim.simulate(scenario).summary.jobs_submitted.iloc[0] == 3  # the trace it stored is the one read


def test_errors_name_the_trace_as_uploaded_never_by_a_server_path(tmp_path):
    root = tmp_path / "uploads"
    root.mkdir()
    bad = b"submit_h,gpus,duration_h\n1,8,2\n5,eight,3\n"
    with pytest.raises(ScenarioError) as err:
        load_upload(Upload("mine.yaml", uses_trace("x.csv").encode()), Upload("../../x.csv", bad), root)
    text = str(err.value)
    assert "x.csv:3: gpus: 'eight' is not a whole number" in text
    assert str(tmp_path) not in text and str(SCENARIO_DIR) not in text
    assert files_under(tmp_path) <= files_under(root)  # nothing outside the private folder


@pytest.mark.slow
def test_the_page_shows_no_server_path_and_writes_nowhere_else(monkeypatch, tmp_path):
    """The app itself: a trace uploaded as ``../../x.csv`` beside a scenario reading ``x.csv``
    runs, stored only in the private folder (made under this test's temporary folder)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["s"] = encode_scenario(BASELINE.replace("horizon_days: 365\n", "horizon_days: 30\n"))
    at.run()
    before = files_under(tmp_path)
    at.sidebar.file_uploader(key="trace_upload").upload("../../x.csv", TRACE, "text/csv")
    at.sidebar.file_uploader(key="upload").upload("mine.yaml", uses_trace("x.csv").encode(), "application/yaml").run()
    assert not at.exception and not at.error
    assert any("3 jobs" in s.value for s in at.subheader)
    (stored,) = files_under(tmp_path) - before
    assert stored.parent.parent.name.startswith("costsim-uploads-") and stored.name == "x.csv"
    # a broken trace under the same hostile name: the message names x.csv, not where it is kept
    at.sidebar.file_uploader(key="trace_upload").upload("../../x.csv", TRACE + b"9,nine,1\n", "text/csv").run()
    problems = "\n".join(c.value for c in at.code)
    assert "x.csv:5: gpus: 'nine' is not a whole number" in problems
    page = "\n".join(str(e.value) for kind in ("error", "code", "caption", "markdown", "subheader")
                     for e in getattr(at, kind))
    assert str(tmp_path) not in page and "costsim-uploads" not in page


# ------------------------------------------------------------------ bare URLs in text (finding 13)

# The literal-autolink patterns of Streamlit's Markdown renderer (mdast-util-gfm-autolink-literal,
# as in streamlit/static's StreamlitMarkdown bundle), found in the text after escapes are resolved.
# Without its previous-character conditions, so stricter than the renderer.
AUTOLINK = [re.compile(r"(https?://|www(?=\.))([-.\w]+)([^ \t\r\n]*)", re.IGNORECASE | re.ASCII),
            re.compile(r"([-.\w+]+)@([-\w]+(?:\.[-\w]+)+)", re.ASCII)]
MD = MarkdownIt("commonmark")


def linkable(markdown: str) -> list[str]:
    """What a GFM renderer would turn into links in ``markdown``'s text."""
    texts = [t.content for block in MD.parse(markdown) if block.children for t in block.children if t.type == "text"]
    return [m.group(0) for t in texts for pattern in AUTOLINK for m in pattern.finditer(t)]


def test_bare_urls_and_addresses_are_not_links():
    text = "Docs at https://example.com/x?y=1, www.example.org and HTTP://X.IO; mail ops@example.com."
    assert len(linkable(text)) == 4  # the oracle finds them in the raw text
    assert linkable(literal_markdown(text)) == []


LINKISH = st_.builds(lambda before, start, host, after: before + start + host + after,
                     st_.sampled_from(["", " ", "(", "x", "*", "see: "]),
                     st_.sampled_from(["http://", "https://", "HTTPS://", "www.", "WwW.", "me@", "a.b+c@", "http://u@"]),
                     st_.from_regex(r"[a-z0-9]{1,6}(\.[a-z]{2,4}){1,2}", fullmatch=True),
                     st_.sampled_from(["", "/p?q=1", ".", ")", " and www.x.org", "/a@b.cd"]))


@pytest.mark.slow
@given(st_.lists(LINKISH, min_size=1, max_size=3).map(" ".join))
def test_no_text_becomes_a_link(text):
    assert linkable(text)  # the oracle links the raw text
    assert linkable(literal_markdown(text)) == []


@pytest.mark.slow
def test_a_url_in_the_description_is_text_on_the_page():
    text = BASELINE.replace("horizon_days: 365\n", "horizon_days: 30\n").replace(
        "description: >-", 'description: "See https://example.com/docs or www.example.org, ask ops@example.com"\n'
                           "old: >-")
    text = re.sub(r"old: >-\n(  .*\n)+", "", text)
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["s"] = encode_scenario(text)
    at.run()
    assert not at.exception and not at.error
    (caption,) = [c.value for c in at.caption if "example" in c.value]
    assert linkable(caption) == []
    assert "https" in caption and "example" in caption  # the text is still there


# ------------------------------------------------------------------ ?s= that is not ours


@pytest.mark.parametrize("garbage", ["!!!", "%%%", "not-a-scenario", "AAAA", "eJw", "x" * 30])
def test_garbage_in_the_link_says_it_is_not_a_costsim_link(garbage):
    with pytest.raises(ScenarioError, match="this is not a costsim scenario link") as err:
        decode_scenario(garbage, 10**6)
    assert "cut short" not in str(err.value)


def test_a_link_cut_short_says_so():
    link = encode_scenario(BASELINE)
    with pytest.raises(ScenarioError, match="the link is cut short: it holds the start of a scenario"):
        decode_scenario(link[: len(link) // 2], 10**6)


@pytest.mark.slow
def test_garbage_link_on_the_page():
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["s"] = "!!!"
    at.run()
    assert not at.exception
    assert "showing a shipped scenario instead" in at.error[0].value
    assert f"{LINK}: s: this is not a costsim scenario link" in at.code[0].value
    assert at.sidebar.selectbox(key="scenario_choice").value == "baseline"


# ------------------------------------------------------------------ sweep upload metadata (finding 18)

DEEP = "[" * 100_000 + "]" * 100_000


def parquet(metadata: dict[bytes, bytes] | None = None, **columns) -> bytes:
    table = pa.table(columns or {"variant": ["v000"], "replication": [0]})
    if metadata is not None:
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **metadata})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def zipped(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


TASK = "out/runs/variant=v000/replication=0.parquet"
DAMAGED = [
    ("task.parquet", parquet({b"costsim.sweep": DEEP.encode()}), f"costsim.sweep metadata nests deeper than {MAX_JSON_DEPTH}"),
    ("task.parquet", parquet({b"pandas": DEEP.encode()}), f"pandas metadata nests deeper than {MAX_JSON_DEPTH}"),
    ("task.parquet", parquet({b"pandas": b"{}"}), "has damaged pandas metadata"),
    ("task.parquet", parquet({b"costsim.sweep": b""}), "costsim.sweep metadata is not JSON"),
    ("task.parquet", parquet({b"costsim.sweep": b'{"variant": {"a": 1}}'}), "damaged costsim.sweep metadata"),
    ("out.zip", zipped({"out/sweep.json": DEEP.encode(), TASK: parquet()}), "the manifest nests deeper"),
    ("out.zip", zipped({"out/sweep.json": b"", TASK: parquet()}), "the manifest is not JSON"),
    ("out.zip", zipped({"out/sweep.json": b'{"variants": [], "replications": "x"}', TASK: parquet()}),
     "replications must be a whole number"),
    ("out.zip", zipped({"out/sweep.json": b'{"variants": [{"id": "v0", "params": [1]}]}', TASK: parquet()}),
     "variants.0 is not an id with params"),
    ("out.zip", zipped({"out/sweep.json": b'{"variants": {"a": 1}}', TASK: parquet()}), "variants is not a list"),
]


@pytest.mark.parametrize("name, data, words", DAMAGED)
def test_damaged_sweep_metadata_is_refused_naming_the_file(name, data, words):
    with pytest.raises(ScenarioError) as err:
        read_uploads_here([Upload(name, data)])
    assert str(err.value).startswith(name) and words in str(err.value)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return one_node_scenario_file(tmp_path_factory.mktemp("tiny"), 60, jobs=100)


@pytest.mark.slow
@pytest.mark.parametrize("name, data, words", [DAMAGED[0], DAMAGED[2], DAMAGED[5]])
def test_damaged_sweep_metadata_on_the_page_is_a_message(monkeypatch, tiny, name, data, words):
    monkeypatch.setenv("COSTSIM_TABS_SCENARIO", str(tiny))
    monkeypatch.setenv("COSTSIM_TABS_WHICH", "sweep")
    at = AppTest.from_file(HARNESS, default_timeout=60).run()
    at.radio(key="tabs:sweep:source").set_value("Load a sweep's output").run()
    at.file_uploader(key="tabs:sweep:upload").set_value([(name, data, "application/octet-stream")]).run()
    assert not at.exception
    assert at.error and "This upload cannot be read." in at.error[0].value
    assert words in at.code[0].value
