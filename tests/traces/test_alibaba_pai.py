"""The Alibaba PAI 2020 importer (costsim/traces/alibaba_pai.py) on the shipped sample and hand-made files.

Truth comes from the sample's hand-made jobs (worked out in tests/data/traces/make_samples_philly_pai.py)
and from pandas group-bys of the two tables here, not through the importer."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from paths import TRACE_SAMPLES
from trace_import_helpers import assert_round_trip, cli

from costsim.scenario.errors import ScenarioError
from costsim.traces import import_trace
from costsim.traces.alibaba_pai import JOB_COLUMNS, TASK_COLUMNS
from costsim.traces.common import COLUMNS, ImportOptions

DATA = TRACE_SAMPLES
JOBS = DATA / "pai_job_table.csv"


@pytest.fixture(scope="module")
def sample():
    return import_trace("alibaba-pai", JOBS)


@pytest.fixture(scope="module")
def tables():
    jobs = pd.read_csv(JOBS, header=None, names=JOB_COLUMNS)
    tasks = pd.read_csv(DATA / "pai_task_table.csv", header=None, names=TASK_COLUMNS)
    return jobs, tasks


def _truth(jobs: pd.DataFrame, tasks: pd.DataFrame, gpu_type: str | None = None) -> pd.DataFrame:
    """Per replayed job: GPUs (Σ inst_num × plan_gpu / 100), first launch, last end, submit."""
    gpu = tasks[tasks.plan_gpu.fillna(0) > 0]
    per = pd.DataFrame({
        "gpus": (gpu.inst_num * gpu.plan_gpu / 100).groupby(gpu.job_name).sum(),
        "types": gpu.groupby("job_name").gpu_type.agg(lambda s: set(s.str.lower())),
        "first": tasks.groupby("job_name").start_time.min(),
        "last": tasks.groupby("job_name").end_time.max(),
    }).dropna(subset=["gpus", "first"])
    done = jobs[jobs.status.isin(["Terminated", "Failed"])].set_index("job_name")
    per = per.join(done[["start_time", "user"]], how="inner")
    if gpu_type is not None:
        per = per[per.types.apply(lambda t: t == {gpu_type.lower()})]
    return per


def test_layout_and_row_count(sample, tables):
    frame = sample.frame
    truth = _truth(*tables)
    assert list(frame.columns) == list(COLUMNS)
    assert len(frame) == len(truth) == 267
    assert set(frame.job_id) == set(truth.index)
    jobs, tasks = tables
    assert sample.dropped["running (not replayed)"] == (jobs.status == "Running").sum()
    assert sample.dropped["never started"] == (jobs.status == "Waiting").sum()
    assert sample.skipped == 0 and frame.submit_h.iloc[0] == 0 and frame.submit_h.is_monotonic_increasing


@pytest.mark.parametrize("fractional, hand", [
    # job, submit_h, gpus, duration_h, observed_delay_h, status (see the generator)
    ("round-up", [("a1", 0.0, 1, 2.0, 0.1, "completed"), ("a2", 0.5, 2, 2.0, 0.25, "completed"),
                  ("a3", 1.0, 1, 0.25, 0.25, "failed"), ("a4", 1 + 400 / 3600, 4, 4.0, 0.0, "completed")]),
    ("pool", [("a1", 0.0, 1, 2.0, 0.1, "completed"), ("a2", 0.5, 2, 2.0, 0.25, "completed"),
              ("a3", 1.0, 1, 0.1875, 0.25, "failed"), ("a4", 1 + 400 / 3600, 4, 4.0, 0.0, "completed")]),
])
def test_hand_jobs(fractional, hand):
    f = import_trace("alibaba-pai", JOBS, ImportOptions(fractional=fractional)).frame.set_index("job_id")
    for short, submit, gpus, dur, delay, status in hand:
        row = f.loc[f"hand000000000000000000{short}"]
        assert (row.submit_h, row.gpus, row.duration_h, row.observed_delay_h) == pytest.approx(
            (submit, gpus, dur, delay))
        assert row.status == status and row.job_class == "u-hand"
    assert not {"hand000000000000000000a5", "hand000000000000000000a6"} & set(f.index)  # CPU only, Waiting


def test_gpus_durations_and_offsets_of_every_job(sample, tables):
    truth = _truth(*tables)
    first = truth.start_time.min()
    f = sample.frame.set_index("job_id").loc[truth.index]
    assert (f.gpus.to_numpy() == np.ceil(truth.gpus.to_numpy() - 1e-9)).all()
    assert np.allclose(f.duration_h, (truth["last"] - truth["first"]) / 3600)
    assert np.allclose(f.submit_h, (truth.start_time - first) / 3600)
    assert np.allclose(f.observed_delay_h, (truth["first"] - truth.start_time) / 3600)
    assert (f.job_class == truth.user).all()
    pooled = import_trace("alibaba-pai", JOBS, ImportOptions(fractional="pool")).frame.set_index("job_id")
    # Pooling keeps the GPU-hours the tasks asked for.
    gpu_h = truth.gpus * (truth["last"] - truth["first"]) / 3600
    assert np.allclose((pooled.gpus * pooled.duration_h).loc[truth.index], gpu_h)


def test_gpu_type_keeps_jobs_all_on_that_type(tables):
    result = import_trace("alibaba-pai", JOBS, ImportOptions(gpu_type="v100"))
    truth = _truth(*tables, gpu_type="V100")
    assert set(result.frame.job_id) == set(truth.index) and len(truth) > 10
    assert result.dropped["another GPU type"] > 100


def test_a_header_line_is_read_too(sample, tmp_path):
    for name, columns in (("pai_job_table.csv", JOB_COLUMNS), ("pai_task_table.csv", TASK_COLUMNS)):
        (tmp_path / name).write_text(",".join(columns) + "\n" + (DATA / name).read_text())
    pd.testing.assert_frame_equal(import_trace("alibaba-pai", tmp_path / "pai_job_table.csv").frame, sample.frame)


def test_the_task_table_is_found_beside_the_job_table(sample, tmp_path):
    shutil.copy(JOBS, tmp_path / "july_job_table.csv")
    shutil.copy(DATA / "pai_task_table.csv", tmp_path / "july_task_table.csv")
    pd.testing.assert_frame_equal(import_trace("alibaba-pai", tmp_path / "july_job_table.csv").frame, sample.frame)
    (tmp_path / "july_task_table.csv").unlink()
    with pytest.raises(ScenarioError) as err:
        import_trace("alibaba-pai", tmp_path / "july_job_table.csv")
    assert str(err.value).startswith(f"{tmp_path / 'pai_task_table.csv'}: the PAI task table is not found")


GOOD_JOBS = ["g1,i1,u,Terminated,1000.0,5000.0", "g2,i2,u,Failed,1100.0,4000.0"]
GOOD_TASKS = ["g1,worker,1.0,Terminated,1060.0,4600.0,600.0,29.3,100.0,V100",
              "g2,worker,2.0,Failed,1200.0,3000.0,600.0,29.3,50.0,T4"]
J = "x,ix,u,Terminated,2000.0,9000.0"  # a good job x ...
T = "x,worker,1.0,Terminated,2100.0,8000.0,600.0,29.3,100.0,V100"  # ... and its task

BAD_JOB_ROWS = {  # kind -> (job row, task row, field, words)
    "missing field": ("x,ix,u,Terminated,2000.0", T, "", "has 5 fields"),
    "empty job_name": (" ,ix,u,Terminated,2000.0,9000.0", T, "job_name", "is empty"),
    "repeated job_name": ("g1,ix,u,Terminated,2000.0,9000.0", T, "job_name", "appears twice (first at line 1)"),
    "unknown status": ("x,ix,u,Done,2000.0,9000.0", T, "status", "is not a PAI job status"),
    "bad submit": ("x,ix,u,Terminated,soon,9000.0", T, "start_time", "is not a time"),
    "no submit": ("x,ix,u,Terminated,,9000.0", T, "start_time", "is missing"),
    "end before submit": ("x,ix,u,Terminated,2000.0,1500.0", T, "end_time", "is before start_time"),
    "task before submit": ("x,ix,u,Terminated,2200.0,9000.0", T, "start_time", "after the launch of its task"),
}
BAD_TASK_ROWS = {
    "missing field": ("x,worker,1.0,Terminated,2100.0,8000.0,600.0,29.3,100.0", "", "has 9 fields"),
    "empty job_name": (" ,worker,1.0,Terminated,2100.0,8000.0,600.0,29.3,100.0,V100", "job_name", "is empty"),
    "inst_num not whole": ("x,worker,1.5,Terminated,2100.0,8000.0,600.0,29.3,100.0,V100", "inst_num", "whole number"),
    "no inst_num": ("x,worker,,Terminated,2100.0,8000.0,600.0,29.3,100.0,V100", "inst_num", "whole number"),
    "negative plan_gpu": ("x,worker,1.0,Terminated,2100.0,8000.0,600.0,29.3,-50,V100", "plan_gpu", "percentage"),
    "text plan_gpu": ("x,worker,1.0,Terminated,2100.0,8000.0,600.0,29.3,half,V100", "plan_gpu", "percentage"),
    "bad launch": ("x,worker,1.0,Terminated,2100.0.0,8000.0,600.0,29.3,100.0,V100", "start_time", "is not a time"),
    "end before launch": ("x,worker,1.0,Terminated,2100.0,2000.0,600.0,29.3,100.0,V100", "end_time", "is before"),
}


def _write(folder: Path, jobs: list[str], tasks: list[str]) -> Path:
    (folder / "pai_task_table.csv").write_text("\n".join(tasks) + "\n")
    path = folder / "pai_job_table.csv"
    path.write_text("\n".join(jobs) + "\n")
    return path


@pytest.mark.parametrize("kind", sorted(BAD_JOB_ROWS))
def test_each_malformed_job_row_names_file_and_line(tmp_path, kind):
    job, task, field, words = BAD_JOB_ROWS[kind]
    path = _write(tmp_path, GOOD_JOBS + [job], GOOD_TASKS + [task])
    with pytest.raises(ScenarioError) as err:
        import_trace("alibaba-pai", path)
    (message,) = str(err.value).splitlines()
    assert message.startswith(f"{path}:3: " + (f"{field}: " if field else "")) and words in message, message
    skipped = import_trace("alibaba-pai", path, ImportOptions(skip_bad=True))
    assert skipped.skipped == 1 and list(skipped.frame.job_id) == ["g1", "g2"]


@pytest.mark.parametrize("kind", sorted(BAD_TASK_ROWS))
def test_each_malformed_task_row_names_the_task_file_and_line(tmp_path, kind):
    task, field, words = BAD_TASK_ROWS[kind]
    path = _write(tmp_path, GOOD_JOBS + [J], GOOD_TASKS + [task])
    tasks = tmp_path / "pai_task_table.csv"
    with pytest.raises(ScenarioError) as err:
        import_trace("alibaba-pai", path)
    (message,) = str(err.value).splitlines()
    assert message.startswith(f"{tasks}:3: " + (f"{field}: " if field else "")) and words in message, message
    skipped = import_trace("alibaba-pai", path, ImportOptions(skip_bad=True))
    assert skipped.skipped == 1 and "pai_task_table.csv:3:" in skipped.problems[0].message
    # The job of a skipped task row is not replayed with part of its GPUs (or, when the row names
    # no job, x has no task row left).
    assert list(skipped.frame.job_id) == ["g1", "g2"]
    assert skipped.dropped == ({"no task row": 1} if kind == "empty job_name" else {"a bad task row (skipped)": 1})


def test_dropped_rows_are_counted_not_errors(tmp_path):
    jobs = GOOD_JOBS + ["w,iw,u,Waiting,2000.0,", "r,ir,u,Running,2000.0,", "c,ic,u,Terminated,2000.0,3000.0",
                        "n,in,u,Terminated,2000.0,3000.0", "e,ie,u,Terminated,2000.0,"]
    tasks = GOOD_TASKS + ["w,worker,1.0,Waiting,,,600.0,29.3,100.0,V100",
                          "r,worker,1.0,Running,2100.0,,600.0,29.3,100.0,V100",
                          "c,ps,1.0,Terminated,2100.0,2900.0,600.0,29.3,,",
                          "e,worker,1.0,Terminated,2100.0,,600.0,29.3,100.0,V100",
                          "orphan,worker,1.0,Terminated,2100.0,2900.0,600.0,29.3,100.0,V100"]
    result = import_trace("alibaba-pai", _write(tmp_path, jobs, tasks))
    assert list(result.frame.job_id) == ["g1", "g2"]
    assert result.dropped == {"never started": 1, "running (not replayed)": 1, "no GPUs": 1, "no task row": 1,
                              "no end time recorded": 1, "task rows of no job": 1}


def test_a_launched_task_without_end_ends_with_its_job(tmp_path):
    path = _write(tmp_path, ["j,ij,u,Terminated,0.0,7200.0"],
                  ["j,ps,1.0,Terminated,0.0,3600.0,600.0,29.3,,",
                   "j,worker,3.0,Terminated,360.0,,600.0,29.3,25.0,P100"])
    row = import_trace("alibaba-pai", path).frame.iloc[0]
    assert (row.gpus, row.duration_h, row.observed_delay_h) == (1, 2.0, 0.0)
    assert math.isclose(import_trace("alibaba-pai", path, ImportOptions(fractional="pool")).frame.duration_h[0], 1.5)


def test_round_trip_import_validate_simulate(sample, tmp_path):
    assert_round_trip("alibaba-pai", JOBS, sample.frame, tmp_path, flags=("--mixed-gpu-types",))  # 5 GPU types


def test_cli_bad_task_row_exits_2_and_writes_nothing(tmp_path):
    path = _write(tmp_path, GOOD_JOBS, GOOD_TASKS[:1] + ["g2,worker,2.0,Failed,1200.0,3000.0,600.0,29.3,lots,T4"])
    out = cli("alibaba-pai", str(path), "--out", str(tmp_path / "trace.csv"))
    assert out.exit_code == 2 and f"{tmp_path / 'pai_task_table.csv'}:2: plan_gpu:" in out.output
    assert "Traceback" not in out.output and not (tmp_path / "trace.csv").exists()
    out = cli("alibaba-pai", str(path), "--out", str(tmp_path / "trace.csv"), "--skip-bad")
    assert out.exit_code == 0 and "pai_task_table.csv:2: plan_gpu:" in out.output
    assert pd.read_csv(tmp_path / "trace.csv").job_id.tolist() == ["g1"]


def test_since_until_in_the_tables_seconds(tables):
    """PAI seconds are epoch seconds to --since/--until; hour 0 is the first submit kept."""
    jobs, _ = tables
    result = import_trace("alibaba-pai", JOBS, ImportOptions(since_s=200000.0, until_s=400000.0))
    truth = _truth(*tables)
    kept = truth[(truth.start_time >= 200000) & (truth.start_time < 400000)]
    assert set(result.frame.job_id) == set(kept.index) and len(kept) > 50
    assert np.allclose(result.frame.submit_h, (np.sort(kept.start_time) - kept.start_time.min()) / 3600)
