"""Metamorphic properties on random traces (hypothesis)."""

import numpy as np
import pytest
from helpers import cloud, owned, scenario
from hypothesis import given, settings
from hypothesis import strategies as st

import costsim

traces = st.lists(
    st.tuples(st.floats(0, 100, allow_nan=False), st.integers(1, 8), st.floats(0.05, 30, allow_nan=False)),
    min_size=1, max_size=60,
)


def sim(tmp_path_factory, rows, options, **kw):
    folder = tmp_path_factory.mktemp("p")
    return costsim.simulate(scenario(folder, rows, options, horizon_days=20, **kw))


@pytest.mark.slow
@settings(max_examples=40)
@given(traces, st.integers(8, 16), st.integers(1, 8))
def test_more_owned_gpus_never_raise_mean_delay_fifo(tmp_path_factory, rows, gpus, extra):
    # Holds for strict FIFO when capacity is counted in GPUs (one GPU per node: no placement
    # effects): every job starts no later. Backfill and fragmentation have known anomalies.
    res = sim(tmp_path_factory, rows, [owned("small", gpus=gpus, gpus_per_node=1),
                                        owned("big", gpus=gpus + extra, gpus_per_node=1)])
    j = res.jobs.pivot(index="job_id", columns="option", values="queue_delay_h")
    assert (j["big"] <= j["small"] + 1e-9).all()


@pytest.mark.slow
@settings(max_examples=25)
@given(traces, st.floats(0.5, 5), st.floats(0.01, 3), st.floats(10_000, 50_000), st.floats(1, 20_000))
def test_higher_prices_never_lower_cost(tmp_path_factory, rows, price, bump, capex, capex_bump):
    res = sim(tmp_path_factory, rows, [
        cloud("c1", price_per_gpu_hour=price), cloud("c2", price_per_gpu_hour=price + bump),
        owned("o1", gpus=16, capex_usd_per_gpu=capex), owned("o2", gpus=16, capex_usd_per_gpu=capex + capex_bump),
    ])
    cost = res.summary.set_index("option").total_cost_usd
    assert cost["c2"] >= cost["c1"] and cost["o2"] >= cost["o1"]
    # Cloud cost is linear in price.
    assert cost["c2"] / cost["c1"] == pytest.approx((price + bump) / price, rel=1e-9)


@pytest.mark.slow
@settings(max_examples=25)
@given(traces, st.sampled_from(["fifo", "backfill", "priority"]), st.integers(0, 3))
def test_capacity_bounds_and_accounting(tmp_path_factory, rows, scheduler, lead_days):
    res = sim(tmp_path_factory, rows, [owned(gpus=8, scheduler=scheduler, lead_time_days=lead_days),
                                        cloud(max_gpus=16, provisioning_delay_h=0.2)])
    ts, s = res.timeseries, res.summary
    assert (ts.busy_gpus <= ts.capacity_gpus + 1e-9).all()
    assert (s.utilization.dropna().between(0, 1 + 1e-12)).all()
    for name, j in res.jobs.groupby("option"):
        t = ts[ts.option == name]
        assert j.gpu_hours.sum() == pytest.approx(t.busy_gpus.sum(), rel=1e-9, abs=1e-9)
        assert j.gpu_hours.sum() <= t.capacity_gpus.sum() + 1e-9
    held = res.jobs[res.jobs.option == "own"]
    assert (held.start_h.isna() | (held.start_h >= lead_days * 24 - 1e-9)).all()


@settings(max_examples=15)
@given(traces)
def test_backfill_never_delays_what_fifo_would_start_first(tmp_path_factory, rows):
    # EASY's guarantee: the first job to wait under FIFO never starts later under backfill.
    res = sim(tmp_path_factory, rows, [owned("fifo", gpus=8, gpus_per_node=1, scheduler="fifo"),
                                        owned("bf", gpus=8, gpus_per_node=1, scheduler="backfill")])
    j = res.jobs.pivot(index="job_id", columns="option", values="start_h").dropna()
    f = res.jobs[res.jobs.option == "fifo"].reset_index(drop=True)
    waited = f[f.queue_delay_h > 1e-9]
    if len(waited):
        first = waited.job_id.iloc[0]
        if first in j.index:
            assert j.loc[first, "bf"] <= j.loc[first, "fifo"] + 1e-9
    assert np.isfinite(res.summary.queue_delay_mean_h).all()


@pytest.mark.slow
@settings(max_examples=20)
@given(traces, st.floats(0, 10), st.booleans(), st.integers(0, 2), st.floats(0, 0.3))
def test_cost_accounting_on_every_kind_of_option(tmp_path_factory, rows, wait, with_serving, lead_days, rate):
    options = [owned(gpus=16, lead_time_days=lead_days), cloud("od"), cloud("spot", pricing="spot"),
               {"name": "res", "kind": "cloud", "gpu_type": "H100", "pricing": "reserved", "reserved_gpus": 16},
               {"name": "hyb", "kind": "hybrid", "base": "own", "burst": "od", "max_wait_h": wait},
               {"name": "hres", "kind": "hybrid", "base": "res", "burst": "spot", "max_wait_h": wait}]
    extra = {"serving": {"gpus": {"base": 3, "diurnal_amplitude": 0.5}}} if with_serving else {}
    res = sim(tmp_path_factory, rows, options, economics={"discount_rate": rate}, **extra)
    s = res.summary.set_index("option")
    items = s[[c for c in s.columns if c.startswith("cost_") and c.endswith("_usd") and "per" not in c]]
    for name, j in res.jobs.groupby("option"):
        total = s.loc[name, "total_cost_usd"]
        assert items.loc[name].sum() == pytest.approx(total, rel=1e-9)  # line items add up
        owed = s.loc[name, "cost_commitment_owed_usd"]  # the rest of a reservation's term: in no job's cost
        assert j.cost_usd.sum() + s.loc[name, "serving_cost_usd"] + owed == pytest.approx(total, rel=1e-9, abs=1e-6)
        cum = res.timeseries[res.timeseries.option == name].cost_cum_usd.to_numpy()
        assert (np.diff(cum) >= -1e-6).all() and cum[-1] == pytest.approx(total, rel=1e-9)  # non-decreasing
        assert res.costs[res.costs.option == name].cost_usd.sum() == pytest.approx(total, rel=1e-9)
        assert 0 <= s.loc[name, "idle_cost_usd"] <= total + 1e-6
