"""Growing arrival rates (``growth_per_year`` on RL classes and job classes) drawn by the time change.

Truth, worked out here without the code's formulas:
- a constant rate r per day growing by g a year, from day 0, has ∫ r·(1 + g)^t dt arrivals
  = r · 365 · ((1 + g)^T₁ − (1 + g)^T₀) / ln(1 + g) between years T₀ and T₁ (over 2 years at
  g = 0.8: r · 365 · (1.8² − 1) / ln 1.8); mean counts over many seeds agree within 4 standard
  errors of a Poisson mean;
- a profiled class's expected count is its rate integrated piece by piece in plain Python;
- g = 0 draws today's jobs bit for bit (today's time change written out here);
- two growth values pair job for job: the larger's arrivals are the smaller's unit-rate points
  mapped monotonically, t₂ = Λ₂⁻¹(Λ₁(t₁)) ≤ t₁, with the same shapes (hypothesis).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costsim.models.profiles import week_integral, week_integral_inverse
from costsim.runs.budget import expected_workload
from costsim.scenario import scenario_from_data
from costsim.workload import jobs as workload
from costsim.workload.arrivals import layered_arrivals
from costsim.workload.jobclass import expected_jobs, time_change, week_profile

CLOUD = {"name": "cloud", "kind": "cloud", "gpu_type": "H100"}
# An RL class as cheap to draw as possible: one iteration of one response per job.
RL = {"name": "grow", "arrivals_per_day": 3.0, "gpus": 8, "iterations": 1, "model_params_b": 7,
      "rollout": {"prompts": 1, "samples_per_prompt": 1, "response_tokens": 100}}
HOURLY = [0] * 8 + [3] * 10 + [1] * 6
WEEKLY = [2, 2, 2, 2, 2, 0.5, 0.5]
JOBS = {"name": "fit", "arrivals_per_day": 20.0, "start_day": 3.0, "profile_start_hour_of_week": 30.5,
        "hourly_profile": HOURLY, "weekly_profile": WEEKLY, "gpus": [{"gpus": 1, "share": 0.5}, {"gpus": 8, "share": 0.5}],
        "duration": {"law": "lognormal", "mean_h": 3.0, "cv": 1.0}}
YEAR_H = 8760.0


def scenario(days: float, classes=(), job_classes=(), scale: float = 1.0):
    data = {"name": "g", "horizon_days": days, "seed": 3, "options": [CLOUD],
            "workload": {"classes": list(classes), "job_classes": list(job_classes), "arrival_scale": scale}}
    return scenario_from_data(data, "g.yaml", ".")


def grown_count(per_day: float, g: float, from_year: float, to_year: float) -> float:
    """∫ per_day · 365 · (1 + g)^t dt over [from_year, to_year], by hand."""
    a = 1.0 + g
    return per_day * 365.0 * (a**to_year - a**from_year) / math.log(a)


def profiled_count(cls: dict, g: float, horizon_h: float) -> float:
    """∫ from start_day to the horizon of per_day / 24 · hourly · weekly (each scaled to mean 1) ·
    (1 + g)^(t / 8760), piece by piece between the profile's hour boundaries."""
    hourly = np.array(cls["hourly_profile"], float) / np.mean(cls["hourly_profile"])
    weekly = np.array(cls["weekly_profile"], float) / np.mean(cls["weekly_profile"])
    off, k = cls["profile_start_hour_of_week"], math.log1p(g) / YEAR_H
    a, total = cls["start_day"] * 24.0, 0.0
    while a < horizon_h:
        hour_of_week = math.floor(off + a)
        b = min(hour_of_week + 1 - off, horizon_h)
        w = hourly[hour_of_week % 24] * weekly[(hour_of_week // 24) % 7]
        total += w * (math.exp(k * b) - math.exp(k * a)) / k
        a = b
    return cls["arrivals_per_day"] / 24.0 * total


def within(mean: float, expected: float, seeds: int, z: float = 4.0) -> bool:
    return abs(mean - expected) <= z * math.sqrt(expected / seeds)


def test_rl_class_arrivals_over_two_years_are_the_integral_of_the_growing_rate():
    sc = scenario(730, classes=[{**RL, "growth_per_year": 0.8}])
    seeds = 30
    first = second = 0
    for seed in range(seeds):
        t = workload.generate(sc, seed).submit_h
        first += int((t < YEAR_H).sum())
        second += int((t >= YEAR_H).sum())
    # 3 · 365 · 0.8 / ln 1.8 = 876 / 0.587787 = 1,490.34 in the first year, 1.8 times that in the second
    assert grown_count(3, 0.8, 0, 1) == pytest.approx(1490.34, abs=0.01)
    assert within(first / seeds, grown_count(3, 0.8, 0, 1), seeds)
    assert within(second / seeds, grown_count(3, 0.8, 1, 2), seeds)
    assert within((first + second) / seeds, 3 * 365 * (1.8**2 - 1) / math.log(1.8), seeds)


def test_a_falling_rate_and_a_late_start_count_from_day_0():
    # −50 %/yr, arrivals from day 182.5 to day 730: the rate at the start is already 3 · 0.5^0.5.
    cls = {**RL, "growth_per_year": -0.5, "start_day": 182.5}
    sc = scenario(730, classes=[cls])
    seeds = 30
    n = sum(len(workload.generate(sc, seed)) for seed in range(seeds))
    assert within(n / seeds, grown_count(3, -0.5, 0.5, 2), seeds)
    assert workload.expected_class_jobs(sc.workload.classes[0], 1.0, sc.horizon_h) == \
        pytest.approx(grown_count(3, -0.5, 0.5, 2), rel=1e-12)


def test_rl_time_change_is_exact_at_hand_worked_points():
    cls = scenario(730, classes=[{**RL, "growth_per_year": 0.8, "start_day": 10}]).workload.classes[0]
    for t in (240.0, 1000.0, YEAR_H, 1.5 * YEAR_H):
        lam, to_time = workload.class_time_change(cls, t)
        assert lam == pytest.approx(grown_count(3, 0.8, 240 / YEAR_H, t / YEAR_H), rel=1e-12)
        assert float(to_time(np.array([lam]))[0]) == pytest.approx(t, rel=1e-12)


def test_job_class_expected_count_and_draws_follow_the_profiled_growing_rate():
    cls = {**JOBS, "growth_per_year": 1.5}
    sc = scenario(120, job_classes=[cls])
    expected = profiled_count(cls, 1.5, sc.horizon_h)
    assert expected_jobs(sc.workload.job_classes[0], 1.0, sc.horizon_h) == pytest.approx(expected, rel=1e-10)
    seeds = 12
    n = sum(len(workload.generate(sc, seed)) for seed in range(seeds))
    assert within(n / seeds, expected, seeds)
    # the exact inversion: Λ(t) at a few times (each in an hour of positive rate) maps back to t
    job_class = sc.workload.job_classes[0]
    for t in (100.0, 510.25, 2000.75):  # profile hours 130, 540, 2031: Sat 10:00, Tue 12:00, Mon 15:00
        lam, to_time = time_change(job_class, t)
        assert lam == pytest.approx(profiled_count(cls, 1.5, t), rel=1e-10)
        assert float(to_time(np.array([lam]))[0]) == pytest.approx(t, rel=1e-10)


def test_no_growth_draws_todays_jobs_bit_for_bit():
    sc = scenario(60, classes=[{**RL, "start_day": 2.5}], job_classes=[JOBS], scale=1.7)
    assert workload.generate(sc, 5).submit_h.tolist() == \
        workload.generate(scenario(60, classes=[{**RL, "start_day": 2.5, "growth_per_year": 0}],
                                   job_classes=[{**JOBS, "growth_per_year": 0.0}], scale=1.7), 5).submit_h.tolist()
    # today's time changes, written out: a constant rate from the start, and the week integral
    end, scale = sc.horizon_h, 1.7
    per_h, start = 3.0 / 24, 2.5 * 24
    rl = layered_arrivals(5, "grow", scale, per_h * (end - start), lambda s: start + s / per_h, end)
    job_class = sc.workload.job_classes[0]
    week, off, start_j, per_hj = week_profile(job_class), 30.5, 3.0 * 24, 20.0 / 24
    origin = float(week_integral(off + start_j, week))
    total = per_hj * (float(week_integral(off + end, week)) - origin)
    fit = layered_arrivals(5, "fit", scale, total,
                           lambda s: np.maximum(week_integral_inverse(origin + s / per_hj, week) - off, start_j), end)
    jobs = workload.generate(sc, 5)
    assert np.array_equal(jobs.submit_h[jobs.job_class == "grow"], rl.submit_h)
    assert np.array_equal(jobs.submit_h[jobs.job_class == "fit"], fit.submit_h)


def by_id(jobs) -> dict[str, tuple]:
    """Each job's submit time and shape (GPUs, iterations, duration; −1 for an RL job's NaN duration)."""
    return {i: (t, g, it, -1.0 if np.isnan(d) else d)
            for i, t, g, d, it in zip(jobs.job_id, jobs.submit_h, jobs.gpus, jobs.duration_h, jobs.iterations,
                                      strict=True)}


@settings(max_examples=20, deadline=None)
@given(g1=st.floats(-0.9, 10), g2=st.floats(-0.9, 10), seed=st.integers(0, 2**32), scale=st.floats(0.3, 2.5))
def test_two_growth_values_pair_job_for_job(g1, g2, seed, scale):
    lo, hi = sorted((g1, g2))
    sc = {g: scenario(300, classes=[{**RL, "arrivals_per_day": 0.5, "start_day": 20, "growth_per_year": g}],
                      job_classes=[{**JOBS, "arrivals_per_day": 3.0, "growth_per_year": g}], scale=scale)
          for g in (lo, hi)}
    low, high = by_id(workload.generate(sc[lo], seed)), by_id(workload.generate(sc[hi], seed))
    assert set(low) <= set(high)  # a faster rate reaches more of the same unit-rate points
    for cls_lo, cls_hi, change in [
            (sc[lo].workload.classes[0], sc[hi].workload.classes[0], workload.class_time_change),
            (sc[lo].workload.job_classes[0], sc[hi].workload.job_classes[0], time_change)]:
        name = cls_lo.name
        shared = sorted((v[0], i) for i, v in low.items() if i.startswith(name + "-"))
        t_lo = np.array([t for t, _ in shared])
        t_hi = np.array([high[i][0] for _, i in shared])
        # the same jobs (shapes), each earlier or at the same time, in the same order
        assert all(high[i][1:] == low[i][1:] for _, i in shared)
        assert (t_hi <= t_lo + 1e-7).all() and (np.diff(t_hi) >= -1e-7).all()  # hours; rounding only
        # t_hi = Λ_hi⁻¹(Λ_lo(t_lo)): the same point S = Λ_lo(t_lo) (the kept points' S are the same)
        if len(shared):
            s = np.array([change(cls_lo, t)[0] for t in t_lo])
            np.testing.assert_allclose(change(cls_hi, sc[hi].horizon_h)[1](s), t_hi, rtol=1e-9, atol=1e-6)


def test_arrival_scale_composes_with_growth():
    grow = {**JOBS, "growth_per_year": 2.0}
    one = by_id(workload.generate(scenario(90, classes=[{**RL, "growth_per_year": 2.0}], job_classes=[grow]), 9))
    more = by_id(workload.generate(scenario(90, classes=[{**RL, "growth_per_year": 2.0}], job_classes=[grow],
                                            scale=2.5), 9))
    assert set(one) <= set(more)
    assert all(more[i][:2] == one[i][:2] for i in one)
    job_class = scenario(90, job_classes=[grow]).workload.job_classes[0]
    assert expected_jobs(job_class, 2.5, 90 * 24.0) == pytest.approx(2.5 * profiled_count(grow, 2.0, 90 * 24.0),
                                                                     rel=1e-10)


def test_event_budget_counts_the_growing_classes():
    sc = scenario(730, classes=[{**RL, "growth_per_year": 0.8}], job_classes=[{**JOBS, "growth_per_year": 0.8}],
                  scale=2.0)
    jobs, iterations = expected_workload(sc, 0)
    rl = 2.0 * grown_count(3, 0.8, 0, 2)
    assert iterations == pytest.approx(rl, rel=1e-12)  # one iteration per job
    assert jobs == pytest.approx(rl + 2.0 * profiled_count(JOBS, 0.8, 730 * 24.0), rel=1e-9)


def test_a_growing_workload_runs_end_to_end():
    import costsim

    sc = scenario(60, classes=[{**RL, "arrivals_per_day": 1.0, "iterations": 5, "growth_per_year": 10.0}],
                  job_classes=[{**JOBS, "growth_per_year": -0.5}])
    res = costsim.simulate(sc)
    drawn = workload.generate(sc)
    assert res.summary.jobs_submitted[0] == len(drawn)
    assert sorted(res.jobs.job_id) == sorted(drawn.job_id)
