"""Financial views of a run (DESIGN.md section 7): monthly cash flow and its NPV, break-even
month and break-even utilisation between owning and renting.

Cash differs from the cost lines in one way: an owned cluster's capex is paid when it is bought
(month 0) instead of being spread as capital cost, and the cluster's straight-line book value at
the horizon's end is credited in the last month (it is still there; leaving it out would make any
horizon shorter than its life look like a write-off). Bills and opex are paid as incurred.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from costsim import economics as eco
from costsim.catalog import CloudPlan, EconomicsValues, HybridPlan, OwnedPlan, Plan
from costsim.units import HOURS_PER_YEAR

CASHFLOW_COLUMNS = [
    "option", "month", "capex_usd", "opex_usd", "rent_usd", "book_value_usd", "cash_usd", "cumulative_usd",
    "discounted_usd",
]
BREAKEVEN_COLUMNS = [
    "option", "versus", "breakeven_month", "breakeven_month_extrapolated", "breakeven_utilization",
    "own_usd_per_gpu_hour", "rent_usd_per_gpu_hour",
]
OPEX = ("energy", "facility", "maintenance", "staff", "setup")
RENT = ("reserved", "cloud")


def owned_part(plan: Plan) -> OwnedPlan | None:
    base = plan.base if isinstance(plan, HybridPlan) else plan
    return base if isinstance(base, OwnedPlan) else None


def cashflow(plan: Plan, econ: EconomicsValues, month_items: dict[str, np.ndarray], horizon_h: float) -> pd.DataFrame:
    """One row per month: capex at purchase, opex and rent as incurred, book value credited at the end."""
    months = len(month_items["cloud"])
    capex = np.zeros(months)
    book = np.zeros(months)
    own = owned_part(plan)
    if own is not None and months:
        capex[0] = own.capex_usd
        in_service = max(horizon_h - own.lead_time_h, 0.0) / HOURS_PER_YEAR
        book[-1] = eco.book_value_usd(own.capex_usd, econ.residual_value_frac, econ.depreciation_years, in_service)
    opex = sum(month_items[i] for i in OPEX)
    rent = sum(month_items[i] for i in RENT)
    cash = capex + opex + rent - book
    discount = (1.0 + econ.discount_rate) ** (-np.arange(months) / 12.0)
    return pd.DataFrame({
        "option": plan.name, "month": np.arange(months), "capex_usd": capex, "opex_usd": opex, "rent_usd": rent,
        "book_value_usd": book, "cash_usd": cash, "cumulative_usd": np.cumsum(cash), "discounted_usd": cash * discount,
    }, columns=CASHFLOW_COLUMNS)


def _own_usd_per_gpu_hour(plan: Plan, summary: pd.Series) -> float:
    """What a GPU-hour of capacity costs when you own or commit to it (used or not)."""
    if isinstance(plan, OwnedPlan):
        return summary["total_cost_usd"] / summary["capacity_gpu_hours"] if summary["capacity_gpu_hours"] else np.nan
    if isinstance(plan, CloudPlan) and plan.reserved:
        return plan.price_per_gpu_hour
    return np.nan


def breakeven(plans: list[Plan], summary: pd.DataFrame, cash: pd.DataFrame) -> pd.DataFrame:
    """Each owned, reserved or hybrid option against each on-demand or spot option: the month the
    cumulative cash outflows cross (book value not credited; NaN if not within the horizon), that
    month extrapolated from the last three months' spending when it lies beyond the horizon, and
    the utilisation above which owning is cheaper per used GPU-hour (own cost per capacity GPU-hour
    ÷ rent price; not for hybrids)."""
    s = summary.set_index("option")
    outflow = cash.assign(out=cash["cash_usd"] + cash["book_value_usd"]).groupby("option", sort=False)["out"]
    cum = {name: np.cumsum(g.to_numpy()) for name, g in outflow}
    rows = []
    for a in plans:
        if isinstance(a, CloudPlan) and not a.reserved:
            continue
        for b in plans:
            if not (isinstance(b, CloudPlan) and not b.reserved):
                continue
            own = _own_usd_per_gpu_hour(a, s.loc[a.name])
            rows.append({
                "option": a.name, "versus": b.name,
                "breakeven_month": eco.breakeven_month(cum[a.name], cum[b.name]),
                "breakeven_month_extrapolated": eco.breakeven_month_extrapolated(cum[a.name], cum[b.name]),
                "breakeven_utilization": eco.breakeven_utilization(own, b.price_per_gpu_hour) if own == own else np.nan,
                "own_usd_per_gpu_hour": own, "rent_usd_per_gpu_hour": b.price_per_gpu_hour,
            })
    return pd.DataFrame(rows, columns=BREAKEVEN_COLUMNS)
