"""A fair comparison of options (DESIGN.md section 14): the same work priced for every option.

An option that cannot keep up looks cheap because it left work undone. Per run (one summary row
of ``costsim.simulate``, or of a sweep's runs table) this module says whether the option kept up
and prices every option on the same work:

- **cannot keep up** when jobs are still waiting at the horizon's end (``jobs_waiting``: never
  started; a job waiting to resume after an interruption is not a backlog) and either its
  ``offered_load`` (the work that falls within the horizon ÷ the capacity within it after delivery
  and serving's real use, ``costsim.results.backlog``) is ``LOAD_LIMIT`` (1) or more — the queue
  cannot drain — or more than ``STALE_LIMIT`` (1 %) of the jobs submitted are stale
  (``stale_share``: never started and waiting far beyond the option's normal delays). With no job
  waiting there is no queue, and it keeps up whatever the load arithmetic says (a single long job
  on an idle cluster). Such an option is never recommended.
- ``fair_total_usd``: the amortised total (``total_cost_usd``: capital spread over the
  depreciation life) plus three named lines, ``FAIR_LINES``: the unfinished work priced at the
  cheapest rental price available (``unfinished_rent_usd``: the scenario's cheapest on-demand or
  spot price, or the catalog's on-demand price of the option's GPU when it has none), the serving
  demand it left unmet at the same price (``serving_unmet_rent_usd``: inference the lab would have
  had to rent elsewhere), and the waiting (``waiting_cost_usd``: queued GPU-hours × the scenario's
  ``decision.waiting_usd_per_gpu_hour``, 0 unless stated). The work every option then pays for is
  the work and the serving submitted within the horizon.
- ``cash_spent_usd``: the cash view — capex when paid (lease payments as they fall due), opex, rent
  and commitments owed within the horizon — beside ``book_value_usd``, the value of the hardware
  still owned at its end (straight line, or the option's resale curve). Cash and amortised totals differ for owned capacity within its life; both are named.
- per unit of work: ``cost_per_work_gpu_hour_usd`` (amortised total ÷ GPU-hours of planned work
  done) and ``cost_per_iteration_usd`` (the summary's, per RL iteration done).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from costsim.plan.options import side_of
from costsim.results.backlog import STALE_FACTOR, STALE_FLOOR_H

LOAD_LIMIT = 1.0  # offered load at which a queue (when there is one at the end) cannot drain
STALE_LIMIT = 0.01  # share of the jobs submitted that are stale at the end: a queue that does not drain

FAIR_COLUMNS = [
    "side", "keeps_up", "why", "completion", "waiting_cost_usd", "fair_total_usd", "cost_per_work_gpu_hour_usd",
]
# What the fair total adds to the amortised total, each a column of ``fair_rows``' table.
FAIR_LINES = ("unfinished_rent_usd", "serving_unmet_rent_usd", "waiting_cost_usd")


# What follows each reason's first words in ``why_not``: its explanation, which ``brief_why`` leaves
# out where there is room for a few words only (a page's first screen).
LOAD_EXPLAINED = " within the horizon, with jobs still waiting: the queue cannot drain"
STALE_EXPLAINED = (f" and are stale (waiting past {STALE_FACTOR:g} × its p95 delay, their own run and "
                   f"{STALE_FLOOR_H:g} h)")


def why_not(offered_load: float, stale_share: float, jobs_waiting: float = math.nan) -> str:
    """Why an option cannot keep up, "" when it keeps up: the gate's reason, a label kept with its
    numbers (the ``why`` column of ``fair_rows``, ``Verdict.options`` and ``optimize``'s table).
    From summary columns: ``offered_load``, ``stale_share`` and ``jobs_waiting`` (NaN for a table
    from before it was a column: a queue is then assumed, as the gate did then)."""
    if jobs_waiting == 0:  # no queue at the end: nothing to drain
        return ""
    reasons = []
    if offered_load >= LOAD_LIMIT:  # NaN (no capacity limit) compares False
        reasons.append(f"offered load {offered_load * 100:.0f} % of its capacity{LOAD_EXPLAINED}")
    if stale_share > STALE_LIMIT:
        reasons.append(f"{stale_share * 100:.0f} % of the jobs never started{STALE_EXPLAINED}")
    return "; ".join(reasons)


def why_over(rows: pd.DataFrame) -> str:
    """The gate's reason for one option over its replications (``rows``: its ``fair_rows``), ""
    when every replication kept up. Each reason's number is the mean over the replications that
    failed on that reason (not one replication's), led by "in k of n replications: " when it held
    in some of them only."""
    failed = rows[rows["why"] != ""]
    loads, stales = failed["offered_load"], failed["stale_share"]
    reasons = []
    for values, held, reason in ((loads, loads >= LOAD_LIMIT, lambda x: why_not(x, 0.0)),
                                 (stales, stales > STALE_LIMIT, lambda x: why_not(0.0, x))):
        k = int(held.sum())
        if k:
            words = reason(float(values[held].mean()))
            reasons.append(words if k == len(rows) else f"in {k} of {len(rows)} replications: {words}")
    return "; ".join(reasons)


def brief_why(why: str) -> str:
    """``why_not``'s reasons by their first words, the same numbers without the explanations:
    "offered load 112 % of its capacity"; "31 % of the jobs never started"."""
    return "; ".join(r.removesuffix(LOAD_EXPLAINED).removesuffix(STALE_EXPLAINED) for r in why.split("; "))


def fair_rows(runs: pd.DataFrame, waiting_usd_per_gpu_hour: float = 0.0) -> pd.DataFrame:
    """``runs`` (summary rows, any extra label columns kept) with the ``FAIR_COLUMNS`` added;
    ``waiting_usd_per_gpu_hour``: the price of a queued GPU-hour (``Decision``'s)."""
    out = runs.copy()
    out["side"] = [side_of(p) for p in out["pricing"]]  # the plan's rule, read from its pricing label
    waiting = out["jobs_waiting"] if "jobs_waiting" in out else pd.Series(np.nan, index=out.index)
    out["why"] = [why_not(float(a), float(b), float(c))
                  for a, b, c in zip(out["offered_load"], out["stale_share"], waiting, strict=True)]
    out["keeps_up"] = out["why"] == ""
    submitted = out["jobs_submitted"].to_numpy(dtype=float)
    old = np.divide(out["jobs_completed"].to_numpy(dtype=float), submitted,  # tables without the column
                    out=np.full(len(out), np.nan), where=submitted > 0)
    given = out["completion"].to_numpy(dtype=float) if "completion" in out else np.full(len(out), np.nan)
    out["completion"] = np.where(np.isnan(given), old, given)
    out["waiting_cost_usd"] = out["queued_gpu_hours"] * float(waiting_usd_per_gpu_hour)
    out["fair_total_usd"] = out["total_cost_usd"] + out[list(FAIR_LINES)].sum(axis=1)
    done = (out["work_submitted_gpu_hours"] - out["work_unfinished_gpu_hours"]).to_numpy(dtype=float)
    out["cost_per_work_gpu_hour_usd"] = np.divide(out["total_cost_usd"].to_numpy(dtype=float), done,
                                                  out=np.full(len(out), np.nan), where=done > 0)
    return out
