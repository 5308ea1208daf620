"""Time and cost to a target score over replications: intervals on the ``to_target``
table's day and cost, the reward-by-day band, and which option the verdict sets the recommended one
against (``costsim.present.to_target`` words it: "A reaches the target N days earlier than B for
$X more"). Pure functions over the Results' tables.

Intervals: the day reached and the cost by then are defined only in the replications that reach
the target within the horizon, so their 95 % t-intervals (``costsim.runs.stats.t_interval``) are
over those replications alone: ``reached`` says how many, and with fewer than 2 the bounds are NaN
(with none the mean too). The replications that do not reach it give ``projected_day_mean``, the
mean of their projected days (inf when any of them never gets there at its pace).

An option "reaches" the target (``reaches``) when it does in at least ``MAJORITY`` (half) of the
replications (the verdict's rule for keeping up); its day and cost are then the means over those
that reach it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from costsim.decisions.targets import MAJORITY
from costsim.runs.stats import LEVEL, means_table, t_interval

SUMMARY_COLUMNS = [
    "option", "job_class", "target", "replications", "reached", "reached_share", "day_mean", "day_low", "day_high",
    "cost_mean_usd", "cost_low_usd", "cost_high_usd", "projected_day_mean",
]
BAND_COLUMNS = ["option", "job_class", "day", "n", "gpu_hours", "reward", "reward_low", "reward_high"]


def has_scaling(scenario) -> bool:
    """Whether any RL class of ``scenario`` has a ``scaling`` curve (so ``to_target`` has rows)."""
    classes = getattr(getattr(scenario, "workload", None), "classes", None) or ()
    return any(getattr(c, "scaling", None) is not None for c in classes)


def _runs(results) -> list:
    """A Results or a list of them, as a list."""
    return list(results) if isinstance(results, Sequence) else [results]


def interval_table(to_target_tables: Sequence[pd.DataFrame], level: float = LEVEL) -> pd.DataFrame:
    """Per (option, job_class), in order of first appearance, over the replications' ``to_target``
    tables: ``replications``, ``reached`` (how many reached the target within the horizon) and
    ``reached_share``; ``day_mean``/``day_low``/``day_high`` and ``cost_mean_usd``/``cost_low_usd``/
    ``cost_high_usd``, the ``level`` t-interval over the replications that reached it (bounds NaN
    when fewer than 2 did, all NaN when none did); ``projected_day_mean``, the mean projected day of
    those that did not (inf if any never gets there; NaN when all reached, or when in one the run
    had not started by the horizon). Days from the start."""
    frames = [t.assign(replication=r) for r, t in enumerate(to_target_tables) if len(t)]
    if not frames:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    runs = pd.concat(frames, ignore_index=True)
    rows = []
    for (option, job_class), g in runs.groupby(["option", "job_class"], sort=False):
        hit = g["reached"].astype(bool).to_numpy()
        day = t_interval(g["day"].to_numpy(dtype=float)[hit], level) if hit.any() else (math.nan,) * 3
        cost = t_interval(g["cost_usd"].to_numpy(dtype=float)[hit], level) if hit.any() else (math.nan,) * 3
        missed = g["projected_day"].to_numpy(dtype=float)[~hit]
        rows.append({
            "option": option, "job_class": job_class, "target": float(g["target"].iloc[0]),
            "replications": len(g), "reached": int(hit.sum()), "reached_share": float(hit.mean()),
            "day_mean": day[0], "day_low": day[1], "day_high": day[2],
            "cost_mean_usd": cost[0], "cost_low_usd": cost[1], "cost_high_usd": cost[2],
            "projected_day_mean": float(missed.mean()) if len(missed) else math.nan,
        })
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


def summarize(results, level: float = LEVEL) -> pd.DataFrame:
    """``interval_table`` of a Results or a list of Results (replications of one scenario)."""
    return interval_table([r.to_target for r in _runs(results)], level)


def reward_band(results, level: float = LEVEL) -> pd.DataFrame:
    """Per (option, job_class, day) over the replications' ``reward_by_day`` tables: ``n`` runs, the
    leading run's mean ``gpu_hours``, and the mean score ``reward`` with its ``level`` t-interval
    ``reward_low``..``reward_high`` (NaN with one replication)."""
    frames = [r.reward_by_day.assign(replication=k) for k, r in enumerate(_runs(results))]
    runs = pd.concat(frames, ignore_index=True)
    if runs.empty:
        return pd.DataFrame(columns=BAND_COLUMNS)
    return means_table(runs, ["gpu_hours", "reward"], by=("option", "job_class", "day"), level=level)[BAND_COLUMNS]


# -- the option compared ----------------------------------------------------------------------------

def reaches(row) -> bool:
    """Whether an ``interval_table`` row's option reaches the target: in at least ``MAJORITY`` of the
    replications."""
    return row.reached_share >= MAJORITY


def _effective_day(row) -> float:
    """The day an option gets there: reached (mean), else projected (inf: never)."""
    return row.day_mean if reaches(row) else row.projected_day_mean


def compared_with(summary: pd.DataFrame, option: str, versus: str | None) -> str | None:
    """What the time-to-target sentence sets ``option`` against, on the first class with a target:
    the option that gets there first (reached, else projected) when that is not ``option``, else
    ``versus``, else the next to get there. None when there is no other option."""
    if summary.empty or option not in set(summary["option"]):
        return None
    first = summary[summary["job_class"] == summary["job_class"].iloc[0]]
    others = first[first["option"] != option]
    if others.empty:
        return None
    days = np.array([_effective_day(r) for r in first.itertuples()], dtype=float)
    order = first["option"].to_numpy()[np.argsort(np.nan_to_num(days, nan=math.inf), kind="stable")]
    if order[0] != option:
        return str(order[0])
    if versus is not None and versus in set(others["option"]):
        return versus
    return str(order[1])
