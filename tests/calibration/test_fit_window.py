"""``costsim fit-workload`` fits the active window of a record whose jobs arrive late in it, says
which window it fitted and why, and warns where a trace drawn from its fit misses the record."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers import invoke_cli

from costsim.calibration.fit_classes import trace_of
from costsim.calibration.fit_window import choose_window, misses, window_trace
from costsim.present.fit import window_reason
from costsim.scenario.trace import read_trace


def write_trace(path: Path, submit_h, duration_h, gpus=1) -> Path:
    n = len(submit_h)
    pd.DataFrame({"submit_h": submit_h, "gpus": np.broadcast_to(gpus, n), "duration_h": duration_h,
                  "job_id": [f"j{i}" for i in range(n)], "job_class": "lab", "priority": 0}).to_csv(path, index=False)
    return path


def late_record() -> tuple[np.ndarray, np.ndarray]:
    """200 jobs over 979 h: 20 at hours 0, 40, …, 760, then 180 at hours 800, 801, …, 979 (the last
    18 % of the record). Run times cycle through 0.5 … 2.4 h."""
    submit = np.concatenate([np.arange(20) * 40.0, 800.0 + np.arange(180)])
    return submit, 0.5 + (np.arange(200) % 20) * 0.1


def test_the_active_window_of_a_late_record_by_hand():
    submit, _ = late_record()
    w = choose_window(submit)
    # k = 180 arrivals; the 180 at 800..979 span 179 h, any 180 with an earlier job at least 218 h
    assert (w.start_h, w.end_h, w.jobs, w.record_jobs, w.record_h, w.active) == (800.0, 979.0, 180, 200, 979.0, True)
    assert window_reason(w) == ("fitted over the active window: 90 % of the jobs arrive within 18 % of the record "
                        "(7.5 days, hours 800.0 to 979.0), 24.1 jobs/day there against the record-wide 4.9 jobs/day; "
                        "the 20 jobs outside it are left out")
    assert not choose_window(submit, "record").active
    # steady arrivals: 90 % of the jobs take about 90 % of the record, so it is fitted whole
    steady = choose_window(np.arange(200) * 5.0)
    assert not steady.active and "not concentrated" in window_reason(steady)
    # a batch of 95 jobs at one instant late in the record holds no rate: the record is fitted
    batch = choose_window(np.concatenate([np.arange(5) * 200.0, np.full(95, 999.0)]))
    assert not batch.active and "holds no arrival rate" in window_reason(batch)
    with pytest.raises(ValueError, match="one of auto, active, record"):
        choose_window(submit, "busy")


def test_window_trace_keeps_the_window_from_its_start(tmp_path):
    submit, duration = late_record()
    table = read_trace(write_trace(tmp_path / "t.csv", submit, duration))
    part = window_trace(table, choose_window(table.submit_h))
    assert len(part) == 180 and part.submit_h.min() == 0.0 and part.submit_h.max() == 179.0
    assert np.array_equal(part.duration_h, table.duration_h[20:])


def test_fit_of_a_late_record_has_the_active_windows_rate(tmp_path):
    submit, duration = late_record()
    src = write_trace(tmp_path / "t.csv", submit, duration)
    result = invoke_cli("fit-workload", src, "--out", tmp_path / "c.yaml", "--by", "none", columns="400")
    assert result.exit_code == 0, result.output
    rate = yaml.safe_load((tmp_path / "c.yaml").read_text())["job_classes"][0]["arrivals_per_day"]
    # 180 jobs over the 179 h window: 24.13 a day (the profiles fitted to the window move it by
    # under 3 %); the whole record's 200 jobs over 979 h would be 4.90 a day.
    assert rate == pytest.approx(180 / 179 * 24, rel=0.03)
    assert "fitted over the active window: 90 % of the jobs arrive within 18 % of the record" in result.output
    assert "Fitted over the active window" in (tmp_path / "c.yaml").read_text()
    result = invoke_cli("fit-workload", src, "--out", tmp_path / "r.yaml", "--by", "none", "--window", "record",
                        columns="400")
    assert result.exit_code == 0, result.output
    rate = yaml.safe_load((tmp_path / "r.yaml").read_text())["job_classes"][0]["arrivals_per_day"]
    assert rate == pytest.approx(200 / 979 * 24, rel=0.03)
    assert "fitted over the whole record (--window record)" in result.output


def test_the_warning_rule():
    assert misses(0.11, 0.005)
    assert not misses(0.11, 0.02)  # a big distance that could be chance
    assert not misses(0.09, 1e-9)  # a real but small difference
    assert not misses(float("nan"), float("nan"))


MODEL = [{"name": "lab", "arrivals_per_day": 60.0, "gpus": 2,
          "duration": {"law": "lognormal", "mean_h": 3.0, "cv": 1.0}}]


def test_a_record_drawn_from_a_model_fits_without_warning(tmp_path):
    drawn = trace_of(MODEL, 30.0, seed=11)
    src = tmp_path / "t.csv"
    drawn.to_csv(src, index=False)
    result = invoke_cli("fit-workload", src, "--out", tmp_path / "c.yaml", "--report", tmp_path / "f.html",
                        columns="400")
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output, result.output
    assert "fitted over the whole record" in result.output and "drawn trace vs the record: arrival gaps KS" in result.output
    page = (tmp_path / "f.html").read_text()
    assert "The fit against the record" in page and "drawn trace vs the record" in page


def test_bimodal_run_times_warn_on_the_duration_ks(tmp_path):
    rng = np.random.default_rng(5)
    submit = np.sort(rng.uniform(0, 30 * 24, 600))
    duration = np.where(np.arange(600) % 2 == 0, 0.1, 10.0) * rng.uniform(0.9, 1.1, 600)  # 0.1 h or 10 h
    src = write_trace(tmp_path / "t.csv", submit, duration)
    result = invoke_cli("fit-workload", src, "--out", tmp_path / "c.yaml", columns="400")
    assert result.exit_code == 0, result.output  # warnings, not errors: the classes are written
    assert (tmp_path / "c.yaml").exists()
    assert "warning" in result.output and "durations: the drawn trace's run times differ from the record's" in result.output
    assert "class lab: its run times are not lognormal" in result.output
    assert "arrivals:" not in result.output  # the arrivals are Poisson: no arrival warning


def test_a_few_long_jobs_warn_on_gpu_hours(tmp_path):
    # 300 jobs of 1 h and one of 3,000 h: the record holds 3,300 GPU-hours over 30 days; the
    # empirical law puts the long job in its top 1/301 of probability, which 300 draws mostly miss.
    rng = np.random.default_rng(2)
    submit = np.sort(rng.uniform(0, 30 * 24, 301))
    duration = np.ones(301)
    duration[150] = 3000.0
    src = write_trace(tmp_path / "t.csv", submit, duration)
    result = invoke_cli("fit-workload", src, "--out", tmp_path / "c.yaml", "--distribution", "empirical",
                        columns="400")
    assert result.exit_code == 0, result.output
    assert "warning" in result.output and "GPU-hours: the drawn trace holds" in result.output
