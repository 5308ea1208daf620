"""Each cost function against a calculation done by hand (numbers worked in the comments)."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from costsim.models import economics as eco


def test_capex_is_servers_times_one_plus_shares():
    # 512 GPUs × $37,500/GPU = $19.2M of servers; + 12 % fabric + 5 % storage + 3 % install = × 1.20
    assert eco.owned_capex_usd(512, 37_500.0, 0.12, 0.05, 0.03) == pytest.approx(23_040_000.0, rel=1e-12)


def test_straight_line_capital_cost():
    # $10M, 10 % residual, 5 years: (10M − 1M) / 5 = $1.8M a year
    assert eco.annual_capital_cost_usd(10e6, 0.10, 5, 0.0) == pytest.approx(1.8e6, rel=1e-12)


def test_annuity_capital_cost():
    # $10M at 8 % over 5 years, no residual: 10M × 0.08 / (1 − 1.08^−5) = 10M × 0.250456... = $2,504,564.5
    assert eco.annual_capital_cost_usd(10e6, 0.0, 5, 0.08) == pytest.approx(2_504_564.5, abs=1.0)
    # With a residual of $1M: PV(residual) = 1M / 1.08^5 = 680,583.2; (10M − 680,583.2) × 0.250456 = 2,334,108.0
    assert eco.annual_capital_cost_usd(10e6, 0.10, 5, 0.08) == pytest.approx(2_334_108.0, abs=1.0)


def test_annuity_repays_the_loan():
    # The annuity's present value over n years equals the capex net of the discounted residual.
    capex, resid, n, r = 7e6, 0.2, 4, 0.06
    pay = eco.annual_capital_cost_usd(capex, resid, n, r)
    pv = sum(pay / (1 + r) ** k for k in range(1, n + 1)) + capex * resid / (1 + r) ** n
    assert pv == pytest.approx(capex, rel=1e-12)


def test_energy_idle_and_busy():
    # 64 nodes idle at 2.8 kW for 730 h = 130,816 kWh; 10,000 busy GPU-h × (10.2 − 2.8)/8 kW = 9,250 kWh
    kwh = eco.it_energy_kwh(64, 2.8, 10.2, 8, 730.0, 10_000.0)
    assert kwh == pytest.approx(130_816 + 9_250, rel=1e-12)
    # × PUE 1.3 × $0.085 = $15,477.81
    assert eco.energy_cost_usd(kwh, 1.3, 0.085) == pytest.approx(140_066 * 1.3 * 0.085, rel=1e-12)


def test_facility_maintenance_staff():
    # 64 nodes × 10.2 kW × $185/kW-month for one 730 h month = $120,768
    assert eco.facility_cost_usd(64, 10.2, 185.0, 730.0) == pytest.approx(120_768.0, rel=1e-12)
    # 4 % of $20M per year, for half a year = $400,000
    assert eco.maintenance_cost_usd(20e6, 0.04, 4380.0) == pytest.approx(400_000.0, rel=1e-12)
    # 1,500 GPUs / 750 per engineer = 2 FTE (whole already) × $225k × 1 year
    assert eco.staff_cost_usd(1500, 750.0, 225_000.0, 8760.0, min_fte=1) == pytest.approx(450_000.0, rel=1e-12)


@pytest.mark.parametrize(
    "duration_s, granularity, minimum, billed",
    [
        (0.5, 1, 60, 60),  # the minimum
        (61.2, 1, 60, 62),  # per-second rounding up
        (61.2, 60, 60, 120),  # per-minute
        (3600.0, 3600, 0, 3600),  # exactly one hour is one hour
        (3600.0000001, 3600, 0, 3600),  # float noise is not another hour
        (3601.0, 3600, 60, 7200),  # per-hour billing rounds the second up to two hours
    ],
)
def test_billed_seconds(duration_s, granularity, minimum, billed):
    assert eco.billed_seconds(duration_s, granularity, minimum) == billed


def test_cloud_bill_to_the_cent():
    # 2 instances × 8 GPUs × 5,400 s (1.5 h) × $2.99 = $71.76
    assert eco.cloud_cost_usd(5400.0, 2, 8, 2.99) == pytest.approx(71.76, abs=0.005)


def test_breakeven_utilization():
    # Owning at $1.79 per GPU-hour beats a $2.99 rental above 59.9 % utilisation.
    assert eco.breakeven_utilization(1.79, 2.99) == pytest.approx(0.598662, abs=1e-6)


@given(st.floats(1, 1e5), st.floats(1, 3600), st.floats(0, 600))
def test_billing_never_less_than_used_or_minimum(d, g, m):
    b = float(eco.billed_seconds(d, g, m))
    assert b >= m and b >= d - 1e-6 and b < d + g + m + 1e-6
    assert math.isclose(b / g, round(b / g), abs_tol=1e-9) or b == m


@given(st.floats(1e3, 1e9), st.floats(0, 0.9), st.floats(1, 10), st.floats(0, 0.3), st.floats(0, 0.3))
def test_capital_cost_grows_with_rate(capex, resid, years, r1, dr):
    assert eco.annual_capital_cost_usd(capex, resid, years, r1 + dr) >= eco.annual_capital_cost_usd(capex, resid, years, r1) * (1 - 1e-12)


def test_vectorised_billing():
    out = eco.billed_seconds(np.array([1.0, 59.0, 61.0]), 60, 60)
    assert out.tolist() == [60.0, 60.0, 120.0]


def test_breakeven_utilization_against_free_rental():
    # A $0 rental is never beaten by owning (inf); free against free has no break-even (NaN).
    assert eco.breakeven_utilization(1.8, 0.0) == float("inf")
    assert math.isnan(eco.breakeven_utilization(0.0, 0.0))
    assert eco.breakeven_utilization(1.8, 2.0) == pytest.approx(0.9)


# Resale curve and lease payment (tranches of an owned cluster).

def test_resale_curve_interpolates_from_new_and_holds_after_the_last_point():
    curve = ((1.0, 0.6), (3.0, 0.3))
    # (0, 1) is implied: half a year in, halfway from 1 to 0.6 = 0.8.
    assert eco.resale_frac(curve, 0.5) == pytest.approx(0.8, rel=1e-12)
    assert eco.resale_frac(curve, 1.0) == pytest.approx(0.6, rel=1e-12)
    # Two years: halfway from 0.6 (1 y) to 0.3 (3 y) = 0.45.
    assert eco.resale_frac(curve, 2.0) == pytest.approx(0.45, rel=1e-12)
    # Past the last point the value is held; a negative age reads as new.
    assert eco.resale_frac(curve, 7.0) == pytest.approx(0.3, rel=1e-12)
    assert eco.resale_frac(curve, -1.0) == pytest.approx(1.0, rel=1e-12)


def test_resale_curve_given_at_age_zero_is_used_as_given():
    # Worth 0.9 new, 0.6 at a year: half a year in, 0.75.
    assert eco.resale_frac(((0.0, 0.9), (1.0, 0.6)), 0.5) == pytest.approx(0.75, rel=1e-12)
    assert eco.resale_frac(((0.0, 0.9), (1.0, 0.6)), 0.0) == pytest.approx(0.9, rel=1e-12)


def test_lease_payment_is_the_monthly_annuity():
    # $12,000 over 12 months at 12 %/yr (1 % a month), nothing back: 12,000 × 0.01 / (1 − 1.01^−12).
    # 1.01^12 = 1.1268250; 1 − 1/1.1268250 = 0.1125508; 120 / 0.1125508 = $1,066.19 a month.
    assert eco.lease_payment_usd(12_000, 0.0, 0.12, 12) == pytest.approx(1_066.19, abs=0.01)
    # With $2,400 back to the lessor at the end: its present value 2,400 / 1.1268250 = 2,129.88;
    # (12,000 − 2,129.88) × 0.01 / 0.1125508 = $876.95.
    assert eco.lease_payment_usd(12_000, 2_400, 0.12, 12) == pytest.approx(876.95, abs=0.01)
    # Rate 0: (12,000 − 2,400) / 12 = $800.
    assert eco.lease_payment_usd(12_000, 2_400, 0.0, 12) == 800.0
