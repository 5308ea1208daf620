"""Cost math (DESIGN.md section 7): pure functions of numbers and numpy arrays.

Units are in the names: ``_usd``, ``_h`` (hours), ``_s`` (seconds), ``_kw``, ``_kwh``. A year is
8,760 h and a month 730 h (``costsim.units``).
"""

from __future__ import annotations

import math

import numpy as np

from costsim.units import HOURS_PER_MONTH, HOURS_PER_YEAR, SECONDS_PER_HOUR

# Billing rounds up to whole increments; a duration within this many seconds of an increment
# boundary is on it (so 3600.0000000001 s is not billed as 3601 s).
_BILLING_TOLERANCE_S = 1e-6


def owned_capex_usd(
    gpus: int,
    server_price_usd_per_gpu: float,
    fabric_frac: float,
    storage_frac: float,
    install_frac: float,
) -> float:
    """Capex of an owned cluster: servers × (1 + fabric + storage + install shares)."""
    return gpus * server_price_usd_per_gpu * (1.0 + fabric_frac + storage_frac + install_frac)


def annual_capital_cost_usd(capex_usd: float, residual_frac: float, years: float, rate: float) -> float:
    """Capital cost per year of owning ``capex_usd`` for ``years``.

    ``rate == 0``: straight-line depreciation ``(capex − residual) / years``. ``rate > 0``: the
    level annuity that repays the capex at ``rate`` net of the discounted residual,
    ``(capex − residual·(1+r)^−n) · r / (1 − (1+r)^−n)``.
    """
    residual = capex_usd * residual_frac
    if rate == 0:
        return (capex_usd - residual) / years
    # (1+r)^-n and 1 − (1+r)^-n via log1p/expm1: exact to rounding even for tiny rates.
    log_growth = years * math.log1p(rate)
    discount = math.exp(-log_growth)
    return (capex_usd - residual * discount) * rate / -math.expm1(-log_growth)


def it_energy_kwh(
    nodes: int, idle_kw: float, max_kw: float, gpus_per_node: int, hours: float, busy_gpu_hours: float
) -> float:
    """IT energy: every node draws ``idle_kw`` while installed; a busy GPU adds its share of max − idle."""
    return nodes * idle_kw * hours + (max_kw - idle_kw) / gpus_per_node * busy_gpu_hours


def energy_cost_usd(it_kwh: float, pue: float, usd_per_kwh: float) -> float:
    """Facility energy bill: IT energy × PUE × price."""
    return it_kwh * pue * usd_per_kwh


def facility_cost_usd(nodes: int, node_max_kw: float, usd_per_kw_month: float, hours: float) -> float:
    """Colocation: provisioned kW (nodes × max power) × $/kW-month × months."""
    return nodes * node_max_kw * usd_per_kw_month * hours / HOURS_PER_MONTH


def maintenance_cost_usd(capex_usd: float, frac_per_year: float, hours: float) -> float:
    """Maintenance and support: a share of capex per year."""
    return capex_usd * frac_per_year * hours / HOURS_PER_YEAR


def staff_cost_usd(gpus: int, gpus_per_fte: float, usd_per_fte_year: float, hours: float) -> float:
    """Operations staff: (GPUs ÷ GPUs per engineer) × loaded salary × years."""
    return gpus / gpus_per_fte * usd_per_fte_year * hours / HOURS_PER_YEAR


def billed_seconds(duration_s: np.ndarray | float, granularity_s: float, minimum_s: float) -> np.ndarray:
    """Billed time of each allocation: rounded up to the increment, at least the minimum."""
    d = np.asarray(duration_s, dtype=float)
    increments = np.ceil(np.maximum(d - _BILLING_TOLERANCE_S, 0.0) / granularity_s)
    return np.maximum(increments * granularity_s, minimum_s)


def cloud_cost_usd(
    billed_s: np.ndarray | float, instances: np.ndarray | int, gpus_per_instance: int, price_per_gpu_hour: float
) -> np.ndarray:
    """Bill of each allocation: billed hours × instances × GPUs per instance × $/GPU-hour."""
    return (
        np.asarray(billed_s, dtype=float)
        / SECONDS_PER_HOUR
        * np.asarray(instances)
        * gpus_per_instance
        * price_per_gpu_hour
    )


def breakeven_utilization(owned_usd_per_gpu_hour: float, cloud_usd_per_gpu_hour: float) -> float:
    """Utilisation above which owning is cheaper per used GPU-hour: owned cost/hour ÷ cloud price."""
    return owned_usd_per_gpu_hour / cloud_usd_per_gpu_hour


def book_value_usd(capex_usd: float, residual_frac: float, years: float, years_in_service: float) -> float:
    """Straight-line book value after ``years_in_service``: capex less depreciation to the residual."""
    depreciated = (capex_usd - capex_usd * residual_frac) * min(max(years_in_service, 0.0) / years, 1.0)
    return capex_usd - depreciated


def npv_usd(cash_by_month: np.ndarray, annual_rate: float) -> float:
    """Present value of monthly cash (month m paid at m/12 years): Σ cash_m · (1 + r)^(−m/12)."""
    cash = np.asarray(cash_by_month, dtype=float)
    return float((cash * (1.0 + annual_rate) ** (-np.arange(len(cash)) / 12.0)).sum())


def breakeven_month(cumulative_a: np.ndarray, cumulative_b: np.ndarray) -> float:
    """First month (0-based) by whose end the option that cost more at first (a, say owning: capex
    up front) has cost no more in total than the other; NaN if that never happens in the horizon."""
    a = np.asarray(cumulative_a, dtype=float)
    b = np.asarray(cumulative_b, dtype=float)
    if len(a) == 0:
        return float("nan")
    first_dearer, other = (a, b) if a[0] >= b[0] else (b, a)
    crossed = np.flatnonzero(first_dearer <= other)
    return float(crossed[0]) if len(crossed) else float("nan")


def breakeven_month_extrapolated(cumulative_a: np.ndarray, cumulative_b: np.ndarray, window: int = 3) -> float:
    """``breakeven_month``, or if the curves do not cross within the horizon, the month they would
    cross if each kept its average monthly spend of the last ``window`` months (NaN if the gap is
    not closing). An estimate beyond the simulated horizon: label it so."""
    m = breakeven_month(cumulative_a, cumulative_b)
    a = np.asarray(cumulative_a, dtype=float)
    b = np.asarray(cumulative_b, dtype=float)
    if m == m or len(a) <= window:
        return m
    dearer, other = (a, b) if a[0] >= b[0] else (b, a)
    gap = dearer[-1] - other[-1]
    closing = (other[-1] - other[-1 - window] - (dearer[-1] - dearer[-1 - window])) / window
    if closing <= 0:
        return float("nan")
    return float(len(a) - 1 + np.ceil(gap / closing))
