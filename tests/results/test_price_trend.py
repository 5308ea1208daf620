"""A rental price that changes by a fraction a year (``price_change_per_year``), each bill by hand.

On-demand and spot GPU-hours cost price × (1 + c)^(t / 8760) as they are held, so a GPU held over
[s, e) hours costs price × 8760 × ((1 + c)^(e/8760) − (1 + c)^(s/8760)) / ln(1 + c); the billed
time beyond the hours held (the minimum, the rounding) costs the price at release. A reservation
pays each term at the trended price of the term's start. Months are 730 h, years 8,760 h.
"""

from __future__ import annotations

import math

import pytest
from helpers import cloud, jobs_of, owned, same_tables, scenario

import costsim
from costsim.plan.prepare import prepare
from costsim.runs.memo import usage_key

YEAR_H = 8760.0
EXACT = {"billing_granularity_s": 1, "minimum_billing_s": 0}  # billed = held, to the second


def held_usd(gpus: float, price: float, c: float, start_h: float, end_h: float) -> float:
    """gpus × price × ∫ (1 + c)^(t / 8760) dt over [start_h, end_h], by hand."""
    a = 1.0 + c
    return gpus * price * YEAR_H * (a ** (end_h / YEAR_H) - a ** (start_h / YEAR_H)) / math.log(a)


def reserved(**kw):
    return {"name": "res", "kind": "cloud", "gpu_type": "H100", "pricing": "reserved", "reserved_gpus": 16,
            "price_per_gpu_hour": 2.20, **kw}


def test_an_on_demand_job_across_a_year_pays_the_falling_price_as_it_runs(tmp_path):
    # 8 GPUs from hour 4,380 (half a year in) for 8,760 h at $2 falling 20 %/yr:
    # 16 × 8,760 × (0.8^1.5 − 0.8^0.5) / ln 0.8 = 16 × 8,760 × 0.801661 = $112,360.8
    # (at today's price it would be 16 × 8,760 = $140,160).
    sc = scenario(tmp_path, [(4380, 8, 8760)], [cloud(price_per_gpu_hour=2.0, price_change_per_year=-0.2, **EXACT)],
                  horizon_days=730)
    res = costsim.simulate(sc)
    job = jobs_of(res, "cloud").iloc[0]
    assert (job.start_h, job.end_h) == (4380, 13140)
    by_hand = 16 * YEAR_H * (0.8**1.5 - 0.8**0.5) / math.log(0.8)
    assert by_hand == pytest.approx(112_360.8, abs=0.05)
    assert job.cost_usd == pytest.approx(by_hand, rel=1e-12)
    assert res.summary.total_cost_usd[0] == pytest.approx(by_hand, rel=1e-12)
    # month 6 (hours 4,380-5,110) is the job's first: its price falls within the month too
    cloud_months = res.costs[(res.costs["item"] == "cloud")].set_index("month")["cost_usd"]
    assert cloud_months[6] == pytest.approx(held_usd(8, 2.0, -0.2, 4380, 5110), rel=1e-12)
    assert cloud_months[:6].sum() == 0 and cloud_months.sum() == pytest.approx(by_hand, rel=1e-12)
    assert res.cashflow.rent_usd.sum() == pytest.approx(by_hand, rel=1e-12)


def test_the_billing_minimum_is_paid_at_the_price_of_release(tmp_path):
    # Half an hour on 8 GPUs from hour 8,760 at $2 rising 50 %/yr, an hour's minimum: the half hour
    # held at the trended price, the half hour more the minimum bills at the price at release, hour
    # 8,760.5: 2 × 1.5^(8760.5/8760).
    sc = scenario(tmp_path, [(8760, 8, 0.5)], [cloud(price_per_gpu_hour=2.0, price_change_per_year=0.5,
                                                     billing_granularity_s=1, minimum_billing_s=3600)],
                  horizon_days=400)
    job = jobs_of(costsim.simulate(sc), "cloud").iloc[0]
    release = 8760.5
    assert job.cost_usd == pytest.approx(held_usd(8, 2.0, 0.5, 8760, release)
                                         + 8 * 0.5 * 2.0 * 1.5 ** (release / YEAR_H), rel=1e-9)
    assert job.cost_usd == pytest.approx(8 * 2.0 * 1.5, rel=1e-4)  # an hour at about $3


def test_a_renewed_reservation_pays_two_prices(tmp_path):
    # 16 GPUs on 1-year terms at $2.20 falling 20 %/yr, over 18 months (13,140 h): the first term at
    # $2.20, the renewal at hour 8,760 at 2.20 × 0.8 = $1.76 for all of its term: reserved
    # 16 × (8,760 × 2.20 + 4,380 × 1.76) = 16 × (19,272 + 7,708.8) = $431,692.8, the rest of the second term owed
    # 16 × 4,380 × 1.76 = $123,340.8.
    sc = scenario(tmp_path, [(0, 8, 1)], [reserved(renew=True, price_change_per_year=-0.2)], horizon_days=547.5)
    res = costsim.simulate(sc)
    s = res.summary.iloc[0]
    assert s.cost_reserved_usd == pytest.approx(431_692.8, rel=1e-12)
    assert s.cost_commitment_owed_usd == pytest.approx(123_340.8, rel=1e-12)
    months = res.costs[res.costs["item"] == "reserved"].set_index("month")["cost_usd"]
    assert months[11] == pytest.approx(16 * 730 * 2.20, rel=1e-12)  # hours 8,030-8,760: the first term
    assert months[12] == pytest.approx(16 * 730 * 1.76, rel=1e-12)  # hours 8,760-9,490: the renewal
    assert res.cashflow.commitment_owed_usd.iloc[-1] == pytest.approx(123_340.8, rel=1e-12)


def test_one_term_keeps_its_price_whatever_the_trend(tmp_path):
    # A 3-year term over one year, the price rising 50 %/yr: locked at $2.20 for the term.
    sc = scenario(tmp_path, [(0, 8, 1)], [reserved(term_years=3, price_change_per_year=0.5)], horizon_days=365)
    s = costsim.simulate(sc).summary.iloc[0]
    assert s.cost_reserved_usd == pytest.approx(16 * YEAR_H * 2.20, rel=1e-12)
    assert s.cost_commitment_owed_usd == pytest.approx(16 * 2 * YEAR_H * 2.20, rel=1e-12)


def test_rented_serving_pays_the_trended_price(tmp_path):
    # 8 serving GPUs for a year at $2 rising 50 %/yr: 8 × 2 × 8,760 × 0.5 / ln 1.5 = $172,838.5.
    sc = scenario(tmp_path, [(200_000, 8, 1)], [cloud(price_per_gpu_hour=2.0, price_change_per_year=0.5)],
                  horizon_days=365, serving={"gpus": {"base": 8}})
    res = costsim.simulate(sc)
    assert held_usd(8, 2.0, 0.5, 0, YEAR_H) == pytest.approx(172_838.5, abs=0.05)
    assert res.summary.cost_serving_usd[0] == pytest.approx(held_usd(8, 2.0, 0.5, 0, YEAR_H), rel=1e-9)
    assert res.summary.total_cost_usd[0] == pytest.approx(held_usd(8, 2.0, 0.5, 0, YEAR_H), rel=1e-9)


def test_spot_follows_its_own_trend(tmp_path):
    # Spot at $1 falling 50 %/yr, 8 GPUs for the second half of a year:
    # 8 × 8,760 × (0.5 − 0.5^0.5) / ln 0.5 = $20,939.3 (at today's price $35,040).
    sc = scenario(tmp_path, [(4380, 8, 4380)], [cloud(pricing="spot", price_per_gpu_hour=1.0,
                                                      price_change_per_year=-0.5, **EXACT)], horizon_days=365)
    job = jobs_of(costsim.simulate(sc), "cloud").iloc[0]
    assert 8 * YEAR_H * (0.5 - 0.5**0.5) / math.log(0.5) == pytest.approx(20_939.3, abs=0.05)
    assert job.cost_usd == pytest.approx(8 * YEAR_H * (0.5 - 0.5**0.5) / math.log(0.5), rel=1e-12)


def test_no_trend_is_todays_bill_and_a_trend_reruns_nothing(tmp_path):
    rows = [(0, 8, 100), (50, 16, 30.2), (700, 8, 2000)]
    options = [cloud(price_per_gpu_hour=2.0), reserved(name="res", renew=True)]
    plain = scenario(tmp_path, rows, options, horizon_days=500)
    zero = scenario(tmp_path, rows, [{**o, "price_change_per_year": 0} for o in options], horizon_days=500)
    same_tables(costsim.simulate(plain), costsim.simulate(zero))
    # today's bill, by hand: the 2,000-h job is cut at the horizon (12,000 h)
    assert costsim.simulate(plain).summary.total_cost_usd[0] == pytest.approx(
        2.0 * (8 * 100 + 16 * 30.2 + 8 * 2000), rel=1e-12)
    # the trend is a price: the runs of a trended variant are the untrended one's, re-costed
    trended = scenario(tmp_path, rows, [{**o, "price_change_per_year": -0.3} for o in options], horizon_days=500)
    keys = [usage_key(sc, p.plans, None) for sc in (plain, trended) for p in [prepare(sc)]]
    assert keys[0] == keys[1]


def test_a_stated_trend_is_an_assumption_row(tmp_path):
    from costsim.results.assumptions import assumptions

    options = [cloud(price_per_gpu_hour=2.0, price_change_per_year=-0.2), reserved()]
    table = assumptions(scenario(tmp_path, [(0, 8, 1)], options, horizon_days=30))
    rows = table[table["assumption"].str.startswith("price change")]
    assert rows[["assumption", "value", "from"]].values.tolist() == [["price change, cloud", -0.2, "scenario"]]


def test_the_pace_after_the_horizon_goes_on_at_the_renewal_price(tmp_path):
    # The renewed reservation above: its commitment owed (4,380 h at $1.76) covers 4,380 / 730 = 6
    # months after the horizon, then its bill comes back at 16 × 1.76 × 730 = $20,556.8 a month.
    from costsim.results.finance import pace

    sc = scenario(tmp_path, [(0, 8, 1)], [reserved(renew=True, price_change_per_year=-0.2)], horizon_days=547.5)
    res = costsim.simulate(sc)
    p = pace(prepare(sc).plans[0], res.cashflow, sc.horizon_h)
    assert p.committed_usd_per_month == pytest.approx(20_556.8, rel=1e-12)
    assert p.covered_months == pytest.approx(6.0, rel=1e-12)
    assert p.usd_per_month == pytest.approx(0.0, abs=1e-6)  # nothing but the commitment is paid


def test_unfinished_work_is_priced_at_the_cheapest_rent_at_the_horizons_end(tmp_path):
    """Work left undone is done after the horizon: at the cheapest rental price then, each price
    under its own trend. By hand: od at $4 falling 20 %/yr → 4 × 0.8^(H/8760); spot at $3 rising
    50 %/yr → 3 × 1.5^(H/8760); over 200 days the falling one is the cheaper (3.55 vs 3.75)."""
    horizon_h = 200 * 24.0
    rows = [(1.0, 8, 3000.0), (2.0, 8, 3000.0)]  # two 8-GPU jobs of 3,000 h on one node: the second is cut
    sc = scenario(tmp_path, rows, [owned(gpus=8, gpus_per_node=8),
                                   cloud("od", price_per_gpu_hour=4.0, price_change_per_year=-0.2),
                                   cloud("spot", pricing="spot", price_per_gpu_hour=3.0, price_change_per_year=0.5)],
                  horizon_days=200)
    s = costsim.simulate(sc).summary.set_index("option").loc["own"]
    od, spot = 4.0 * 0.8 ** (horizon_h / 8760), 3.0 * 1.5 ** (horizon_h / 8760)
    assert od < spot
    assert s.work_unfinished_gpu_hours > 0
    assert s.unfinished_rent_usd == pytest.approx(s.work_unfinished_gpu_hours * od, rel=1e-12)


def test_the_break_even_utilisation_prices_renting_over_the_horizon_under_a_trend(tmp_path):
    # On demand at $2.00 today rising 50 %/yr, over one year: the mean price over the year is
    # 2 × (1.5 − 1) / ln 1.5 = 2 × 0.5 / 0.405465 = $2.466303 per GPU-hour, not today's $2.00. The
    # owned option's cost per GPU-hour over the year is set against that mean.
    sc = scenario(tmp_path, [(0, 8, 1)], [owned(gpus=16), cloud(price_per_gpu_hour=2.0, price_change_per_year=0.5)],
                  horizon_days=365)
    res = costsim.simulate(sc)
    b = res.breakeven.iloc[0]
    assert b.rent_usd_per_gpu_hour == pytest.approx(2.466303, abs=1e-6)
    s = res.summary.set_index("option").loc["own"]
    own = s.total_cost_usd / s.capacity_gpu_hours  # its capacity from its delivery on
    assert b.own_usd_per_gpu_hour == pytest.approx(own, rel=1e-9)
    assert b.breakeven_utilization == pytest.approx(own / 2.466303, rel=1e-6)


def test_a_renewed_reservation_breaks_even_at_its_terms_mean_price(tmp_path):
    # The renewed reservation of above over 18 months: 8,760 h at $2.20 and 4,380 h at $1.76, a mean
    # of (8,760 × 2.20 + 4,380 × 1.76) / 13,140 = $2.053333 per GPU-hour; on demand at $3.00 with no trend.
    sc = scenario(tmp_path, [(0, 8, 1)], [reserved(renew=True, price_change_per_year=-0.2),
                                          cloud(price_per_gpu_hour=3.0)], horizon_days=547.5)
    b = costsim.simulate(sc).breakeven.iloc[0]
    assert b.own_usd_per_gpu_hour == pytest.approx(2.053333, abs=1e-6)
    assert b.rent_usd_per_gpu_hour == 3.0
    assert b.breakeven_utilization == pytest.approx(2.053333 / 3.0, abs=1e-6)


def test_the_break_even_rent_price_is_weighted_by_the_owned_capacity_in_service(tmp_path):
    # Bought at once with a 120-day lead (2,880 h) over one year: the owned cost per GPU-hour covers
    # only [2,880, 8,760), so renting is priced over those hours: 2 × 8,760 × (1.5 − 1.5^(2,880/8,760))
    # / (ln 1.5 × 5,880) = $2.626 per GPU-hour, not the year's $2.466.
    sc = scenario(tmp_path, [(20_000, 8, 1)], [owned(gpus=16, lead_time_days=120),
                                               cloud(price_per_gpu_hour=2.0, price_change_per_year=0.5)],
                  horizon_days=365)
    b = costsim.simulate(sc).breakeven.iloc[0]
    hand = 2.0 * YEAR_H * (1.5 - 1.5 ** (2880 / YEAR_H)) / (math.log(1.5) * 5880)
    assert hand == pytest.approx(2.62640, abs=1e-5)
    assert b.rent_usd_per_gpu_hour == pytest.approx(hand, rel=1e-12)
    assert b.breakeven_utilization == pytest.approx(b.own_usd_per_gpu_hour / hand, rel=1e-12)
