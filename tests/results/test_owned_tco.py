"""Owned cluster TCO of a fully busy and a fully idle year, worked by hand.

16 H100s (2 nodes of 8), capex $40,000/GPU = $640,000, economics set explicitly:
- capital, straight line: (640,000 − 10 % residual) / 5 y = $115,200 a year
- energy: idle 2 nodes × 2.8 kW × 8,760 h = 49,056 kWh; busy 16 GPUs × 8,760 h × (10.2 − 2.8)/8 kW
  = 129,648 kWh; × PUE 1.2 × $0.10/kWh
- facility: 2 × 10.2 kW × $200/kW-month × 12 = $48,960
- maintenance: 5 % × 640,000 = $32,000; setup $10,000
- staff: whole engineers, ⌈16 / 800⌉ = ⌈0.02⌉ = 1 engineer (the catalog minimum is 1 too) × $200,000
  = $200,000 (a fraction of an engineer, 16/800 × $200,000 = $4,000, is no longer what it costs)
"""

import pytest
from helpers import owned, scenario

import costsim

ECON = {
    "electricity_usd_per_kwh": 0.10, "pue": 1.2, "colo_usd_per_kw_month": 200.0, "depreciation_years": 5,
    "residual_value_frac": 0.10, "maintenance_frac_per_year": 0.05, "staff_usd_per_fte_year": 200_000,
    "gpus_per_fte": 800, "cost_of_capital": 0.0, "setup_usd": 10_000,
}
OPTION = owned(gpus=16, capex_usd_per_gpu=40_000)


def run(tmp_path, rows, econ=ECON, option=OPTION):
    return costsim.simulate(scenario(tmp_path, rows, [option], horizon_days=365, economics=econ))


def test_fully_busy_year(tmp_path):
    s = run(tmp_path, [(0, 16, 8760)]).summary.iloc[0]
    assert s.cost_capital_usd == pytest.approx(115_200.0)
    assert s.cost_energy_usd == pytest.approx((49_056 + 129_648) * 1.2 * 0.10)  # $21,444.48
    assert s.cost_facility_usd == pytest.approx(48_960.0)
    assert s.cost_maintenance_usd == pytest.approx(32_000.0)
    assert s.cost_staff_usd == pytest.approx(200_000.0)
    assert s.cost_setup_usd == 10_000.0
    # 115,200 + 21,444.48 + 48,960 + 32,000 + 200,000 + 10,000
    assert s.total_cost_usd == pytest.approx(427_604.48)
    assert s.utilization == pytest.approx(1.0)
    assert s.cost_per_gpu_hour_used_usd == pytest.approx(427_604.48 / (16 * 8760))


def test_fully_idle_year(tmp_path):
    # The only job arrives after the horizon: nothing runs, yet the cluster costs money.
    s = run(tmp_path, [(9000, 8, 1)]).summary.iloc[0]
    assert s.jobs_submitted == 0 and s.utilization == 0.0
    assert s.cost_energy_usd == pytest.approx(49_056 * 1.2 * 0.10)  # $5,886.72
    # 115,200 + 5,886.72 + 48,960 + 32,000 + 200,000 + 10,000
    assert s.total_cost_usd == pytest.approx(412_046.72)


def test_annuity_and_lead_time(tmp_path):
    # 8 % cost of capital: (640,000 − 64,000 / 1.08^5) × 0.08 / (1 − 1.08^−5) = $149,382.92 a year.
    # Delivered after 73 days (0.2 y): capital, facility, maintenance, staff and idle power for 0.8 y.
    econ = {**ECON, "cost_of_capital": 0.08}
    res = run(tmp_path, [(9000, 8, 1)], econ, {**OPTION, "lead_time_days": 73})
    s = res.summary.iloc[0]
    assert s.cost_capital_usd == pytest.approx(149_382.92 * 0.8, abs=0.05)
    assert s.cost_facility_usd == pytest.approx(48_960 * 0.8)
    assert s.cost_energy_usd == pytest.approx(49_056 * 0.8 * 1.2 * 0.10)
    assert s.cost_setup_usd == 10_000.0
    months = res.costs.pivot(index="month", columns="item", values="cost_usd")
    assert months.loc[0, "setup"] == 10_000.0 and months["setup"].iloc[1:].sum() == 0
    assert months.loc[0, "capital"] == 0.0  # not delivered until day 73 (month 2)
    assert months.loc[11, "capital"] == pytest.approx(149_382.92 / 12, abs=0.01)
