"""Capacity-over-time figures (costsim.plots.capacity_plan): each draws the tables' numbers,
recomputed here from the raw tables and the scenario as written: capacity and demand (held +
queued GPUs) per day, tranches stacked from their delivery day, purchases from order to delivery,
cash paid per month, and a plan search's trials with the running best of those that meet."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from paths import ROOT

import costsim
from costsim.plots import capacity_plan as cp

LEAD_DAYS = 10


@pytest.fixture(scope="module")
def res():
    """growing-lab over 120 days, its second tranche ordered on day 40 and a 10-day lead time, so
    both tranches arrive within the horizon."""
    data = costsim.load_scenario(ROOT / "scenarios" / "growing-lab.yaml").model_dump(mode="json", exclude_unset=True)
    data["horizon_days"] = 120
    for o in data["options"]:
        if o.get("kind") == "owned":
            o["lead_time_days"] = LEAD_DAYS
        if o.get("tranches"):
            o["tranches"][1]["order_day"] = 40
    return costsim.simulate(costsim.scenario_from_data(data, "growing-lab-120d", ROOT / "scenarios"))


def _trace(fig, name, panel=None):
    found = [t for t in fig.data if t.name == name and (panel is None or t.yaxis == panel)]
    assert len(found) == 1, (name, panel, [t.name for t in fig.data])
    return found[0]


def test_capacity_and_demand_are_the_timeseries_daily_means(res):
    fig = cp.capacity_vs_demand(res)
    options = list(res.summary["option"])
    ts = res.timeseries
    for r, option in enumerate(options, start=1):
        mine = ts[ts["option"] == option]
        day = (mine["hour"] // 24).astype(int)
        capacity = mine["capacity_gpus"].groupby(day).mean()
        demand = (mine["busy_gpus"] + mine["queued_gpus"]).groupby(day).mean()
        panel = "y" if r == 1 else f"y{r}"
        line = _trace(fig, option, panel)
        assert list(line.x) == list(capacity.index)
        np.testing.assert_allclose(line.y, capacity.to_numpy())
        demand_line = _trace(fig, cp.DEMAND, panel)
        np.testing.assert_allclose(demand_line.y, demand.to_numpy())
    assert (ts.groupby("option")["queued_gpus"].max() > 0).any()  # demand is more than what is held somewhere


def test_an_option_bought_in_tranches_stacks_them_from_their_delivery(res):
    fig = cp.capacity_vs_demand(res)
    sc = res.scenario
    r = [o.name for o in sc.options].index("own-256-then-256") + 1
    panel = "y" if r == 1 else f"y{r}"
    tranches = {t.name: t for t in fig.data if t.yaxis == panel and t.name.startswith("tranche")}
    option = next(o for o in sc.options if o.name == "own-256-then-256")
    for k, written in enumerate(option.tranches, start=1):
        trace = tranches[f"tranche {k}"]
        delivered = written.order_day + LEAD_DAYS
        expected = [written.gpus if d >= delivered else 0 for d in trace.x]
        assert list(trace.y) == expected and trace.stackgroup
    # Bought at once: no stack, only the capacity and demand lines.
    r = [o.name for o in sc.options].index("own-512") + 1
    assert not [t for t in fig.data if t.yaxis == ("y" if r == 1 else f"y{r}") and t.name.startswith("tranche")]


def test_the_timeline_draws_each_purchase_from_order_to_delivery(res):
    fig = cp.tranche_timeline(res)
    bars = {(label, base, length) for t in fig.data for label, base, length in zip(t.y, t.base, t.x, strict=True)}
    expected = set()
    for o in res.scenario.options:
        if o.kind != "owned":
            continue
        for k, t in enumerate(o.tranches or [SimpleNamespace(order_day=0.0)], start=1):
            expected.add((f"{o.name} · {k}", t.order_day, LEAD_DAYS))
    assert bars == expected
    names = {t.name for t in fig.data}
    assert names == {"paid on order", "paid on delivery"}


def test_monthly_cash_is_what_each_month_paid(res):
    fig = cp.monthly_cash(res)
    cf = res.cashflow
    for option, g in cf.groupby("option"):
        line = next(t for t in fig.data if t.name == option and t.showlegend is False)
        np.testing.assert_allclose(line.y, (g["capex_usd"] + g["opex_usd"] + g["rent_usd"]
                                            + g["commitment_owed_usd"]).to_numpy())
        assert list(line.x) == list(g["month"] + 1)


def test_the_plan_progress_marks_trials_and_the_running_best():
    trials = pd.DataFrame({"trial": [1, 2, 3, 4, 5], "stage": ["search"] * 4 + ["refinement"],
                           "option": ["a", "b", "a", "a", "b"], "fair_total_usd": [9.0, 5.0, 7.0, 6.0, 6.5],
                           "meets": [True, False, True, True, True]})
    fig = cp.plan_progress(SimpleNamespace(trials=trials))
    best = _trace(fig, "best that meets so far")
    assert list(best.y) == [9.0, 9.0, 7.0, 6.0, 6.0]  # trial 2 is cheaper but misses
    assert list(_trace(fig, "search: misses a target").x) == [2]
    assert list(_trace(fig, "search: meets").y) == [9.0, 7.0, 6.0]
    assert list(_trace(fig, "refinement: meets").x) == [5]
    assert "USD" in fig.layout.yaxis.title.text and fig.layout.legend.y > 1
