"""The Philly importer (costsim/traces/philly.py) on the shipped sample and on hand-made files.

Truth comes from the sample's hand-made jobs (worked out in tests/data/traces/make_samples_philly_pai.py)
and from reading the JSON here with ``json`` and ``datetime`` alone, not through the importer."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pandas as pd
import pytest
from paths import TRACE_SAMPLES
from trace_import_helpers import assert_round_trip, cli

from costsim.scenario.errors import ScenarioError
from costsim.traces import import_trace
from costsim.traces.common import COLUMNS, ImportOptions

SAMPLE = TRACE_SAMPLES / "philly_cluster_job_log.json"


def _t(text: str) -> float:
    """Epoch seconds of a naive Philly time read as UTC (the importer's default zone)."""
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=ZoneInfo("UTC")).timestamp()


@pytest.fixture(scope="module")
def sample():
    return import_trace("philly", SAMPLE)


@pytest.fixture(scope="module")
def raw():
    return json.loads(SAMPLE.read_text())


def test_layout_and_row_count(sample, raw):
    frame = sample.frame
    assert list(frame.columns) == list(COLUMNS)
    # A job is replayed when it has an attempt, is not Running, its last attempt ended and at least
    # one attempt has both times and a GPU.
    def replayed(job):
        a = job["attempts"]
        return (job["status"] != "Running" and a and a[-1]["end_time"] is not None
                and any(x["start_time"] and x["end_time"] and x["detail"] for x in a))
    expected = [j["jobid"] for j in raw if replayed(j)]
    assert len(frame) == len(expected) == 286
    assert set(frame.job_id) == set(expected)
    assert sample.dropped["never ran (no attempt)"] == sum(1 for j in raw if not j["attempts"])
    assert sample.dropped["running (not replayed)"] == sum(
        1 for j in raw if j["attempts"] and j["attempts"][-1]["end_time"] is None)
    assert sample.skipped == 0
    assert frame.submit_h.is_monotonic_increasing and frame.submit_h.iloc[0] == 0


def test_hand_jobs(sample):
    f = sample.frame.set_index("job_id")
    # job, submit_h, gpus, duration_h, observed_delay_h, status, job_class (see the generator)
    hand = [
        ("application_hand_0001", 0.0, 8, 2.0, 0.1, "completed", "vc-hand"),
        ("application_hand_0002", 0.25, 8, 2.5, 0.25, "cancelled", "vc-hand"),
        ("application_hand_0004", 0.5, 8, 2.5, 0.5, "completed", "vc-other"),
        ("application_hand_0005", 1.0, 2, 1.0, 0.0, "completed", "vc-other"),
    ]
    for jid, submit, gpus, dur, delay, status, cls in hand:
        row = f.loc[jid]
        assert (row.submit_h, row.gpus, row.status, row.job_class) == pytest.approx((submit, gpus, status, cls))
        assert row.duration_h == pytest.approx(dur) and row.observed_delay_h == pytest.approx(delay)
    assert "application_hand_0003" not in f.index  # no attempts


def test_gpu_hours_and_submit_offsets_of_every_job(sample, raw):
    """Each job's GPUs × duration is the GPU-hours of its timed attempts; gpus its largest attempt."""
    by_id = {j["jobid"]: j for j in raw}
    first = min(_t(by_id[i]["submitted_time"]) for i in sample.frame.job_id)
    for row in sample.frame.itertuples():
        job = by_id[row.job_id]
        timed = [a for a in job["attempts"] if a["start_time"] and a["end_time"]]
        sizes = [sum(len(m["gpus"]) for m in a["detail"]) for a in timed]
        gpu_h = sum(g * (_t(a["end_time"]) - _t(a["start_time"])) / 3600 for g, a in zip(sizes, timed, strict=True))
        assert row.gpus == max(sizes)
        assert row.gpus * row.duration_h == pytest.approx(gpu_h, rel=1e-12)
        assert row.submit_h == pytest.approx((_t(job["submitted_time"]) - first) / 3600)
        starts = [_t(a["start_time"]) for a in job["attempts"] if a["start_time"]]
        assert row.observed_delay_h == pytest.approx((min(starts) - _t(job["submitted_time"])) / 3600)


def _job(jobid="j1", submitted="2017-10-02 08:00:00", attempts=None, **kw):
    if attempts is None:
        attempts = [{"start_time": "2017-10-02 08:30:00", "end_time": "2017-10-02 09:30:00",
                     "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1"]}]}]
    return {"status": "Pass", "vc": "v", "jobid": jobid, "attempts": attempts, "submitted_time": submitted,
            "user": "u", **kw}


def _write(path: Path, jobs: list) -> Path:
    """One job per line inside the array: job k (from 0) starts on line k + 2."""
    path.write_text("[\n" + ",\n".join(json.dumps(j) for j in jobs) + "\n]\n")
    return path


def test_timezone_across_the_dst_change(tmp_path):
    """2017-11-05 00:30 → 03:00 is 2.5 h on a clock without DST and 3.5 h in Los Angeles."""
    job = _job(submitted="2017-11-05 00:30:00", attempts=[
        {"start_time": "2017-11-05 00:30:00", "end_time": "2017-11-05 03:00:00", "detail": [{"gpus": ["g"]}]}])
    path = _write(tmp_path / "log.json", [job])
    assert import_trace("philly", path).frame.duration_h[0] == pytest.approx(2.5)
    la = ImportOptions(tz=ZoneInfo("America/Los_Angeles"))
    assert import_trace("philly", path, la).frame.duration_h[0] == pytest.approx(3.5)


def test_the_largest_attempt_sets_the_gpus_and_gpu_hours_are_kept(tmp_path):
    """8 GPUs for 1 h, then 4 GPUs for 2 h: 16 GPU-hours on 8 GPUs = 2 h (whatever the order)."""
    big = _attempt(start="2017-10-02 08:00:00", end="2017-10-02 09:00:00", detail=[{"gpus": list(range(8))}])
    small = _attempt(start="2017-10-02 09:00:00", end="2017-10-02 11:00:00", detail=[{"gpus": list(range(4))}])
    row = import_trace("philly", _write(tmp_path / "log.json", [_job(attempts=[big, small])])).frame.iloc[0]
    assert (row.gpus, row.duration_h) == (8, pytest.approx(2.0))


def test_json_lines_read_as_the_array(tmp_path):
    jobs = [_job("a"), _job("b", submitted="2017-10-02 08:10:00")]
    lines = tmp_path / "log.jsonl"
    lines.write_text("\n".join(json.dumps(j) for j in jobs) + "\n")
    array = _write(tmp_path / "log.json", jobs)
    pd.testing.assert_frame_equal(import_trace("philly", lines).frame, import_trace("philly", array).frame)


def _attempt(start="2017-10-02 08:30:00", end="2017-10-02 09:30:00", detail=None):
    return {"start_time": start, "end_time": end, "detail": detail if detail is not None else [{"gpus": ["g0"]}]}


BAD = {  # kind -> (the bad job, the field named, words in the message)
    "not an object": (["not", "a", "job"], "", "is not a JSON object"),
    "no jobid": ({k: v for k, v in _job().items() if k != "jobid"}, "jobid", "is missing"),
    "unknown status": (_job(status="Done"), "status", "is not a Philly status"),
    "bad submitted_time": (_job(submitted="2017-13-45 08:00:00"), "submitted_time", "is not a time"),
    "no submitted_time": (_job(submitted=None), "submitted_time", "is missing"),
    "time not a string": (_job(attempts=[_attempt(start=1506000000)]), "attempts.0.start_time", "is not a time"),
    "attempts not a list": (_job(attempts={"start_time": "x"}), "attempts", "is not a list"),
    "attempt not an object": (_job(attempts=["x"]), "attempts.0", "is not an object"),
    "end before start": (_job(attempts=[_attempt(end="2017-10-02 08:00:00")]), "attempts.0.end_time",
                         "is before start_time"),
    "start before submit": (_job(attempts=[_attempt(start="2017-10-02 07:00:00")]), "attempts.0.start_time",
                            "is before submitted_time"),
    "detail not a list": (_job(attempts=[_attempt(detail={"gpus": []})]), "attempts.0.detail", "is not a list"),
    "gpus not a list": (_job(attempts=[_attempt(detail=[{"ip": "m1", "gpus": 8}])]), "attempts.0.detail.0.gpus",
                        "is not a list of GPUs"),
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_each_malformed_job_names_file_line_index_and_id(tmp_path, kind):
    bad, field, words = BAD[kind]
    path = _write(tmp_path / "log.json", [_job("good-0"), _job("good-1"), bad, _job("good-3")])
    with pytest.raises(ScenarioError) as err:
        import_trace("philly", path)
    (message,) = str(err.value).splitlines()
    named = "job 2" + (f" ({bad['jobid']})" if isinstance(bad, dict) and "jobid" in bad else "")
    assert message.startswith(f"{path}:4: " + (f"{field}: " if field else "") + named + ": "), message
    assert words in message
    skipped = import_trace("philly", path, ImportOptions(skip_bad=True))
    assert skipped.skipped == 1 and list(skipped.frame.job_id) == ["good-0", "good-1", "good-3"]


@pytest.mark.parametrize("text, line, words", [
    ('[\n{"jobid": "a",\n "status": }\n]', 3, "not valid JSON"),
    ("", None, "the file is empty"),
    ('[\n{"jobid": "a"}\n', 3, "not closed"),
    ('[{"jobid": "a"}] [', 1, "text after the end"),
    ('[{"jobid": "a"} {"jobid": "b"}]', 1, "expected ','"),
])
def test_broken_json_is_one_error_with_its_line(tmp_path, text, line, words):
    path = tmp_path / "log.json"
    path.write_text(text)
    with pytest.raises(ScenarioError) as err:
        import_trace("philly", path)
    message = str(err.value)
    assert message.startswith(f"{path}:{line}:" if line else f"{path}: ") and words in message, message


def test_dropped_jobs_are_counted_not_errors(tmp_path):
    jobs = [_job("ok"),
            _job("never", attempts=[]),
            _job("running", status="Running", attempts=[_attempt(end=None)]),
            _job("open-last", attempts=[_attempt(), _attempt(start="2017-10-02 10:00:00", end=None)]),
            _job("gap", attempts=[_attempt(end=None), _attempt(start="2017-10-02 10:00:00",
                                                                 end="2017-10-02 11:00:00")]),
            _job("no-gpu", attempts=[_attempt(detail=[])])]
    result = import_trace("philly", _write(tmp_path / "log.json", jobs))
    assert list(result.frame.job_id) == ["ok", "gap"]
    assert result.dropped == {"never ran (no attempt)": 1, "running (not replayed)": 2,
                              "attempts with no start or end time (left out of their jobs)": 1, "no GPUs recorded": 1}
    assert result.frame.set_index("job_id").loc["gap", "duration_h"] == pytest.approx(1.0)


def test_round_trip_import_validate_simulate(sample, tmp_path):
    assert_round_trip("philly", SAMPLE, sample.frame, tmp_path)


def test_cli_bad_job_exits_2_and_writes_nothing(tmp_path):
    path = _write(tmp_path / "log.json", [_job("a"), _job("b", status="Done")])
    out = cli("philly", str(path), "--out", str(tmp_path / "trace.csv"))
    assert out.exit_code == 2 and f"{path}:3: status: job 1 (b):" in out.output
    assert "Traceback" not in out.output and not (tmp_path / "trace.csv").exists()
