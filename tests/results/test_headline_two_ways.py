"""Every headline figure computed two independent ways, on every shipped scenario."""

import numpy as np
import pytest

import costsim
from costsim.dashboard import shipped_scenarios
from costsim.results.costing import ALL_ITEMS

# Every test runs on full-year simulations of every shipped scenario.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=list(shipped_scenarios()))
def results(request):
    return costsim.simulate(shipped_scenarios()[request.param])


def test_total_cost_four_ways(results):
    s = results.summary.set_index("option")
    items = s[[f"cost_{i}_usd" for i in ALL_ITEMS]].sum(axis=1)
    by_jobs = results.jobs.groupby("option")["cost_usd"].sum()
    by_month = results.costs.groupby("option")["cost_usd"].sum()
    by_curve = results.timeseries.groupby("option")["cost_cum_usd"].last()
    for name in s.index:
        total = s.loc[name, "total_cost_usd"]
        assert items[name] == pytest.approx(total, rel=1e-9)
        assert by_month[name] == pytest.approx(total, rel=1e-9)
        assert by_curve[name] == pytest.approx(total, rel=1e-9)
        if s.loc[name, "gpu_hours_used"] > 0:  # jobs and serving share every dollar but the commitment owed
            assert by_jobs[name] + s.loc[name, "serving_cost_usd"] + s.loc[name, "cost_commitment_owed_usd"] == \
                pytest.approx(total, rel=1e-9)


def test_utilization_from_jobs_and_from_timeseries(results):
    ts = results.timeseries
    width = np.minimum(ts.hour + 1, results.scenario.horizon_h) - ts.hour
    for name, j in results.jobs.groupby("option"):
        t = ts.option == name
        from_ts = (ts.busy_gpus[t] * width[t]).sum() / (ts.capacity_gpus[t] * width[t]).sum()
        serving = results.summary.set_index("option").loc[name, "serving_gpu_hours"]
        from_jobs = (j.gpu_hours.sum() + serving) / (ts.capacity_gpus[t] * width[t]).sum()
        util = results.summary.set_index("option").loc[name, "utilization"]
        assert from_ts == pytest.approx(from_jobs, rel=1e-9) and util == pytest.approx(from_ts, rel=1e-9)


def test_invariants(results):
    ts = results.timeseries
    assert (ts.busy_gpus <= ts.capacity_gpus + 1e-9).all()
    assert (ts[["capacity_gpus", "busy_gpus", "queued_jobs", "rented_gpus", "serving_gpus"]] >= -1e-9).all().all()
    s = results.summary
    items = s[[c for c in s.columns if c.startswith("cost_") and c.endswith("_usd") and "per" not in c]]
    assert np.allclose(items.sum(axis=1), s.total_cost_usd, rtol=1e-9)
    cash = results.cashflow.groupby("option", sort=False)
    assert np.allclose(cash.cumulative_usd.last().to_numpy(), cash.cash_usd.sum().to_numpy())
    assert (ts.groupby("option").cost_cum_usd.diff().dropna() >= -1e-6).all()
    j = results.jobs
    assert (j.queue_delay_h >= -1e-9).all()
    assert (j.start_h.isna() | (j.start_h >= j.submit_h - 1e-9)).all()
    # Every job is completed or reported unfinished: never started (no start) or cut (no end).
    assert (j.completed == j.end_h.notna()).all()
    assert (j.completed <= j.start_h.notna()).all()
    s = results.summary
    assert (s.jobs_completed == j.groupby("option", sort=False).completed.sum().to_numpy()).all()


def test_all_options_see_the_same_jobs(results):
    cols = ["job_id", "job_class", "gpus", "submit_h"]
    frames = [g[cols].reset_index(drop=True) for _, g in results.jobs.groupby("option", sort=False)]
    for f in frames[1:]:
        assert f.equals(frames[0])
