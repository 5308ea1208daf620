"""A fleet of three parts against hand calculations, and what a fleet costs beside its first part alone.

Every option here is one 8-GPU node or instance, without failures, provisioning or startup, so each
start time and each dollar follows from the routing rule (costsim/engine/fleet.py) by hand.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers import cloud, jobs_of, owned, scenario

import costsim

PRICE_OD = 2.0  # USD per GPU-hour
PRICE_RES = 1.5
HORIZON_DAYS = 2.0
RES = {"name": "res", "kind": "cloud", "gpu_type": "H100", "pricing": "reserved", "reserved_gpus": 8,
       "gpus_per_instance": 8, "price_per_gpu_hour": PRICE_RES}
OD = cloud("od", price_per_gpu_hour=PRICE_OD, gpus_per_instance=8, billing_granularity_s=1, minimum_billing_s=0)


def fleet(wait_h: float = 4.0, parts=("own", "res", "od")) -> dict:
    *pools, burst = parts
    return {"name": "fleet", "kind": "fleet",
            "parts": [*({"option": p} for p in pools), {"option": burst, "max_wait_h": wait_h}]}


def test_jobs_go_to_the_first_part_that_can_start_them_and_burst_after_their_wait(tmp_path):
    # (submit h, GPUs, hours). At 0 both pools are free: job 0 takes own (the first part), job 1 the
    # reservation (own is full), job 2 waits in both queues; the reservation frees at 3 and starts it
    # there (before its 4 h wait ends at 4). Job 3 (0.5 h) finds both busy until 8 and 10 and
    # bursts when its wait ends, at 4.5, for its 1 h on 8 on-demand GPUs.
    rows = [(0.0, 8, 10.0), (0.0, 8, 3.0), (0.0, 8, 5.0), (0.5, 8, 1.0)]
    sc = scenario(tmp_path, rows, [owned(gpus=8, gpus_per_node=8), RES, OD, fleet()], horizon_days=HORIZON_DAYS)
    res = costsim.simulate(sc)
    j = jobs_of(res, "fleet")
    assert j.ran_on.tolist() == ["own", "res", "res", "od"]
    np.testing.assert_allclose(j.start_h, [0.0, 0.0, 3.0, 4.5])
    row = res.summary.set_index("option").loc["fleet"]
    assert row.jobs_burst == 1 and row.gpu_hours_burst == pytest.approx(8.0)
    assert row.pricing == "owned+reserved+on_demand"
    costs = res.costs[res.costs.option == "fleet"].groupby("item").cost_usd.sum()
    assert costs["cloud:od"] == pytest.approx(8 * 1.0 * PRICE_OD)  # one 8-GPU hour on demand
    assert costs["reserved:res"] == pytest.approx(8 * PRICE_RES * HORIZON_DAYS * 24)  # every hour, used or not
    assert {"capital:own", "energy:own", "commitment_owed:res"} <= set(costs.index)
    # The parts' own rows are those of the parts alone where the use is the same: the reservation's bill.
    alone = res.costs[res.costs.option == "res"].groupby("item").cost_usd.sum()
    assert costs["reserved:res"] == pytest.approx(alone["reserved"])
    # Summed by line item, the rows are the summary's totals.
    by_item = costs.groupby(costs.index.str.split(":").str[0]).sum()
    for item, usd in by_item.items():
        assert row[f"cost_{item}_usd"] == pytest.approx(usd)
    assert row.total_cost_usd == pytest.approx(costs.sum())
    # Capacity: the two pools' GPUs every hour (8 + 8: each pool once), and the 8 on-demand GPUs
    # rented from 4.5 to 5.5 (half of hours 4 and 5).
    ts = res.timeseries[res.timeseries.option == "fleet"].capacity_gpus.to_numpy()
    np.testing.assert_allclose(ts[[0, 4, 5, 6]], [16.0, 20.0, 20.0, 16.0])


def test_a_pool_that_frees_first_takes_the_waiting_job_even_if_it_is_a_later_part(tmp_path):
    # own is busy for 10 h, the reservation for 2 h; a job submitted at 1 waits in both and starts
    # on the reservation at 2, not on own at 10 (nor on the burst at 1 + 4).
    rows = [(0.0, 8, 10.0), (0.0, 8, 2.0), (1.0, 8, 1.0)]
    sc = scenario(tmp_path, rows, [owned(gpus=8, gpus_per_node=8), RES, OD, fleet()], horizon_days=HORIZON_DAYS)
    j = jobs_of(costsim.simulate(sc), "fleet")
    assert j.ran_on.tolist() == ["own", "res", "res"]
    np.testing.assert_allclose(j.start_h, [0.0, 0.0, 2.0])


def test_part_order_is_preference_order(tmp_path):
    # The same pools listed the other way round: the first job now takes the reservation.
    rows = [(0.0, 8, 10.0), (0.0, 8, 3.0)]
    sc = scenario(tmp_path, rows, [owned(gpus=8, gpus_per_node=8), RES, OD, fleet(parts=("res", "own", "od"))],
                  horizon_days=HORIZON_DAYS)
    assert jobs_of(costsim.simulate(sc), "fleet").ran_on.tolist() == ["res", "own"]


def test_bridging_skips_an_undelivered_first_part_but_uses_a_delivered_later_one(tmp_path):
    # own arrives on day 1 (hour 24); bridging, a job before then joins only the reservation (there
    # at once) and, that busy, bursts after its wait; after delivery it goes to own.
    rows = [(0.0, 8, 30.0), (0.0, 8, 1.0), (25.0, 8, 1.0)]
    late = owned(gpus=8, gpus_per_node=8, lead_time_days=1)
    opts = [late, RES, OD, {**fleet(), "bridge_until_ready": True}]
    j = jobs_of(costsim.simulate(scenario(tmp_path, rows, opts, horizon_days=HORIZON_DAYS)), "fleet")
    assert j.ran_on.tolist() == ["res", "od", "own"]
    np.testing.assert_allclose(j.start_h, [0.0, 4.0, 25.0])


def test_a_fleet_whose_first_part_never_keeps_a_job_waiting_runs_every_job_there(tmp_path):
    """The sense in which "a fleet never costs more than its cheapest part alone" holds.

    If the first part alone starts every job the instant it arrives (it meets any delay target), the
    fleet routes every job to it at the same instants — the first part decides first — so its jobs
    are the first part's, its burst is never billed and its cost is the first part's plus only what
    its other pools cost whether used or not (a reservation's commitment). So a fleet of a pool and a
    pay-as-you-go burst costs exactly its pool alone, while a fleet with another committed pool costs
    more than its cheapest part alone by that commitment: the claim does not hold for committed parts.
    """
    rng = np.random.default_rng(7)
    submit = np.sort(rng.uniform(0, 40, 30))
    rows = [(float(s), 8, 0.5) for s in submit]  # half-hour jobs, never two at once on 16 GPUs ...
    gaps = np.diff(submit)
    rows = [r for r, ok in zip(rows, np.r_[True, gaps > 0.5], strict=True) if ok]  # ... made sure of
    opts = [owned(gpus=16, gpus_per_node=8), RES, OD, fleet(), {**fleet(parts=("own", "od")), "name": "lean"}]
    res = costsim.simulate(scenario(tmp_path, rows, opts, horizon_days=HORIZON_DAYS))
    own, full, lean = (jobs_of(res, name) for name in ("own", "fleet", "lean"))
    assert (own.start_h == own.submit_h).all()  # the premise: no job waits on own alone
    for j in (full, lean):
        assert (j.ran_on == "own").all()
        pd.testing.assert_series_equal(j.start_h, own.start_h)
    total = res.summary.set_index("option").total_cost_usd
    assert total["lean"] == pytest.approx(total["own"], rel=1e-12)
    assert total["fleet"] == pytest.approx(total["own"] + total["res"], rel=1e-12)  # the idle reservation on top
    assert total["fleet"] > min(total["own"], total["res"])


def test_a_later_pool_fails_on_its_own_stream_and_a_failed_job_stays_there(tmp_path):
    # The reservation is the first part; own (second) fails often. Every job that ever started on
    # own and was interrupted restarts there, never on the burst.
    rows = [(float(h), 8, 6.0) for h in range(0, 40, 1)]
    frail = owned(gpus=8, gpus_per_node=8, failures={"node_failures_per_1000_node_days": 20_000, "repair_hours": 1})
    opts = [frail, RES, OD, fleet(wait_h=2, parts=("res", "own", "od"))]
    j = jobs_of(costsim.simulate(scenario(tmp_path, rows, opts, horizon_days=HORIZON_DAYS), seed=2), "fleet")
    restarted = j[j.restarts > 0]
    assert len(restarted) and (restarted.ran_on == "own").all()
    assert set(j.ran_on) - {""} == {"res", "own", "od"}


def test_an_owned_later_part_is_paid_for_in_the_fleets_cash_flow(tmp_path):
    # The owned cluster is the second part: its purchase and book value are the fleet's as they are
    # the cluster's alone (the same hardware, bought on the same day), and the reservation's monthly
    # bill is in the fleet's rent.
    rows = [(0.0, 8, 1.0)]
    opts = [owned(gpus=8, gpus_per_node=8), RES, OD, fleet(parts=("res", "own", "od"))]
    res = costsim.simulate(scenario(tmp_path, rows, opts, horizon_days=HORIZON_DAYS))
    cash = res.cashflow.groupby("option")[["capex_usd", "book_value_usd"]].sum()
    assert cash.loc["own", "capex_usd"] > 0
    assert cash.loc["fleet", "capex_usd"] == pytest.approx(cash.loc["own", "capex_usd"])
    assert cash.loc["fleet", "book_value_usd"] == pytest.approx(cash.loc["own", "book_value_usd"])
