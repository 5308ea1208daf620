"""What ``costsim import-trace`` says about a record's shape (the active window, the longest jobs'
GPU-hours, jobs still running at its end, what whole-GPU rounding added) and its refusal of a
record that mixes GPU types. Every expected figure is worked out by hand in the test."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import invoke_cli
from paths import TRACE_SAMPLES

from costsim.present.trace_shape import shape_lines
from costsim.traces import import_trace
from costsim.traces.common import ImportOptions, Report
from costsim.traces.shape import active_window, record_shape
from costsim.traces.slurm import jobs as slurm_rows
from costsim.traces.slurm_columnar import read_columns
from costsim.traces.table import build_table

DATA = TRACE_SAMPLES
PODS = "name,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,scheduled_time,deletion_time\n"


def test_active_window_is_the_tightest_window_of_ninety_percent_of_arrivals():
    # 20 jobs: two early (hours 0 and 50), 18 at hours 90..107. k = ceil(0.9 * 20) = 18; the
    # tightest 18 consecutive arrivals are 90..107 (17 h); any window reaching back to 50 is 57 h.
    t = np.array([0.0, 50.0] + [90.0 + i for i in range(18)])
    assert active_window(np.random.default_rng(1).permutation(t)) == (90.0, 107.0, 18)
    # n = 10: k = 9. Windows of 9: [0, 8] is 8 h, [1, 30] is 29 h: the first.
    assert active_window(np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 30.0])) == (0.0, 8.0, 9)
    # Equally short windows: the earliest. Ties at an end count every job there.
    assert active_window(np.array([0.0, 1.0, 2.0, 3.0]), share=0.5) == (0.0, 1.0, 2)
    assert active_window(np.array([5.0, 5.0, 5.0, 9.0]), share=0.5) == (5.0, 5.0, 3)


def shape_frame() -> tuple[pd.DataFrame, float]:
    """100 jobs: 10 at hours 0..9 (the first: 4 GPUs for 100 h, the others 1 GPU for 1 h) and 90 at
    hours 100, 100.1, …, 108.9 (1 GPU for 1 h); the last two still running."""
    submit = [float(h) for h in range(10)] + [100 + 0.1 * i for i in range(90)]
    gpus = [4] + [1] * 99
    duration = [100.0] + [1.0] * 99
    status = ["completed"] * 98 + ["running"] * 2
    return pd.DataFrame({"submit_h": submit, "gpus": gpus, "duration_h": duration, "status": status}), 450.0


def test_record_shape_by_hand():
    frame, used = shape_frame()
    s = record_shape(frame, {"running (not replayed)": 3, "running (no end yet)": 1, "no GPUs": 5}, used, 7)
    assert s.jobs == 100
    assert s.span_h == pytest.approx(109.9)  # the last job ends at 108.9 + 1 (the long one at 0 + 100)
    assert s.gpu_hours == pytest.approx(4 * 100 + 99 * 1)
    # 90 jobs of 100: the 90 at 100 … 108.9 (8.9 h); with any earlier job the window reaches back to 9 or less.
    assert (s.active_start_h, s.active_end_h, s.active_jobs) == (100.0, pytest.approx(108.9), 90)
    assert s.active_h == pytest.approx(8.9) and s.active_span_share == pytest.approx(8.9 / 109.9)
    # the longest 1 % is one job: the 4-GPU, 100 h one, 400 of the 499 GPU-hours
    assert (s.longest_jobs, s.longest_min_h) == (1, 100.0)
    assert s.longest_gpu_hours_share == pytest.approx(400 / 499)
    assert (s.cut_at_end, s.running_dropped) == (2, 4)
    assert s.added_gpu_hours == pytest.approx(49.0) and s.added_share == pytest.approx(49 / 450)
    lines = shape_lines(s)
    assert lines[0] == ("arrivals: 90 % of jobs (90) arrive within 0.4 days (hours 100.0 to 108.9), "
                        "8.1 % of the record's 4.6 days")
    assert lines[1] == "longest jobs: the longest 1 % (1 job, each 100.0 h or more) hold 80 % of the GPU-hours"
    assert lines[2] == ("still running at the record's end: 2 jobs replayed for their time so far (durations are "
                        "lower bounds), 4 jobs with no end (not replayed)")
    assert lines[3] == ("fractional GPUs: 7 jobs use part of a GPU, rounded up to whole GPUs for the same time: "
                        "450 GPU-hours used, 499 GPU-hours replayed (+10.9 %)")


def test_nothing_rounded_says_nothing_about_fractions_and_nothing_running_says_none():
    frame = pd.DataFrame({"submit_h": [0.0, 1.0], "gpus": [1, 2], "duration_h": [1.0, 1.0],
                          "status": ["completed", "failed"]})
    lines = shape_lines(record_shape(frame, {"no GPUs": 3}, 3.0, 0))
    assert "still running at the record's end: none" in lines
    assert not any(line.startswith("fractional") for line in lines)


def pods(tmp_path: Path, rows: list[str]) -> Path:
    path = tmp_path / "pods.csv"
    path.write_text(PODS + "".join(r + "\n" for r in rows))
    return path


FRACTIONAL_PODS = [
    "p1,1,250,A100,BE,Succeeded,0,0,3600",        # a quarter of a GPU for 1 h: 0.25 GPU-h used
    "p2,2,500,A100,BE,Succeeded,3600,3600,10800",  # half of each of 2 GPUs for 2 h: 2 GPU-h used
    "p3,1,1000,A100,LS,Succeeded,7200,7200,14400",  # a whole GPU for 2 h: 2 GPU-h
    "p4,1,1000,A100,LS,Running,9000,9000,18000",   # still running, cut at the record's end: 2.5 h
    "p5,1,1000,A100,LS,Running,9500,9500,",        # still running, no end: not replayed
]


def test_import_returns_the_shape_and_what_round_up_and_pool_did(tmp_path):
    path = pods(tmp_path, FRACTIONAL_PODS)
    up = import_trace("k8s-pods", path).shape
    # used: 0.25 + 2 + 2 + 2.5 = 6.75 GPU-h; round-up replays 1·1 + 2·2 + 1·2 + 1·2.5 = 9.5
    assert (up.jobs, up.rounded_jobs) == (4, 2)
    assert up.used_gpu_hours == pytest.approx(6.75) and up.gpu_hours == pytest.approx(9.5)
    assert up.added_share == pytest.approx(2.75 / 6.75)
    assert (up.cut_at_end, up.running_dropped) == (1, 1)
    # pool: p1 1 GPU for 0.25 h, p2 2 GPUs for 1 h: the used GPU-hours exactly
    pool = import_trace("k8s-pods", path, ImportOptions(fractional="pool")).shape
    assert pool.gpu_hours == pytest.approx(6.75) and pool.added_gpu_hours == pytest.approx(0.0, abs=1e-12)
    result = invoke_cli("import-trace", "k8s-pods", path, "--out", tmp_path / "t.csv", columns="300")
    assert result.exit_code == 0, result.output
    assert ("fractional GPUs: 2 jobs use part of a GPU, rounded up to whole GPUs for the same time: "
            "7 GPU-hours used, 10 GPU-hours replayed (+40.7 %)") in result.output
    assert ("still running at the record's end: 1 job replayed for their time so far (durations are lower "
            "bounds), 1 job with no end (not replayed)") in result.output
    result = invoke_cli("import-trace", "k8s-pods", path, "--out", tmp_path / "t.csv", "--fractional", "pool",
                        columns="300")
    assert "7 GPU-hours used, 7 GPU-hours replayed (+0.0 %)" in result.output


MIXED_PODS = [
    "a1,1,1000,A100,LS,Succeeded,0,0,3600",
    "a2,1,1000,a100,LS,Succeeded,100,100,3600",  # the same model, spelled otherwise
    "h1,1,1000,H100,LS,Succeeded,200,200,3600",
    "h2,1,1000,H100,LS,Succeeded,300,300,3600",
    "h3,1,1000,H100,LS,Succeeded,400,400,3600",
    "x1,1,1000,A100|H100,LS,Succeeded,500,500,3600",  # may run on either: counts for both
    "u1,1,1000,,LS,Succeeded,600,600,3600",  # no type recorded
]


def test_mixed_gpu_types_are_refused_naming_the_types_and_what_to_pass(tmp_path):
    path = pods(tmp_path, MIXED_PODS)
    out = tmp_path / "t.csv"
    result = invoke_cli("import-trace", "k8s-pods", path, "--out", out, columns="400")
    assert result.exit_code == 2
    assert ("error: --gpu-type: the record holds 2 GPU types (H100: 4 jobs, A100: 3 jobs; no type recorded for "
            "1 job), which one table would replay as one pool of alike GPUs; pass --gpu-type H100 (or another) "
            "to import one type, once per type to split them into one trace each, or --mixed-gpu-types to mix "
            "them on purpose") in result.output
    assert not out.exists()
    result = invoke_cli("import-trace", "k8s-pods", path, "--out", out, "--gpu-type", "a100", columns="400")
    assert result.exit_code == 0, result.output
    assert pd.read_csv(out).job_id.tolist() == ["a1", "a2", "x1"]
    result = invoke_cli("import-trace", "k8s-pods", path, "--out", out, "--mixed-gpu-types", columns="400")
    assert result.exit_code == 0, result.output
    assert len(pd.read_csv(out)) == 7
    assert "GPU types mixed in one table (--mixed-gpu-types): H100: 4 jobs, A100: 3 jobs" in result.output


def test_one_gpu_type_and_untyped_jobs_import_without_a_flag(tmp_path):
    path = pods(tmp_path, MIXED_PODS[:2] + MIXED_PODS[-1:])
    result = invoke_cli("import-trace", "k8s-pods", path, "--out", tmp_path / "t.csv", columns="300")
    assert result.exit_code == 0, result.output
    assert "mixed" not in result.output


def test_slurm_types_from_typed_gres_and_a_job_on_two_types(tmp_path):
    src = tmp_path / "sacct.txt"
    head = "JobID|Submit|Start|End|State|AllocTRES\n"
    t = "2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|COMPLETED"
    src.write_text(head + f"1|{t}|gres/gpu:a100=2\n2|{t}|gres/gpu:a100=2,gres/gpu:h100=2\n3|{t}|gres/gpu=4\n")
    result = invoke_cli("import-trace", "slurm", src, "--out", tmp_path / "t.csv", columns="300")
    assert result.exit_code == 2
    assert "2 GPU types (a100: 2 jobs, h100: 1 job; no type recorded for 1 job)" in result.output
    # the shipped sample: 168 A100 and 159 H100 allocations in the source, 124 and 119 jobs replayed
    result = invoke_cli("import-trace", "slurm", DATA / "slurm_sacct.txt", "--out", tmp_path / "t.csv", columns="300")
    assert result.exit_code == 2 and "(a100: 124 jobs, h100: 119 jobs; no type recorded for 2 jobs)" in result.output


@pytest.mark.parametrize(("fmt", "name"), [("slurm", "slurm_sacct.txt"), ("k8s-pods", "k8s_openb_pod_list.csv")])
def test_each_type_counted_is_what_gpu_type_imports(fmt, name):
    """The counts the refusal names are the jobs ``--gpu-type`` keeps for each type."""
    facts = import_trace(fmt, DATA / name).facts
    assert len(facts.gpu_types) >= 2
    for model, n in facts.gpu_types.items():
        assert len(import_trace(fmt, DATA / name, ImportOptions(gpu_type=model)).frame) == n, model


def test_the_columnar_and_row_slurm_readers_name_the_same_types():
    options = ImportOptions()
    fast, rows = Report("s"), Report("s")
    columns = read_columns(DATA / "slurm_sacct.txt", options, fast)
    assert columns is not None
    _, _, by_columns = build_table(columns, options, fast)
    _, _, by_rows = build_table(list(slurm_rows(DATA / "slurm_sacct.txt", options, rows)), options, rows)
    assert by_columns == by_rows
    assert math.isclose(by_columns.used_gpu_hours, by_rows.used_gpu_hours)
