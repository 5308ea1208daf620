"""Failures, checkpoints and preemption in the engine against the closed form of costsim.models.reliability
and against accounting identities."""

import numpy as np
import pandas as pd
import pytest
from helpers import cloud, jobs_of, owned, scenario
from hypothesis import given, settings
from hypothesis import strategies as st

import costsim
from costsim.models import reliability as rel


def identical_jobs(n, work_h, gpus=8):
    return [(0.0, gpus, work_h)] * n


def expected(work_h, every_h, write_min, rate, restart_min):
    return rel.expected_job_h(work_h, every_h, write_min / 60, rate, restart_min / 60)


@pytest.mark.slow
@pytest.mark.parametrize("kind, rate_h, work_h, every_h, write_min, restart_min", [
    ("failures", 0.05, 20.0, 4.0, 6.0, 15.0),
    ("failures", 0.2, 10.0, 1.0, 3.0, 30.0),
    ("preemptions", 0.1, 12.0, 3.0, 0.0, 6.0),
    ("preemptions", 0.02, 40.0, 10.0, 12.0, 60.0),
])
def test_mean_completion_matches_the_closed_form(tmp_path, kind, rate_h, work_h, every_h, write_min, restart_min):
    n = 5000
    if kind == "failures":  # the provider swaps a failed node at once (no provisioning delay)
        opt = cloud(failures={"node_failures_per_1000_node_days": rate_h * 24 * 1000})
    else:  # spot, capacity found again at once
        opt = cloud(pricing="spot", preemptions_per_instance_day=rate_h * 24, reacquire_delay_h=0)
    sc = scenario(tmp_path, identical_jobs(n, work_h), [opt], horizon_days=400,
                  workload={"checkpoint": {"every_hours": every_h, "write_minutes": write_min,
                                           "restart_minutes": restart_min}})
    j = jobs_of(costsim.simulate(sc), "cloud")
    assert j.completed.all()
    got = (j.end_h - j.start_h).mean()
    want = expected(work_h, every_h, write_min, rate_h, restart_min)
    assert got == pytest.approx(want, rel=0.02), (got, want)
    assert (j.restarts > 0).mean() > 0.1
    if kind == "preemptions":
        assert (j.preemptions == j.restarts).all()


def test_zero_rates_equal_no_failures_table_for_table(tmp_path):
    rng = np.random.default_rng(3)
    rows = list(zip(np.sort(rng.uniform(0, 300, 200)), rng.choice([8, 16, 32], 200), rng.exponential(8, 200),
                    strict=True))
    ck = {"checkpoint": {"every_hours": 2, "write_minutes": 3, "restart_minutes": 10}}
    zero = scenario(tmp_path, rows, [owned(gpus=64, failures={"node_failures_per_1000_node_days": 0}),
                                     cloud("c", failures={"node_failures_per_1000_node_days": 0}),
                                     cloud("s", pricing="spot", preemptions_per_instance_day=0)], workload=ck)
    none = scenario(tmp_path, rows, [owned(gpus=64), cloud("c"), cloud("s", pricing="spot")], workload=ck)
    a, b = costsim.simulate(zero), costsim.simulate(none)
    for name in ("jobs", "summary", "timeseries", "costs", "phases", "cashflow", "breakeven"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name))


def test_repairs_take_capacity_and_jobs_never_use_it(tmp_path):
    # 16 nodes failing at 2 per node-day (very high), 6 h repairs, over 20 days, a busy cluster.
    rng = np.random.default_rng(4)
    rows = list(zip(np.sort(rng.uniform(0, 400, 400)), rng.choice([8, 16, 32], 400), rng.exponential(4, 400),
                    strict=True))
    opt = owned(gpus=128, failures={"node_failures_per_1000_node_days": 2000, "repair_hours": 6}, scheduler="backfill")
    sc = scenario(tmp_path, rows, [opt], horizon_days=20, workload={"checkpoint": {"every_hours": 1, "restart_minutes": 5}})
    res = costsim.simulate(sc)
    from costsim.engine import run as engine
    from costsim.plan.resolve import resolve
    from costsim.workload.jobs import generate
    from costsim.workload.plan import plan_work

    plan = resolve(sc)[0]
    rec = engine.run_option(plan, plan_work(sc, generate(sc), plan), sc.horizon_h,
                            rngs={k: costsim.workload.rng.stream(sc.seed, k, 0) for k in ("failures", "preemptions", "provisioning")})
    t, cap = np.append(rec.capacity_change_h, sc.horizon_h), rec.capacity_gpus
    assert (cap >= 0).all() and cap.max() == 128
    drops = int((np.diff(cap) < 0).sum())
    down_node_h = float(((128 - cap) * np.diff(t)).sum()) / 8
    # Every failure takes its node out for 6 h (the last ones may be cut by the horizon).
    assert drops * 6 - 6 * 8 <= down_node_h <= drops * 6 + 1e-6
    # Failures arrive at 2 per node-day on the nodes in service: Poisson, within 4 standard deviations.
    mean = 2 / 24 * (16 * 480 - down_node_h)
    assert abs(drops - mean) < 4 * np.sqrt(mean)
    # At every instant, GPUs held by jobs fit in the capacity in service.
    s, e, h = rec.alloc_start, np.minimum(rec.alloc_end, sc.horizon_h), rec.alloc_held
    for x in np.unique(np.concatenate([s, t[:-1]])):
        held = h[(s <= x) & (e > x)].sum()
        assert held <= cap[np.searchsorted(t, x, side="right") - 1]
    j = jobs_of(res, "own")
    assert j.restarts.sum() > 10 and (j.lost_gpu_hours >= 0).all() and (j.lost_gpu_hours <= j.gpu_hours + 1e-9).all()
    summary = res.summary.iloc[0]
    assert 0 < summary.goodput < 1 and summary.lost_work_cost_usd > 0


@pytest.mark.slow
def test_young_daly_interval_minimises_simulated_time(tmp_path):
    rate, write_min, restart_min, work = 0.1, 6.0, 6.0, 30.0
    yd = rel.young_daly_h(write_min / 60, rate)  # √(2 × 0.1 / 0.1) = 1.41 h
    means = {}
    for factor in (0.25, 1.0, 4.0):
        sc = scenario(tmp_path, identical_jobs(3000, work), [cloud(failures={"node_failures_per_1000_node_days": rate * 24000})],
                      horizon_days=300, workload={"checkpoint": {"every_hours": yd * factor, "write_minutes": write_min,
                                                                 "restart_minutes": restart_min}})
        j = jobs_of(costsim.simulate(sc), "cloud")
        means[factor] = (j.end_h - j.start_h).mean()
    assert means[1.0] < means[0.25] and means[1.0] < means[4.0]


def test_more_failures_never_lower_mean_cost_or_delay(tmp_path):
    rng = np.random.default_rng(5)
    rows = list(zip(np.sort(rng.uniform(0, 500, 300)), rng.choice([8, 16, 32], 300), rng.exponential(10, 300),
                    strict=True))
    def mean_over_seeds(rate):
        cost, delay = [], []
        for seed in range(4):
            fails = {"node_failures_per_1000_node_days": rate}
            sc = scenario(tmp_path, rows, [owned(gpus=64, failures=fails), cloud(failures=fails)],
                          horizon_days=120, seed=seed, workload={"checkpoint": {"every_hours": 2, "restart_minutes": 10}})
            res = costsim.simulate(sc)
            assert res.jobs.completed.all()  # the same work is done in every run, so costs compare
            s = res.summary.set_index("option")
            j = jobs_of(res, "own")
            cost.append((s.total_cost_usd["own"] / len(j), s.total_cost_usd["cloud"] / len(j)))
            delay.append((j.end_h - j.submit_h).mean())
        return np.mean(cost, axis=0), np.mean(delay)
    none, low, high = mean_over_seeds(0), mean_over_seeds(50), mean_over_seeds(500)
    assert (none[0] <= low[0]).all() and (low[0] <= high[0]).all()  # lost work still draws power / is billed
    assert none[1] <= low[1] <= high[1]


@settings(max_examples=15)
@given(st.integers(0, 1000), st.floats(0, 3000), st.floats(0, 5))
def test_lost_work_and_goodput_bounds(tmp_path_factory, seed, rate, preempt_per_day):
    rng = np.random.default_rng(seed)
    rows = list(zip(np.sort(rng.uniform(0, 100, 60)), rng.choice([1, 8, 16], 60), rng.exponential(6, 60), strict=True))
    sc = scenario(tmp_path_factory.mktemp("f"), rows, [
        owned(gpus=32, failures={"node_failures_per_1000_node_days": rate}),
        cloud("spot", pricing="spot", preemptions_per_instance_day=preempt_per_day, reacquire_delay_h=0.5),
    ], horizon_days=10, seed=seed, workload={"checkpoint": {"every_hours": 1, "restart_minutes": 10}})
    res = costsim.simulate(sc)
    j = res.jobs
    assert (j.lost_gpu_hours >= 0).all() and (j.lost_gpu_hours <= j.gpu_hours + 1e-9).all()
    assert res.summary.goodput.dropna().between(0, 1).all()
    ts = res.timeseries
    assert (ts.busy_gpus <= ts.capacity_gpus + 1e-9).all() and (ts.capacity_gpus >= 0).all()


def test_provisioning_spread_and_stockouts(tmp_path):
    rows = [(float(t), g, 1.0) for t in range(0, 2000, 2) for g in (8, 64)]
    opt = cloud(provisioning_delay_h=0.5, provisioning_delay_cv=1.0, stockout={"probability": 0.3, "min_gpus": 64,
                                                                               "retry_h": 2.0})
    j = jobs_of(costsim.simulate(scenario(tmp_path, rows, [opt], horizon_days=100)), "cloud")
    small, large = j[j.gpus == 8], j[j.gpus == 64]
    # Small requests: lognormal delays with mean 0.5 h and cv 1.
    assert small.queue_delay_h.mean() == pytest.approx(0.5, rel=0.08)
    assert small.queue_delay_h.std() / small.queue_delay_h.mean() == pytest.approx(1.0, rel=0.15)
    # Large requests also wait a geometric number of 2 h retries: mean 2 × 0.3 / 0.7 = 0.857 h more.
    assert large.queue_delay_h.mean() - 0.5 == pytest.approx(2 * 0.3 / 0.7, rel=0.12)
    assert ((large.queue_delay_h // 2) > 0).mean() == pytest.approx(0.3, abs=0.04)


def test_a_killed_job_that_never_restarts_is_not_completed(tmp_path):
    # One node failing ~40 times an hour, repaired only after 10,000 h: the 1 h job is killed at
    # once and never runs again, so it must not count as completed at its old planned end.
    opt = owned(gpus=8, failures={"node_failures_per_1000_node_days": 1e6, "repair_hours": 10_000})
    res = costsim.simulate(scenario(tmp_path, [(0.0, 8, 1.0)], [opt], horizon_days=2))
    j = jobs_of(res, "own").iloc[0]
    assert j.restarts == 1 and not j.completed and np.isnan(j.end_h)
    assert res.summary.jobs_completed[0] == 0
    # Spot taken back just before its end and only found again after the horizon: not completed.
    spot = cloud(pricing="spot", preemptions_per_instance_day=1e4, reacquire_delay_h=1000)
    j = jobs_of(costsim.simulate(scenario(tmp_path, [(0.0, 8, 1.0)], [spot], horizon_days=2)), "cloud").iloc[0]
    assert j.preemptions == 1 and not j.completed


def test_a_cut_job_counts_only_the_work_it_kept(tmp_path):
    # One 8-GPU job of 400 iterations on spot that is preempted often: by the horizon it has done
    # the iterations up to its last checkpoint plus what its current attempt got through, never
    # more than its held time would suggest, and exactly what the recorded progress says.
    from costsim.engine import run as engine
    from costsim.plan.resolve import resolve
    from costsim.scenario import scenario_from_data
    from costsim.workload import jobs as workload
    from costsim.workload.plan import plan_work
    from costsim.workload.rng import stream

    cls = {"name": "a", "arrivals_per_day": 100, "count": 1, "gpus": 8, "iterations": 2000, "model_params_b": 7,
           "checkpoint": {"every_iterations": 100, "write_minutes": 5, "restart_minutes": 30}}
    data = {"name": "t", "horizon_days": 2, "workload": {"classes": [cls]},
            "options": [cloud(pricing="spot", preemptions_per_instance_day=12, reacquire_delay_h=0.5)]}
    sc = costsim.runs.api.check(scenario_from_data(data, "t", tmp_path), "t")
    res = costsim.simulate(sc)
    j = jobs_of(res, "cloud").iloc[0]
    assert not j.completed and j.preemptions > 0
    jobs = workload.generate(sc)
    plan = resolve(sc)[0]
    work = plan_work(sc, jobs, plan)
    rec = engine.run_option(plan, work, sc.horizon_h,
                            rngs={k: stream(sc.seed, k, 0) for k in ("failures", "preemptions", "provisioning")})
    reached = rec.pos_h[0] + (max(48 - rec.work_from_h[0], 0) if not np.isnan(rec.end_h[0]) else 0)
    assert j.iterations == work.iterations_done(0, reached)
    # Time held since the first start would count lost work, restarts and startups as progress.
    assert j.iterations < work.iterations_done(0, 48 - j.start_h)
