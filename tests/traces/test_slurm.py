"""SLURM sacct importer (costsim.traces.slurm): the shipped sample checked by hand, every kind of
malformed row named by file:line, --skip-bad counts, GPU types and time zones."""

from __future__ import annotations

from pathlib import Path

import pytest
from paths import TRACE_SAMPLES

from costsim.scenario import ScenarioError
from costsim.traces import import_trace
from costsim.traces.common import BadCell, ImportOptions, zone
from costsim.traces.slurm import parse_state, parse_tres

SAMPLE = TRACE_SAMPLES / "slurm_sacct.txt"
HEADER = "JobID|Submit|Start|End|Elapsed|State|AllocTRES|Account"
GOOD = "10|2024-03-01T08:00:00|2024-03-01T08:00:00|2024-03-01T09:00:00|01:00:00|COMPLETED|gres/gpu=1|lab"


def _rows(frame):
    return {r["job_id"]: r for r in frame.to_dict("records")}


def test_sample_rows_checked_by_hand():
    r = import_trace("slurm", SAMPLE)
    rows = _rows(r.frame)
    # 1000: the first submit (08:00) is hour 0; Elapsed 1-02:03:04 = 26 h 3 min 4 s; started 10 min late.
    j = rows["1000"]
    assert (j["submit_h"], j["gpus"], j["status"], j["job_class"]) == (0.0, 8, "completed", "llm")
    assert j["duration_h"] == pytest.approx(26 + 3 / 60 + 4 / 3600, abs=1e-12)
    assert j["observed_delay_h"] == pytest.approx(10 / 60)
    # 1002: cancelled while running, after 45 min; submitted 09:00 = hour 1; 4 A100s from AllocTRES.
    j = rows["1002"]
    assert (j["submit_h"], j["gpus"], j["duration_h"], j["status"], j["observed_delay_h"]) == \
        (1.0, 4, 0.75, "cancelled", 0.5)
    # Array tasks keep their ids; 1003_2 failed after 2 h and replays them.
    assert (rows["1003_1"]["submit_h"], rows["1003_1"]["gpus"], rows["1003_1"]["duration_h"]) == (1.25, 2, 1.0)
    assert (rows["1003_2"]["duration_h"], rows["1003_2"]["status"]) == (2.0, "failed")
    # Het job 1077 = 1077+0 (CPU only) + 1077+1 (16 GPUs): one job of 16 GPUs, 3 h, submitted 10:00.
    assert (rows["1077"]["submit_h"], rows["1077"]["gpus"], rows["1077"]["duration_h"]) == (2.0, 16, 3.0)
    # End Unknown, Elapsed 01:30:00 known: 1.5 h.
    assert (rows["1081"]["duration_h"], rows["1081"]["status"]) == (1.5, "node_fail")
    assert rows["1082"]["duration_h"] == pytest.approx(20 / 60) and rows["1082"]["status"] == "preempted"
    assert (rows["1083"]["duration_h"], rows["1083"]["gpus"], rows["1083"]["status"]) == (4.0, 8, "timeout")
    # Never replayed: cancelled before starting, CPU only, still running, a pending array range, steps.
    for gone in ("1001", "1080", "1084", "1003_[3-5]", "1077+0", "1077+1", "1000.batch"):
        assert gone not in rows
    assert not any("." in i or "+" in i for i in rows)


def _independent_count(path: Path) -> tuple[int, int]:
    """(jobs, GPU-hours) counted straight from the file: allocation lines (no step, no het part),
    started, not running/pending, with a gres/gpu total; plus the one het job (16 GPUs × 3 h)."""
    jobs, gpu_h = 0, 0.0
    lines = path.read_text().splitlines()[1:]
    for line in lines:
        f = line.split("|")
        jid, start, elapsed, state, alloc = f[0], f[7], f[9], f[10], f[11]
        if "." in jid or "+" in jid or "[" in jid or start in ("None", "Unknown") or state in ("RUNNING", "PENDING"):
            continue
        gpus = [int(t.split("=")[1]) for t in alloc.split(",") if t.startswith("gres/gpu=")]
        if not gpus:
            continue
        d, _, hms = elapsed.rpartition("-")
        h, m, s = (int(x) for x in hms.split(":"))
        jobs += 1
        gpu_h += gpus[0] * ((int(d) if d else 0) * 24 + h + m / 60 + s / 3600)
    return jobs + 1, gpu_h + 16 * 3


def test_sample_counts_agree_with_a_plain_count():
    r = import_trace("slurm", SAMPLE)
    jobs, gpu_h = _independent_count(SAMPLE)
    assert len(r.frame) == jobs
    assert (r.frame["gpus"] * r.frame["duration_h"]).sum() == pytest.approx(gpu_h, rel=1e-12)
    assert r.skipped == 0
    assert r.dropped["pending array range"] == 1 and r.dropped["no GPUs"] == 1
    assert r.frame["submit_h"].min() == 0 and r.frame["submit_h"].is_monotonic_increasing
    assert r.frame["job_id"].is_unique


def test_gpu_type_keeps_only_that_type():
    r = import_trace("slurm", SAMPLE, ImportOptions(gpu_type="H100"))
    rows = _rows(r.frame)
    assert {"1000", "1077", "1081", "1082"} <= set(rows) and not {"1002", "1083", "1003_1"} & set(rows)
    assert rows["1077"]["gpus"] == 16
    assert r.dropped["GPU type not recorded"] == 2  # the two untyped array tasks
    # Hour 0 is the first submit kept.
    assert rows["1000"]["submit_h"] == 0.0


def test_tres_and_states():
    assert parse_tres("billing=8,cpu=8,gres/gpu:h100=4,gres/gpu=4,mem=64G", None) == (4, None)
    assert parse_tres("gres/gpu:a100=2,gres/gpu:h100=4", None) == (6, None)
    assert parse_tres("gres/gpu:a100=2,gres/gpu:h100=4", "A100") == (2, None)
    assert parse_tres("gres/gpu=4", "h100") == (0, "GPU type not recorded")
    assert parse_tres("gres/gpu:a100=2", "h100") == (0, "another GPU type")
    assert parse_tres("cpu=4,mem=1G", None) == (0, "no GPUs")
    assert parse_state("CANCELLED by 0") == ("cancelled", True)
    assert parse_state("RUNNING") == ("running", False)


BAD = [  # (row, field named)
    ("11|2024-03-01T08:00:00|2024-03-01T08:00:00|2024-03-01T09:00:00|01:00:00|EXPLODED|gres/gpu=1|lab", "State"),
    ("11|yesterday|2024-03-01T08:00:00|2024-03-01T09:00:00|01:00:00|COMPLETED|gres/gpu=1|lab", "Submit"),
    ("11|2024-03-01T08:00:00|2024-03-01T08:00:00|2024-03-01T09:00:00|1:99:00|COMPLETED|gres/gpu=1|lab", "Elapsed"),
    ("11|2024-03-01T08:00:00|2024-03-01T08:00:00|2024-03-01T09:00:00|01:00:00|COMPLETED|gres/gpu=two|lab",
     "AllocTRES"),
    ("job11|2024-03-01T08:00:00|2024-03-01T08:00:00|2024-03-01T09:00:00|01:00:00|COMPLETED|gres/gpu=1|lab", "JobID"),
    ("11|2024-03-01T08:00:00|2024-03-01T08:00:00|01:00:00|COMPLETED|gres/gpu=1|lab", "has 7 fields"),
    ("11|2024-03-01T08:00:00|2024-03-01T09:00:00|2024-03-01T08:00:00||COMPLETED|gres/gpu=1|lab", "End"),
    ("11|2024-03-01T08:00:00|2024-03-01T07:00:00|2024-03-01T09:00:00|01:00:00|COMPLETED|gres/gpu=1|lab", "Start"),
    ("11|2024-03-01T08:00:00|2024-03-01T08:00:00|Unknown||FAILED|gres/gpu=1|lab", "Elapsed"),
    # End before Start with Elapsed given: an inconsistent record, not a 50-minute job
    ("11|2024-03-01T08:00:00|2024-03-01T08:10:00|2023-03-01T08:00:00|00:50:00|COMPLETED|gres/gpu=1|lab", "End"),
]


@pytest.mark.parametrize(("row", "field"), BAD)
def test_each_malformed_row_names_file_and_line(tmp_path, row, field):
    path = tmp_path / "sacct.txt"
    path.write_text(f"{HEADER}\n{GOOD}\n{row}\n")
    with pytest.raises(ScenarioError) as err:
        import_trace("slurm", path)
    assert str(err.value).startswith(f"{path}:3: {field}")
    assert len(err.value.problems) == 1
    r = import_trace("slurm", path, ImportOptions(skip_bad=True))
    assert (len(r.frame), r.skipped) == (1, 1)


def test_skip_bad_counts_every_kind(tmp_path):
    path = tmp_path / "sacct.txt"
    path.write_text("\n".join([HEADER, GOOD, *(row for row, _ in BAD)]) + "\n")
    with pytest.raises(ScenarioError) as err:
        import_trace("slurm", path)
    lines = str(err.value).splitlines()
    assert [ln.split(":")[1] for ln in lines[:8]] == [str(n) for n in range(3, 11)]
    assert f"{len(BAD) - 8} more bad row" in lines[-1]
    assert import_trace("slurm", path, ImportOptions(skip_bad=True)).skipped == len(BAD)


def test_missing_columns_name_line_1(tmp_path):
    path = tmp_path / "sacct.txt"
    path.write_text("JobID|Submit|Start|State|AllocTRES\n1|x|x|x|x\n")
    with pytest.raises(ScenarioError, match=r"sacct.txt:1: missing column\(s\) End"):
        import_trace("slurm", path)
    path.write_text("JobID|Submit|Start|End|State\n1|2024-01-01|2024-01-01|2024-01-01|COMPLETED\n")
    with pytest.raises(ScenarioError, match=r"sacct.txt:1: missing column AllocTRES or ReqTRES"):
        import_trace("slurm", path)


def _two_jobs(tmp_path, first: str, second: str) -> Path:
    path = tmp_path / "tz.txt"
    path.write_text(f"{HEADER}\n"
                    f"1|{first}|{first}|Unknown|01:00:00|COMPLETED|gres/gpu=1|lab\n"
                    f"2|{second}|{second}|Unknown|01:00:00|COMPLETED|gres/gpu=1|lab\n")
    return path


def test_time_zones_and_epoch_seconds(tmp_path):
    # 10:00+02:00 is 08:00Z; an epoch number 1709290800 is 2024-03-01T11:00:00Z: 3 h later.
    r = import_trace("slurm", _two_jobs(tmp_path, "2024-03-01T10:00:00+02:00", "1709290800"))
    assert list(r.frame["submit_h"]) == [0.0, 3.0]
    # Naive local times across the spring DST change in Paris (02:00 -> 03:00 on 2024-03-31):
    # 01:30 and 03:30 local are one hour apart, not two.
    path = _two_jobs(tmp_path, "2024-03-31T01:30:00", "2024-03-31T03:30:00")
    paris = import_trace("slurm", path, ImportOptions(tz=zone("Europe/Paris")))
    assert list(paris.frame["submit_h"]) == [0.0, 1.0]
    assert list(import_trace("slurm", path).frame["submit_h"]) == [0.0, 2.0]  # read as UTC


def test_since_until_window_and_hour_zero(tmp_path):
    path = _two_jobs(tmp_path, "2024-03-01T08:00:00", "2024-03-01T12:00:00")
    tz = zone("+08:00")
    since = 1709280000 + 3600 - 8 * 3600  # 09:00 in UTC+8 (= 01:00Z), naive stamps read in UTC+8
    r = import_trace("slurm", path, ImportOptions(tz=tz, since_s=since))
    assert list(r.frame["job_id"]) == ["2"] and list(r.frame["submit_h"]) == [0.0]
    assert r.dropped == {"outside --since/--until": 1}
    r = import_trace("slurm", path, ImportOptions(tz=tz, until_s=since))
    assert list(r.frame["job_id"]) == ["1"]
    with pytest.raises(ScenarioError, match="no job to replay"):
        import_trace("slurm", path, ImportOptions(tz=tz, since_s=since + 86400))


def test_every_bad_row_is_reported_in_one_pass_in_line_order(tmp_path):
    # Line 3: too many GPUs (found when the frame is built); line 4: a bad cell (found while
    # reading); line 5: an Elapsed longer than costsim accepts. One run names all three, in order.
    path = tmp_path / "sacct.txt"
    path.write_text("\n".join([
        HEADER, GOOD,
        "21|2024-03-01T08:00:00|2024-03-01T08:00:00|2024-03-01T09:00:00|01:00:00|COMPLETED|gres/gpu=99999999|lab",
        "22|2024-03-01T08:00:00|2024-03-01T08:00:00|2024-03-01T09:00:00|01:00:00|EXPLODED|gres/gpu=1|lab",
        "23|2024-03-01T08:00:00|2024-03-01T08:00:00|2024-03-01T09:00:00|99999999-00:00:00|COMPLETED|gres/gpu=1|lab",
    ]) + "\n")
    with pytest.raises(ScenarioError) as err:
        import_trace("slurm", path)
    lines = str(err.value).splitlines()
    assert [ln.split(":")[1] for ln in lines] == ["3", "4", "5"]
    assert ": gpus:" in lines[0] and ": State:" in lines[1] and ": duration:" in lines[2]
    skipped = import_trace("slurm", path, ImportOptions(skip_bad=True))
    assert [p.line for p in skipped.problems] == [3, 4, 5] and len(skipped.frame) == 1


def test_a_heterogeneous_job_keeps_its_gpu_hours_and_its_worst_status(tmp_path):
    # 77+0: 2 GPUs for 1 h (completed); 77+1: 4 GPUs for 2 h (failed). One job of 6 GPUs whose
    # GPU-hours are the components' 2 + 8 = 10: 10/6 h; failed, because a component failed.
    path = tmp_path / "sacct.txt"
    path.write_text("\n".join([
        HEADER,
        "77+0|2024-03-01T08:00:00|2024-03-01T08:00:00|2024-03-01T09:00:00|01:00:00|COMPLETED|gres/gpu=2|lab",
        "77+1|2024-03-01T08:00:00|2024-03-01T08:00:00|2024-03-01T10:00:00|02:00:00|FAILED|gres/gpu=4|lab",
    ]) + "\n")
    frame = import_trace("slurm", path).frame
    assert len(frame) == 1
    row = frame.iloc[0]
    assert row.gpus == 6 and row.duration_h == pytest.approx(10 / 6) and row.status == "failed"


def test_gres_that_are_not_gpu_counts_are_ignored():
    # gpumem, gpu-util and mps are gres but not GPU counts: they neither abort nor add GPUs.
    tres = "cpu=8,gres/gpumem=80G,gres/gpu-util=100,gres/gpu:h100=4,gres/mps=200,gres/gpu=4"
    assert parse_tres(tres, None) == (4, None) and parse_tres(tres, "h100") == (4, None)
    assert parse_tres("cpu=8,gres/gpumem=80G", None) == (0, "no GPUs")
    with pytest.raises(BadCell):
        parse_tres("gres/gpu:h100=four", None)  # a GPU count that is not a number still is one


def test_a_header_only_file_says_so(tmp_path):
    path = tmp_path / "sacct.txt"
    path.write_text(f"{HEADER}\n\n")
    with pytest.raises(ScenarioError, match=r"sacct.txt: has a header line and no job rows"):
        import_trace("slurm", path)
