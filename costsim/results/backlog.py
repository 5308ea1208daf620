"""Whether an option keeps up with its work: its offered load, the work it left undone, the jobs
its queue left waiting, and the completion and waiting the decision layer reads.

The gate (``costsim.decisions.fair.why_not``) reads only these summary columns, so a sweep, which
keeps only summary rows, can apply it. The window is ``[t0, H]``: ``t0`` the option's delivery (an
owned cluster's lead time, or a hybrid's owned base's; 0 for rented capacity), ``H`` the horizon.

- ``offered_load``: the work that falls within the window ÷ the capacity within it, in GPU-hours.
  Work: every job submitted within the horizon — the backlog built before delivery included, since
  it too must be served from ``t0`` on — at its planned run on this option (checkpoint writes
  included) times the GPUs it holds or would hold (whole nodes or instances), each clipped to what
  the window can hold of it: ``min(run, H − max(submit, t0)) × GPUs``, so a job longer than the
  horizon counts only the part that could run in it. Capacity: the installed or reserved GPUs over
  the window (a quota × the window), less serving's real use of them within it (the GPU-hours
  serving was served on the option's pools in ``[t0, H]``; serving is unmet before delivery, so
  all of it falls there). At 1 or more the work does not fit: if jobs are still waiting at the end,
  the queue cannot drain. NaN for capacity without a limit (on-demand or spot with no
  ``max_gpus``): it can always rent more; inf when the window holds no capacity and there is work.
- ``jobs_waiting``: jobs submitted within the horizon that had never started by its end (the queue
  at the end). A job interrupted (a failure or a preemption) and waiting to run again is not
  counted: it got its turn, and the capacity it waits for is the option's, not a backlog's.
  Zero means there is no queue, and the option keeps up whatever the load arithmetic says.
- ``jobs_stale``, ``stale_share``: jobs waiting at the end that have waited far longer than this
  option makes its jobs wait, and their share of the jobs submitted. A job never started is stale
  when its wait so far, ``H − submit``, exceeds all of: ``STALE_FACTOR`` × the p95 queue delay of
  the jobs that did start (a queue that drains has a light tail: in M/M/c with most jobs waiting,
  a wait beyond 4 × p95 has probability about 0.05⁴ ≈ 6·10⁻⁶); the job's own planned run (a wait shorter than
  the run is a slowdown under 2, ordinary for a long job queued behind long jobs); and
  ``STALE_FLOOR_H`` (a day: waits shorter than that are not evidence of anything). It is counted
  wherever in the horizon the job arrived, so a FIFO head blocked late in a trace that arrives late
  is caught, while jobs that arrived an hour before the end are not held against the option.
  Interrupted jobs waiting to resume are never stale (as above).
- ``work_unfinished_gpu_hours``: GPU-hours of planned work submitted and not done at the horizon's
  end: a job not started, all of its planned run; a started one, its planned run less the part it
  reached (its last checkpoint, plus the current attempt's work if it is working at the end — as
  ``_iterations`` counts it; a job interrupted and waiting to run again has only its checkpoint).
- ``jobs_finishable``, ``completion``: a job is finishable when ``submit + its fastest planned run``
  (the least over the scenario's options of its run there, startup included) ≤ ``H``: it could have
  finished on capacity available at once. ``completion`` = completed finishable jobs ÷ finishable
  jobs, the same denominator for every option, so a job submitted too late to finish anywhere is
  held against none; 1 when no job is finishable (nothing that could be done was left undone).
- ``queued_gpu_hours``: GPU-hours of waiting, Σ over jobs of (first start, or the horizon if never
  started, − submit) × the GPUs it asks of the option (``home_gpus``): the integral of the
  timeseries' ``queued_gpus``. Only the wait before a job first starts counts; waits to resume
  after an interruption are in ``interruption_delay_mean_h`` and ``lost_gpu_hours``, not here.

``costsim.decisions.fair`` turns these into the "cannot keep up" flag, and prices the unfinished
work at ``cheapest_rent_usd_per_gpu_hour`` (``unfinished_rent_usd``) so options that did
different amounts of work are compared on the same work.
"""

from __future__ import annotations

import math

import numpy as np

from costsim.engine.run import UsageRecord
from costsim.models import trend
from costsim.plan.fleet import Plan, pools
from costsim.results.costing import parts, rollout_parts

STALE_FACTOR = 4.0  # a job never started is stale past this many times the option's p95 delay ...
STALE_FLOOR_H = 24.0  # ... and past this many hours (and past its own planned run)


def capacity_limit_gpu_h(plan: Plan, rec: UsageRecord, start_h: float, end_h: float) -> float:
    """The most GPU-hours the option can hold within [start_h, end_h]; inf without a limit."""
    return float(sum(pool_capacity_gpu_h(plan, rec, start_h, end_h)))


def pool_capacity_gpu_h(plan: Plan, rec: UsageRecord, start_h: float, end_h: float) -> list[float]:
    """Per pool of the option (``parts``, rollout pools left out: a node group each of a pool of
    node groups), the most GPU-hours it can hold within [start_h, end_h]; inf without a limit."""
    out = []
    own = parts(plan, rec)
    for part, sub in own[:len(own) - rollout_parts(plan)]:
        if part.is_pool:  # owned, reserved, a hybrid's base, a fleet's pools: its GPUs as installed over time
            t = np.clip(np.append(sub.capacity_change_h, end_h), start_h, end_h)
            out.append(float((np.diff(t) * np.asarray(sub.capacity_gpus, dtype=float)).sum()))
            continue
        quota = part.job_limit  # rented per use: its quota caps the GPUs held at once, as a job's
        out.append(math.inf if quota is None else quota.gpus * (end_h - start_h))
    return out


def gpu_hours_within(edges: np.ndarray, gpus: np.ndarray | float, start_h: float, end_h: float) -> float:
    """GPU-hours of a level of ``gpus`` GPUs per bin (bin i is [edges[i], edges[i+1]], hours; one
    number: the same in every bin) that fall within [start_h, end_h]."""
    edges = np.asarray(edges, dtype=float)
    overlap = np.clip(edges[1:], start_h, end_h) - np.clip(edges[:-1], start_h, end_h)
    return float((overlap * np.asarray(gpus, dtype=float)).sum())


def window_work_gpu_h(submit_h: np.ndarray, run_h: np.ndarray, gpus: np.ndarray, start_h: float,
                      horizon_h: float) -> np.ndarray:
    """Per job, GPU-hours of its planned run the window [start_h, horizon_h] can hold:
    ``min(run, horizon − max(submit, start)) × gpus`` (0 for a job submitted at or past the end)."""
    room = np.maximum(horizon_h - np.maximum(submit_h, start_h), 0.0)
    return np.minimum(run_h, room) * gpus


def offered_load(plan: Plan, rec: UsageRecord, horizon_h: float, submit_h: np.ndarray, run_h: np.ndarray,
                 gpus: np.ndarray, serving_gpu_h: float, access: list[np.ndarray] | None = None) -> float:
    """The summary's ``offered_load`` (see the module); ``serving_gpu_h``: GPU-hours serving was
    served on the option's pools within [delivery, horizon]; ``access``: on a pool of node groups,
    per group, per job, whether the job may run there (``workload.plan.group_access``)."""
    t0 = min(plan.delivery_h, horizon_h)
    if access is not None:  # serving never runs beside node groups
        return confined_load(window_work_gpu_h(submit_h, run_h, gpus, t0, horizon_h), run_h * gpus,
                             np.array(access, dtype=bool), pool_capacity_gpu_h(plan, rec, t0, horizon_h))
    limit = capacity_limit_gpu_h(plan, rec, t0, horizon_h) - serving_gpu_h
    if math.isinf(limit):  # a rented pool without a limit: no work to weigh
        return math.nan
    work = window_work_gpu_h(submit_h, run_h, gpus, t0, horizon_h)
    return _load(float(work.sum()), limit, float((run_h * gpus).sum()))


def _load(work_gpu_h: float, limit_gpu_h: float, any_work: float) -> float:
    """Work ÷ capacity; inf for work and no capacity (within the horizon at all), 0 for neither."""
    if limit_gpu_h > 0:
        return work_gpu_h / limit_gpu_h
    return math.inf if any_work > 0 else 0.0


def confined_load(work_gpu_h: np.ndarray, planned_gpu_h: np.ndarray, access: np.ndarray,
                  capacity_gpu_h: list[float]) -> float:
    """The offered load of a pool of node groups (GPU-hours per job: ``work_gpu_h`` within the
    window, ``planned_gpu_h`` in all; ``access``: groups × jobs; ``capacity_gpu_h`` per group):
    over each set of groups some job may use, the work of the jobs confined to it (every group
    they may use is in it) ÷ the set's capacity, at its most. A backlog of jobs pinned to one GPU
    type is so measured against that type's groups, not diluted by GPUs it cannot use, and the
    set of every group gives the pool's load as a whole. The pool keeps up only if every such set
    does. A lower bound on what it needs (a union of sets could be loaded more than each), exact
    when the sets are nested or apart, as GPU types and the groups that hold a model are."""
    cap = np.asarray(capacity_gpu_h, dtype=float)
    loads = []
    for s in (np.unique(access.T, axis=0) if access.shape[1] else ()):
        confined = ~(access & ~s[:, None]).any(axis=0)
        loads.append(_load(float(work_gpu_h[confined].sum()), float(cap[s].sum()), float(planned_gpu_h[confined].sum())))
    return max(loads, default=0.0)


def stale_jobs(submit_h: np.ndarray, start_h: np.ndarray, started: np.ndarray, run_h: np.ndarray,
               horizon_h: float) -> np.ndarray:
    """Per job, whether it is stale: never started (interrupted jobs waiting to resume have started)
    and waiting, at the horizon, longer than ``STALE_FACTOR`` × the p95 delay of the jobs that did
    start, its own planned run and ``STALE_FLOOR_H`` (see the module for why)."""
    delays = (start_h - submit_h)[started]
    p95 = float(np.percentile(delays, 95)) if delays.size else 0.0
    limit = np.maximum(np.maximum(STALE_FACTOR * p95, STALE_FLOOR_H), run_h)
    return ~started & (submit_h < horizon_h) & (horizon_h - submit_h > limit)


def work_left_gpu_h(rec: UsageRecord, horizon_h: float, started: np.ndarray, completed: np.ndarray,
                    run_h: np.ndarray, gpus: np.ndarray) -> np.ndarray:
    """Per job, GPU-hours of its planned run not done at the horizon's end (see the module)."""
    working = ~np.isnan(rec.end_h)  # the current attempt has a planned end: it is running
    reached = np.asarray(rec.pos_h) + np.where(working, np.maximum(horizon_h - np.asarray(rec.work_from_h), 0.0), 0.0)
    left = np.where(started, np.clip(run_h - reached, 0.0, run_h), run_h)
    return np.where(completed, 0.0, left) * gpus


def keep_up_measures(plan: Plan, rec: UsageRecord, horizon_h: float, submit_h: np.ndarray, started: np.ndarray,
                     completed: np.ndarray, run_h: np.ndarray, gpus: np.ndarray, serving_gpu_h: float,
                     work_gpus: np.ndarray | None = None, access: list[np.ndarray] | None = None) -> dict[str, float]:
    """The summary's ``offered_load``, ``work_submitted_gpu_hours``, ``work_unfinished_gpu_hours``,
    ``jobs_waiting``, ``jobs_stale`` and ``stale_share`` (see the module). ``started``: the job
    first held GPUs before the horizon; ``completed``: it ended by then; ``gpus``: what each job
    holds or would hold (``held_gpus`` of its home pool), against the option's capacity; ``serving_gpu_h``:
    GPU-hours serving was served on the option's pools within [delivery, horizon]; ``work_gpus``:
    GPUs × share of its run its work takes, where that differs (an offloaded job's rollout GPUs
    too; default ``gpus``); ``access``: a pool of node groups' (``offered_load``)."""
    work_gpus = gpus if work_gpus is None else work_gpus
    waiting = ~started & (submit_h < horizon_h)
    stale = stale_jobs(submit_h, np.asarray(rec.start_h), started, run_h, horizon_h)
    n = len(submit_h)
    return {
        "offered_load": offered_load(plan, rec, horizon_h, submit_h, run_h, gpus, serving_gpu_h, access),
        "work_submitted_gpu_hours": float((run_h * work_gpus).sum()),
        "work_unfinished_gpu_hours": float(work_left_gpu_h(rec, horizon_h, started, completed, run_h, work_gpus).sum()),
        "jobs_waiting": int(waiting.sum()),
        "jobs_stale": int(stale.sum()),
        "stale_share": float(stale.sum() / n) if n else 0.0,
    }


def finishable(submit_h: np.ndarray, fastest_run_h: np.ndarray, horizon_h: float) -> np.ndarray:
    """Per job, whether it could finish within the horizon on capacity available at once:
    ``submit + fastest_run ≤ horizon`` (``fastest_run_h``: the least over the scenario's options of
    its planned run there, startup included, hours)."""
    return submit_h + fastest_run_h <= horizon_h


def completion(completed: np.ndarray, can_finish: np.ndarray) -> float:
    """Completed finishable jobs ÷ finishable jobs; 1 when none is finishable (see the module)."""
    k = int(can_finish.sum())
    return float((completed & can_finish).sum()) / k if k else 1.0


def queued_gpu_hours(submit_h: np.ndarray, start_h: np.ndarray, started: np.ndarray, home_gpus: np.ndarray,
                     horizon_h: float) -> float:
    """GPU-hours of waiting before the first start (see the module): Σ (first start, or the
    horizon, − submit) × the GPUs each job asks of the option, within the horizon."""
    end = np.where(started, start_h, horizon_h)
    return float((np.clip(end - submit_h, 0.0, None) * home_gpus).sum())


def cheapest_rent_usd_per_gpu_hour(plans: list[Plan], plan: Plan, horizon_h: float = 0.0) -> float:
    """The price unfinished work (and unmet serving) is priced at: the cheapest on-demand or spot
    price among the scenario's options (hybrid bursts included) at the horizon's end (each under
    its ``price_change_per_year``: unfinished work is done after it), or, with none, the catalog's
    cheapest on-demand price of ``plan``'s GPU types (every tier; a pool of node groups: the
    cheapest of its groups' types). USD per GPU-hour."""
    rented = [r.price_per_gpu_hour * trend.factor(horizon_h, trend.per_hour(r.price_change_per_year))
              for q in plans for p in pools(q) if (r := p.rental) is not None]
    if rented:
        return float(min(rented))
    return float(min(tier["on_demand"] for p in pools(plan) for tier in p.gpu.price.values() if "on_demand" in tier))
