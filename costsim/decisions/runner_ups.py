"""The runner-up plans of a capacity plan (``costsim.decisions.capacity_plan``): after the answer,
the next cheapest configurations that meet the targets, one per option and plan, where two
configurations whose every field the option uses is ``near`` the other's (within ``NEAR_SHARE``)
are one plan, so a runner-up is never the answer, or an earlier runner-up, with a tiny difference.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

RUNNER_UPS = 3  # runner-up plans a capacity plan reports, at most
NEAR_SHARE = 0.05  # two plans whose every value is within this share of each other are one plan


def _number(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, int | float | np.integer | np.floating) and math.isfinite(v)


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float | np.floating) and math.isnan(v))


def near(a: Any, b: Any) -> bool:
    """Whether two values of a varied field make the same plan: numbers within ``NEAR_SHARE`` of the
    larger (256 and 264 GPUs, day 180 and day 181; not 12 and 13 GPUs, nor a 4 h and a 4.5 h wait),
    anything else equal."""
    if _number(a) and _number(b):
        return abs(float(a) - float(b)) <= NEAR_SHARE * max(abs(float(a)), abs(float(b)))
    if _missing(a) and _missing(b):  # a field the option leaves unset reads NaN in both: the same plan
        return True
    return isinstance(a, bool) == isinstance(b, bool) and bool(a == b)  # yes/no is no number


def runner_ups(table: pd.DataFrame, uses: dict[str, list[int]], paths: list[str]) -> pd.DataFrame:
    """The next cheapest configurations that meet after the answer, one per option and plan: each,
    cheapest first, kept unless an option's kept configuration (the answer first) has every field the
    option uses (``paths``, the varied paths in order) ``near`` its own, so a runner-up is never the
    answer, or an earlier runner-up, again with a tiny difference (``table``: ``Search.table``)."""
    ok = table[table["meets"]].sort_values("fair_total_usd", kind="stable")
    kept: list[tuple[str, list[Any]]] = []
    distinct = []
    for o, (_, r) in zip(ok["_option"], ok.iterrows(), strict=True):
        mine = [r[paths[i]] for i in uses[o]]
        same = any(o == k and all(near(a, b) for a, b in zip(mine, theirs, strict=True)) for k, theirs in kept)
        distinct.append(not same)
        if not same:
            kept.append((o, mine))
    ups = ok[np.asarray(distinct, dtype=bool)].iloc[1:1 + RUNNER_UPS].rename(columns={"_option": "base_option"})
    return ups.reset_index(drop=True)


__all__ = ["NEAR_SHARE", "RUNNER_UPS", "near", "runner_ups"]
