"""Cost math (DESIGN.md section 7): pure functions of numbers and numpy arrays.

Units are in the names: ``_usd``, ``_h`` (hours), ``_s`` (seconds), ``_kw``, ``_kwh``. A year is
8,760 h and a month 730 h (``costsim.scenario.bounds``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from costsim.units import HOURS_PER_MONTH, HOURS_PER_YEAR, SECONDS_PER_HOUR

# Hours (and what accrues over them) as one number or one per bin: the accruing costs below are
# elementwise and give back what they are given (``costsim.results.costing`` passes arrays).
Span = TypeVar("Span", float, np.ndarray)

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
    nodes: int, idle_kw: float, max_kw: float, gpus_per_node: int, hours: Span, busy_gpu_hours: Span
) -> Span:
    """IT energy: every node draws ``idle_kw`` while installed; a busy GPU adds its share of max − idle."""
    return nodes * idle_kw * hours + (max_kw - idle_kw) / gpus_per_node * busy_gpu_hours


def energy_cost_usd(it_kwh: Span, pue: float, usd_per_kwh: float) -> Span:
    """Facility energy bill: IT energy × PUE × price."""
    return it_kwh * pue * usd_per_kwh


def facility_cost_usd(nodes: int, node_max_kw: float, usd_per_kw_month: float, hours: Span) -> Span:
    """Colocation: provisioned kW (nodes × max power) × $/kW-month × months."""
    return nodes * node_max_kw * usd_per_kw_month * hours / HOURS_PER_MONTH


def maintenance_cost_usd(capex_usd: float, frac_per_year: float, hours: Span) -> Span:
    """Maintenance and support: a share of capex per year."""
    return capex_usd * frac_per_year * hours / HOURS_PER_YEAR


def staff_fte(gpus: int, gpus_per_fte: float, min_fte: float) -> int:
    """Engineers an owned cluster is staffed with: whole people, ⌈GPUs ÷ GPUs per engineer⌉, and
    at least ``min_fte`` (rounded up: a cluster cannot hire a third of an engineer); none while no
    GPU is in service (every node back with its lessor, or a gap before the next delivery)."""
    if gpus <= 0:
        return 0
    # Within float noise of a whole number is that number (1,500 / 750 is 2 engineers, not 3).
    return max(math.ceil(gpus / gpus_per_fte - 1e-9), math.ceil(min_fte - 1e-9))


def staff_cost_usd(gpus: int, gpus_per_fte: float, usd_per_fte_year: float, hours: Span, *, min_fte: float) -> Span:
    """Operations staff: whole engineers (``staff_fte``) × loaded salary (USD per year) × years of ``hours``."""
    return staff_fte(gpus, gpus_per_fte, min_fte) * usd_per_fte_year * hours / HOURS_PER_YEAR


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
    """Utilisation above which owning is cheaper per used GPU-hour: owned cost/hour ÷ cloud price.
    Free rental (price 0): owning is never cheaper (inf), unless owning is free too (NaN)."""
    if cloud_usd_per_gpu_hour <= 0:
        return math.nan if owned_usd_per_gpu_hour <= 0 else math.inf
    return owned_usd_per_gpu_hour / cloud_usd_per_gpu_hour


def book_value_usd(capex_usd: float, residual_frac: float, years: float, years_in_service: float) -> float:
    """Straight-line book value after ``years_in_service``: capex less depreciation to the residual."""
    depreciated = (capex_usd - capex_usd * residual_frac) * min(max(years_in_service, 0.0) / years, 1.0)
    return capex_usd - depreciated


def resale_frac(curve: Sequence[tuple[float, float]], age_years: float) -> float:
    """Value of hardware ``age_years`` after its delivery as a fraction of its capex, read off
    ``curve``: (age in years, fraction) points, ages ascending. Linear between points, held at the
    last point's value after it; before the first point the line runs from (0, 1) (new hardware
    is worth its price) unless the curve gives age 0 itself. Negative ages read as 0."""
    ages = [float(a) for a, _ in curve]
    fracs = [float(v) for _, v in curve]
    if ages[0] > 0:
        ages, fracs = [0.0, *ages], [1.0, *fracs]
    return float(np.interp(max(age_years, 0.0), ages, fracs))


def lease_payment_usd(capex_usd: float, residual_usd: float, annual_rate: float, months: int) -> float:
    """Monthly payment of a lease of ``months`` months on hardware worth ``capex_usd`` that goes
    back to the lessor worth ``residual_usd`` at its end: the level annuity at the monthly rate
    i = ``annual_rate`` / 12 that repays the capex net of the residual's present value,
    ``(capex − residual·(1+i)^−n) · i / (1 − (1+i)^−n)``; at rate 0, ``(capex − residual) / n``."""
    if annual_rate == 0:
        return (capex_usd - residual_usd) / months
    log_growth = months * math.log1p(annual_rate / 12.0)
    i = annual_rate / 12.0
    return (capex_usd - residual_usd * math.exp(-log_growth)) * i / -math.expm1(-log_growth)


def discount_factor(years: np.ndarray | float, annual_rate: float) -> np.ndarray:
    """What a dollar paid ``years`` from the start is worth at the start: (1 + r)^(−years)."""
    return (1.0 + annual_rate) ** (-np.asarray(years, dtype=float))


def present_values_usd(cash_by_month: np.ndarray, annual_rate: float, at_end_usd: float = 0.0,
                       end_years: float = 0.0) -> np.ndarray:
    """Each month's present value: month m's cash paid at its start (m/12 years), cash_m ·
    (1 + r)^(−m/12), and in the last month also an amount paid at the horizon's end
    (``end_years``; a credit such as book value is negative), at_end · (1 + r)^(−end_years)."""
    cash = np.asarray(cash_by_month, dtype=float)
    pv = cash * discount_factor(np.arange(len(cash)) / 12.0, annual_rate)
    if len(pv):
        pv[-1] += at_end_usd * float(discount_factor(end_years, annual_rate))
    return pv


def npv_usd(cash_by_month: np.ndarray, annual_rate: float, at_end_usd: float = 0.0, end_years: float = 0.0) -> float:
    """Net present value: the sum of ``present_values_usd``."""
    return float(present_values_usd(cash_by_month, annual_rate, at_end_usd, end_years).sum())


def commitment_owed_usd(reserved_gpus: int, usd_per_gpu_hour: float, term_h: float, horizon_h: float) -> float:
    """What a reservation still owes at the horizon's end: the rest of the last term begun
    (terms are owed whole), ``reserved_gpus × price × (terms × term_h − horizon_h)``. A 3-year
    term over a 1-year horizon owes 2 years; a horizon that is a whole number of terms owes 0.
    Whether a horizon longer than one term may renew it is the scenario's to say (validated)."""
    terms = max(1, math.ceil(horizon_h / term_h - 1e-9))  # within float noise of a term end is at it
    return reserved_gpus * usd_per_gpu_hour * max(terms * term_h - horizon_h, 0.0)


# Cumulative cash within this much of the other's counts as "at or below" (float noise, not money).
_BREAKEVEN_TOLERANCE_USD = 1e-6


def _at_or_below(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a <= b + _BREAKEVEN_TOLERANCE_USD * np.maximum(1.0, np.abs(b))


def breakeven_month(cumulative_own: np.ndarray, cumulative_rent: np.ndarray) -> float:
    """The break-even month NUMBER, counted from 1 as users count months: ``cumulative_*[k]`` is
    each option's cash paid by the end of month k + 1 (month N ends N whole 730-h months in), and
    the break-even is the first month N by whose end, and every later month's end to the horizon,
    the owned or committed option's cumulative cash is at or below the rental's. 1: cheaper from
    the first month on; NaN when it is dearer at the horizon's end (never broke even, or cheaper
    first and dearer later: see ``cheaper_until_month``)."""
    a = np.asarray(cumulative_own, dtype=float)
    b = np.asarray(cumulative_rent, dtype=float)
    if len(a) == 0:
        return float("nan")
    dearer = np.flatnonzero(~_at_or_below(a, b))
    if len(dearer) == 0:
        return 1.0
    last = int(dearer[-1])  # entry ``last`` is the end of month last + 1, the last one dearer
    return float(last + 2) if last + 1 < len(a) else float("nan")  # the month after it


def cheaper_until_month(cumulative_own: np.ndarray, cumulative_rent: np.ndarray) -> float:
    """When the owned or committed option was at or below the rental at some month's end but is
    dearer at the horizon's end (cheaper first, dearer later): the number (counted from 1, as in
    ``breakeven_month``) of the last month by whose end it was at or below; NaN otherwise. This is
    the case a break-even month must not be read into."""
    a = np.asarray(cumulative_own, dtype=float)
    b = np.asarray(cumulative_rent, dtype=float)
    if len(a) == 0 or _at_or_below(a[-1:], b[-1:])[0]:
        return float("nan")
    below = np.flatnonzero(_at_or_below(a, b))
    return float(below[-1] + 1) if len(below) else float("nan")


def month_shares(months: int, horizon_h: float | None = None) -> np.ndarray:
    """Each month's share of a whole month (``HOURS_PER_MONTH``): 1, but the last one cut at a
    horizon of ``horizon_h`` hours (None: the horizon is ``months`` whole months)."""
    shares = np.ones(months)
    if months and horizon_h is not None:
        shares[-1] = horizon_h / HOURS_PER_MONTH - (months - 1)
        if not 0.0 < shares[-1] <= 1.0 + 1e-9:
            raise ValueError(f"a horizon of {horizon_h:g} h does not end in month {months - 1}")
    return shares


@dataclass(frozen=True)
class Pace:
    """How an option's cash goes on after the horizon, in USD per whole (730-h) month: an estimate
    for the extrapolated break-even. ``usd_per_month`` from the horizon's end on; a reservation's
    own bill, ``committed_usd_per_month``, comes on top only after ``covered_months``: the rest of
    the term its commitment lump (counted at the horizon's end) has already paid for."""

    usd_per_month: float
    committed_usd_per_month: float = 0.0
    covered_months: float = 0.0

    def rate_at(self, months_after: float) -> float:
        """USD per month ``months_after`` months after the horizon's end."""
        covered = months_after < self.covered_months
        return self.usd_per_month + (0.0 if covered else self.committed_usd_per_month)


def spend_pace(paid_by_month: np.ndarray, horizon_h: float | None = None, window: int = 3, *,
               lumps_by_month: np.ndarray | None = None, committed_usd_per_month: float = 0.0,
               owed_usd: float = 0.0) -> Pace:
    """The ``Pace`` of an option from its cash paid by month (USD): the last ``window`` months'
    spend less ``lumps_by_month`` (amounts paid once, such as capex or a commitment owed: part of
    the cumulative, not a rate), divided by those months' length in whole months (a last month cut
    at ``horizon_h`` counts for its share, so it is prorated, not read as a full month). A
    reservation billing ``committed_usd_per_month`` with ``owed_usd`` still owed at the horizon's
    end has that owed amount ÷ its monthly bill months of its term paid for: its own bill is 0
    over them, and comes back after them (renewed, as the horizon's spending is assumed to go on)."""
    paid = np.asarray(paid_by_month, dtype=float)
    if lumps_by_month is not None:
        paid = paid - np.asarray(lumps_by_month, dtype=float)
    months = month_shares(len(paid), horizon_h)[-window:].sum()
    rate = float(paid[-window:].sum() / months) if months > 0 else math.nan
    covered = owed_usd / committed_usd_per_month if committed_usd_per_month > 0 else 0.0
    return Pace(rate - committed_usd_per_month, committed_usd_per_month, covered)


def _months_to_close(gap_usd: float, own: Pace, rent: Pace) -> float:
    """Months after the horizon's end until the rental's cumulative catches up a gap of ``gap_usd``
    (> 0) with each going on at its ``Pace`` (piecewise constant rates: the gap is piecewise
    linear, with a kink where a reservation's covered term ends); NaN if it never does."""
    kinks = sorted({0.0, own.covered_months, rent.covered_months})
    for start, end in zip(kinks, [*kinks[1:], math.inf], strict=True):
        slope = own.rate_at(start) - rent.rate_at(start)  # USD per month the gap grows
        if slope < 0 and (end == math.inf or gap_usd + slope * (end - start) <= 0):
            return start + gap_usd / -slope
        if end == math.inf:
            return math.nan
        gap_usd += slope * (end - start)
    return math.nan


def breakeven_month_extrapolated(cumulative_own: np.ndarray, cumulative_rent: np.ndarray, window: int = 3, *,
                                 horizon_h: float | None = None, own: Pace | None = None,
                                 rent: Pace | None = None) -> float:
    """``breakeven_month``, or if the owned option is dearer at the horizon's end, the number
    (counted from 1) of the first month by whose end the rental would catch up if each went on at
    its ``Pace`` (NaN if the gap never closes). An estimate beyond the simulated horizon: label it so.

    Months are whole 730-h months from hour 0: the horizon ends ``horizon_h`` / 730 months in
    (None: ``len`` whole months), part-way through the last month when it is not a whole number.
    ``own``/``rent`` default to ``spend_pace`` of each cumulative's monthly steps, with no lumps
    or commitment; with fewer than ``window`` + 1 months nothing is extrapolated (NaN)."""
    m = breakeven_month(cumulative_own, cumulative_rent)
    a = np.asarray(cumulative_own, dtype=float)
    b = np.asarray(cumulative_rent, dtype=float)
    if m == m or len(a) <= window:
        return m
    own = own if own is not None else spend_pace(np.diff(a, prepend=0.0), horizon_h, window)
    rent = rent if rent is not None else spend_pace(np.diff(b, prepend=0.0), horizon_h, window)
    after = _months_to_close(float(a[-1] - b[-1]), own, rent)
    if after != after:
        return math.nan
    end_months = len(a) if horizon_h is None else horizon_h / HOURS_PER_MONTH
    # Month N ends N months in: the first whose end is at or after the catch-up, and never before
    # the horizon's last month (float noise on a catch-up exactly at a month's end must not push
    # it a month later).
    return float(max(math.ceil(end_months + after - 1e-9), len(a)))
