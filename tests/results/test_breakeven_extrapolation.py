"""The extrapolated break-even month against hand calculations: rates per whole 730-h month (a last
month cut at the horizon is prorated), lumps (capex, a commitment owed) part of the cumulative but
never a rate, and a reservation costing nothing more for the rest of the term its commitment paid.

Months are numbered from 1 as users count them: month N covers hours [730 (N − 1), 730 N), and the
extrapolated month is the first whose end (N whole months in) finds the owned or committed option's
cumulative cash at or below the rental's. Entry k of a cumulative array is month k + 1's end."""

import math

import numpy as np
import pytest
from helpers import cloud, owned, scenario

import costsim
from costsim.models import economics as eco

NO_OPEX = {"electricity_usd_per_kwh": 0.0, "colo_usd_per_kw_month": 0.0, "maintenance_frac_per_year": 0.0,
           "staff_usd_per_fte_year": 0.0, "setup_usd": 0.0}


def test_a_partial_last_month_is_prorated():
    # 3.5 months (2,555 h). Own: $80,000 up front, nothing after. Rent: $11,680 a whole month,
    # $5,840 in the half month at the end. Cumulative: own 80,000 flat; rent 11,680, 23,360, 35,040,
    # 40,880. Rent's rate: (11,680 + 11,680 + 5,840) / 2.5 months = $11,680 a month (reading the
    # half month as a whole one gives (40,880 − 11,680) / 3 = 9,733.33 and month 4 + ⌈39,120 /
    # 9,733.33⌉ = 9). Gap 39,120 closes 39,120 / 11,680 = 3.349 months after 3.5: 6.849 months
    # in, within month 7 (months count from 1: month 7 spans 6 to 7 months in). By hand: end of
    # month 7 (7 months) rent 81,760 ≥ 80,000; end of month 6 (6 months) 70,080 < 80,000.
    own = np.cumsum([80_000.0, 0, 0, 0])
    rent = np.cumsum([11_680.0, 11_680, 11_680, 5_840])
    assert np.isnan(eco.breakeven_month(own, rent))
    assert eco.breakeven_month_extrapolated(own, rent, horizon_h=3.5 * 730) == 7
    assert eco.spend_pace(np.diff(rent, prepend=0), 3.5 * 730).usd_per_month == pytest.approx(11_680)
    # Whole months (horizon 4 months, the last a full $11,680): 46,720, gap 33,280 / 11,680 =
    # 2.849 months after 4: 6.849 months in, month 7 again.
    rent4 = np.cumsum([11_680.0] * 4)
    assert eco.breakeven_month_extrapolated(own, rent4, horizon_h=4 * 730) == 7
    assert eco.breakeven_month_extrapolated(own, rent4) == 7  # None: whole months


def test_a_partial_last_month_in_a_run(tmp_path):
    # The same by simulation: 16 owned GPUs at $5,000 (capex $80,000, no opex) against a 16-GPU job
    # on demand at $1 per GPU-hour all the 2,555-h (106.46-day) horizon: 16 × 730 = $11,680 a month,
    # 16 × 365 = $5,840 in the last half month. Extrapolated month 7, as worked above (it was 9).
    sc = scenario(tmp_path, [(0, 16, 10_000)], [owned(gpus=16, capex_usd_per_gpu=5_000), cloud(price_per_gpu_hour=1.0)],
                  horizon_days=2555 / 24, economics=NO_OPEX)
    res = costsim.simulate(sc)
    paid = res.cashflow.set_index("option")
    assert paid.loc["cloud", "rent_usd"].tolist() == pytest.approx([11_680, 11_680, 11_680, 5_840])
    assert paid.loc["own", "capex_usd"].tolist() == [80_000, 0, 0, 0]
    b = res.breakeven.iloc[0]
    assert (b.option, b.versus) == ("own", "cloud") and np.isnan(b.breakeven_month)
    assert b.breakeven_month_extrapolated == 7


def test_a_commitment_lump_is_paid_not_a_rate(tmp_path):
    # A 3-year term of 16 GPUs at $1.85 over a 1-year horizon (12 whole months): $21,608 a month
    # (16 × 730 × 1.85) and 16 × 17,520 × 1.85 = $518,592 owed, paid in month 11. On-demand at $2.99
    # for one 16-GPU job all year: 16 × 730 × 2.99 = $34,923.20 a month.
    # At the horizon's end (12 months in): reserved 12 × 21,608 + 518,592 = 777,888; on-demand
    # 12 × 34,923.20 = 419,078.40; gap 358,809.60. The lump paid the term's other 518,592 /
    # 21,608 = 24 months: the reservation costs nothing more until 36 months in, while on-demand
    # closes the gap in 358,809.60 / 34,923.20 = 10.27 months: 22.27 months in, within month 23
    # (months count from 1). By hand: end of month 23 (23 months) 803,233.60 ≥ 777,888; end of
    # month 22 (22 months) 768,310.40 < 777,888.
    # (Reading the lump as a monthly rate, the last three months average 194,472, and it never pays back.)
    reserved = {"name": "res", "kind": "cloud", "gpu_type": "H100", "pricing": "reserved", "reserved_gpus": 16,
                "term_years": 3, "price_per_gpu_hour": 1.85}
    hybrid = {"name": "hyb", "kind": "hybrid", "base": "res", "burst": "cloud", "max_wait_h": 1}
    sc = scenario(tmp_path, [(0, 16, 10_000)], [reserved, cloud(price_per_gpu_hour=2.99), hybrid], horizon_days=365)
    res = costsim.simulate(sc)
    cum = res.cashflow.groupby("option")["cumulative_usd"].last()
    assert cum["res"] == pytest.approx(777_888, abs=0.01) and cum["cloud"] == pytest.approx(419_078.40, abs=0.01)
    be = res.breakeven.set_index("option")
    assert np.isnan(be.loc["res", "breakeven_month"]) and be.loc["res", "breakeven_month_extrapolated"] == 23
    # A hybrid on that reservation (the job runs on its base, the burst rents nothing): the same.
    assert cum["hyb"] == pytest.approx(777_888, abs=0.01)
    assert be.loc["hyb", "breakeven_month_extrapolated"] == 23


def test_after_the_covered_term_the_reservation_bills_again():
    # Own: $40 up front (say, groundwork) then a reservation of $10 a month, with $20 owed at the
    # horizon's end (4 whole months): paid 50, 10, 10, 10 + 20; cumulative 50, 60, 70, 100. The
    # lump covers 20 / 10 = 2 months after the horizon. Rent: $11 a month; cumulative 44 at the end.
    # Gap 56. Months 4–6: the reservation costs 0, rent closes 22 -> gap 34 at 6 months in. From
    # then on the reservation bills $10 again (renewed), rent $11: the gap closes $1 a month, 34 months:
    # 40 months in, month 40 (month N ends N months in). By hand: own at 40 months 100 + 10 × 34 =
    # 440, rent 11 × 40 = 440 (at or below); at 39 months own 430 > rent 429.
    paid = np.array([50.0, 10, 10, 30])
    lumps = np.array([0.0, 0, 0, 20])
    pace = eco.spend_pace(paid, lumps_by_month=lumps, committed_usd_per_month=10.0, owed_usd=20.0)
    assert (pace.usd_per_month, pace.committed_usd_per_month, pace.covered_months) == (0.0, 10.0, 2.0)
    own, rent = np.cumsum(paid), np.cumsum([11.0] * 4)
    assert eco.breakeven_month_extrapolated(own, rent, own=pace) == 40
    # Rent at $5 a month: the covered months close 10 of the 80 gap, then it widens by $5 a month: never.
    rent5 = np.cumsum([5.0] * 4)
    assert np.isnan(eco.breakeven_month_extrapolated(own, rent5, own=pace))
    # Without the commitment (the lump read as spending) the window's rate is (10 + 10 + 30) / 3 =
    # 16.67 a month, above the rental's 11: never, which is the defect.
    assert np.isnan(eco.breakeven_month_extrapolated(own, rent))


def test_an_extrapolated_break_even_past_the_hardwares_life_is_not_reported(tmp_path):
    # Cash does not depend on the depreciation life (capex is paid when bought), so the month the
    # rental would catch up is the same whatever the life; it is reported only within the life
    # (12 months a year of 730 h each, from delivery): past it the same pace needs new hardware.
    from helpers import cloud, owned, scenario

    import costsim
    from costsim.present.headline import breakeven_when

    # 8-GPU jobs of 9 h every 10 h for 150 days: the rental bills about 8 × 730 × 0.9 × $4 = $21k a
    # month, the owned node costs its capex up front and little after (no staff, no groundwork).
    rows = [(10.0 * k, 8, 9.0) for k in range(355)]

    def run(years):
        sc = scenario(tmp_path, rows, [owned(gpus=8), cloud(price_per_gpu_hour=4.0)], 150.0,
                      economics={"depreciation_years": years, "staff_usd_per_fte_year": 0, "setup_usd": 0})
        return costsim.simulate(sc).breakeven.set_index(["option", "versus"]).loc[("own", "cloud")]
    long = run(30.0)
    month = long["breakeven_month_extrapolated"]
    assert math.isnan(long["breakeven_month"]) and 12 < month < 360
    assert long["life_months"] == pytest.approx(360)
    short = run(max(month - 6, 1) / 12)  # a life that ends half a year before the catch-up
    assert math.isnan(short["breakeven_month_extrapolated"])
    assert f"no catch-up by month {short['life_months']:.0f}, the end of its depreciation life" in breakeven_when(short)
    assert run((month + 6) / 12)["breakeven_month_extrapolated"] == month


@pytest.mark.parametrize(("years", "reported"), [(7 / 12, True), (6.5 / 12, False), (6 / 12, False)])
def test_a_break_even_month_is_within_the_life_when_it_ends_within_it(tmp_path, years, reported):
    # The run of test_a_partial_last_month_in_a_run: the rental catches up 6.849 months in, by the
    # end of month 7 (7 months in). A life of 7 / 12 years is 7 × 8,760 / 12 / 730 = 7 months from
    # hour 0 (no lead time): month 7 ends as the life does, so the estimate stands (a life of
    # exactly N months covers month N). A life of 6.5 months ends half-way through month 7 (the
    # catch-up at 6.849 is after it too) and one of 6 months at month 6's end: no estimate.
    sc = scenario(tmp_path, [(0, 16, 10_000)], [owned(gpus=16, capex_usd_per_gpu=5_000), cloud(price_per_gpu_hour=1.0)],
                  horizon_days=2555 / 24, economics={**NO_OPEX, "depreciation_years": years})
    b = costsim.simulate(sc).breakeven.iloc[0]
    assert b.life_months == pytest.approx(years * 12)
    assert (b.breakeven_month_extrapolated == 7) if reported else math.isnan(b.breakeven_month_extrapolated)
