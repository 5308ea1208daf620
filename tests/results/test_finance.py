"""Cash flow, NPV, break-even month and utilisation against hand calculations."""

import numpy as np
import pytest
from helpers import cloud, owned, scenario
from hypothesis import given
from hypothesis import strategies as st

import costsim
from costsim.models import economics as eco


def test_npv_by_hand():
    # $1,000 now, $1,000 in a year at 10 %: 1,000 + 1,000 / 1.1 = 1,909.09
    cash = np.zeros(13)
    cash[0] = cash[12] = 1000
    assert eco.npv_usd(cash, 0.10) == pytest.approx(1000 + 1000 / 1.1)


def test_breakeven_month_by_hand():
    # Own: $1,200 up front then $10 a month; rent: $300 a month. Cumulative by each month's end:
    # own 1200, 1210, 1220, 1230, 1240; rent 300, 600, 900, 1200, 1500 -> rent first passes own at
    # the fifth entry: month 4 + 1 = 5, because month numbers count from 1 (month N ends N months in).
    own = np.cumsum([1200, 10, 10, 10, 10])
    rent = np.cumsum([300] * 5)
    assert eco.breakeven_month(own, rent) == 5
    # Seen from the rental's side it is cheaper through the fourth month's end (1200 <= 1230) and
    # dearer after: no break-even, cheaper until month 4.
    assert np.isnan(eco.breakeven_month(rent, own)) and eco.cheaper_until_month(rent, own) == 4
    assert np.isnan(eco.breakeven_month(own[:3], rent[:3]))


def test_breakeven_extrapolated_by_hand():
    # Own: $1,200 then $10/month; rent $100/month. After 6 months: own 1,250, rent 600; the gap of
    # 650 closes by 90 a month -> ceil(650 / 90) = 8 more months: 6 + 8 = 14 months in, month 14
    # (month numbers count from 1; below, entry k of a cumulative is month k + 1's end).
    own = np.cumsum([1200] + [10] * 5)
    rent = np.cumsum([100] * 6)
    assert np.isnan(eco.breakeven_month(own, rent))
    assert eco.breakeven_month_extrapolated(own, rent) == 14
    assert np.cumsum([1200] + [10] * 13)[13] <= np.cumsum([100] * 14)[13]
    assert np.cumsum([1200] + [10] * 12)[12] > np.cumsum([100] * 13)[12]
    # Not closing: NaN; crossed within the horizon: the same month as without extrapolation.
    assert np.isnan(eco.breakeven_month_extrapolated(own, np.cumsum([5] * 6)))
    assert eco.breakeven_month_extrapolated(np.cumsum([1200, 10, 10, 10, 10]), np.cumsum([300] * 5)) == 5


def test_book_value():
    # $1M, 10 % residual, 5 years: after 2 years 1M − 0.9M × 2/5 = $640k; never below the residual.
    assert eco.book_value_usd(1e6, 0.1, 5, 2) == pytest.approx(640_000)
    assert eco.book_value_usd(1e6, 0.1, 5, 9) == pytest.approx(100_000)


ECON = {"electricity_usd_per_kwh": 0.10, "pue": 1.2, "colo_usd_per_kw_month": 200.0, "depreciation_years": 5,
        "residual_value_frac": 0.10, "maintenance_frac_per_year": 0.05, "staff_usd_per_fte_year": 200_000,
        "gpus_per_fte": 800, "cost_of_capital": 0.0, "setup_usd": 10_000, "discount_rate": 0.12}


def test_cashflow_of_an_idle_owned_year_by_hand(tmp_path):
    # 16 GPUs at $40,000 (capex $640,000) idle for a year. Month 0: capex + setup + a month of opex.
    # Monthly opex: idle energy 2 × 2.8 kW × 730 h × 1.2 × $0.10 = $490.56, colo 2 × 10.2 × 200 =
    # $4,080, maintenance 32,000/12, staff ⌈16/800⌉ = 1 whole engineer × 200,000/12. Last month: book value
    # 640,000 − 576,000/5 = $524,800 credited.
    res = costsim.simulate(scenario(tmp_path, [(9000, 8, 1)], [owned(gpus=16, capex_usd_per_gpu=40_000)],
                                    horizon_days=365, economics=ECON))
    cf = res.cashflow
    opex = 490.56 + 4080 + 32_000 / 12 + 200_000 / 12
    assert cf.capex_usd.tolist() == [640_000] + [0] * 11
    assert cf.opex_usd[0] == pytest.approx(opex + 10_000) and cf.opex_usd[5] == pytest.approx(opex)
    assert cf.book_value_usd.iloc[-1] == pytest.approx(524_800)
    cash = np.array([640_000 + 10_000 + opex] + [opex] * 10 + [opex - 524_800])
    np.testing.assert_allclose(cf.cash_usd, cash, rtol=1e-9)
    # Monthly cash at each month's start; the book value at the horizon's end (1 year).
    paid = cash + np.eye(12)[-1] * 524_800
    assert res.summary.npv_usd[0] == pytest.approx(sum(c / 1.12 ** (m / 12) for m, c in enumerate(paid)) - 524_800 / 1.12)
    # Cash over the year = cost lines over the year, except capex vs capital cost (and the credit).
    assert cf.cash_usd.sum() == pytest.approx(res.summary.total_cost_usd[0] - 115_200 + 640_000 - 524_800)
    assert res.summary.idle_cost_usd[0] == pytest.approx(res.summary.total_cost_usd[0])


def test_breakeven_utilization_closed_form(tmp_path):
    res = costsim.simulate(scenario(tmp_path, [(0, 16, 100)], [owned(gpus=16), cloud(price_per_gpu_hour=3.0)],
                                    horizon_days=30))
    s = res.summary.set_index("option")
    b = res.breakeven.iloc[0]
    own = s.loc["own", "total_cost_usd"] / (16 * 720)
    assert (b.option, b.versus) == ("own", "cloud")
    assert b.own_usd_per_gpu_hour == pytest.approx(own)
    assert b.breakeven_utilization == pytest.approx(own / 3.0)


def test_breakeven_month_on_a_long_horizon(tmp_path):
    # A fully used owned cluster against renting the same GPUs: capex up front, then renting catches up.
    res = costsim.simulate(scenario(tmp_path, [(0, 64, 3 * 8760)], [owned(gpus=64), cloud(price_per_gpu_hour=3.0)],
                                    horizon_days=3 * 365))
    cf = res.cashflow
    out = cf.assign(o=cf.cash_usd + cf.book_value_usd)
    own = np.cumsum(out[out.option == "own"].o.to_numpy())
    rent = np.cumsum(out[out.option == "cloud"].o.to_numpy())
    m = int(res.breakeven.breakeven_month.iloc[0])  # month m ends at entry m - 1 of the cumulatives
    assert rent[m - 1] >= own[m - 1] and rent[m - 2] < own[m - 2]


@given(st.lists(st.floats(0, 1e6), min_size=2, max_size=60), st.floats(0, 0.5), st.floats(0, 0.5))
def test_higher_discount_rate_never_raises_npv_of_costs(cash, r1, dr):
    assert eco.npv_usd(np.array(cash), r1 + dr) <= eco.npv_usd(np.array(cash), r1) + 1e-6
