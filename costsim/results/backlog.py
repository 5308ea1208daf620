"""Whether an option keeps up with its work: its offered load, the work it left undone, and the
jobs its queue never reached.

- ``offered_load``: GPU-hours of planned work submitted within the horizon (each job's planned run
  on this option, checkpoint writes included, times the GPUs it holds) ÷ the GPU-hours the option
  can give it at most (its installed or reserved GPUs over time, a quota times the horizon; minus
  the GPU-hours serving took). At 1 or more the queue cannot drain: unfinished work grows in
  proportion to the horizon. NaN for capacity without a limit (on-demand or spot with no
  ``max_gpus``): it can always rent more.
- ``work_unfinished_gpu_hours``: GPU-hours of planned work submitted and not done at the horizon's
  end (a job not started: all of its planned run; a running job: what is left of it if it runs
  on uninterrupted).
- ``stale_share``: the share of jobs submitted in the first half of the horizon that have not
  started by its end: a queue that drains leaves none, whatever the load (it also catches a
  scheduler that starves one class).

``costsim.decisions.fair`` turns these into the "cannot keep up" flag, and prices the unfinished
work at ``cheapest_rent_usd_per_gpu_hour`` (``unfinished_rent_usd``) so options that did
different amounts of work are compared on the same work.
"""

from __future__ import annotations

import math

import numpy as np

from costsim.catalog import Plan, is_pool, pools
from costsim.engine import UsageRecord


def work_left_gpu_h(t: float, submit_h: np.ndarray, start_h: np.ndarray, end_h: np.ndarray,
                    run_h: np.ndarray, gpus: np.ndarray) -> float:
    """GPU-hours of planned work submitted by hour ``t`` and not done at ``t``.

    ``start_h``/``end_h`` are NaN for a job not started / not completed within the horizon;
    ``run_h``: planned hours each job holds ``gpus`` GPUs (work and checkpoint writes)."""
    submitted = submit_h <= t
    started = submitted & (start_h <= t)  # NaN compares False: not started
    running = started & ~(end_h <= t)
    left = np.where(submitted & ~started, run_h, 0.0)
    left = np.where(running, np.maximum(run_h - (t - np.where(running, start_h, 0.0)), 0.0), left)
    return float((left * gpus).sum())


def capacity_limit_gpu_h(plan: Plan, rec: UsageRecord, horizon_h: float) -> float:
    """The most GPU-hours the option can hold within the horizon; inf without a limit."""
    total = 0.0
    for part in pools(plan):
        if is_pool(part):  # owned, reserved, a hybrid's base: its GPUs as installed over time
            t = np.minimum(np.append(rec.capacity_change_h, horizon_h), horizon_h)
            total += float((np.diff(t) * np.asarray(rec.capacity_gpus, dtype=float)).sum())
        elif part.max_gpus is None:
            return math.inf
        else:
            total += part.max_gpus * horizon_h
    return total


def keep_up_measures(plan: Plan, rec: UsageRecord, horizon_h: float, submit_h: np.ndarray, start_h: np.ndarray,
                     end_h: np.ndarray, run_h: np.ndarray, gpus: np.ndarray, serving_gpu_h: float) -> dict[str, float]:
    """The summary's ``offered_load``, ``work_unfinished_gpu_hours`` and ``stale_share``."""
    limit = capacity_limit_gpu_h(plan, rec, horizon_h) - serving_gpu_h
    work = float((run_h * gpus).sum())
    if math.isinf(limit):
        load = math.nan
    else:
        load = work / limit if limit > 0 else (math.inf if work > 0 else 0.0)
    first_half = submit_h < horizon_h / 2
    never = first_half & np.isnan(start_h)
    return {
        "offered_load": load,
        "work_submitted_gpu_hours": work,
        "work_unfinished_gpu_hours": work_left_gpu_h(horizon_h, submit_h, start_h, end_h, run_h, gpus),
        "stale_share": float(never.sum() / first_half.sum()) if first_half.any() else 0.0,
    }


def cheapest_rent_usd_per_gpu_hour(plans: list[Plan], plan: Plan) -> float:
    """The price unfinished work is priced at: the cheapest on-demand or spot price among the
    scenario's options (hybrid bursts included), or, with none, the catalog's cheapest on-demand
    price of ``plan``'s GPU type (every tier). USD per GPU-hour."""
    rented = [p.price_per_gpu_hour for q in plans for p in pools(q) if not is_pool(p)]
    if rented:
        return float(min(rented))
    return float(min(tier["on_demand"] for tier in plan.gpu.price.values() if "on_demand" in tier))
