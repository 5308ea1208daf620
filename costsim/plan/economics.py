"""The scenario's economics with the catalog filled in: what pricing reads beside the option plans
(``costsim.plan.resolve.economics_values`` builds it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EconomicsValues:
    """Scenario economics with the catalog filled in."""

    electricity_usd_per_kwh: float
    pue: float
    colo_usd_per_kw_month: float
    depreciation_years: float
    residual_value_frac: float
    maintenance_frac_per_year: float
    staff_usd_per_fte_year: float
    gpus_per_fte: float
    staff_min_fte: float  # whole engineers per owned cluster at least (costsim.models.economics.staff_fte)
    storage_capex_frac: float
    install_capex_frac: float
    cost_of_capital: float
    setup_usd: float
    discount_rate: float
