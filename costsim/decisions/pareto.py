"""Pareto frontiers (DESIGN.md section 14): the configurations no other one beats on cost and on
every objective at once.

A row is **dominated** when another row is at least as good in cost and in every objective and
strictly better in at least one of them; the frontier is the rows that are not. Two rows equal in
everything do not dominate each other: both are on it. A row with a NaN cost or objective (no
delay measured, no iteration done) is never on the frontier and dominates nothing.

``frontier`` works on any table with the columns it names: a ``Verdict.options`` table (the options
of one scenario), a sweep's per-(variant, option) means with the fair columns (``sweep_table``), or
an optimiser's evaluated configurations. Objectives are ``"min"`` (queue delay) or ``"max"``
(RL iterations per day).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from costsim.decisions.fair import fair_rows
from costsim.decisions.targets import MAJORITY
from costsim.scenario import Problem, ScenarioError

DIRECTIONS = ("min", "max")
_BLOCK = 2048  # rows compared at once in the general case: a block × n × objectives booleans


def _error(message: str) -> ScenarioError:
    return ScenarioError("frontier()", [Problem((), message)])


def _checked(table, cost: str, objectives) -> list[tuple[str, str]]:
    if not isinstance(table, pd.DataFrame):
        raise _error(f"table must be a pandas DataFrame (got {type(table).__name__})")
    if isinstance(objectives, tuple) and len(objectives) == 2 and all(isinstance(x, str) for x in objectives):
        objectives = (objectives,)  # one (column, direction) pair given bare
    pairs = [tuple(o) for o in objectives]
    if not pairs or any(len(p) != 2 for p in pairs):
        raise _error("objectives must be (column, 'min' | 'max') pairs, at least one")
    bad = [d for _, d in pairs if d not in DIRECTIONS]
    if bad:
        raise _error(f"direction {bad[0]!r} is not 'min' or 'max'")
    missing = [c for c in [cost, *(c for c, _ in pairs)] if c not in table.columns]
    if missing:
        raise _error(f"table has no column {', '.join(map(repr, missing))}")
    return pairs


def dominated(points: np.ndarray) -> np.ndarray:
    """Which rows of ``points`` (n × k, every column to be minimised, no NaN) another row dominates."""
    n, k = points.shape
    if n == 0:
        return np.zeros(0, dtype=bool)
    if k == 2:
        return _dominated_2d(points)
    out = np.zeros(n, dtype=bool)
    for start in range(0, n, _BLOCK):
        p = points[start:start + _BLOCK, None, :]  # block × 1 × k against 1 × n × k
        no_worse = (points[None, :, :] <= p).all(axis=2)
        better = (points[None, :, :] < p).any(axis=2)
        # np.any rather than the method, which numpy's stubs type as maybe one bool here.
        out[start:start + _BLOCK] = np.any(no_worse & better, axis=1)
    return out


def _dominated_2d(points: np.ndarray) -> np.ndarray:
    """The two-column case in O(n log n): (c, o) is dominated by a row of lower cost and no
    higher objective, or by a row of equal cost and lower objective."""
    c, o = points[:, 0], points[:, 1]
    order = np.lexsort((o, c))
    cs, os_ = c[order], o[order]
    first = np.r_[True, cs[1:] != cs[:-1]]  # where each run of equal cost starts
    group = np.cumsum(first) - 1
    starts = np.flatnonzero(first)
    group_min = os_[starts]  # sorted by objective within a cost: the first is the least
    best_before = np.r_[np.inf, np.minimum.accumulate(group_min)[:-1]]  # least objective at lower cost
    hit = (best_before[group] <= os_) | (group_min[group] < os_)
    out = np.empty(len(c), dtype=bool)
    out[order] = hit
    return out


def frontier(table: pd.DataFrame, cost: str = "fair_total_usd",
             objectives: Sequence[tuple[str, str]] = (("queue_delay_p95_h", "min"),)) -> pd.DataFrame:
    """``table`` with a boolean ``on_frontier`` column (not dominated in ``cost``, USD, lower is
    better, and the ``objectives``), sorted by cost (then the objectives; NaN costs last).

    ``objectives``: (column, ``"min"`` or ``"max"``) pairs. ``out.attrs["cost"]`` and
    ``out.attrs["objectives"]`` record what the frontier was computed on (for ``pareto_figure``).
    A row whose ``keeps_up`` column (when there is one) is false is never on the frontier and
    dominates nothing: its cost is low because it left work undone (``costsim.decisions.fair``)."""
    pairs = _checked(table, cost, objectives)
    columns = [cost, *(c for c, _ in pairs)]
    values = table[columns].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    signs = np.array([1.0] + [1.0 if d == "min" else -1.0 for _, d in pairs])
    points = values * signs  # every column minimised
    known = ~np.isnan(points).any(axis=1)
    if "keeps_up" in table.columns:
        known &= table["keeps_up"].fillna(False).astype(bool).to_numpy()
    on = np.zeros(len(table), dtype=bool)
    on[known] = ~dominated(points[known])
    out = table.copy()
    out["on_frontier"] = on
    key = pd.DataFrame(points, columns=[f"_k{i}" for i in range(len(columns))], index=out.index)
    order = key.sort_values(list(key.columns), kind="stable", na_position="last").index
    out = out.loc[order].reset_index(drop=True)
    out.attrs = {"cost": cost, "objectives": pairs}
    return out


def sweep_table(results) -> pd.DataFrame:
    """A sweep's (``costsim.sweep``) per-(variant, option) table for ``frontier``: the swept values,
    then the means over replications of the fair columns (``fair.fair_rows``) and of every metric a
    verdict reports (``verdict.MEANS``), and ``keeps_up`` (in at least ``MAJORITY`` of the replications)."""
    from costsim.decisions.verdict import MEANS

    rows = fair_rows(results.runs)
    groups = rows.groupby(["variant", "option"], sort=False)
    table = groups[MEANS].mean()
    table["keeps_up"] = groups["keeps_up"].mean() >= MAJORITY
    table["n"] = groups.size()
    table = table.reset_index()
    return results.variants.merge(table, on="variant", how="right")


__all__ = ["DIRECTIONS", "dominated", "frontier", "sweep_table"]
