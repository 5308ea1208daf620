"""Time to a target score in words: the verdict's sentence "A reaches the target N days earlier than
B for $X more", from ``costsim.decisions.time_to_target.interval_table``'s rows (days from the
start, amortised cost in USD, means over the replications that reach it)."""

from __future__ import annotations

import math

import pandas as pd

from costsim.decisions.time_to_target import reaches
from costsim.present.formats import plain


def _projected(row) -> str:
    p = row.projected_day_mean
    if math.isnan(p):  # a run not started by the horizon (a cluster not yet delivered, a queue)
        return "not started by the horizon"
    return "never at its pace" if not math.isfinite(p) else f"day {p:.1f}"


def _partly(row) -> str:
    """" (in k of n replications)" when it reached the target in only some of them."""
    return f" (in {row.reached} of {row.replications} replications)" if row.reached < row.replications else ""


def _one_class(ra, rb, a: str, b: str) -> str:
    goal = f"the target score {plain(ra.target)} ({ra.job_class})"
    if reaches(ra) and reaches(rb):
        days, cost = rb.day_mean - ra.day_mean, ra.cost_mean_usd - rb.cost_mean_usd
        when = (f"{days:.1f} days earlier than {b}" if round(days, 1) > 0
                else f"{-days:.1f} days later than {b}" if round(days, 1) < 0 else f"the same day as {b}")
        money = (f"for ${cost:,.0f} more" if round(cost) > 0 else f"and ${-cost:,.0f} cheaper" if round(cost) < 0
                 else "for the same amortised cost")
        return (f"{a} reaches {goal} on day {ra.day_mean:.1f}{_partly(ra)}, {when} (day {rb.day_mean:.1f}"
                f"{_partly(rb)}), {money} (${ra.cost_mean_usd:,.0f} against ${rb.cost_mean_usd:,.0f} amortised cost until then)")
    if reaches(ra):
        return (f"only {a} reaches {goal} within the horizon, on day {ra.day_mean:.1f}{_partly(ra)} for "
                f"${ra.cost_mean_usd:,.0f} amortised; {b} does not (projected: {_projected(rb)})")
    if reaches(rb):
        return (f"{a} does not reach {goal} within the horizon (projected: {_projected(ra)}); only {b} does, on "
                f"day {rb.day_mean:.1f}{_partly(rb)} for ${rb.cost_mean_usd:,.0f} amortised")
    return (f"neither {a} nor {b} reaches {goal} within the horizon (projected day: {_projected(ra).removeprefix('day ')}"
            f" and {_projected(rb).removeprefix('day ')})")


def target_sentence(summary: pd.DataFrame, a: str, b: str) -> str:
    """One sentence comparing options ``a`` and ``b`` on each class with a target (``summary``:
    ``interval_table``'s rows), e.g. "Time to target: own-64 reaches the target score 0.65 (flag)
    on day 48.3, 5.9 days earlier than od (day 54.2), for $69,312 more ($291,211 against $221,899
    amortised cost until then)." Days and costs are means over the replications that reach it; "" when either option
    has no row."""
    parts = []
    for job_class in dict.fromkeys(summary["job_class"]):
        rows = summary[summary["job_class"] == job_class].set_index("option")
        if a not in rows.index or b not in rows.index:
            continue
        parts.append(_one_class(rows.loc[a], rows.loc[b], a, b))
    # "Time to target:" leads, so no option name is capitalised (names are the user's, as written)
    return f"Time to target: {'; '.join(parts)}." if parts else ""
