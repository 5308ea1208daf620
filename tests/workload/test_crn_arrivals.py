"""Common random numbers across horizon and arrival-scale variants, job for job.

Invariants: a longer horizon keeps every earlier job with every column of the job table (RL
classes with their per-iteration response lengths, fitted job classes with profiles, growing
rates, a trace's copies); the jobs of a smaller arrival scale are among those of a larger one,
identical. Truth in distribution, against closed forms and scipy: mean counts per class against
the integral of the rate over many seeds (and a Poisson dispersion), exponential gaps by a KS
test, a profiled class's counts per hour of the week against its profile, a growing rate's
counts per month against the integral of the line.
"""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import costsim
from costsim.models.profiles import week_integral, week_integral_inverse
from costsim.scenario import scenario_from_data
from costsim.workload import jobs as workload
from costsim.workload.arrivals import ARRIVAL_BLOCK, ITERATION_BLOCK, SHAPE_BLOCK
from costsim.workload.synth import JobGroup, growing_poisson_times, make_trace

CLOUD = {"name": "cloud", "kind": "cloud", "gpu_type": "H100", "provisioning_delay_h": 0, "startup_h": 0}
# An RL class whose lengths vary (32 responses: drawn exactly) with more iterations than one block
# of lengths, and one with the default rollout (thousands of responses: the CLT branch), a cap
# on its count and a later start.
GRPO = {"name": "grpo", "arrivals_per_day": 4, "gpus": 8, "iterations": {"mean": 200, "cv": 0.8},
        "model_params_b": 7,
        "rollout": {"prompts": 8, "samples_per_prompt": 4, "response_tokens": {"mean": 1000, "cv": 1.0, "max": 1425}}}
LATE = {"name": "late", "arrivals_per_day": 2, "start_day": 3.5, "gpus": 16, "iterations": {"mean": 20, "cv": 0.5},
        "model_params_b": 7}
HOURLY = [0] * 8 + [3] * 10 + [1] * 6
WEEKLY = [2, 2, 2, 2, 2, 0.5, 0.5]
# A fitted class: daily and weekly profiles on a clock that starts Tuesday 06:30, a GPU pmf with
# its own mean per count, a late start; busy enough to need several blocks of points and shapes.
FITTED = {"name": "fit", "arrivals_per_day": 500.0, "start_day": 1.25, "profile_start_hour_of_week": 30.5,
          "hourly_profile": HOURLY, "weekly_profile": WEEKLY,
          "gpus": [{"gpus": 1, "share": 0.6, "mean_h": 1.0}, {"gpus": 8, "share": 0.4, "mean_h": 6.0}],
          "duration": {"law": "lognormal", "mean_h": 3.0, "cv": 1.2}}
EMPIRICAL = {"name": "emp", "arrivals_per_day": 20.0, "gpus": 4,
             "duration": {"law": "empirical", "quantiles_h": [1, 2, 9]}}
PER_JOB = ("job_class", "submit_h", "gpus", "priority", "duration_h", "class_index", "iterations")
PER_ITERATION = ("length_sum", "length_max", "length_capped", "length_sq_sum")


def build(tmp, days: float, scale: float = 1.0, classes=(GRPO, LATE), job_classes=(FITTED, EMPIRICAL),
          trace: bool = True, seed: int = 11) -> costsim.Scenario:
    wl: dict = {"classes": list(classes), "job_classes": list(job_classes), "arrival_scale": scale}
    if trace:
        rng = np.random.default_rng(0)  # the trace itself is fixed data, not part of what is tested
        submit = np.sort(rng.uniform(0, 40 * 24, 300))
        pd.DataFrame({"submit_h": submit, "gpus": 8, "duration_h": rng.uniform(0.5, 5, 300),
                      "job_id": [f"t{i}" for i in range(300)]}).to_csv(tmp / "trace.csv", index=False)
        wl["trace"] = "trace.csv"
    data = {"name": "crn", "horizon_days": days, "seed": seed, "workload": wl, "options": [CLOUD]}
    return scenario_from_data(data, "test", tmp)


def frame(jobs: workload.JobTable) -> pd.DataFrame:
    """Every column of the job table, one row per job, indexed by job id; a job's iterations as
    tuples of its own rows (iter_start is a position in the concatenated arrays, not a draw)."""
    out = {c: getattr(jobs, c) for c in PER_JOB}
    rows = [slice(int(a), int(a + n)) for a, n in zip(jobs.iter_start, jobs.iterations, strict=True)]
    for c in PER_ITERATION:
        values = getattr(jobs, c)
        out[c] = [tuple(values[r].tolist()) for r in rows]
    assert len(set(jobs.job_id)) == len(jobs)  # ids unique
    return pd.DataFrame(out, index=pd.Index(jobs.job_id, name="job_id"))


# -- horizon: the longer run keeps every earlier job -----------------------------------------------

@pytest.mark.parametrize("scale", [1.0, 0.6, 1.7])
def test_a_longer_horizon_keeps_every_earlier_job(tmp_path, scale):
    short, long = (frame(workload.generate(build(tmp_path, days, scale))) for days in (12, 30))
    # the short run already spans several blocks of points, shapes and lengths
    assert (short.job_class == "fit").sum() > scale * max(ARRIVAL_BLOCK, 2 * SHAPE_BLOCK)
    assert short.iterations[short.job_class == "grpo"].sum() > scale * ITERATION_BLOCK
    head = long[long.submit_h < 12 * 24]
    pd.testing.assert_frame_equal(short, head)  # same ids, order, times, shapes and response lengths
    assert len(long) > 2 * len(short)
    assert set(short.job_class) == {"trace", "grpo", "late", "fit", "emp"}


def test_a_count_cap_keeps_the_first_jobs_across_horizons(tmp_path):
    capped = {**LATE, "count": 15}
    short, long = (frame(workload.generate(build(tmp_path, days, classes=(GRPO, capped), trace=False)))
                   for days in (9, 30))
    assert (short.job_class == "late").sum() < 15 and (long.job_class == "late").sum() == 15
    pd.testing.assert_frame_equal(short, long[long.submit_h < 9 * 24])


def test_a_growing_rate_trace_over_a_longer_horizon_starts_with_the_shorter_one():
    groups = [JobGroup("grow", per_day=40, gpus=8, mean_h=2, cv=1.5, growth_per_year=3.0),
              JobGroup("shrink", per_day=25, gpus=2, mean_h=1, law="exponential", growth_per_year=-2.5),
              JobGroup("flat", per_day=3, gpus=32, mean_h=10, cv=0.0)]
    short, long = make_trace(groups, 60, seed=4), make_trace(groups, 200, seed=4)
    pd.testing.assert_frame_equal(short, long.iloc[:len(short)])  # ids included
    assert long.submit_h.iloc[len(short)] >= 60 * 24 and len(long) > 2 * len(short)


# -- arrival scale: the jobs of a smaller scale are among those of a larger one ---------------------

SCALES = (0.5, 0.8, 1.0, 1.7, 2.3)


def test_arrival_scales_nest_job_for_job(tmp_path):
    frames = {s: frame(workload.generate(build(tmp_path, 20, s))) for s in SCALES}
    for small, big in pairwise(SCALES):
        a, b = frames[small], frames[big]
        assert set(a.index) < set(b.index), (small, big)
        pd.testing.assert_frame_equal(a, b.loc[a.index])
        for name in ("grpo", "late", "fit", "emp"):  # every class gains jobs
            assert (b.job_class == name).sum() > (a.job_class == name).sum(), (small, big, name)


def test_trace_copies_and_thinning_nest_across_scales(tmp_path):
    # The trace alone: a job kept at s1 is kept at s2 > s1, and its k-th copy made at s1 is made at
    # s2 with the same shifted submit time.
    frames = {s: frame(workload.generate(build(tmp_path, 45, s, classes=(), job_classes=()))) for s in SCALES}
    for small, big in pairwise(SCALES):
        a, b = frames[small], frames[big]
        assert set(a.index) <= set(b.index)
        pd.testing.assert_frame_equal(a, b.loc[a.index])
    copies = frames[2.3].index.str.contains("~")
    assert 300 * 1.3 * 0.7 < copies.sum() < 300 * 1.3 * 1.3  # 1 or 2 extra copies per job, mean 1.3


# -- right in distribution ------------------------------------------------------------------------

SEEDS = range(300)


def dispersion_ok(counts: np.ndarray, mean: float) -> bool:
    """Poisson counts: Σ (n − λ)² / λ ~ χ²(R) (R seeds), neither tail below 1e-4."""
    stat = float(((counts - mean) ** 2).sum() / mean)
    return stats.chi2.sf(stat, len(counts)) > 1e-4 and stats.chi2.cdf(stat, len(counts)) > 1e-4


@pytest.mark.slow
@pytest.mark.parametrize("scale", [0.5, 1.0, 1.7, 2.3])
def test_mean_count_per_class_is_the_rate_integral(tmp_path, scale):
    rl = {"name": "r", "arrivals_per_day": 3.0, "start_day": 2.0, "gpus": 8, "iterations": 1, "model_params_b": 1,
          "rollout": {"response_tokens": 100}}
    fitted = {**FITTED, "arrivals_per_day": 9.0, "start_day": 0.25}
    sc = build(tmp_path, 5.5, scale, classes=(rl,), job_classes=(fitted,), trace=False)
    counts = np.array([[(workload.generate(sc, seed).job_class == name).sum() for name in ("r", "fit")]
                       for seed in SEEDS])
    lam_rl = 3.0 * scale * (5.5 - 2.0)
    # The fitted class's Λ by a fine Riemann sum of its rate from start_day on the profiles' clock.
    t = np.arange(0.25 * 24, 5.5 * 24, 1 / 64) + 1 / 128
    clock = t + 30.5
    h = np.array(HOURLY, float)[np.floor(clock).astype(int) % 24] / np.mean(HOURLY)
    d = np.array(WEEKLY, float)[np.floor(clock / 24).astype(int) % 7] / np.mean(WEEKLY)
    lam_fit = float((9.0 / 24 * scale * h * d).sum() / 64)
    for k, lam in enumerate((lam_rl, lam_fit)):
        assert abs(counts[:, k].mean() - lam) < 4 * math.sqrt(lam / len(SEEDS)), (k, counts[:, k].mean(), lam)
        assert dispersion_ok(counts[:, k], lam), k


@pytest.mark.parametrize("scale", [1.0, 2.3])
def test_gaps_of_a_constant_rate_are_exponential(tmp_path, scale):
    rl = {"name": "r", "arrivals_per_day": 50.0, "start_day": 1.5, "gpus": 8, "iterations": 1, "model_params_b": 1,
          "rollout": {"response_tokens": 100}}
    t = workload.generate(build(tmp_path, 101.5, scale, classes=(rl,), job_classes=(), trace=False)).submit_h
    gaps = np.diff(np.concatenate([[1.5 * 24], t]))  # the first gap from the start of the arrivals
    assert len(gaps) > 4000
    assert stats.kstest(gaps, "expon", args=(0, 24 / (50 * scale))).pvalue > 1e-3


@pytest.mark.parametrize("scale", [1.0, 1.7])
def test_a_profiled_class_counts_per_hour_of_the_week_follow_the_profile(tmp_path, scale):
    # Eight whole weeks from Tuesday 06:30: every hour of the week is seen for exactly 8 hours (the
    # split hour 30 half at the start, half at the end), so E[count in hour h] = 8 · λ · week[h].
    cls = {**FITTED, "arrivals_per_day": 150.0, "start_day": 0.0}
    t = workload.generate(build(tmp_path, 56, scale, classes=(), job_classes=(cls,), trace=False)).submit_h
    week = np.repeat(np.array(WEEKLY) / np.mean(WEEKLY), 24) * np.tile(np.array(HOURLY) / np.mean(HOURLY), 7)
    obs = np.bincount(np.floor(t + 30.5).astype(int) % 168, minlength=168)
    assert (obs[week == 0] == 0).all()  # never an arrival in an hour of rate 0
    expected = 8 * 150.0 / 24 * scale * week
    busy = week > 0
    assert abs(obs.sum() - expected.sum()) < 4 * math.sqrt(expected.sum())
    assert stats.chisquare(obs[busy], expected[busy] * obs.sum() / expected[busy].sum()).pvalue > 1e-3


@pytest.mark.parametrize("growth", [0.4, 3.0, -2.5])
def test_a_growing_rate_counts_per_month_follow_the_line(growth):
    # λ(t) = r (1 + g t/8760) per hour: Λ over [a, b) = r (b − a + g (b² − a²) / 17520), zero past −8760/g.
    r, days = 2.0, 360
    edges = np.linspace(0, days * 24, 13)
    stop = days * 24 if growth >= 0 else 8760 / -growth
    a, b = np.minimum(edges[:-1], stop), np.minimum(edges[1:], stop)
    expected = r * (b - a + growth * (b * b - a * a) / 17520)
    obs = np.zeros(12)
    for seed in range(20):
        t = growing_poisson_times(np.random.default_rng(seed), r, days * 24, growth)
        assert (np.diff(t) >= 0).all() and (t < stop).all()
        obs += np.histogram(t, edges)[0]
    expected *= 20
    assert abs(obs.sum() - expected.sum()) < 4 * math.sqrt(expected.sum())
    seen = expected > 0
    assert (obs[~seen] == 0).all()
    assert stats.chisquare(obs[seen], expected[seen] * obs.sum() / expected[seen].sum()).pvalue > 1e-3


# -- the simulation, and the profile's inverse ------------------------------------------------------

def test_simulate_on_two_horizons_gives_the_same_first_jobs(tmp_path):
    res = {days: costsim.simulate(build(tmp_path, days, 1.7, classes=(GRPO,), job_classes=(EMPIRICAL,)))
           for days in (6, 15)}
    cols = ["job_id", "job_class", "gpus", "submit_h"]
    short = res[6].jobs[cols].reset_index(drop=True)
    long = res[15].jobs[res[15].jobs.submit_h < 6 * 24][cols].reset_index(drop=True)
    assert len(short) > 100
    pd.testing.assert_frame_equal(short, long)


def test_the_week_integral_inverse_by_hand():
    # Hour 0 of the week has rate 0, hour 1 rate 2, hour 2 rate 0.5, the rest 1: W = 0, 0, 2, 2.5, 3.5, …
    week = np.ones(168)
    week[0], week[1], week[2] = 0.0, 2.0, 0.5
    total = week.sum()  # 167.5
    y = np.array([0.0, 1.0, 2.0, 2.25, 3.0, total, total + 1.0])
    want = np.array([1.0, 1.5, 2.0, 2.5, 3.5, 169.0, 169.5])  # 0 is reached at the end of the flat hour 0
    np.testing.assert_allclose(week_integral_inverse(y, week), want, rtol=0, atol=1e-12)
    t = np.random.default_rng(2).uniform(1, 5000, 1000)
    t = t[np.floor(t) % 168 != 0]  # inside the flat hour 0 the inverse gives its end instead
    np.testing.assert_allclose(week_integral_inverse(week_integral(t, week), week), t, rtol=1e-12)
