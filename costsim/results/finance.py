"""Financial views of a run (DESIGN.md section 7): monthly cash flow and its NPV, break-even
month and break-even utilisation between owning (or committing) and renting.

Cash differs from the cost lines in three ways:
- an owned cluster's capex is paid when it is bought (month 0; bought in tranches, each in its
  order's or delivery's month) instead of being spread as capital cost; a leased tranche's
  monthly payments are in ``capex_usd`` too, as they accrue (the same as its capital line);
- its book value at the horizon's end (straight line, or a resale curve; leased tranches have
  none) is credited in the last month (it is still there; leaving it out would make any horizon
  shorter than its life look like a write-off);
- the rest of a reservation's term, and a leased tranche's payments due after the horizon
  (``commitment_owed``), are owed at the horizon's end, in the last month.
Both horizon-end amounts are discounted at the horizon's end; every other month's cash (bills,
rent for jobs and serving, opex) at the month's start. With straight-line capital
(``cost_of_capital`` 0) capex − book value equals the capital cost line over any horizon (both
stop at the end of the depreciation life), so the cash flow and the cost lines add up to the same
total (with a resale curve the value credited follows the curve, the capital line a straight line
to its value at the life's end: they agree at the life's end). With an annuity
(``cost_of_capital`` > 0) the capital line also carries the interest, so it exceeds capex − book
value by that interest; the cash view leaves interest to discounting.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from costsim.models import economics as eco
from costsim.models.intervals import hours_in_bins
from costsim.plan.economics import EconomicsValues
from costsim.plan.fleet import Plan, burst_of, pools
from costsim.plan.options import OwnedPlan
from costsim.plan.tranches import InService, book_value_at_usd
from costsim.results.costing import bin_edges, mean_usd_per_gpu_hour, term_prices
from costsim.units import HOURS_PER_MONTH, HOURS_PER_YEAR

CASHFLOW_COLUMNS = [
    "option", "month", "capex_usd", "opex_usd", "rent_usd", "commitment_owed_usd", "book_value_usd", "cash_usd",
    "cumulative_usd", "discounted_usd",
]
BREAKEVEN_COLUMNS = [
    "option", "versus", "breakeven_month", "breakeven_month_extrapolated", "cheaper_until_month",
    "breakeven_utilization", "own_usd_per_gpu_hour", "rent_usd_per_gpu_hour", "life_months",
]
OPEX = ("energy", "facility", "maintenance", "staff", "setup")
RENT = ("reserved", "cloud", "serving", "rollout")  # serving and offloaded rollouts on rented capacity are rent too


def cashflow(plan: Plan, econ: EconomicsValues, month_items: dict[str, np.ndarray], horizon_h: float) -> pd.DataFrame:
    """One row per month (USD): capex at purchase, opex and rent as incurred, the commitment owed
    and the book value (credited) at the horizon's end; ``discounted_usd`` is the month's present
    value at ``discount_rate`` (its NPV is their sum)."""
    months = len(month_items["cloud"])
    capex = np.zeros(months)
    book = np.zeros(months)
    for own in owned_parts(plan) if months else ():  # a hybrid's owned base, a fleet's owned pools too
        capex = capex + purchases_by_month(own, months, horizon_h) + leases_by_month(own, months, horizon_h)
        book[-1] += book_value_at_usd(own.purchases, own.resale_curve, econ, horizon_h)
    opex = sum(month_items[i] for i in OPEX)
    rent = sum(month_items[i] for i in RENT)
    owed = month_items["commitment_owed"]  # zero but in the last month
    paid = capex + opex + rent
    at_end = owed - book
    cash = paid + at_end
    return pd.DataFrame({
        "option": plan.name, "month": np.arange(months), "capex_usd": capex, "opex_usd": opex, "rent_usd": rent,
        "commitment_owed_usd": owed, "book_value_usd": book, "cash_usd": cash, "cumulative_usd": np.cumsum(cash),
        "discounted_usd": eco.present_values_usd(paid, econ.discount_rate, float(at_end.sum()),
                                                 horizon_h / HOURS_PER_YEAR),
    }, columns=CASHFLOW_COLUMNS)


def purchases_by_month(own: OwnedPlan, months: int, horizon_h: float) -> np.ndarray:
    """Capex of the tranches bought (not leased), USD, in the month each is paid (its order's or
    its delivery's, ``TranchePlan.paid_h``); a payment after the horizon is not in it."""
    out = np.zeros(months)
    for t in own.purchases:
        if not t.leased and t.paid_h < horizon_h:
            out[min(int(t.paid_h // HOURS_PER_MONTH), months - 1)] += t.capex_usd
    return out


def leases_by_month(own: OwnedPlan, months: int, horizon_h: float) -> np.ndarray:
    """Lease payments, USD per month: each leased tranche's monthly payment from its delivery for its
    term, prorated by the hours of each month it covers (a month cut by the horizon or the term pays
    its share), so they equal the capital cost line of the leased tranches. The payments due after
    the horizon are not in it: they are owed at its end (``commitment_owed``, as a reservation's rest
    of term is; ``TranchePlan.lease_owed_usd``)."""
    out = np.zeros(months)
    edges = bin_edges(horizon_h, HOURS_PER_MONTH)
    for t in own.purchases:
        if t.leased and t.delivery_h < horizon_h:
            out += t.lease_usd_per_month * hours_in_bins(t.delivery_h, min(t.lease_end_h, horizon_h), edges)[:months] \
                / HOURS_PER_MONTH
    return out


def owned_parts(plan: Plan) -> list[OwnedPlan]:
    """The owned clusters the option pays for: itself, a hybrid's base, each of a fleet's owned pools."""
    return [own for part in pools(plan) if (own := part.owned) is not None]


def in_service_of(plan: Plan) -> InService | None:
    """The GPUs in service over time of the clusters ``plan`` owns (``owned_parts``), whose hours
    its own cost per GPU-hour covers; None when it owns none (a reservation's capacity is there
    for the whole horizon)."""
    spans = [t.span for own in owned_parts(plan) for t in own.purchases]
    return InService.of(spans) if spans else None


def cash_paid(cash: pd.DataFrame) -> pd.Series:
    """Cash paid out in each month: capex, opex, rent and, in the last month, the commitment still
    owed after the horizon (a debt, never a saving); the book value credited at the end is left
    out (an estimate of resale, so owning is not flattered). Break-even compares its cumulative sums."""
    return cash["capex_usd"] + cash["opex_usd"] + cash["rent_usd"] + cash["commitment_owed_usd"]


def committed_usd_per_month(plan: Plan, horizon_h: float | None = None) -> float:
    """A reservation's bill per whole (730-h) month, reserved GPUs × price × 730 (a hybrid's
    reserved base's), plus the monthly payment of each leased tranche whose term runs past
    ``horizon_h`` (its rest owed too); 0 for any option without a commitment. Under a price trend,
    at the locked price of the last term begun by ``horizon_h`` (``costing.term_prices``; the first
    term's when None), the one its commitment owed is counted at."""
    total = 0.0
    if horizon_h is not None:
        total += sum(t.lease_usd_per_month for own in owned_parts(plan) for t in own.purchases
                     if t.lease_owed_usd(horizon_h) > 0)
    for part in pools(plan):  # a fleet may hold several commitments
        if (commitment := part.reservation) is not None:
            assert commitment.reserved_gpus is not None  # a reservation commits to reserved_gpus
            price = commitment.price_per_gpu_hour if horizon_h is None else term_prices(commitment, horizon_h)[-1][2]
            total += float(commitment.reserved_gpus) * price * HOURS_PER_MONTH
    return total


def pace(plan: Plan, cash: pd.DataFrame, horizon_h: float) -> eco.Pace:
    """How ``plan``'s cash (its rows of ``cashflow``) goes on after the horizon, for the
    extrapolated break-even (``economics.spend_pace``): the last three months' cash paid with the
    lumps left out (capex and the commitment owed are paid once, part of the cumulative, not a
    rate), a last month cut at the horizon prorated; a reservation's own bill is 0 for the rest of
    the term its commitment owed pays for, and back after it; so is a lease's payment whose rest is
    owed (several commitments: the months their owed total pays at their total bill)."""
    # Lease payments (in capex_usd) are a rate, not a lump: a lease still running is a commitment.
    leases = sum((leases_by_month(own, len(cash), horizon_h) for own in owned_parts(plan)), 0.0) if len(cash) else 0.0
    return eco.spend_pace(cash_paid(cash).to_numpy(), horizon_h,
                          lumps_by_month=(cash["capex_usd"] - leases + cash["commitment_owed_usd"]).to_numpy(),
                          committed_usd_per_month=committed_usd_per_month(plan, horizon_h),
                          owed_usd=float(cash["commitment_owed_usd"].sum()))


def _own_usd_per_gpu_hour(plan: Plan, summary: pd.Series, horizon_h: float) -> float:
    """What a GPU-hour of capacity costs when you own or commit to it (used or not), over the
    horizon (a commitment under a price trend: its terms' prices, ``costing.mean_usd_per_gpu_hour``);
    NaN for a hybrid, whose total is two pools' and no one price (a pool of node groups has one:
    its total over all its groups' capacity)."""
    if burst_of(plan) is not None:
        return np.nan
    if plan.owned is not None:
        # The cluster alone: rented rollout instances (rollout offload) are neither its cost nor its capacity.
        # Lease payments owed after the horizon buy capacity after it: not this capacity's price.
        capacity = summary["capacity_gpu_hours"] - summary["rollout_gpu_hours"]
        cost = summary["total_cost_usd"] - summary["cost_rollout_usd"] - summary["cost_commitment_owed_usd"]
        return cost / capacity if capacity else np.nan
    if (commitment := plan.reservation) is not None:
        return mean_usd_per_gpu_hour(commitment, horizon_h)
    return np.nan


def breakeven(plans: list[Plan], summary: pd.DataFrame, cash: pd.DataFrame, horizon_h: float,
              depreciation_years: float | None = None) -> pd.DataFrame:
    """Each owned, reserved or hybrid option against each on-demand or spot option, on cumulative
    cash paid by each month's end (``cash_paid``; months of 730 h, the last cut at ``horizon_h``).
    Months are month NUMBERS as users count them, from 1 (month N ends N whole months in; the
    ``economics`` functions return them so), the number every page says:
    - ``breakeven_month``: the first month by whose end, and every later one's, the owned or
      committed option is at or below the rental to the horizon's end (1: cheaper from the first
      month; NaN: dearer at the end);
    - ``breakeven_month_extrapolated``: that month, or when it lies beyond the horizon, the first
      month by whose end the rental would catch up with each going on at its ``pace`` (the last
      three months' spending per whole month, lumps left out; a reservation costs nothing more for
      the rest of the term its commitment owed pays for): an estimate, NaN if the gap never closes
      or the month ends after an owned option's ``life_months`` (its life from hour 0 to the end of
      its depreciation, in 730-h months: going on at the same pace past it would need new hardware);
    - ``cheaper_until_month``: when it was cheaper first and is dearer at the horizon's end, the
      last month by whose end it was at or below the rental (NaN otherwise): not a break-even;
    - ``breakeven_utilization``: the utilisation above which owning is cheaper per used GPU-hour
      (own cost per capacity GPU-hour ÷ rent price; not for hybrids). Both prices are over the
      horizon: under a ``price_change_per_year`` trend, the mean of the trended price over it
      (``costing.mean_usd_per_gpu_hour``), not today's, weighted by the owned option's GPUs in
      service over time (``in_service_of``: its cost per GPU-hour covers only the hours its
      capacity is there), so the utilisation is where the two totals over the horizon meet;
      ``rent_usd_per_gpu_hour`` is that mean (the option's own price without a trend)."""
    s = summary.set_index("option")
    rows_of = dict(tuple(cash.groupby("option", sort=False)))
    cum = {name: np.cumsum(cash_paid(g).to_numpy()) for name, g in rows_of.items()}
    paces = {p.name: pace(p, rows_of[p.name], horizon_h) for p in plans}
    rows = []
    for a in plans:
        if a.pay_as_you_go:
            continue
        for b in plans:
            rental = b.rental
            if rental is None:
                continue
            own = _own_usd_per_gpu_hour(a, s.loc[a.name], horizon_h)
            rent = mean_usd_per_gpu_hour(rental, horizon_h, in_service_of(a))
            part = next(iter(owned_parts(a)), None)  # the hardware's life runs from its (first) delivery
            life = ((part.lead_time_h + depreciation_years * HOURS_PER_YEAR) / HOURS_PER_MONTH
                    if depreciation_years is not None and part is not None else np.nan)
            later = eco.breakeven_month_extrapolated(cum[a.name], cum[b.name], horizon_h=horizon_h,
                                                     own=paces[a.name], rent=paces[b.name])
            rows.append({
                "option": a.name, "versus": b.name,
                "breakeven_month": eco.breakeven_month(cum[a.name], cum[b.name]),
                "breakeven_month_extrapolated": later if not _ends_after(later, life) else np.nan,
                "cheaper_until_month": eco.cheaper_until_month(cum[a.name], cum[b.name]),
                "breakeven_utilization": eco.breakeven_utilization(own, rent) if own == own else np.nan,
                "own_usd_per_gpu_hour": own, "rent_usd_per_gpu_hour": rent, "life_months": life,
            })
    return pd.DataFrame(rows, columns=BREAKEVEN_COLUMNS)


# The per-pair prices and utilisation of ``breakeven``: the mean over replications is shown beside the months.
_PAIR_MEANS = ("breakeven_utilization", "own_usd_per_gpu_hour", "rent_usd_per_gpu_hour")


def breakeven_over(tables: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The one break-even of several replications (``breakeven`` tables, one per run), per
    (option, versus), that every surface shows (the dashboard's sentence and Cost tab, the report,
    the tornado):

    - ``breakeven_month``: the mean month over the replications where it falls within the horizon
      (NaN in none), ``found`` of ``n`` replications;
    - ``cheaper_until_month``, ``breakeven_month_extrapolated``: among the replications without a
      break-even month, the mean of those that have one (``cheaper_found``, ``extrapolated_found``);
    - ``*_varies``: whether those replications' months differ (then the month is a mean);
    - ``breakeven_utilization``, ``own_usd_per_gpu_hour``, ``rent_usd_per_gpu_hour``: means;
      ``life_months`` as in ``breakeven``.

    One table gives that run's own months (``n`` 1), so one replication reads the same everywhere
    as ``costsim run``'s ``breakeven`` table. Months are month numbers, counted from 1, as in
    ``breakeven``; a mean of them is said rounded (``round_month``)."""
    tables = list(tables)
    both = pd.concat([t.assign(replication=i) for i, t in enumerate(tables)], ignore_index=True)
    if both.empty:
        return tables[0]
    if "cheaper_until_month" not in both:
        both = both.assign(cheaper_until_month=math.nan)
    rows = []
    for (option, versus), g in both.groupby(["option", "versus"], sort=False):
        beyond = g[g["breakeven_month"].isna()]  # the extrapolation of a found month is that month: not an estimate
        row = {"option": option, "versus": versus, "n": len(g), "life_months": g["life_months"].iloc[0]
               if "life_months" in g else math.nan}
        for col, name in (("breakeven_month", "found"), ("cheaper_until_month", "cheaper_found"),
                          ("breakeven_month_extrapolated", "extrapolated_found")):
            months = (g if col == "breakeven_month" else beyond)[col].dropna()
            row[col] = months.mean() if len(months) else math.nan
            row[name] = len(months)
            row[f"{col}_varies"] = months.nunique() > 1
        for col in _PAIR_MEANS:
            row[col] = g[col].mean() if col in g else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def _ends_after(month: float, life_months: float) -> bool:
    """Whether month number ``month`` ends after ``life_months`` months from hour 0 (month N ends N
    whole months in; a life of exactly N months covers month N). False when either is NaN; a life
    within float noise of a month's end covers that month (it is a quotient of hours)."""
    return month > life_months + 1e-9


def round_month(m: float) -> int:
    """A break-even month number (counted from 1, as ``breakeven`` writes it), or a mean of them
    over replications, as every sentence and table says it: a mean rounds half up (5.5 reads 6)."""
    return math.floor(m + 0.5)
