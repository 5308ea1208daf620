"""How an option's cost is shared among its jobs (the jobs table's ``cost_usd``), serving and its
idle capacity (``job_costs``): rented capacity by its bills, a pool by the GPU-hours held on it.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from costsim.engine.run import UsageRecord
from costsim.plan.economics import EconomicsValues
from costsim.plan.fleet import Plan
from costsim.results.costing import (
    Serving,
    bin_edges,
    capacity,
    cloud_bills,
    held_intervals,
    option_costs,
    parts,
    serving_rent_usd,
)
from costsim.results.groups import group_items
from costsim.workload.plan import WorkPlan


def job_costs(plan: Plan, econ: EconomicsValues, rec: UsageRecord, work: WorkPlan, horizon_h: float, *,
              serving: Serving, totals: dict[str, float], gpu_hours: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Each job's cost, serving's cost and the idle cost (USD) of one option over ``horizon_h``
    hours: ``serving`` as ``costing.serving_use`` gives it, ``totals`` the option's line item
    totals (USD), ``gpu_hours`` each job's GPU-hours held.

    Rented capacity (on-demand, spot, a hybrid's burst): a job costs its bills, serving its rent. A
    pool (owned, reserved, a hybrid's base): its cost within the horizon — the commitment owed
    beyond it left out, as it buys capacity after the horizon — is shared by the GPU-hours held on
    it (jobs and serving), idle capacity included. A hybrid's base on which nothing was held (every
    job burst) is shared the same way by what the hybrid held on its burst. Idle cost is the share
    of a pool's cost that its unheld capacity accounts for (all of it if nothing was held), already
    inside those shares. So Σ job costs + serving cost + commitment owed = total whenever the option
    held anything; an option that held nothing leaves its cost unshared (all idle).
    """
    jobs = work.jobs
    n = len(jobs)
    whole = np.array([0.0, horizon_h])
    hour = np.diff(bin_edges(horizon_h, 1.0))
    job_cost = np.zeros(n)
    idle_cost = serving_cost = unheld = 0.0
    pools = parts(plan, rec)
    for k, (part, sub) in enumerate(pools):
        part_serving = [serving[k]] if serving else None
        if (rental := part.rental) is not None:  # rented per use
            bill_job, bill = cloud_bills(rental, sub, horizon_h)
            job_cost += np.bincount(bill_job, weights=bill, minlength=n)
            if part_serving:
                serving_cost += float(serving_rent_usd(rental, part_serving[0][1], horizon_h, whole)[0])
            continue
        part = replace(part, rollout=None)  # the pool alone: its rollout pool is a part of its own here
        items = totals if len(pools) == 1 else group_items(plan, part, {
            item: float(v.sum()) for item, v in option_costs(part, econ, sub, jobs, horizon_h, whole, part_serving).items()},
            totals)
        pool_total = sum(items.values()) - items["commitment_owed"]
        on_part = ~np.isnan(sub.start_h)
        pool_serving = float((part_serving[0][0] * hour).sum()) if part_serving else 0.0
        pj, ps, pe, pk = held_intervals(sub, horizon_h)  # GPU-hours held on this pool (not on rollout pools)
        part_gpu_hours = np.bincount(pj, weights=(pe - ps) * sub.alloc_held[pk], minlength=n)
        pool_used = part_gpu_hours[on_part].sum() + pool_serving
        if pool_used > 0:
            job_cost[on_part] = part_gpu_hours[on_part] * (pool_total / pool_used)
            serving_cost += pool_serving * pool_total / pool_used
        else:
            unheld += pool_total
        pool_capacity = float(capacity(part, sub, horizon_h, whole)[0].sum())
        idle_cost += pool_total * (1.0 - pool_used / pool_capacity) if pool_capacity > 0 else pool_total
    served_h = sum(float((sv * hour).sum()) for sv, _ in serving) if serving else 0.0
    held_h = float(gpu_hours.sum()) + served_h
    if unheld > 0 and held_h > 0:  # only a hybrid's unused base can get here with something held
        job_cost += gpu_hours * (unheld / held_h)
        serving_cost += served_h * unheld / held_h
    return job_cost, serving_cost, idle_cost
