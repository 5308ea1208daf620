"""Cost identities on random small scenarios of every option kind (hypothesis, derandomised).

The identity (DESIGN.md sections 7 and 8, README "Costs"): a job's ``cost_usd`` is its bills on
rented capacity, or its share by GPU-hours of its pool's cost within the horizon (idle capacity
included; a hybrid's base that held nothing is carried by its burst); serving's cost likewise.
So for every option that held any GPU-hours (one that held none carries its cost as idle only)

    Σ job cost + serving cost + commitment owed = total,

and ``idle_cost_usd`` is the part of a pool's cost its unheld capacity accounts for:
(total − owed) × utilisation + idle = total − owed on a single pool. Cash flow: Σ cash = total
cost for rented and reserved options always, and for owned ones with straight-line capital
(``cost_of_capital`` 0, set here).
"""

import numpy as np
import pytest
from helpers import cloud, owned, scenario
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

import costsim

HORIZON_DAYS = 6

rows = st.lists(
    st.tuples(st.floats(0, HORIZON_DAYS * 24 - 1), st.sampled_from([1, 2, 4, 8, 16]), st.floats(0.05, 30)),
    min_size=1, max_size=25,
).map(lambda r: sorted(r))


def options(lead_days: float, failures: bool, preemptions: float, wait: float, bridge: bool) -> list[dict]:
    fail = {"node_failures_per_1000_node_days": 200.0, "repair_hours": 6.0} if failures else None
    return [
        owned("own", gpus=32, lead_time_days=lead_days, failures=fail, scheduler="backfill"),
        cloud("od", price_per_gpu_hour=2.5, startup_h=0.1, provisioning_delay_h=0.2, failures=fail),
        cloud("spot", pricing="spot", preemptions_per_instance_day=preemptions, reacquire_delay_h=0.5),
        {"name": "res", "kind": "cloud", "gpu_type": "H100", "pricing": "reserved", "reserved_gpus": 32,
         "failures": fail},
        {"name": "hyb", "kind": "hybrid", "base": "own", "burst": "od", "max_wait_h": wait,
         "bridge_until_ready": bridge},
        {"name": "hres", "kind": "hybrid", "base": "res", "burst": "spot", "max_wait_h": wait},
    ]


def unshared_cost(s) -> float:
    """The cost no job or serving carries: all of it (the commitment owed aside) when the option
    held nothing; a hybrid's unused base is carried by its burst (the rule above)."""
    return s.total_cost_usd - s.cost_commitment_owed_usd if s.gpu_hours_used == 0 else 0.0


@settings(max_examples=25, phases=[Phase.explicit, Phase.reuse, Phase.generate])  # no shrinking: 2 shared cores
@given(rows, st.sampled_from([0, 0.5, 1]), st.booleans(), st.booleans(), st.floats(0, 3), st.floats(0, 6),
       st.booleans())
def test_costs_add_up_on_every_kind_of_option(tmp_path_factory, trace, lead_days, failures, serving, preemptions,
                                              wait, bridge):
    extra = {"serving": {"gpus": {"base": 4, "diurnal_amplitude": 0.5}}} if serving else {}
    sc = scenario(tmp_path_factory.mktemp("c"), trace, options(lead_days, failures, preemptions, wait, bridge),
                  horizon_days=HORIZON_DAYS, economics={"cost_of_capital": 0.0, "discount_rate": 0.1}, **extra)
    res = costsim.simulate(sc)
    summary = res.summary.set_index("option")
    for name, s in summary.iterrows():
        j = res.jobs[res.jobs.option == name]
        assert (j.cost_usd >= 0).all()
        # Per-job costs, serving, the commitment owed and any unheld pool add up, within a cent per job.
        parts = j.cost_usd.sum() + s.serving_cost_usd + s.cost_commitment_owed_usd + unshared_cost(s)
        assert parts == pytest.approx(s.total_cost_usd, abs=0.01 * max(len(j), 1))
        # RL and trace job columns split the job costs (this trace has no RL jobs).
        assert s.trace_jobs_cost_usd == pytest.approx(j.cost_usd.sum()) and s.rl_jobs_cost_usd == 0
        # The commitment owed: the rest of a 1-year term for 32 GPUs at $2.20 (catalog neocloud).
        owed = 32 * (8760 - HORIZON_DAYS * 24) * 2.20 if name in ("res", "hres") else 0.0
        assert s.cost_commitment_owed_usd == pytest.approx(owed)
        if name in ("own", "res") and s.gpu_hours_used > 0:
            in_horizon = s.total_cost_usd - owed
            assert in_horizon * s.utilization + s.idle_cost_usd == pytest.approx(in_horizon, rel=1e-9)
        if name in ("od", "spot"):
            assert s.idle_cost_usd == 0
        # Cash adds up to the total cost (straight-line capital). Without capex up front (and a book
        # value credited only at the end), paying later at 10 % never raises the present value.
        cf = res.cashflow[res.cashflow.option == name]
        assert cf.cash_usd.sum() == pytest.approx(s.total_cost_usd, rel=1e-9, abs=1e-6)
        assert cf.commitment_owed_usd.sum() == pytest.approx(owed)
        if name not in ("own", "hyb"):
            assert s.npv_usd <= s.total_cost_usd + 1e-6
        # The monthly table and the cumulative curve end at the total.
        assert res.costs[res.costs.option == name].cost_usd.sum() == pytest.approx(s.total_cost_usd, rel=1e-9)
        cum = res.timeseries[res.timeseries.option == name].cost_cum_usd.to_numpy()
        assert cum[-1] == pytest.approx(s.total_cost_usd, rel=1e-9) and (np.diff(cum) >= -1e-6).all()
    # Serving is served in full wherever capacity can be rented for it (bridging included).
    if serving:
        for name in ("od", "spot", "res", "hres") + (("hyb",) if bridge or lead_days == 0 else ()):
            if not failures:
                assert summary.loc[name, "serving_unmet_gpu_hours"] == pytest.approx(0, abs=1e-6)
