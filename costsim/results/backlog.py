"""Whether an option keeps up with its work: its offered load, the work it left undone, and the
jobs its queue left waiting.

- ``offered_load``: the steady load once the option's capacity is there: GPU-hours of planned work
  submitted from its delivery (an owned cluster's lead time; 0 otherwise) to the horizon's end
  (each job's planned run on this option, checkpoint writes included, times the GPUs it holds or
  would hold: whole nodes or instances) ÷ the GPU-hours the option can give in that window at most
  (its installed or reserved GPUs over time, a quota times the window; minus the share serving
  took). At 1 or more the queue cannot drain: unfinished work grows in proportion to the horizon.
  A backlog built up before delivery is not load: it is cleared once the cluster is there if the
  load is below 1 (``stale_share`` says when it is not cleared within the horizon). NaN for
  capacity without a limit (on-demand or spot with no ``max_gpus``): it can always rent more.
- ``work_unfinished_gpu_hours``: GPU-hours of planned work submitted and not done at the horizon's
  end: a job not started, all of its planned run; a started one, its planned run less the part it
  reached (its last checkpoint, plus the current attempt's work if it is working at the end — as
  ``_iterations`` counts it; a job interrupted and waiting to run again has only its checkpoint).
- ``stale_share``: the share of jobs submitted in the first half of the horizon that are neither
  done nor working at its end (never started, or interrupted and still waiting): a queue that
  drains leaves none, whatever the load (it also catches a scheduler that starves one class, and
  capacity that keeps being taken away, such as spot preemptions with long re-acquisition).

``costsim.decisions.fair`` turns these into the "cannot keep up" flag, and prices the unfinished
work at ``cheapest_rent_usd_per_gpu_hour`` (``unfinished_rent_usd``) so options that did
different amounts of work are compared on the same work.
"""

from __future__ import annotations

import math

import numpy as np

from costsim.catalog import HybridPlan, OwnedPlan, Plan, is_pool, pools
from costsim.engine import UsageRecord
from costsim.engine.pool import nodes_needed


def would_hold(plan: Plan, gpus: np.ndarray) -> np.ndarray:
    """GPUs each job holds when it runs on ``plan`` (a hybrid: on its base): within a node as asked,
    whole nodes beyond one (a pool); whole instances (on-demand and spot)."""
    part = plan.base if isinstance(plan, HybridPlan) else plan
    if is_pool(part):
        gpn = part.gpus_per_node if isinstance(part, OwnedPlan) else part.gpus_per_instance
        return np.where(gpus <= gpn, gpus, nodes_needed(gpus, gpn) * gpn)
    return nodes_needed(gpus, part.gpus_per_instance) * part.gpus_per_instance


def delivery_h(plan: Plan) -> float:
    """When the option's own capacity is there: an owned cluster's (or a hybrid's owned base's)
    lead time; 0 for rented capacity."""
    return max((p.lead_time_h for p in pools(plan) if isinstance(p, OwnedPlan)), default=0.0)


def capacity_limit_gpu_h(plan: Plan, rec: UsageRecord, start_h: float, end_h: float) -> float:
    """The most GPU-hours the option can hold within [start_h, end_h]; inf without a limit."""
    total = 0.0
    for part in pools(plan):
        if is_pool(part):  # owned, reserved, a hybrid's base: its GPUs as installed over time
            t = np.clip(np.append(rec.capacity_change_h, end_h), start_h, end_h)
            total += float((np.diff(t) * np.asarray(rec.capacity_gpus, dtype=float)).sum())
        elif part.max_gpus is None:
            return math.inf
        else:
            total += part.max_gpus * (end_h - start_h)
    return total


def work_left_gpu_h(rec: UsageRecord, horizon_h: float, started: np.ndarray, completed: np.ndarray,
                    run_h: np.ndarray, gpus: np.ndarray) -> np.ndarray:
    """Per job, GPU-hours of its planned run not done at the horizon's end (see the module)."""
    working = ~np.isnan(rec.end_h)  # the current attempt has a planned end: it is running
    reached = np.asarray(rec.pos_h) + np.where(working, np.maximum(horizon_h - np.asarray(rec.work_from_h), 0.0), 0.0)
    left = np.where(started, np.clip(run_h - reached, 0.0, run_h), run_h)
    return np.where(completed, 0.0, left) * gpus


def keep_up_measures(plan: Plan, rec: UsageRecord, horizon_h: float, submit_h: np.ndarray, started: np.ndarray,
                     completed: np.ndarray, run_h: np.ndarray, gpus: np.ndarray, serving_gpu_h: float,
                     work_gpus: np.ndarray | None = None) -> dict[str, float]:
    """The summary's ``offered_load``, ``work_submitted_gpu_hours``, ``work_unfinished_gpu_hours``
    and ``stale_share``; ``gpus``: what each job holds or would hold (``would_hold``), against the
    option's capacity; ``work_gpus``: GPUs × share of its run its work takes, where that differs (an
    offloaded job's rollout GPUs too; default ``gpus``)."""
    work_gpus = gpus if work_gpus is None else work_gpus
    planned = run_h * gpus
    t0 = min(delivery_h(plan), horizon_h)
    limit = capacity_limit_gpu_h(plan, rec, t0, horizon_h)
    limit -= serving_gpu_h * (horizon_h - t0) / horizon_h if horizon_h > 0 else 0.0  # serving's share of the window
    work = float(planned[submit_h >= t0].sum())
    if math.isinf(limit):
        load = math.nan
    elif limit > 0:
        load = work / limit
    else:  # no capacity within the horizon at all
        load = math.inf if float(planned.sum()) > 0 else 0.0
    working = started & ~completed & ~np.isnan(rec.end_h)
    first_half = submit_h < horizon_h / 2
    waiting = first_half & ~completed & ~working
    return {
        "offered_load": load,
        "work_submitted_gpu_hours": float((run_h * work_gpus).sum()),
        "work_unfinished_gpu_hours": float(work_left_gpu_h(rec, horizon_h, started, completed, run_h, work_gpus).sum()),
        "stale_share": float(waiting.sum() / first_half.sum()) if first_half.any() else 0.0,
    }


def cheapest_rent_usd_per_gpu_hour(plans: list[Plan], plan: Plan) -> float:
    """The price unfinished work is priced at: the cheapest on-demand or spot price among the
    scenario's options (hybrid bursts included), or, with none, the catalog's cheapest on-demand
    price of ``plan``'s GPU type (every tier). USD per GPU-hour."""
    rented = [p.price_per_gpu_hour for q in plans for p in pools(q) if not is_pool(p)]
    if rented:
        return float(min(rented))
    return float(min(tier["on_demand"] for tier in plan.gpu.price.values() if "on_demand" in tier))
