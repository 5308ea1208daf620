"""What an owned pool of node groups (``costsim.plan.groups``) costs beyond its groups' own lines.

Each group is priced as the owned cluster it is, on the usage it carried (``costing.parts``: the
record's part is a job's group): its capital from its own capex (each GPU type at its catalog
price), its energy from its own nodes' idle and peak draw and the busy GPU-hours on it, its
facility from its nodes' peak draw and its maintenance from its capex (``PER_GROUP``). What belongs
to the pool as a whole is counted once (``POOL_WIDE``, by ``costing.option_costs``): staff for all
its GPUs (whole engineers: per group, the rounding and the minimum would be paid again) and the
one-time setup. A job's share of them is its group's share of the pool's GPUs (``group_items``).
Also what a job would hold on the pool (``would_hold``): on the group it is timed on.
"""

from __future__ import annotations

import numpy as np

from costsim.engine.run import UsageRecord
from costsim.plan.fleet import Plan, node_group_pool
from costsim.plan.options import CloudPlan, OwnedPlan

PER_GROUP = ("capital", "energy", "facility", "maintenance")  # line items each group pays for itself
POOL_WIDE = ("staff", "setup")  # line items the pool pays once


def group_items(plan: Plan, part: OwnedPlan | CloudPlan, items: dict[str, float],
                totals: dict[str, float]) -> dict[str, float]:
    """A part's line item totals (USD) as the jobs on it share them: for a group of a pool of node
    groups, its own ``PER_GROUP`` items and its share of the pool's ``POOL_WIDE`` ones (``totals``:
    the option's) by its GPUs, so the groups' shares sum to the option's total; ``items`` for any
    other part."""
    pool = node_group_pool(plan)
    if pool is None:
        return items
    share = pool.gpu_share(part.name)
    return {**items, **{item: totals[item] * share for item in POOL_WIDE}}


def would_hold(plan: Plan, rec: UsageRecord, asked: np.ndarray) -> np.ndarray:
    """GPUs each job of ``asked`` GPUs would hold on the option: on a pool of node groups, on the
    group it is timed on (the record's part: a job never started, the first it would try); on any
    other option, on its home pool."""
    pool = node_group_pool(plan)
    if pool is None:
        return plan.home.held_gpus(asked)
    out = np.zeros(len(asked), dtype=np.int64)
    for k, group in enumerate(pool.groups):
        on = rec.part == k
        out[on] = group.held_gpus(asked[on])
    return out
