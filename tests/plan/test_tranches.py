"""Tranches resolved against the catalog: when each is ordered and delivered, what it costs, a
lease's monthly payment and its default rate, each against a hand calculation."""

from __future__ import annotations

import pytest

from costsim.plan.resolve import resolve
from costsim.plan.resolved import resolve_scenario
from costsim.scenario import scenario_from_data

ECON = {"depreciation_years": 4, "residual_value_frac": 0.2, "cost_of_capital": 0.12}


def tranched(tranches, **kw):
    data = {"name": "t", "horizon_days": 365, "economics": ECON,
            "workload": {"classes": [{"name": "c", "arrivals_per_day": 1, "gpus": 8, "iterations": 5,
                                      "model_params_b": 1}]},
            "options": [{"name": "own", "kind": "owned", "gpu_type": "H100", "lead_time_days": 10,
                         "capex_usd_per_gpu": 1500, "tranches": tranches, **kw}]}
    return scenario_from_data(data, "test", ".")


def test_each_tranche_is_delivered_its_lead_time_after_its_order():
    sc = tranched([{"gpus": 16}, {"gpus": 8, "order_day": 50, "payment": "delivery"}])
    (plan,) = resolve(sc)
    a, b = plan.purchases
    assert (a.order_h, a.delivery_h, a.nodes, a.capex_usd, a.paid_h) == (0, 240, 2, 24_000, 0)
    assert (b.order_h, b.delivery_h, b.nodes, b.capex_usd, b.paid_h) == (1200, 1440, 1, 12_000, 1440)
    # The cluster: both tranches' GPUs and capex; in service from the first delivery.
    assert (plan.gpus, plan.nodes, plan.capex_usd, plan.lead_time_h) == (24, 3, 36_000, 240)


def test_a_lease_defaults_to_the_cost_of_capital():
    sc = tranched([{"gpus": 8, "payment": "lease", "lease_term_months": 36}])
    (t,) = resolve(sc)[0].purchases
    # $12,000 back to the lessor after 3 of 4 years worth 12,000 − 9,600 × 3/4 = 4,800. 1 % a month
    # over 36 months: 1.01^36 = 1.4307688; (12,000 − 4,800 / 1.4307688) × 0.01 / (1 − 1 / 1.4307688)
    # = (12,000 − 3,354.86) × 0.01 / 0.3010750 = $287.14 a month.
    assert t.lease_usd_per_month == pytest.approx(287.14, abs=0.01)
    assert t.lease_term_h == 36 * 730 and t.leased
    # The resolved scenario writes the rate it used.
    again = resolve_scenario(sc)
    assert again.options[0].tranches[0].lease_rate_per_year == pytest.approx(0.12)


def test_the_resale_curve_sets_a_lease_residual():
    curve = [{"age_years": 1, "value_frac": 0.5}, {"age_years": 5, "value_frac": 0.1}]
    sc = tranched([{"gpus": 8, "payment": "lease", "lease_term_months": 36, "lease_rate_per_year": 0}],
                  resale_curve=curve)
    (t,) = resolve(sc)[0].purchases
    # At 3 years the curve is halfway from 0.5 to 0.1: 0.3, $3,600 back. Rate 0: (12,000 − 3,600) / 36 = $233.33.
    assert t.lease_usd_per_month == pytest.approx(233.333, abs=0.001)
