"""Reserved and spot pricing and hybrid burst: exact bills, equivalences, routing rules."""

import numpy as np
import pytest
from helpers import cloud, jobs_of, owned, scenario
from hypothesis import given, settings
from hypothesis import strategies as st

import costsim


def reserved(name="res", gpus=16, **kw):
    return {"name": name, "kind": "cloud", "gpu_type": "H100", "pricing": "reserved", "reserved_gpus": gpus, **kw}


def hybrid(name="hyb", base="own", burst="cloud", **kw):
    return {"name": name, "kind": "hybrid", "base": base, "burst": burst, **kw}


def random_rows(seed, n=300, days=20, sizes=(1, 2, 4, 8, 16)):
    rng = np.random.default_rng(seed)
    return list(zip(np.sort(rng.uniform(0, days * 24, n)), rng.choice(sizes, n), rng.exponential(5, n), strict=True))


def test_reserved_costs_every_hour_used_or_not(tmp_path):
    # 16 GPUs × 240 h × $2.20 (catalog neocloud 1-year) = $8,448 whether one job runs or many; the
    # rest of the 1-year term, 16 × (8,760 − 240) h × $2.20 = $299,904, is owed all the same.
    for rows in ([(0, 8, 1)], random_rows(1)):
        res = costsim.simulate(scenario(tmp_path, rows, [reserved()], horizon_days=10))
        s = res.summary.iloc[0]
        assert s.cost_reserved_usd == pytest.approx(16 * 240 * 2.20, abs=1e-6)
        assert s.cost_commitment_owed_usd == pytest.approx(16 * (8760 - 240) * 2.20, abs=1e-6)
        assert s.total_cost_usd == pytest.approx(16 * 8760 * 2.20, abs=1e-6)
    three = costsim.simulate(scenario(tmp_path, [(0, 8, 1)], [reserved(term_years=3)], horizon_days=10))
    assert three.summary.cost_reserved_usd[0] == pytest.approx(16 * 240 * 1.85)
    assert three.summary.total_cost_usd[0] == pytest.approx(16 * 3 * 8760 * 1.85)


def test_reserved_queues_like_an_owned_pool_of_the_same_size(tmp_path):
    rows = random_rows(2)
    for sched in ("fifo", "backfill", "priority"):
        res = costsim.simulate(scenario(tmp_path, rows, [owned(gpus=16, scheduler=sched),
                                                         reserved(gpus=16, scheduler=sched)], horizon_days=40))
        a, b = jobs_of(res, "own"), jobs_of(res, "res")
        np.testing.assert_array_equal(a.queue_delay_h.to_numpy(), b.queue_delay_h.to_numpy())


def test_spot_is_on_demand_at_the_spot_price(tmp_path):
    rows = random_rows(3)
    res = costsim.simulate(scenario(tmp_path, rows, [cloud("od", price_per_gpu_hour=1.60), cloud("spot", pricing="spot")]))
    od, spot = jobs_of(res, "od"), jobs_of(res, "spot")
    np.testing.assert_array_equal(od.start_h.to_numpy(), spot.start_h.to_numpy())
    assert res.summary.total_cost_usd[1] == pytest.approx(res.summary.total_cost_usd[0])  # catalog spot: $1.60


def test_no_job_bursts_before_waiting_and_every_job_runs_once(tmp_path):
    rows = random_rows(4, n=400)
    res = costsim.simulate(scenario(tmp_path, rows, [owned(gpus=16), cloud(provisioning_delay_h=0.5),
                                                     hybrid(max_wait_h=3)], horizon_days=40))
    j = jobs_of(res, "hyb")
    burst = j[j.ran_on == "cloud"]
    base = j[j.ran_on == "own"]
    assert len(burst) > 20 and len(base) > 20
    # A burst job waited its 3 h for the base, then provisioning: it starts 3.5 h after submit.
    assert np.allclose(burst.start_h - burst.submit_h, 3.5)
    assert (base.queue_delay_h <= 3 + 1e-9).all()
    assert j.completed.sum() + (~j.completed).sum() == len(rows)
    assert (j.ran_on != "").all() and res.summary.jobs_burst[2] == len(burst)


def test_bridging_through_the_lead_time(tmp_path):
    rows = [(1, 8, 2), (30, 8, 2), (60, 8, 2)]  # the base is delivered at 48 h
    opts = [owned(gpus=16, lead_time_days=2), cloud(), hybrid("bridge", max_wait_h=5), hybrid("wait", max_wait_h=5,
                                                                                          bridge_until_ready=False)]
    res = costsim.simulate(scenario(tmp_path, rows, opts))
    assert jobs_of(res, "bridge").ran_on.tolist() == ["cloud", "cloud", "own"]
    assert jobs_of(res, "bridge").queue_delay_h.tolist() == [0.0, 0.0, 0.0]
    # Without bridging a job before delivery waits its 5 h, then bursts.
    w = jobs_of(res, "wait")
    assert w.ran_on.tolist() == ["cloud", "cloud", "own"] and w.queue_delay_h.tolist() == [5.0, 5.0, 0.0]


def test_zero_wait_with_unlimited_burst_means_zero_delay(tmp_path):
    res = costsim.simulate(scenario(tmp_path, random_rows(5), [owned(gpus=16), cloud(), hybrid(max_wait_h=0)]))
    assert jobs_of(res, "hyb").queue_delay_h.abs().max() < 1e-9


def test_very_long_wait_is_the_base_alone(tmp_path):
    rows = random_rows(6)
    res = costsim.simulate(scenario(tmp_path, rows, [owned(gpus=16, scheduler="backfill"), cloud(),
                                                     hybrid(max_wait_h=1e6)], horizon_days=60))
    a, h = jobs_of(res, "own"), jobs_of(res, "hyb")
    np.testing.assert_array_equal(a.start_h.to_numpy(), h.start_h.to_numpy())
    s = res.summary.set_index("option")
    assert s.loc["hyb", "jobs_burst"] == 0 and s.loc["hyb", "total_cost_usd"] == pytest.approx(s.loc["own", "total_cost_usd"])


def test_hybrid_costs_both_parts(tmp_path):
    rows = random_rows(7, n=500)
    res = costsim.simulate(scenario(tmp_path, rows, [owned(gpus=16), cloud(price_per_gpu_hour=3.0),
                                                     hybrid(max_wait_h=1)], horizon_days=30))
    s = res.summary.set_index("option")
    j = jobs_of(res, "hyb")
    # The base's fixed costs are all there; the burst is billed job by job, exactly as on the cloud option.
    assert s.loc["hyb", "cost_capital_usd"] == pytest.approx(s.loc["own", "cost_capital_usd"])
    bills = j[j.ran_on == "cloud"].cost_usd.sum()
    assert s.loc["hyb", "cost_cloud_usd"] == pytest.approx(bills)
    assert j.cost_usd.sum() == pytest.approx(s.loc["hyb", "total_cost_usd"])


@settings(max_examples=15)
@given(st.integers(0, 10_000), st.floats(0, 12), st.sampled_from(["fifo", "backfill", "priority"]))
def test_hybrid_properties(tmp_path_factory, seed, wait, sched):
    rows = random_rows(seed, n=80, days=5)
    res = costsim.simulate(scenario(tmp_path_factory.mktemp("h"), rows, [owned(gpus=16, scheduler=sched), cloud(),
                                                                        hybrid(max_wait_h=wait)], horizon_days=10))
    j = jobs_of(res, "hyb")
    burst = j[j.ran_on == "cloud"]
    assert (burst.start_h - burst.submit_h >= wait - 1e-9).all()  # waited its limit first
    assert (j[j.ran_on == "own"].queue_delay_h <= wait + 1e-9).all()
    assert (j.ran_on != "").all()  # unlimited burst: everything starts
