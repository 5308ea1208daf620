"""Helios cluster_log.csv importer: hand-checked rows, SLURM state mapping, the queue column as
the observed delay, local times, malformed rows by file:line."""

from __future__ import annotations

import csv

import pytest
from paths import TRACE_SAMPLES

from costsim.scenario import ScenarioError
from costsim.traces import import_trace
from costsim.traces.common import ImportOptions, zone

SAMPLE = TRACE_SAMPLES / "helios_cluster_log.csv"
HEADER = "job_id,user,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue"


def test_sample_rows_checked_by_hand():
    r = import_trace("helios", SAMPLE)
    rows = {x["job_id"]: x for x in r.frame.to_dict("records")}
    j = rows["hJ0000"]  # submitted 00:00 (hour 0), 8 GPUs, ran 7200 s after waiting 300 s
    assert (j["submit_h"], j["gpus"], j["duration_h"], j["job_class"], j["status"]) == (0, 8, 2.0, "u001", "completed")
    assert j["observed_delay_h"] == pytest.approx(300 / 3600)
    j = rows["hJ0003"]  # 00:30, 16 GPUs, node failed after 1800 s, waited an hour
    assert (j["submit_h"], j["gpus"], j["duration_h"], j["status"], j["observed_delay_h"]) == \
        (0.5, 16, 0.5, "node_fail", 1.0)
    assert (rows["hJ0004"]["duration_h"], rows["hJ0004"]["status"]) == (24.0, "timeout")
    assert "hJ0001" not in rows and "hJ0002" not in rows  # cancelled while pending; a CPU job
    # Counts from the file itself: rows with GPUs and a start time are the jobs.
    with open(SAMPLE, newline="") as f:
        ran = [x for x in csv.DictReader(f) if int(x["gpu_num"]) > 0 and x["start_time"]]
    assert len(r.frame) == len(ran)
    assert (r.frame["gpus"] * r.frame["duration_h"]).sum() == pytest.approx(
        sum(int(x["gpu_num"]) * int(x["duration"]) for x in ran) / 3600, rel=1e-12)


def test_local_times_and_since(tmp_path):
    path = tmp_path / "helios.csv"
    path.write_text(f"{HEADER}\n"
                    "a,u,1,1,1,COMPLETED,2020-04-01 07:30:00,2020-04-01 07:30:00,2020-04-01 08:30:00,3600,0\n"
                    "b,u,1,1,1,COMPLETED,2020-04-01 08:30:00,2020-04-01 08:40:00,2020-04-01 09:40:00,3600,600\n")
    # --since 2020-04-01T00:00:00Z: in UTC+8 the first job was submitted at 23:30Z the day before.
    since = 1585699200.0
    r = import_trace("helios", path, ImportOptions(tz=zone("+08:00"), since_s=since))
    assert list(r.frame["job_id"]) == ["b"] and r.frame["submit_h"].iloc[0] == 0
    assert len(import_trace("helios", path, ImportOptions(since_s=since)).frame) == 2  # read as UTC


@pytest.mark.parametrize(("row", "field"), [
    ("x,u,1,1,1,DONE,2020-04-01 00:00:00,2020-04-01 00:00:00,2020-04-01 01:00:00,3600,0", "state"),
    ("x,u,-1,1,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:00,2020-04-01 01:00:00,3600,0", "gpu_num"),
    ("x,u,1,1,1,COMPLETED,2020-04-31 00:00:00,2020-04-01 00:00:00,2020-04-01 01:00:00,3600,0", "submit_time"),
    ("x,u,1,1,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:00,2020-04-01 01:00:00,-5,0", "duration"),
    ("x,u,1,1,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:00,2020-04-01 01:00:00,3600,-3", "queue"),
    ("x,u,1,1,1,COMPLETED,2020-04-01 01:00:00,2020-04-01 00:00:00,2020-04-01 01:00:00,3600,0", "start_time"),
    ("x,u,1,1,1,FAILED,2020-04-01 00:00:00,2020-04-01 00:00:00,,,", "duration"),
    # end before start although a duration is given: inconsistent, not a 1-hour job
    ("x,u,1,1,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 02:00:00,2020-04-01 01:00:00,3600,0", "end_time"),
])
def test_each_malformed_row_names_file_and_line(tmp_path, row, field):
    path = tmp_path / "helios.csv"
    path.write_text(f"{HEADER}\nok,u,1,1,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:00,"
                    f"2020-04-01 01:00:00,3600,0\n{row}\n")
    with pytest.raises(ScenarioError) as err:
        import_trace("helios", path)
    assert str(err.value).startswith(f"{path}:3: {field}")
    assert import_trace("helios", path, ImportOptions(skip_bad=True)).skipped == 1


def test_check_order_names_the_first_time_out_of_order():
    from costsim.traces.common import Report, check_order

    report = Report("f")
    assert check_order(report, 2, [("a", 1.0), ("b", None), ("c", 0.5)])  # b unknown: c is not compared with a
    assert not check_order(report, 3, [("a", None), ("b", 1.0)])
    assert not check_order(report, 4, [("a", 1.0), ("b", 2.0), ("c", 1.5)])
    assert not check_order(report, 5, [("a", 2.0), ("b", 1.0), ("c", 0.0)])
    assert [(p.line, p.loc, p.message) for p in report.problems] == [
        (3, ("a",), "is missing (every job has one)"), (4, ("c",), "is before b"), (5, ("b",), "is before a")]
