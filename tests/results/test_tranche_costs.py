"""An owned cluster bought in tranches: each tranche's capex, capital line, book value and cash
month, a lease's payments and the resale curve, against calculations done by hand; and one
tranche bought at the start is the option bought at once, table for table.

Months are 730 h, years 8,760 h. The economics leave only what a test is about.
"""

import numpy as np
import pytest
from helpers import bits, cloud, owned, scenario
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import costsim
from costsim.plan.resolve import resolve
from costsim.results import finance

AFTER = [(20_000, 8, 1)]  # one job after the horizon: nothing runs, only the owned lines
YEAR_DAYS = 365  # 8,760 h: a 12-month horizon
ONLY_CAPITAL = {"electricity_usd_per_kwh": 0.0, "pue": 1.0, "colo_usd_per_kw_month": 0.0, "depreciation_years": 5,
                "residual_value_frac": 0.10, "maintenance_frac_per_year": 0.0, "staff_usd_per_fte_year": 0.0,
                "gpus_per_fte": 800, "staff_min_fte": 0, "cost_of_capital": 0.0, "setup_usd": 0.0,
                "discount_rate": 0.0}
# Lead time 30 days = 720 h. Tranche A: 8 GPUs ordered on day 0, delivered at 720 h (month 0).
# Tranche B: 8 GPUs ordered on day 40 (960 h, month 1), delivered at 1,680 h (month 2).
# $1,000 per GPU: each tranche costs $8,000.
A = {"gpus": 8, "order_day": 0}
B_DAY = 40


def two_tranches(name, second, **kw):
    return owned(name, gpus=None, lead_time_days=30, capex_usd_per_gpu=1000, gpus_per_node=8,
                 tranches=[A, {"gpus": 8, "order_day": B_DAY, **second}], **kw)


def run(tmp_path, options, economics=ONLY_CAPITAL):
    for o in options:
        if o.get("gpus") is None:
            o.pop("gpus")
    sc = scenario(tmp_path, AFTER, [*options, cloud()], horizon_days=YEAR_DAYS, economics=economics)
    return costsim.simulate(sc)


def rows(res, option):
    return res.cashflow[res.cashflow.option == option].reset_index(drop=True)


def summary(res, option):
    return res.summary.set_index("option").loc[option]


def test_each_tranche_is_paid_in_its_month_and_depreciated_from_its_delivery(tmp_path):
    res = run(tmp_path, [two_tranches("on_order", {"payment": "order"}),
                         two_tranches("on_delivery", {"payment": "delivery"})])
    # Paid on order: A in month 0, B in month 1 (960 h). Paid on delivery: A in month 0 (720 h), B in
    # month 2 (1,680 h).
    want = {"on_order": {0: 8000, 1: 8000}, "on_delivery": {0: 8000, 2: 8000}}
    for option, months in want.items():
        cf = rows(res, option)
        expected = np.zeros(12)
        for m, usd in months.items():
            expected[m] = usd
        np.testing.assert_allclose(cf.capex_usd, expected, rtol=1e-12)
    # Straight line to 10 % over 5 years: $7,200 over 43,800 h each. A is in service 8,760 − 720 =
    # 8,040 h, B 8,760 − 1,680 = 7,080 h. Capital: 7,200 × (8,040 + 7,080) / 43,800 = $2,485.48.
    # Book value at the end: A 8,000 − 7,200 × 8,040 / 43,800 = 6,678.36; B 8,000 − 7,200 × 7,080 / 43,800 = 6,836.16.
    for option in want:
        assert summary(res, option).cost_capital_usd == pytest.approx(2_485.48, abs=0.01)
        cf = rows(res, option)
        assert cf.book_value_usd.iloc[-1] == pytest.approx(6_678.36 + 6_836.16, abs=0.01)
        assert cf.book_value_usd.iloc[:-1].eq(0).all()
        # Straight line, no interest: capex less book value is the capital line.
        assert cf.capex_usd.sum() - cf.book_value_usd.sum() == pytest.approx(2_485.48, abs=0.01)


def test_discounting_sees_the_later_payment(tmp_path):
    econ = {**ONLY_CAPITAL, "discount_rate": 0.12}
    res = run(tmp_path, [two_tranches("on_order", {"payment": "order"}),
                         two_tranches("on_delivery", {"payment": "delivery"})], economics=econ)
    # Month m's cash is discounted at its start, (1.12)^(−m/12): B paid in month 1 vs month 2.
    pv = {o: rows(res, o).discounted_usd for o in ("on_order", "on_delivery")}
    assert pv["on_order"][1] == pytest.approx(8000 / 1.12 ** (1 / 12), rel=1e-12)
    assert pv["on_delivery"][2] == pytest.approx(8000 / 1.12 ** (2 / 12), rel=1e-12)


def test_opex_follows_each_tranche(tmp_path):
    econ = {**ONLY_CAPITAL, "maintenance_frac_per_year": 0.05, "staff_usd_per_fte_year": 87_600, "gpus_per_fte": 8}
    s = summary(run(tmp_path, [two_tranches("own", {"payment": "order"})], economics=econ), "own")
    # Maintenance 5 % of each tranche's capex a year while in service: 400 × (8,040 + 7,080) / 8,760 = $690.41.
    assert s.cost_maintenance_usd == pytest.approx(690.41, abs=0.01)
    # Staff: one engineer per 8 GPUs at $87,600 a year ($10 an hour): one from 720 h to 1,680 h (960 h),
    # two from 1,680 h to the end (7,080 h): 10 × 960 + 20 × 7,080 = $151,200.
    assert s.cost_staff_usd == pytest.approx(151_200, rel=1e-9)


def test_a_lease_is_paid_monthly_from_delivery_and_leaves_no_book_value(tmp_path):
    lease = {"payment": "lease", "lease_term_months": 24, "lease_rate_per_year": 0.06}
    res = run(tmp_path, [two_tranches("own", lease)])
    # B: $8,000 back to the lessor after 2 years worth its book value 8,000 − 7,200 × 2 / 5 = 5,120.
    # i = 0.5 % a month, n = 24: 1.005^24 = 1.1271598; (8,000 − 5,120 / 1.1271598) × 0.005 /
    # (1 − 1 / 1.1271598) = (8,000 − 4,542.38) × 0.005 / 0.1128155 = $153.24 a month.
    pmt = 153.24
    cf = rows(res, "own")
    # Delivered at 1,680 h, 220 h into month 2: month 2 pays its last 510 h, 510 / 730 of a payment;
    # months 3-11 a whole payment each (the term runs past the horizon).
    assert cf.capex_usd[0] == pytest.approx(8000, rel=1e-12)  # A, bought
    assert cf.capex_usd[1] == 0
    assert cf.capex_usd[2] == pytest.approx(pmt * 510 / 730, abs=0.01)
    np.testing.assert_allclose(cf.capex_usd[3:], pmt, atol=0.005)
    # Only A is credited: 6,678.36.
    assert cf.book_value_usd.iloc[-1] == pytest.approx(6_678.36, abs=0.01)
    # The capital line: A's depreciation (7,200 × 8,040 / 43,800 = 1,321.64) and the lease payments
    # as they accrue (9 + 510/730 payments): the cash view's total again.
    s = summary(res, "own")
    assert s.cost_capital_usd == pytest.approx(1_321.64 + pmt * (9 + 510 / 730), abs=0.05)
    assert cf.capex_usd.sum() - cf.book_value_usd.sum() == pytest.approx(s.cost_capital_usd, rel=1e-9)


def test_lease_payments_due_after_the_horizon_are_owed_at_its_end(tmp_path):
    """Like the rest of a reservation's term: the payments a signed lease still has to make after the
    horizon are owed at its end, in the total (so the fair total) and the cash, never credited back."""
    lease = {"payment": "lease", "lease_term_months": 24, "lease_rate_per_year": 0.06}
    res = run(tmp_path, [two_tranches("own", lease)])
    # B's term: 24 × 730 = 17,520 h from its delivery at 1,680 h, to 19,200 h; the horizon ends at
    # 8,760 h: 10,440 h = 14.3014 months of $153.24 left, $2,191.5 owed.
    pmt, left = 153.24, (19_200 - 8_760) / 730
    s = summary(res, "own")
    assert s.cost_commitment_owed_usd == pytest.approx(pmt * left, abs=0.1)
    cf = rows(res, "own")
    assert cf.commitment_owed_usd.iloc[-1] == pytest.approx(pmt * left, abs=0.1)
    assert cf.commitment_owed_usd.iloc[:-1].eq(0).all()
    # Every payment of the lease is counted once: the horizon's 9 + 510/730 in capex, the rest owed.
    assert cf.capex_usd.iloc[1:].sum() + cf.commitment_owed_usd.sum() == pytest.approx(pmt * 24, abs=0.2)
    # The cash view's total and the cost lines' still agree (straight line, no interest).
    assert (cf.capex_usd.sum() + cf.commitment_owed_usd.sum() - cf.book_value_usd.sum()
            == pytest.approx(s.cost_capital_usd + s.cost_commitment_owed_usd, rel=1e-9))
    assert s.total_cost_usd == pytest.approx(s.cost_capital_usd + s.cost_commitment_owed_usd, rel=1e-9)


def test_a_lease_delivered_after_the_horizon_owes_nothing_within_it(tmp_path):
    # Ordered on day 340, delivered on day 370: its payments begin after the horizon, as a purchase
    # paid on such a delivery is not paid within it.
    late = owned("late", lead_time_days=30, capex_usd_per_gpu=1000, gpus_per_node=8, gpus=16,
                 tranches=[A, {"gpus": 8, "order_day": 340, "payment": "lease", "lease_term_months": 24}])
    s = summary(run(tmp_path, [late]), "late")
    assert s.cost_commitment_owed_usd == 0
    assert s.cost_capital_usd == pytest.approx(1_321.64, abs=0.01)


def test_lease_payments_go_on_in_the_break_even_pace(tmp_path):
    # The extrapolated break-even runs each option on at its last three months' spending, lumps
    # (purchases, the lease's rest owed) left out: here the owned option spends only B's lease,
    # $153.24 a month, which like a reservation's bill is paid by the amount owed for the 14.3014
    # months of its term left (10,440 h), and comes back after them.
    lease = {"payment": "lease", "lease_term_months": 24, "lease_rate_per_year": 0.06}
    opt = two_tranches("own", lease)
    opt.pop("gpus")
    sc = scenario(tmp_path, AFTER, [opt, cloud()], horizon_days=YEAR_DAYS, economics=ONLY_CAPITAL)
    res = costsim.simulate(sc)
    (plan, _) = resolve(sc)
    pace = finance.pace(plan, rows(res, "own"), YEAR_DAYS * 24)
    assert pace.rate_at(0) == pytest.approx(0, abs=1e-6)
    assert pace.covered_months == pytest.approx(10_440 / 730, rel=1e-9)
    assert pace.rate_at(15) == pytest.approx(153.24, abs=0.01)


def test_the_resale_curve_sets_the_value_credited_at_the_horizon(tmp_path):
    curve = [{"age_years": 1, "value_frac": 0.6}, {"age_years": 3, "value_frac": 0.3}]
    res = run(tmp_path, [two_tranches("own", {"payment": "order"}, resale_curve=curve)])
    # Ages at the end: A 8,040 / 8,760 = 0.917808 y, B 7,080 / 8,760 = 0.808219 y; from (0, 1) to
    # (1, 0.6): A worth 1 − 0.4 × 0.917808 = 0.632877, B 1 − 0.4 × 0.808219 = 0.676712 of $8,000.
    cf = rows(res, "own")
    assert cf.book_value_usd.iloc[-1] == pytest.approx(8000 * (0.632877 + 0.676712), abs=0.01)
    # The capital line depreciates to the curve's value at the end of the 5-year life, 0.3:
    # 8,000 × 0.7 / 5 = 1,120 a year each, for 15,120 h: $1,933.15.
    assert summary(res, "own").cost_capital_usd == pytest.approx(1_933.15, abs=0.01)


def test_a_tranche_delivered_after_the_horizon_is_paid_on_order_only(tmp_path):
    # Ordered on day 340 (8,160 h), delivered on day 370: after the 365-day horizon.
    late = owned("late_order", lead_time_days=30, capex_usd_per_gpu=1000, gpus_per_node=8, gpus=16,
                 tranches=[A, {"gpus": 8, "order_day": 340}])
    late_delivery = owned("late_delivery", lead_time_days=30, capex_usd_per_gpu=1000, gpus_per_node=8, gpus=16,
                          tranches=[A, {"gpus": 8, "order_day": 340, "payment": "delivery"}])
    res = run(tmp_path, [late, late_delivery])
    # Paid on order in month 11 (8,160 h) and credited whole (worth its price, never in service).
    order = rows(res, "late_order")
    assert order.capex_usd[11] == pytest.approx(8000, rel=1e-12)
    assert order.book_value_usd.iloc[-1] == pytest.approx(6_678.36 + 8000, abs=0.01)
    # Paid on delivery: not within the horizon, and nothing credited for it.
    delivery = rows(res, "late_delivery")
    assert delivery.capex_usd.sum() == pytest.approx(8000, rel=1e-12)
    assert delivery.book_value_usd.iloc[-1] == pytest.approx(6_678.36, abs=0.01)
    # Neither is in service: capital, maintenance and energy are A's alone.
    assert summary(res, "late_order").cost_capital_usd == pytest.approx(1_321.64, abs=0.01)


@pytest.mark.parametrize("economics", [None, {"cost_of_capital": 0.0, "discount_rate": 0.1}])
def test_one_tranche_at_the_start_is_the_option_bought_at_once(tmp_path, economics):
    """Differential: the same cluster written both ways gives the same tables, bit for bit (catalog
    failures, a queue and the default economics included)."""
    trace = [(k * 7.0, 8 * (1 + k % 2), 20.0) for k in range(30)]
    tables = []
    for form in ({"gpus": 16}, {"tranches": [{"gpus": 16}]}, {"gpus": 16, "tranches": [{"gpus": 16, "order_day": 0}]}):
        opt = {"name": "own", "kind": "owned", "gpu_type": "H100", "lead_time_days": 2, **form}
        top = {"economics": economics} if economics else {}
        sc = scenario(tmp_path, trace, [opt, cloud()], horizon_days=20, seed=5, **top)
        res = costsim.simulate(sc)
        tables.append({t: bits(getattr(res, t)) for t in ("jobs", "summary", "timeseries", "costs", "cashflow",
                                                           "breakeven")})
    assert tables[0] == tables[1] == tables[2]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(orders=st.lists(st.integers(0, 300), min_size=1, max_size=4, unique=True),
       payments=st.lists(st.sampled_from(["order", "delivery"]), min_size=4, max_size=4),
       lead=st.integers(0, 120), life=st.sampled_from([1, 3, 5]))
def test_bought_tranches_cash_less_book_value_is_the_capital_line(tmp_path, orders, payments, lead, life):
    """Straight line, no interest: over any horizon, the capex paid less the value credited at its
    end is the capital line, whatever the order days, payments, lead time and life (a tranche paid
    on a delivery after the horizon is in neither)."""
    tranches = [{"gpus": 8, "order_day": d, "payment": p} for d, p in zip(sorted(orders), payments, strict=False)]
    opt = owned("own", lead_time_days=lead, capex_usd_per_gpu=1000, gpus_per_node=8, gpus=8 * len(tranches),
                tranches=tranches)
    res = run(tmp_path, [opt], economics={**ONLY_CAPITAL, "depreciation_years": life})
    cf = rows(res, "own")
    assert cf.capex_usd.sum() - cf.book_value_usd.sum() == pytest.approx(summary(res, "own").cost_capital_usd,
                                                                         rel=1e-9, abs=1e-6)


def test_a_lease_ending_within_the_horizon_takes_its_nodes_back(tmp_path):
    """Lead time 0 over 60 days (1,440 h). Tranche A: one 8-GPU node bought on day 0. Tranche B: one
    node leased on day 1 (delivered at 24 h) for 1 month at rate 0: back to the lessor at 754 h.
    Job 0 (16 GPUs, 800 h, from 24 h) holds both nodes and is interrupted at 754 h; with 8 GPUs left
    it never fits again. Job 1 (8 GPUs, 10 h, at 800 h) runs on A at once: backfill, since nothing
    makes room for job 0 (under fifo it would wait behind it, as behind any job larger than the
    cluster in service)."""
    econ = {**ONLY_CAPITAL, "maintenance_frac_per_year": 0.05, "staff_usd_per_fte_year": 87_600, "gpus_per_fte": 8,
            "staff_min_fte": 0}
    lease = {"gpus": 8, "order_day": 1, "payment": "lease", "lease_term_months": 1, "lease_rate_per_year": 0.0}
    opt = owned("own", gpus=16, gpus_per_node=8, capex_usd_per_gpu=1000, tranches=[{"gpus": 8}, lease],
                scheduler="backfill")
    sc = scenario(tmp_path, [(24.0, 16, 800.0), (800.0, 8, 10.0)], [opt, cloud()], horizon_days=60, economics=econ)
    res = costsim.simulate(sc)
    jobs = res.jobs[res.jobs.option == "own"].reset_index(drop=True)
    assert jobs.start_h[0] == 24 and not jobs.completed[0] and jobs.restarts[0] == 1
    assert jobs.lost_gpu_hours[0] == pytest.approx(16 * 730)  # no checkpoints: all its work
    assert (jobs.start_h[1], jobs.end_h[1]) == (800, 810)
    ts = res.timeseries[res.timeseries.option == "own"].set_index("hour").capacity_gpus
    assert ts[10] == 8 and ts[30] == 16 and ts[753] == 16 and ts[760] == 8 and ts[1439] == 8
    s = summary(res, "own")
    assert s.capacity_gpu_hours == pytest.approx(8 * 1440 + 8 * 730)
    # Maintenance, 5 % of each tranche's $8,000 a year in service: 400 × (1,440 + 730) / 8,760 = $99.09.
    assert s.cost_maintenance_usd == pytest.approx(400 * 2170 / 8760, rel=1e-12)
    # Staff at $10 an engineer-hour: 1 to 24 h, 2 to 754 h, 1 after: 240 + 14,600 + 6,860 = $21,700.
    assert s.cost_staff_usd == pytest.approx(21_700, rel=1e-12)
    # Capital: A's straight line (7,200 / 43,800 an hour × 1,440 = $236.71) and the lease's one payment,
    # 8,000 less B's value after a month (8,000 − 7,200 × (730 / 8,760) / 5 = 7,880): $120; nothing owed.
    assert s.cost_capital_usd == pytest.approx(7200 * 1440 / 43_800 + 120, rel=1e-9)
    assert s.cost_commitment_owed_usd == 0
    assert rows(res, "own").capex_usd.sum() == pytest.approx(8000 + 120, rel=1e-9)


def test_no_staff_while_no_gpu_is_in_service(tmp_path):
    """Staff at $10 an engineer-hour, at least 2 engineers, over 60 days (1,440 h). 8 GPUs leased at
    once for a month (back at 730 h) and 8 bought on day 40 (960 h): 2 engineers to 730 h, none in the
    gap to 960 h, 2 again to the horizon: 14,600 + 0 + 9,600 = $24,200 (not 2 × 10 × 1,440 = $28,800).
    The lease alone: 2 × 10 × 730 = $14,600, none after its nodes went back."""
    econ = {**ONLY_CAPITAL, "staff_usd_per_fte_year": 87_600, "gpus_per_fte": 8, "staff_min_fte": 2}
    lease = {"gpus": 8, "payment": "lease", "lease_term_months": 1, "lease_rate_per_year": 0.0}
    gap = owned("gap", gpus=16, gpus_per_node=8, capex_usd_per_gpu=1000, tranches=[lease, {"gpus": 8, "order_day": 40}])
    alone = owned("alone", gpus=8, gpus_per_node=8, capex_usd_per_gpu=1000, tranches=[lease])
    res = costsim.simulate(scenario(tmp_path, AFTER, [gap, alone, cloud()], horizon_days=60, economics=econ))
    assert summary(res, "gap").cost_staff_usd == pytest.approx(24_200, rel=1e-12)
    assert summary(res, "alone").cost_staff_usd == pytest.approx(14_600, rel=1e-12)
