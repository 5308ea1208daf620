"""Serving: demand by hand, never short on owned capacity while RL runs there, billed on cloud."""

import numpy as np
import pytest
from helpers import cloud, jobs_of, owned, scenario

import costsim
from costsim.models.serving import RangeMax, hourly_demand
from costsim.plan.checks import serving_demand


def test_demand_by_hand():
    # Hour 5.5 of day 0, base 100, ±30 %, +50 %/year: 100 × (1 + 0.5 × 5.5/8760) × (1 + 0.3 sin(2π·5.5/24)) = 129.74 -> 130
    d = hourly_demand(100, 0.3, 0.5, 24)
    assert d[5] == int(np.ceil(100 * (1 + 0.5 * 5.5 / 8760) * (1 + 0.3 * np.sin(2 * np.pi * 5.5 / 24))))
    assert d.min() >= 70 and d.max() <= 131
    assert (hourly_demand(100, 0, 0, 10) == 100).all()


def test_range_max_matches_brute_force():
    d = hourly_demand(64, 0.5, 1.0, 5000)
    rm = RangeMax(d)
    rng = np.random.default_rng(0)
    for _ in range(3000):
        a = rng.uniform(0, 4900)
        b = a + rng.uniform(1e-3, 500)
        assert rm.peak(a, b) == d[int(a):int(np.ceil(b))].max()


@pytest.mark.parametrize("hours", [1, 2, 3, 25, 1000])
def test_first_hour_above_and_at_most_match_brute_force(hours):
    # Hours past the table ask what its last hour does, as ``peak`` reads them.
    d = hourly_demand(20, 0.5, 3.0, hours)
    rm = RangeMax(d)
    rng = np.random.default_rng(hours)
    for _ in range(2000):
        h, x = int(rng.integers(0, hours + 5)), int(rng.integers(0, 45))
        asked = [d[min(k, hours - 1)] for k in range(h, max(h, hours) + 2)]
        above = next((h + k for k, a in enumerate(asked) if a > x), np.inf)
        at_most = next((h + k for k, a in enumerate(asked) if a <= x), np.inf)
        assert (rm.first_above(h, x), rm.first_at_most(h, x)) == (above, at_most), (h, x)
        assert rm.at(h + 0.5) == d[min(h, hours - 1)]


SERVING = {"gpus": {"base": 20, "diurnal_amplitude": 0.5, "growth_per_year": 2.0}, "priority": True}


def busy_rows(seed, n=400, days=30):
    rng = np.random.default_rng(seed)
    return list(zip(np.sort(rng.uniform(0, days * 24, n)), rng.choice([1, 4, 8, 16], n),
                    # at most 10 h: serving's growth leaves 16-GPU jobs room only in its daily dips
                    np.minimum(rng.exponential(6, n), 10.0), strict=True))


@pytest.mark.parametrize("sched", ["fifo", "backfill", "priority"])
def test_serving_never_short_while_rl_runs(tmp_path, sched):
    rows = busy_rows(1)
    sc = scenario(tmp_path, rows, [owned(gpus=48, scheduler=sched),
                                   {"name": "res", "kind": "cloud", "gpu_type": "H100", "pricing": "reserved",
                                    "reserved_gpus": 48, "scheduler": sched}], horizon_days=30, serving=SERVING)
    res = costsim.simulate(sc)
    demand = serving_demand(sc)[:720]
    for opt in ("own", "res"):
        t = res.timeseries[res.timeseries.option == opt]
        assert (t.serving_gpus.to_numpy() == demand).all()  # always served in full
        j = jobs_of(res, opt)
        # Exact check at every instant an RL job holds GPUs: RL held + serving that hour <= 48.
        started = j[j.start_h.notna()]
        ends = np.where(started.end_h.notna(), started.end_h, 720)
        instants = np.unique(np.concatenate([started.start_h, np.arange(720) + 0.5]))
        held = np.array([started.gpus[(started.start_h <= x) & (ends > x)].sum() for x in instants])
        assert (held + demand[np.minimum(instants.astype(int), 719)] <= 48).all()
        assert held.max() > 0
    # Serving takes room, so RL waits longer than on the same cluster without serving.
    alone = costsim.simulate(scenario(tmp_path, rows, [owned(gpus=48, scheduler=sched)], horizon_days=30))
    assert res.summary.queue_delay_mean_h[0] > alone.summary.queue_delay_mean_h[0]


def test_serving_on_cloud_is_billed_in_whole_instances(tmp_path):
    sc = scenario(tmp_path, [(1, 8, 2)], [cloud(price_per_gpu_hour=2.0)], horizon_days=2,
                  serving={"gpus": {"base": 10}})
    res = costsim.simulate(sc)
    s = res.summary.iloc[0]
    # 10 GPUs -> two 8-GPU instances (16 GPUs) for 48 h at $2: $1,536
    assert s.cost_serving_usd == pytest.approx(16 * 48 * 2.0) == s.serving_cost_usd
    assert s.total_cost_usd == pytest.approx(1536 + 8 * 2 * 2.0)
    assert (res.timeseries.rented_gpus >= 16).all() and res.timeseries.serving_gpus.max() == 10


def test_serving_before_delivery_is_unmet(tmp_path):
    sc = scenario(tmp_path, [(30, 8, 1)], [owned(gpus=16, lead_time_days=1)], horizon_days=2,
                  serving={"gpus": {"base": 4}})
    s = costsim.simulate(sc).summary.iloc[0]
    assert s.serving_unmet_gpu_hours == pytest.approx(4 * 24) and s.serving_gpu_hours == pytest.approx(4 * 24)


def test_costs_add_up_with_serving(tmp_path):
    sc = scenario(tmp_path, busy_rows(2, n=150), [owned(gpus=48), cloud(), {"name": "h", "kind": "hybrid", "base": "own",
                  "burst": "cloud", "max_wait_h": 2}], horizon_days=30, serving=SERVING)
    res = costsim.simulate(sc)
    for name, j in res.jobs.groupby("option"):
        s = res.summary.set_index("option").loc[name]
        assert j.cost_usd.sum() + s.serving_cost_usd == pytest.approx(s.total_cost_usd, rel=1e-9)
        t = res.timeseries[res.timeseries.option == name]
        assert (t.busy_gpus <= t.capacity_gpus + 1e-9).all()
        assert (t.busy_gpus * 1.0).sum() == pytest.approx(j.gpu_hours.sum() + s.serving_gpu_hours, rel=1e-9)


def test_a_cluster_looks_on_the_hour_only_when_its_last_pass_said_a_job_might_start(tmp_path, monkeypatch):
    """Serving's demand moves on the hour, so a waiting job may start on an hour no event marks; the
    cluster looks then only when its last pass said one might (serving refused it until that hour),
    not every hour while jobs wait. Here a 16-GPU job waits 100 h behind a 16-GPU job holding every
    GPU beside a serving floor that never moves: only the first job's end can start it, and no
    hourly look happens (the engine looked every hour before, 100 times); the start is unchanged."""
    from costsim.engine import owned as owned_engine

    looks = []
    real = owned_engine.OwnedCluster._wake
    monkeypatch.setattr(owned_engine.OwnedCluster, "_wake", lambda self, e: (looks.append(self.env.now), real(self, e)))
    flat = {"gpus": {"base": 8, "diurnal_amplitude": 0.0, "growth_per_year": 0.0}, "priority": True}
    sc = scenario(tmp_path, [(0.0, 16, 100.0), (0.5, 16, 1.0)], [owned(gpus=24)], horizon_days=10, serving=flat)
    res = costsim.simulate(sc)
    assert looks == []
    assert jobs_of(res, "own").sort_values("submit_h")["start_h"].tolist() == [0.0, 100.0]
