"""Issue 8, accounting items 1, 2, 10, 11, 12, 13, 14 and 17: each against a hand calculation.

Economics are set explicitly where a figure depends on them. Months are 730 h, years 8,760 h.
"""

import html
import json

import numpy as np
import pytest
from helpers import cloud, jobs_of, owned, scenario
from typer.testing import CliRunner

import costsim
from costsim.cli.commands import app
from costsim.models import economics as eco
from costsim.plots import figures as plots
from costsim.scenario import ScenarioError

NOTHING = [(200_000, 8, 1)]  # one job after the horizon: nothing runs, only fixed costs and serving
ECON = {"electricity_usd_per_kwh": 0.10, "pue": 1.2, "colo_usd_per_kw_month": 200.0, "depreciation_years": 5,
        "residual_value_frac": 0.10, "maintenance_frac_per_year": 0.05, "staff_usd_per_fte_year": 200_000,
        "gpus_per_fte": 800, "cost_of_capital": 0.0, "setup_usd": 10_000, "discount_rate": 0.0}


def reserved(name="res", gpus=16, **kw):
    return {"name": name, "kind": "cloud", "gpu_type": "H100", "pricing": "reserved", "reserved_gpus": gpus, **kw}


def hybrid(name="hyb", base="own", burst="cloud", **kw):
    return {"name": name, "kind": "hybrid", "base": base, "burst": burst, **kw}


# 1. Rented serving is in the cash flow, the NPV and the break-even.

def test_rented_serving_is_cash(tmp_path):
    # 8 serving GPUs (one instance) for one 730 h month at $2/GPU-h: 8 × 730 × 2 = $11,680.
    sc = scenario(tmp_path, NOTHING, [cloud(price_per_gpu_hour=2.0)], horizon_days=730 / 24,
                  serving={"gpus": {"base": 8}}, economics={"discount_rate": 0.0})
    res = costsim.simulate(sc)
    cf = res.cashflow
    assert len(cf) == 1
    assert cf.rent_usd[0] == pytest.approx(11_680) and cf.cash_usd[0] == pytest.approx(11_680)
    assert res.summary.npv_usd[0] == pytest.approx(11_680)
    assert res.summary.total_cost_usd[0] == pytest.approx(11_680)


def test_rented_serving_counts_in_the_breakeven(tmp_path):
    # Owned $1,000 capex per GPU, 16 GPUs, no other cost: $16,000 in month 0. Renting serving's 16
    # GPUs at $1 costs 16 × 730 = $11,680 a month: the cumulative $11,680, $23,360 passes $16,000
    # by the second month's end: month 2 (month numbers count from 1). Without serving in the
    # rental's cash it would never break even.
    econ = {**ECON, "electricity_usd_per_kwh": 0.0, "colo_usd_per_kw_month": 0.0, "maintenance_frac_per_year": 0.0,
            "staff_usd_per_fte_year": 0.0, "setup_usd": 0.0}
    sc = scenario(tmp_path, NOTHING, [owned(gpus=16, capex_usd_per_gpu=1000), cloud(price_per_gpu_hour=1.0)],
                  horizon_days=3 * 730 / 24, serving={"gpus": {"base": 16}}, economics=econ)
    b = costsim.simulate(sc).breakeven.iloc[0]
    assert (b.option, b.versus, b.breakeven_month) == ("own", "cloud", 2)


# 2. Break-even: month 1 when cheaper from the first month; cheaper first and dearer later is not
# a break-even. Months are numbered from 1: entry k of a cumulative is month k + 1's end.

def test_breakeven_month_by_hand():
    assert eco.breakeven_month([1, 2, 3, 4], [2, 4, 6, 8]) == 1
    assert np.isnan(eco.cheaper_until_month([1, 2, 3, 4], [2, 4, 6, 8]))
    # At or below from the third entry (7 <= 7) and stays: month 2 + 1 = 3.
    assert eco.breakeven_month([5, 6, 7, 8], [2, 4, 7, 10]) == 3
    # Below, then above, then below again for good from the fourth entry: the last crossing, month 4.
    assert eco.breakeven_month([1, 5, 6, 7, 8], [2, 4, 5, 8, 10]) == 4
    # Cheaper by the ends of months 1 and 2, dearer from month 3 to the end: no break-even,
    # cheaper until month 2.
    own, rent = [1, 2, 10, 20], [2, 4, 6, 8]
    assert np.isnan(eco.breakeven_month(own, rent)) and eco.cheaper_until_month(own, rent) == 2
    assert np.isnan(eco.breakeven_month_extrapolated(own, rent))  # the gap is widening
    # Never cheaper within the horizon: blank, extrapolated beside it (gap 12 after 4 months,
    # closing 2 a month: 6 more, 10 months in, month 10).
    own, rent = [20, 21, 22, 23], [3, 6, 9, 12]
    assert np.isnan(eco.breakeven_month(own, rent)) and np.isnan(eco.cheaper_until_month(own, rent))
    assert eco.breakeven_month_extrapolated(own, rent) == 4 + 6


def test_reservation_cheaper_every_month_breaks_even_in_month_1(tmp_path):
    # 16 reserved GPUs at $2.20 vs on-demand at $2.99, one 16-GPU job all horizon (the whole 1-year
    # term, so nothing is owed after it): the reservation is cheaper from the first month on.
    sc = scenario(tmp_path, [(0, 16, 10_000)], [reserved(), cloud(price_per_gpu_hour=2.99)], horizon_days=365)
    res = costsim.simulate(sc)
    b = res.breakeven.iloc[0]
    assert (b.option, b.versus, b.breakeven_month, b.breakeven_month_extrapolated) == ("res", "cloud", 1, 1)
    assert np.isnan(b.cheaper_until_month)
    fig = plots.cumulative_cash(res)  # the figure marks it
    assert any("res = cloud" in a.text for a in fig.layout.annotations)
    # at the end of month 1: x = 1 on the figure's axis of month ends (1 … 12)
    assert list(fig.data[0].x) == list(range(1, 13)) and [v.x0 for v in fig.layout.shapes] == [1]


def test_commitment_owed_counts_in_the_break_even(tmp_path):
    # A 3-year term of 16 GPUs at $1.85 over a 1-year horizon: $21,608 a month (16 × 730 × 1.85) and
    # 16 × 17,520 × 1.85 = $518,592 owed for the two years after it, in month 11. On-demand at $2.99
    # for one 16-GPU job all year: $34,923.20 a month. Cumulative by the end of month 11 (months
    # count from 1): 237,688 ≤ 384,155; by month 12's: 259,296 + 518,592 = 777,888 > 419,078.
    # Dearer at the end: no break-even, cheaper until month 11 (leaving the owed years out would
    # call it cheaper from month 1).
    sc = scenario(tmp_path, [(0, 16, 10_000)], [reserved(term_years=3, price_per_gpu_hour=1.85),
                                                cloud(price_per_gpu_hour=2.99)], horizon_days=365)
    res = costsim.simulate(sc)
    s = res.summary.set_index("option")
    assert s.loc["res", "cost_commitment_owed_usd"] == pytest.approx(518_592, abs=0.01)
    b = res.breakeven.iloc[0]
    assert np.isnan(b.breakeven_month) and b.cheaper_until_month == 11
    cum = res.cashflow[res.cashflow.option == "res"].cumulative_usd.to_numpy()
    assert cum[-1] == pytest.approx(777_888, abs=0.01)


def test_cheaper_first_dearer_later_is_flagged(tmp_path):
    # 16 reserved GPUs at $2.20 = $25,696 a month. On-demand at $2.99: a 16-GPU job in month 0
    # ($34,923), nothing after. Cumulative: reserved 25,696, 51,392, 77,088; on-demand 34,923 flat:
    # at or below by the end of month 1 only.
    sc = scenario(tmp_path, [(0, 16, 730)], [reserved(), cloud(price_per_gpu_hour=2.99)], horizon_days=3 * 730 / 24)
    res = costsim.simulate(sc)
    b = res.breakeven.iloc[0]
    assert np.isnan(b.breakeven_month) and b.cheaper_until_month == 1
    fig = plots.cumulative_cash(res)
    # plotly shows the annotation's entities as characters (user names in figures are escaped)
    assert any("res < cloud until" in html.unescape(a.text) for a in fig.layout.annotations)
    assert [v.x0 for v in fig.layout.shapes] == [1]  # the end of month 1 on the month-end axis


# 10. A commitment is owed for its whole term; renewal only when the scenario says so.

def test_commitment_is_owed_for_its_whole_term(tmp_path):
    # 3-year rate ($1.85) for 16 GPUs over a 1-year horizon: 1 year billed, 2 years owed at its end.
    year = 16 * 8760 * 1.85
    res = costsim.simulate(scenario(tmp_path, [(0, 8, 1)], [reserved(term_years=3)], horizon_days=365,
                                    economics={"discount_rate": 0.10}))
    s = res.summary.iloc[0]
    assert s.cost_reserved_usd == pytest.approx(year) and s.cost_commitment_owed_usd == pytest.approx(2 * year)
    assert s.total_cost_usd == pytest.approx(3 * year)
    cf = res.cashflow
    assert cf.commitment_owed_usd.tolist()[:-1] == [0] * 11 and cf.commitment_owed_usd.iloc[-1] == pytest.approx(2 * year)
    assert cf.cash_usd.sum() == pytest.approx(3 * year)
    # 14. NPV: each month's rent at its start, the commitment owed at the horizon's end (1 year).
    npv = sum(year / 12 / 1.10 ** (m / 12) for m in range(12)) + 2 * year / 1.10
    assert s.npv_usd == pytest.approx(npv)
    # The jobs carry the year they used, not the years after the horizon.
    assert jobs_of(res, "res").cost_usd.sum() == pytest.approx(year)


def test_horizon_beyond_the_term_needs_renew(tmp_path):
    with pytest.raises(ScenarioError) as err:
        scenario(tmp_path, [(0, 8, 1)], [reserved(term_years=1)], horizon_days=730)
    assert "options.0.renew" in str(err.value) and "1-year term" in str(err.value)
    # A hybrid's reserved base is checked where it is defined.
    with pytest.raises(ScenarioError, match=r"options\.1\.renew"):
        scenario(tmp_path, [(0, 8, 1)], [cloud(), reserved(), hybrid(base="res")], horizon_days=400)
    with pytest.raises(ScenarioError, match="renew applies to pricing reserved only"):
        scenario(tmp_path, [(0, 8, 1)], [cloud(renew=True)])


def test_horizon_beyond_the_term_is_a_cli_error(tmp_path):
    (tmp_path / "jobs.csv").write_text("submit_h,gpus,duration_h\n0,8,1\n")
    (tmp_path / "s.yaml").write_text(
        "name: s\nhorizon_days: 400\nworkload: {trace: jobs.csv}\noptions:\n"
        "  - {name: res, kind: cloud, gpu_type: H100, pricing: reserved, reserved_gpus: 16}\n")
    out = CliRunner().invoke(app, ["validate", str(tmp_path / "s.yaml")])
    assert out.exit_code == 2 and "options.0.renew" in out.output and "Traceback" not in out.output


def test_renewed_commitment(tmp_path):
    # 1-year term renewed over 18 months (13,140 h): 13,140 h billed, the rest of the second term
    # (17,520 − 13,140 = 4,380 h) owed. Over exactly two years nothing is owed.
    res = costsim.simulate(scenario(tmp_path, [(0, 8, 1)], [reserved(renew=True)], horizon_days=547.5))
    s = res.summary.iloc[0]
    assert s.cost_reserved_usd == pytest.approx(16 * 13_140 * 2.20)
    assert s.cost_commitment_owed_usd == pytest.approx(16 * 4_380 * 2.20)
    two = costsim.simulate(scenario(tmp_path, [(0, 8, 1)], [reserved(renew=True)], horizon_days=730)).summary.iloc[0]
    assert two.cost_commitment_owed_usd == 0 and two.total_cost_usd == pytest.approx(16 * 17_520 * 2.20)


# 11. Capital stops at the end of the depreciation life; cost and cash views agree.

OWN = owned(gpus=16, capex_usd_per_gpu=40_000)  # capex $640,000, residual $64,000


def test_capital_stops_at_the_end_of_its_life(tmp_path):
    # 7-year horizon, 5-year life: capital (640,000 − 64,000) = $576,000 once, not 7/5 of it.
    res = costsim.simulate(scenario(tmp_path, NOTHING, [OWN], horizon_days=7 * 365, economics=ECON))
    s = res.summary.iloc[0]
    assert s.cost_capital_usd == pytest.approx(576_000)
    months = res.costs[res.costs["item"] == "capital"].set_index("month").cost_usd
    assert months[59] == pytest.approx(115_200 / 12) and months[60:].sum() == 0  # year 6 on: paid off
    # Cash: capex 640,000 up front, book value 64,000 (the residual) credited: the same 576,000.
    cf = res.cashflow
    assert cf.capex_usd.sum() - cf.book_value_usd.sum() == pytest.approx(576_000)
    assert cf.cash_usd.sum() == pytest.approx(s.total_cost_usd)


@pytest.mark.parametrize("years, lead_days", [(1, 0), (3, 73), (5, 73), (7, 73)])
def test_cost_and_cash_agree_over_any_horizon(tmp_path, years, lead_days):
    # Straight line (cost_of_capital 0), delivered after `lead_days`: capital = 115,200 a year
    # from delivery for at most 5 years; cash = capex − book value = the same.
    res = costsim.simulate(scenario(tmp_path, NOTHING, [{**OWN, "lead_time_days": lead_days}],
                                    horizon_days=years * 365, economics=ECON))
    s = res.summary.iloc[0]
    in_service = min(years - lead_days / 365, 5)
    assert s.cost_capital_usd == pytest.approx(115_200 * in_service)
    assert res.cashflow.cash_usd.sum() == pytest.approx(s.total_cost_usd)


def test_annuity_stops_at_the_end_of_its_life_too(tmp_path):
    # 8 %: $149,382.92 a year (test_owned_tco) for 5 years, however long the horizon; the cash
    # view pays capex − residual = 576,000, the capital line that plus the interest.
    res = costsim.simulate(scenario(tmp_path, NOTHING, [OWN], horizon_days=7 * 365,
                                    economics={**ECON, "cost_of_capital": 0.08}))
    s = res.summary.iloc[0]
    assert s.cost_capital_usd == pytest.approx(5 * 149_382.92, abs=0.5)
    assert s.total_cost_usd - res.cashflow.cash_usd.sum() == pytest.approx(5 * 149_382.92 - 576_000, abs=0.5)


# 12. Cost per RL iteration is RL jobs' cost ÷ RL iterations.

RL = {"name": "rl", "arrivals_per_day": 2, "count": 2, "gpus": 8, "iterations": 20, "model_params_b": 7,
      "rollout": {"response_tokens": 500}}


def test_cost_per_iteration_is_rl_only(tmp_path):
    # Per-second billing at $2/GPU-h, no startup: every job's cost is its GPU-hours × $2. A trace job
    # of 8 GPUs × 10 h ($160) and 8 serving GPUs (8 × 240 h × $2 = $3,840) are not RL.
    od = cloud(price_per_gpu_hour=2.0, billing_granularity_s=1, minimum_billing_s=0)
    sc = scenario(tmp_path, [(1, 8, 10)], [od], horizon_days=10, workload={"classes": [RL]},
                  serving={"gpus": {"base": 8}})
    res = costsim.simulate(sc)
    j = jobs_of(res, "cloud")
    rl = j[j.job_class == "rl"]
    assert len(rl) == 2 and rl.completed.all()
    rl_cost = (np.ceil(rl.gpu_hours / 8 * 3600 - 1e-6) / 3600 * 8 * 2.0).sum()  # whole seconds billed
    s = res.summary.iloc[0]
    assert s.rl_jobs_cost_usd == pytest.approx(rl_cost) and s.trace_jobs_cost_usd == pytest.approx(160)
    assert s.serving_cost_usd == pytest.approx(3_840)
    assert s.cost_per_iteration_usd == pytest.approx(rl_cost / 40)
    assert s.cost_per_completed_job_usd == pytest.approx((rl_cost + 160) / 3)
    assert s.total_cost_usd == pytest.approx(rl_cost + 160 + 3_840)


def test_hybrid_jobs_carry_an_unused_base(tmp_path):
    # Every job bursts while the base is built (delivered at 24 h, after the only job). The base's
    # cost has no GPU-hour of its own to share it, so the burst job carries it: job costs add up.
    opts = [owned(gpus=16, lead_time_days=1), cloud(price_per_gpu_hour=2.0), hybrid(max_wait_h=0)]
    res = costsim.simulate(scenario(tmp_path, [(0, 8, 1)], opts, horizon_days=2))
    s = res.summary.set_index("option")
    j = jobs_of(res, "hyb")
    assert j.ran_on.tolist() == ["cloud"]
    assert j.cost_usd.sum() == pytest.approx(s.loc["hyb", "total_cost_usd"])
    assert s.loc["hyb", "cost_cloud_usd"] == pytest.approx(8 * 2.0) and s.loc["hyb", "cost_capital_usd"] > 0


# 13. A hybrid bridging its base's lead time rents serving on the burst.

def test_bridging_hybrid_rents_serving_until_delivery(tmp_path):
    # Base delivered at 48 h; 8 serving GPUs (one instance) rented on the burst at $2 until then:
    # 8 × 48 × 2 = $768. Without bridging serving is unmet until delivery (8 × 48 GPU-hours).
    opts = [owned(gpus=16, lead_time_days=2), cloud(price_per_gpu_hour=2.0), hybrid("bridge"),
            hybrid("wait", bridge_until_ready=False)]
    res = costsim.simulate(scenario(tmp_path, NOTHING, opts, horizon_days=4, serving={"gpus": {"base": 8}}))
    s = res.summary.set_index("option")
    assert s.loc["bridge", "serving_unmet_gpu_hours"] == 0
    assert s.loc["bridge", "serving_gpu_hours"] == pytest.approx(8 * 96)
    assert s.loc["bridge", "cost_serving_usd"] == pytest.approx(768)
    base_alone = s.loc["own", "total_cost_usd"]  # the owned option serves the same 8 GPUs after delivery
    assert s.loc["bridge", "total_cost_usd"] == pytest.approx(base_alone + 768)
    assert s.loc["bridge", "serving_cost_usd"] == pytest.approx(768 + s.loc["own", "serving_cost_usd"])
    t = res.timeseries[res.timeseries.option == "bridge"]
    assert (t.rented_gpus[t.hour < 48] == 8).all() and (t.rented_gpus[t.hour >= 48] == 0).all()
    assert (t.serving_gpus == 8).all()
    cf = res.cashflow[res.cashflow.option == "bridge"]
    assert cf.rent_usd.sum() == pytest.approx(768)
    assert s.loc["wait", "serving_unmet_gpu_hours"] == pytest.approx(8 * 48) and s.loc["wait", "cost_serving_usd"] == 0


# 14. Book value is discounted at the horizon's end.

def test_book_value_discounted_at_the_horizon_end(tmp_path):
    # 45 days = 1,080 h: months 0 (0–730 h) and 1 (730–1,080 h). The book value after 1,080 h,
    # 640,000 − 576,000 × (1,080 / 8,760) / 5, is credited at 1,080 h, not at 730 h.
    econ = {**ECON, "discount_rate": 0.5}
    res = costsim.simulate(scenario(tmp_path, NOTHING, [OWN], horizon_days=45, economics=econ))
    cf = res.cashflow
    book = 640_000 - 576_000 * (1080 / 8760) / 5
    assert cf.book_value_usd.iloc[-1] == pytest.approx(book)
    paid = (cf.capex_usd + cf.opex_usd + cf.rent_usd).to_numpy()
    npv = paid[0] + paid[1] / 1.5 ** (1 / 12) - book / 1.5 ** (1080 / 8760)
    assert res.summary.npv_usd[0] == pytest.approx(npv)


# 17. The schema says spot is preempted.

def test_schema_describes_spot_preemption():
    out = CliRunner().invoke(app, ["schema"])
    assert out.exit_code == 0
    cloud_option = json.loads(out.output)["$defs"]["CloudOption"]
    assert "not modelled" not in out.output and "uninterrupted" not in out.output
    assert "preempted" in cloud_option["description"]
    assert "renew" in cloud_option["properties"]
