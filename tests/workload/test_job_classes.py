"""Plain job classes (workload.job_classes): schema, generation, checks, estimates and the fit's
round trip, each against independent truth (Poisson and binomial intervals, chi-square tests,
closed forms, hand-worked checkpoint arithmetic)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from paths import ROOT
from scipy import stats

import costsim
from costsim.calibration.fit import fit_trace
from costsim.calibration.fit_classes import job_classes_of
from costsim.runs import budget
from costsim.runs.api import load_scenario_text
from costsim.scenario import read_trace, scenario_from_data
from costsim.scenario.jobclass import JobClass
from costsim.workload import jobs as workload
from costsim.workload.jobclass import draw_durations
from costsim.workload.rng import stream
from costsim.workload.synth import JobGroup, make_trace

OWN = {"name": "own", "kind": "owned", "gpu_type": "H100", "gpus": 256, "lead_time_days": 0}
CLOUD = {"name": "cloud", "kind": "cloud", "gpu_type": "H100"}
HOURLY = [0] * 8 + [3] * 10 + [1] * 6  # nothing 00:00-08:00, a busy working day, a quiet evening
WEEKLY = [2, 2, 2, 2, 2, 0.5, 0.5]


def scenario(job_classes: list[dict], days: float = 28, scale: float = 1.0, options=(CLOUD,), **workload_extra):
    data = {"name": "jc", "horizon_days": days, "seed": 7,
            "workload": {"job_classes": job_classes, "arrival_scale": scale, **workload_extra},
            "options": list(options)}
    return scenario_from_data(data, "jc.yaml", ".")


def job_class(**over) -> dict:
    return {"name": "a", "arrivals_per_day": 40.0, "gpus": 1,
            "duration": {"law": "lognormal", "mean_h": 2.0, "cv": 1.0}, **over}


def poisson_ok(n: int, lam: float, z: float = 4.0) -> bool:
    return abs(n - lam) <= z * math.sqrt(lam)


def test_arrival_count_matches_rate_horizon_and_scale():
    # 4 whole weeks: any profile averages to 1, so E[n] = per_day × scale × (days − start_day).
    sc = scenario([job_class(hourly_profile=HOURLY, weekly_profile=WEEKLY, start_day=7.0)], days=35, scale=1.5)
    jobs = workload.generate(sc)
    lam = 40.0 * 1.5 * 28
    assert poisson_ok(len(jobs), lam), (len(jobs), lam)
    assert jobs.submit_h.min() >= 7 * 24 and jobs.submit_h.max() < 35 * 24
    assert list(jobs.job_id[:2]) == ["a-00000", "a-00001"]
    assert (jobs.class_index == workload.TRACE_CLASS).all() and (jobs.iterations == 0).all()


def test_profiles_shape_the_arrivals_on_the_profiles_clock():
    offset = 10.5  # the scenario's hour 0 is Monday 10:30 on the profiles' clock
    sc = scenario([job_class(arrivals_per_day=150.0, hourly_profile=HOURLY, weekly_profile=WEEKLY,
                             profile_start_hour_of_week=offset)], days=56)
    clock = workload.generate(sc).submit_h + offset  # hours since Monday 00:00
    hour = np.floor(clock).astype(int) % 24
    day = np.floor(clock / 24).astype(int) % 7
    assert not (hour < 8).any()  # zero weight: no arrival, whatever the offset's sign would do
    # Over whole weeks each hour of the day (weekday) is seen equally often: shares ∝ the weights.
    h_obs = np.bincount(hour, minlength=24)[8:]
    h_exp = np.array(HOURLY[8:], dtype=float) / sum(HOURLY) * len(clock)
    assert stats.chisquare(h_obs, h_exp).pvalue > 1e-3
    d_obs = np.bincount(day, minlength=7)
    d_exp = np.array(WEEKLY) / sum(WEEKLY) * len(clock)
    assert stats.chisquare(d_obs, d_exp).pvalue > 1e-3


def test_gpu_counts_follow_the_pmf():
    pmf = {1: 0.5, 4: 0.3, 16: 0.2}
    sc = scenario([job_class(arrivals_per_day=200.0, gpus=[{"gpus": g, "share": p} for g, p in pmf.items()])])
    g = workload.generate(sc).gpus
    obs = np.array([(g == k).sum() for k in pmf])
    assert obs.sum() == len(g)
    assert stats.chisquare(obs, np.array(list(pmf.values())) * len(g)).pvalue > 1e-3


def test_lognormal_durations_have_the_mean_and_cv():
    cls = JobClass.model_validate(job_class(duration={"law": "lognormal", "mean_h": 5.0, "cv": 1.5}))
    x = draw_durations(stream(1, "job_shapes", "t"), cls, 200_000)
    s2 = math.log(1 + 1.5**2)  # closed form: log X ~ N(ln 5 − σ²/2, σ²)
    logs = np.log(x)
    assert abs(logs.mean() - (math.log(5.0) - s2 / 2)) < 4 * math.sqrt(s2 / len(x))
    assert abs(logs.var() - s2) < 0.02 * s2
    assert abs(x.mean() - 5.0) < 4 * 5.0 * 1.5 / math.sqrt(len(x))


def test_empirical_durations_follow_the_quantiles():
    # quantiles 1, 2, 10, 40 h at p = 0, 1/3, 2/3, 1: a CDF linear between them, median 6 h.
    cls = JobClass.model_validate(job_class(duration={"law": "empirical", "quantiles_h": [1, 2, 10, 40]}))
    x = draw_durations(stream(1, "job_shapes", "t"), cls, 60_000)
    n = len(x)
    assert x.min() >= 1 and x.max() <= 40
    for q, p in ((2, 1 / 3), (10, 2 / 3), (6, 0.5), (25, 5 / 6)):
        assert abs((x <= q).mean() - p) < 4 * math.sqrt(p * (1 - p) / n), q


def test_fit_round_trip_recovers_the_rate(tmp_path):
    # A flat-Poisson trace drawn by the independent synth generator; fit; job classes; simulate.
    groups = [JobGroup("small", per_day=30.0, gpus=2, mean_h=3.0, cv=1.2),
              JobGroup("big", per_day=6.0, gpus=8, mean_h=10.0, cv=0.8)]
    days = 42
    trace = make_trace(groups, days, seed=3)
    path = tmp_path / "t.csv"
    trace.to_csv(path, index=False)
    fits = {f.name: f for f in fit_trace(read_trace(path), start_h=0.0)}
    for g in groups:
        n = int((trace.job_class == g.name).sum())
        assert abs(fits[g.name].per_day - g.per_day) < 4 * math.sqrt(n) / days, g.name
    data = job_classes_of(list(fits.values()), start_hour_of_week=0.0)
    res = costsim.simulate(scenario(data, days=days))
    for f in fits.values():
        seen = int((res.jobs.job_class == f.name).sum())
        assert poisson_ok(seen, f.per_day * days), (f.name, seen, f.per_day * days)
        assert set(res.jobs.gpus[res.jobs.job_class == f.name]) == set(f.gpus_pmf)


def test_runs_end_to_end_on_owned_and_cloud_with_checkpoints():
    # On an owned pool big enough never to queue, each job holds its GPUs for its work plus one
    # 6-minute checkpoint write per full 4 h of work except at its end (hand arithmetic).
    jc = [job_class(gpus=[{"gpus": 1, "share": 0.6}, {"gpus": 8, "share": 0.4}], arrivals_per_day=10.0),
          job_class(name="b", gpus=4, arrivals_per_day=3.0, duration={"law": "empirical", "quantiles_h": [1, 9, 30]})]
    sc = scenario(jc, days=14, options=(OWN, CLOUD), checkpoint={"every_hours": 4, "write_minutes": 6})
    res = costsim.simulate(sc)
    jobs = workload.generate(sc)
    own = res.jobs[res.jobs.option == "own"].set_index("job_id").loc[list(jobs.job_id)]
    writes = np.array([max(math.ceil(d / 4 - 1e-9) - 1, 0) for d in jobs.duration_h])
    hold = jobs.duration_h + writes * 0.1
    done = own.completed.to_numpy()
    assert done.sum() >= len(jobs) - 20  # only jobs still running at the horizon are unfinished
    np.testing.assert_allclose(own.gpu_hours.to_numpy()[done], (jobs.gpus * hold)[done], rtol=1e-9)
    summary = res.summary.set_index("option")
    assert summary.loc["own", "jobs_submitted"] == summary.loc["cloud", "jobs_submitted"] == len(jobs)
    assert set(res.jobs.job_class) == {"a", "b"}


def test_streams_are_per_class_name():
    one = workload.generate(scenario([job_class()]))
    two = workload.generate(scenario([job_class(name="z", gpus=2), job_class()]))
    mine = two.job_class == "a"
    np.testing.assert_array_equal(one.submit_h, two.submit_h[mine])
    np.testing.assert_array_equal(one.duration_h, two.duration_h[mine])
    assert not np.array_equal(two.submit_h[two.job_class == "z"], one.submit_h)  # each class its own stream


def test_expected_jobs_is_the_integral_of_the_rate():
    # A partial week (5.5 days) from Monday 10:30: the closed form against a fine Riemann sum.
    cls = job_class(hourly_profile=HOURLY, weekly_profile=WEEKLY, profile_start_hour_of_week=10.5, start_day=0.25)
    sc = scenario([cls], days=5.5)
    jobs, iterations = budget.expected_workload(sc, 0)
    t = np.arange(6.0, 5.5 * 24, 1 / 64) + 1 / 128  # midpoints of 1/64-h steps from start_day
    clock = t + 10.5
    h = np.array(HOURLY, float)[np.floor(clock).astype(int) % 24] / np.mean(HOURLY)
    d = np.array(WEEKLY, float)[np.floor(clock / 24).astype(int) % 7] / np.mean(WEEKLY)
    assert jobs == pytest.approx(float((40 / 24 * h * d).sum() / 64), rel=1e-9)
    assert iterations == 0


BAD = """\
name: bad
horizon_days: 7
workload:
  job_classes:
    - name: a
      arrivals_per_day: 5
      gpus: {gpus}
      duration: {duration}
      hourly_profile: {hourly}
{extra}options:
  - {{name: own, kind: owned, gpu_type: H100, gpus: 16}}
"""
GOOD = {"gpus": "2", "duration": "{law: lognormal, mean_h: 2, cv: 1}", "hourly": "null", "extra": ""}


@pytest.mark.parametrize("change, where, words", [
    ({"gpus": "[{gpus: 1, share: 0.5}, {gpus: 8, share: 0.4}]"}, "bad.yaml:7:7: workload.job_classes.0.gpus:", "sum to 0.9"),
    ({"duration": "{law: empirical, quantiles_h: [1, 5, 3]}"}, "bad.yaml:8:", "must not decrease"),
    ({"duration": "{law: gamma, mean_h: 2}"}, "bad.yaml:8:7: workload.job_classes.0.duration:", "lognormal"),
    ({"hourly": "[1, 2, 3]"}, "bad.yaml:9:7: workload.job_classes.0.hourly_profile:", "needs 24 weights"),
    ({"extra": "      growth_per_year: -2\n"}, "bad.yaml:10:7: workload.job_classes.0.growth_per_year:",
     "greater than or equal to -0.9"),
    ({"extra": "      growth_per_year: 80%\n"}, "bad.yaml:10:7: workload.job_classes.0.growth_per_year:", "number"),
    ({"extra": "  classes:\n    - {name: a, arrivals_per_day: 1, gpus: 8, iterations: 10, model_params_b: 7}\n"},
     "bad.yaml:3:1: workload:", "used twice"),
    ({"gpus": "[{gpus: 4, share: 0.5}, {gpus: 32, share: 0.5}]"}, "bad.yaml:7:7: workload.job_classes.0.gpus:",
     "needs up to 32 GPUs per job but option 'own' has 16 GPUs"),
])
def test_bad_input_names_field_and_line(change, where, words):
    text = BAD.format(**{**GOOD, **change})
    with pytest.raises(costsim.ScenarioError) as exc:
        load_scenario_text(text, "bad.yaml", ".")
    msg = str(exc.value)
    assert msg.startswith(where) and words in msg, msg
    assert len(msg.splitlines()) == 1, msg  # one problem, no noise from the other branch


def test_good_input_loads_and_checkpoint_applies_to_job_classes():
    extra = "  checkpoint: {every_hours: 2}\n"
    sc = load_scenario_text(BAD.format(**{**GOOD, "extra": extra}), "ok.yaml", ".")
    assert sc.workload.job_classes[0].max_gpus == 2 and sc.workload.checkpoint.every_hours == 2


def test_fitted_classes_validate_with_safe_unique_names(tmp_path):
    trace = pd.DataFrame({"submit_h": np.arange(60.0) * 3, "gpus": [1, 2, 8] * 20, "duration_h": [1.0, 2.5, 4.0] * 20,
                          "job_id": [f"j{i}" for i in range(60)],
                          "job_class": ["alice@lab"] * 30 + ["alice#lab"] * 15 + ["-q"] * 15})
    trace.to_csv(tmp_path / "t.csv", index=False)
    fits = fit_trace(read_trace(tmp_path / "t.csv"), distribution="empirical", start_h=30.0)
    data = job_classes_of(fits, start_hour_of_week=30.0)
    names = [d["name"] for d in data]
    assert names == ["alice_lab", "c-q", "alice_lab-2"]  # fit order: most jobs, then name
    classes = [JobClass.model_validate(d) for d in data]
    assert classes[0].profile_start_hour_of_week == 30.0
    assert sum(e.share for e in classes[0].gpus) == pytest.approx(1.0, abs=1e-9)  # thirds, rounded


def test_trace_ids_of_a_job_class_form_are_refused():
    sc = scenario([job_class()])
    problems = workload.reserved_id_problems(sc, np.array(["x1", "a-00012"], dtype=object))
    assert [p.line for p in problems] == [3] and "class 'a'" in problems[0].message


def test_the_shipped_fitted_scenario_is_what_the_code_fits():
    # scenarios/fitted-lab.yaml's header says its job_classes are this call's result: keep it true.
    
    from ruamel.yaml import YAML

    root = ROOT
    shipped = YAML(typ="safe").load((root / "scenarios" / "fitted-lab.yaml").read_text())["workload"]["job_classes"]
    fitted = job_classes_of(fit_trace(read_trace(root / "scenarios" / "traces" / "slurm-lab.csv"), start_h=104.0), 104.0)
    assert shipped == fitted
