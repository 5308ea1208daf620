"""Records -> tidy pandas tables (DESIGN.md section 8), built once, after the runs.

Definitions (also in the README):
- ``start_h``: the job first holds GPUs; ``queue_delay_h = start_h − submit_h`` (cloud: waiting for
  quota plus provisioning). A job never started counts with its delay so far (horizon − submit):
  censored, so the statistics are lower bounds when jobs are left waiting.
- ``gpu_hours``: GPU-hours the job held within the horizon (whole nodes / whole instances).
- ``utilization``: held GPU-hours ÷ capacity GPU-hours (owned: installed GPUs from delivery;
  cloud: rented GPUs, so 1 by construction: you pay only for what you hold).
- ``cost_usd`` per job: cloud, the bill of its allocation; owned or reserved, its GPU-hours × the
  pool's cost within the horizon per held GPU-hour (idle capacity included). Σ job costs +
  ``serving_cost_usd`` + ``cost_commitment_owed_usd`` = ``total_cost_usd``
  (``costsim.results.job_costs``).
- ``cost_per_iteration_usd``: RL jobs' cost ÷ RL iterations done; ``cost_per_completed_job_usd``:
  all jobs' cost ÷ completed jobs; neither includes serving or the commitment owed, which (like
  trace jobs, ``trace_jobs_cost_usd``) have their own columns.
- whether an option keeps up, completion and waiting (``offered_load``, ``jobs_waiting``,
  ``jobs_stale``, ``stale_share``, ``jobs_finishable``, ``completion``, ``queued_gpu_hours``):
  ``costsim.results.backlog``. ``unfinished_rent_usd`` and ``serving_unmet_rent_usd``: unfinished
  work and unmet serving (GPU-hours) at ``backlog.cheapest_rent_usd_per_gpu_hour``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from costsim.engine.run import BASE, ROLLOUT, UsageRecord
from costsim.models.intervals import binned
from costsim.plan.class_pools import gpu_label
from costsim.plan.economics import EconomicsValues
from costsim.plan.fleet import Plan, burst_of, itemised_by_part
from costsim.plan.fleet import pools as plan_pools
from costsim.results import backlog, finance, to_target
from costsim.results.advice import checkpoint_advice
from costsim.results.contract import COST_COLUMNS, JOB_COLUMNS, PHASE_COLUMNS, SUMMARY_COLUMNS, Results
from costsim.results.costing import (
    bin_edges,
    capacity,
    held_gpus,
    held_intervals,
    option_costs,
    parts,
    serving_use,
)
from costsim.results.groups import would_hold
from costsim.results.job_costs import job_costs
from costsim.scenario import Scenario
from costsim.units import HOURS_PER_MONTH
from costsim.workload.plan import PHASES, WorkPlan, group_access


def _startup_h(plan: Plan, rec: UsageRecord, work: WorkPlan) -> np.ndarray:
    """The nominal startup each job pays before working: on rented capacity its instances'; an
    offloaded job waits for its rollout instances (``Offloads.first_h``)."""
    out = np.zeros(len(rec.part)) if work.offload is None else work.offload.first_h.copy()
    for part_id, part in enumerate(plan_pools(plan)):
        if (rental := part.rental) is not None:
            out[rec.part == part_id] = rental.startup_h
    return out


def _ran_on(plan: Plan, rec: UsageRecord, started: np.ndarray) -> np.ndarray:
    """Where each job ran: the option, or a hybrid's base or burst option; empty if never started."""
    # One string object per name, shared by the jobs (np.full / np.where with a str make one per job).
    names = [pool.name for pool in plan_pools(plan)]  # the option itself, or a hybrid's base and burst
    part = rec.part.astype(np.intp) if len(names) > 1 else np.zeros(len(started), dtype=np.intp)
    return np.array([*names, ""], dtype=object)[np.where(started, part, len(names))]


def _iterations(work: WorkPlan, rec: UsageRecord, started: np.ndarray, completed: np.ndarray, horizon_h: float) -> np.ndarray:
    """Iterations each job completed: all planned if it finished; if cut, those within the part of
    its planned run it reached by the horizon — its last checkpoint, plus the current attempt's work
    if it was working then (an interrupted job waiting to run again has no planned end)."""
    done = np.where(completed, work.jobs.iterations, 0)
    working = ~np.isnan(rec.end_h)
    reached = rec.pos_h + np.where(working, np.maximum(horizon_h - rec.work_from_h, 0.0), 0.0)
    for i in np.flatnonzero(started & ~completed & (work.jobs.iterations > 0)):
        done[i] = work.iterations_done(int(i), float(reached[i]))
    return done


def _per_job_sum(jobs, cumulative: np.ndarray) -> np.ndarray:
    """Per job, the sum of a per-iteration quantity over its iterations, from its prefix sums."""
    cum = np.concatenate([[0], cumulative])
    return cum[jobs.iter_start + jobs.iterations] - cum[jobs.iter_start]


def _phases(scenario: Scenario, plan: Plan, work: WorkPlan, jobs_df: pd.DataFrame) -> pd.DataFrame:
    jobs = work.jobs
    done = jobs_df["iterations"].to_numpy()
    cost = jobs_df["cost_usd"].to_numpy()
    # Responses cut at the length cap per job: prefix sums over the concatenated iterations.
    capped = _per_job_sum(jobs, np.cumsum(jobs.length_capped, dtype=np.int64))
    tokens = _per_job_sum(jobs, np.cumsum(jobs.length_sum))
    rows = []
    for k, cls in enumerate(scenario.workload.classes):
        idx = jobs.class_index == k
        planned = int(jobs.iterations[idx].sum())
        per_it = work.phase_s[idx].sum(axis=0) / planned if planned else np.full(len(PHASES), np.nan)
        means = dict(zip(PHASES, per_it, strict=True))
        rows.append({
            "option": plan.name, "job_class": cls.name, "gpu_type": gpu_label(plan, cls.gpu_type, cls), "network": plan.network,
            "jobs": int(idx.sum()), "iterations_planned": planned,
            **{f"{p}_s": means[p] for p in PHASES if p not in ("total", "straggler")}, "iteration_s": means["total"],
            "rollout_share": means["rollout"] / means["total"] if planned else np.nan,
            "straggler_share": means["straggler"] / means["rollout"] if planned else np.nan,
            "rollout_tokens_per_s_per_gpu": (float(tokens[idx].sum()) / (planned * means["rollout"] * cls.rollout_gpus)
                                             if planned else np.nan),
            "capped_share": float(capped[idx].sum()) / (planned * cls.rollout.samples) if planned else np.nan,
            "iterations_done": int(done[idx].sum()),
            "iterations_per_day": float(done[idx].sum()) / scenario.horizon_days,
            "cost_per_iteration_usd": float(cost[idx].sum() / done[idx].sum()) if done[idx].sum() else np.nan,
        })
    return pd.DataFrame(rows, columns=PHASE_COLUMNS)


def _lost_samples(work: WorkPlan, done: np.ndarray) -> float:
    """Samples offloaded rollouts lost to preemptions and generated again, in the iterations done
    (each job's expected loss over its planned run, in proportion to its iterations done)."""
    off = work.offload
    if off is None:
        return 0.0
    planned = work.jobs.iterations
    return float(np.divide(off.lost_samples * done, planned, out=np.zeros(len(done)), where=planned > 0).sum())


def _rollout_idle_h(work: WorkPlan, rec: UsageRecord) -> np.ndarray:
    """Per job, hours its rollout instances are held (billed) while it is not working: in each hold
    at home, its wait (the first wait, then its restart) past the instances' delivery, within the
    hold."""
    off = work.offload
    if off is None:
        return np.zeros(len(rec.overhead_h))
    k = np.flatnonzero((rec.alloc_part == BASE) & off.offloads[rec.alloc_job])
    job = rec.alloc_job[k]
    first = np.zeros(len(k), dtype=bool)
    first[np.unique(job, return_index=True)[1]] = True  # each job's first hold (rows are in time order)
    wait = np.where(first, off.first_h[job], work.restart_h[job])
    length = rec.alloc_end[k] - rec.alloc_start[k]
    idle = np.clip(np.minimum(wait, length) - off.delivery_h[job], 0.0, None)
    return np.bincount(job, weights=idle, minlength=len(rec.overhead_h))


def _work_gpus(work: WorkPlan, held: np.ndarray) -> np.ndarray:
    """GPUs the work of each job takes, for the work submitted and left unfinished: what it holds on
    the option, plus an offloaded job's rollout GPUs (whole instances), over its run without the
    rollout pool's preemptions (``Offloads.useful``)."""
    off = work.offload
    if off is None:
        return held
    return (held + off.instances * off.gpus_per_instance) * off.useful


def _rollout_gpus(work: WorkPlan) -> np.ndarray | float:
    """Per job, the rollout GPUs it holds on average on its rollout pool while it holds its GPUs on
    the option (0 unless it offloads): they idle through its losses and restarts too."""
    off = work.offload
    return 0.0 if off is None else off.instances * off.gpus_per_instance * off.share


def _writable(a: np.ndarray) -> np.ndarray:
    """``a``, or a copy where it is read-only: a sorted trace's jobs are the (shared, read-only)
    arrays ``read_trace`` keeps, and the tables are the user's to edit."""
    return a if a.flags.writeable else a.copy()


@dataclass(frozen=True)
class OptionTables:
    """One option's share of every table (``summary`` one row, as a dict of column -> value)."""

    jobs: pd.DataFrame
    summary: dict
    timeseries: pd.DataFrame
    costs: pd.DataFrame
    phases: pd.DataFrame
    cashflow: pd.DataFrame
    advice: pd.DataFrame


def _option_tables(scenario: Scenario, plan: Plan, econ: EconomicsValues, rec: UsageRecord, work: WorkPlan,
                   demand: np.ndarray | None, rent_usd_per_gpu_hour: float, finishable: np.ndarray, *,
                   access: list[np.ndarray] | None) -> OptionTables:
    jobs = work.jobs
    H = scenario.horizon_h
    serving = serving_use(plan, rec, demand, H)
    n = len(jobs)
    job, s, e, k = held_intervals(rec, H)
    started = ~np.isnan(rec.start_h) & (rec.start_h < H)
    # A hybrid's burst is its part 1, a fleet's its last; an option of one part has none.
    burst = (rec.part == len(plan_pools(plan)) - 1 if burst_of(plan) is not None else np.zeros(n, dtype=bool))
    completed = started & (rec.end_h <= H)
    gpu_hours = np.bincount(job, weights=(e - s) * held_gpus(rec, k), minlength=n)  # rollout instances included
    delay = np.where(started, rec.start_h - jobs.submit_h, H - jobs.submit_h)

    hourly = bin_edges(H, 1.0)
    cap, rented = capacity(plan, rec, H, hourly)
    busy = binned(s, e, held_gpus(rec, k), hourly)
    width = np.diff(hourly)
    served = sum(sv for sv, _ in serving) if serving else np.zeros(len(width))
    serving_rented = sum(rn for _, rn in serving) if serving else np.zeros(len(width))
    busy = busy + served * width
    cap = cap + serving_rented * width
    rented = rented + serving_rented * width
    q_end = np.where(started, rec.start_h, H)
    queued_jobs = binned(jobs.submit_h, q_end, np.ones(n), hourly)
    queued_gpus = binned(jobs.submit_h, q_end, work.home_gpus.astype(float), hourly)  # what they ask of the option
    cost_hourly = sum(option_costs(plan, econ, rec, jobs, H, hourly, serving).values())
    timeseries = pd.DataFrame({
        "option": plan.name,
        "hour": hourly[:-1],
        "capacity_gpus": cap / width,
        "busy_gpus": busy / width,
        "queued_jobs": queued_jobs / width,
        "queued_gpus": queued_gpus / width,
        "rented_gpus": rented / width,
        "serving_gpus": served,
        "cost_cum_usd": np.cumsum(cost_hourly),
    })

    monthly = bin_edges(H, HOURS_PER_MONTH)
    month_items = option_costs(plan, econ, rec, jobs, H, monthly, serving)
    listed = option_costs(plan, econ, rec, jobs, H, monthly, serving, by_part=True) if itemised_by_part(plan) \
        else month_items  # a fleet's items name their part (capital:own-256)
    costs = pd.DataFrame([
        {"option": plan.name, "month": m, "item": item, "cost_usd": float(v[m])}
        for item, v in listed.items() if np.any(v)
        for m in range(len(v))
    ], columns=COST_COLUMNS)
    totals = {item: float(v.sum()) for item, v in option_costs(plan, econ, rec, jobs, H, np.array([0.0, H]), serving).items()}
    total = sum(totals.values())

    # Interruptions: work lost since the last checkpoint, and hours held restarting or waiting for
    # a swapped node, are not useful; goodput is the useful share of the GPU-hours held.
    rollout_gpus = _rollout_gpus(work)
    lost_gpu_h = rec.lost_h * (rec.held_gpus + rollout_gpus)
    wasted_gpu_h = np.minimum(lost_gpu_h + rec.overhead_h * rec.held_gpus + _rollout_idle_h(work, rec) * rollout_gpus,
                              gpu_hours)
    serving_h = float((served * width).sum())
    used = float(gpu_hours.sum()) + serving_h
    capacity_h = float(cap.sum())
    job_cost, serving_cost, idle_cost = job_costs(plan, econ, rec, work, H, serving=serving, totals=totals,
                                                  gpu_hours=gpu_hours)
    owed = totals["commitment_owed"]  # buys capacity after the horizon: in the total, in no job's cost
    rl = jobs.class_index >= 0  # RL jobs; trace jobs have their own cost column
    jobs_df = pd.DataFrame({
        "option": plan.name,
        "job_id": _writable(jobs.job_id),
        "job_class": _writable(jobs.job_class),
        "gpus": _writable(jobs.gpus),
        "submit_h": _writable(jobs.submit_h),
        "start_h": np.where(started, rec.start_h, np.nan),
        "end_h": np.where(completed, rec.end_h, np.nan),
        "queue_delay_h": delay,
        "completed": completed,
        "ran_on": _ran_on(plan, rec, started),
        "gpu_hours": gpu_hours,
        "lost_gpu_hours": lost_gpu_h,
        "restarts": rec.restarts,
        "preemptions": rec.preemptions,
        "iterations": _iterations(work, rec, started, completed, H),
        "cost_usd": job_cost,
    }, columns=JOB_COLUMNS, copy=False)  # the arrays are this table's own: no second copy of a million rows

    counted = jobs.submit_h >= scenario.warmup_h
    d = delay[counted]
    jct = (rec.end_h - jobs.submit_h)[completed & counted]
    rl_iterations = float(jobs_df["iterations"][rl].sum())  # done within the horizon
    summary: dict[str, Any] = {
        "option": plan.name,
        "kind": plan.kind,
        "pricing": plan.pricing,
        "jobs_submitted": n,
        "jobs_completed": int(completed.sum()),
        "jobs_finishable": int(finishable.sum()),
        "completion": backlog.completion(completed, finishable),
        "queue_delay_mean_h": float(d.mean()) if d.size else np.nan,
        "queue_delay_p50_h": float(np.percentile(d, 50)) if d.size else np.nan,
        "queue_delay_p95_h": float(np.percentile(d, 95)) if d.size else np.nan,
        "queue_delay_p99_h": float(np.percentile(d, 99)) if d.size else np.nan,
        "queued_gpu_hours": backlog.queued_gpu_hours(jobs.submit_h, rec.start_h, started, work.home_gpus, H),
        "jct_mean_h": float(jct.mean()) if jct.size else np.nan,
        "utilization": used / capacity_h if capacity_h > 0 else np.nan,
        "iterations_per_day": rl_iterations / scenario.horizon_days,
        "total_cost_usd": total,
        "cost_per_gpu_hour_used_usd": (total - owed) / used if used > 0 else np.nan,
        "cost_per_iteration_usd": float(job_cost[rl].sum()) / rl_iterations if rl_iterations > 0 else np.nan,
        "cost_per_completed_job_usd": float(job_cost.sum()) / completed.sum() if completed.any() else np.nan,
        "rl_jobs_cost_usd": float(job_cost[rl].sum()),
        "trace_jobs_cost_usd": float(job_cost[~rl].sum()),
        "gpu_hours_used": used,
        "capacity_gpu_hours": capacity_h,
        "jobs_burst": int((started & burst).sum()),
        "gpu_hours_burst": float(gpu_hours[burst].sum()),
        "idle_cost_usd": idle_cost,
        "serving_gpu_hours": serving_h,
        "serving_unmet_gpu_hours": float(((demand - served) * width).sum()) if demand is not None else 0.0,
        "serving_cost_usd": serving_cost,
        "restarts": int(rec.restarts.sum()),
        "preemptions": int(rec.preemptions.sum()),
        "lost_gpu_hours": float(lost_gpu_h.sum()),
        "goodput": 1.0 - float(wasted_gpu_h.sum()) / float(gpu_hours.sum()) if gpu_hours.sum() > 0 else np.nan,
        "lost_work_cost_usd": float(np.divide(job_cost * wasted_gpu_h, gpu_hours, out=np.zeros(n),
                                              where=gpu_hours > 0).sum()),
        "interruption_delay_mean_h": float((rec.end_h - rec.start_h - work.run_h - _startup_h(plan, rec, work))
                                           [completed & counted].mean()) if (completed & counted).any() else np.nan,
        **{f"cost_{item}_usd": v for item, v in totals.items()},
    }
    cash = finance.cashflow(plan, econ, month_items, H)
    summary["npv_usd"] = float(cash["discounted_usd"].sum())
    # Cash: what leaves the bank within the horizon, capex when paid; the hardware still owned at
    # its end is its book value, shown beside it (the cash flow table credits it in the last month).
    summary["cash_spent_usd"] = float(cash[["capex_usd", "opex_usd", "rent_usd", "commitment_owed_usd"]].to_numpy().sum())
    summary["book_value_usd"] = float(cash["book_value_usd"].sum())
    held = np.where(np.asarray(rec.held_gpus) > 0, rec.held_gpus, would_hold(plan, rec, work.home_gpus))
    # Serving's real use of the option's own capacity, within the window the load is measured in.
    pool_served = sum(sv for (part, _), (sv, _) in zip(parts(plan, rec), serving, strict=True)
                      if part.is_pool) if serving else np.zeros(len(width))
    serving_window_h = backlog.gpu_hours_within(hourly, pool_served, plan.delivery_h, H)
    summary.update(backlog.keep_up_measures(plan, rec, H, jobs.submit_h, started, completed, work.run_h, held,
                                            serving_window_h, _work_gpus(work, held),
                                            access))
    summary["unfinished_rent_usd"] = summary["work_unfinished_gpu_hours"] * rent_usd_per_gpu_hour
    summary["serving_unmet_rent_usd"] = summary["serving_unmet_gpu_hours"] * rent_usd_per_gpu_hour
    rollout = rec.alloc_part[k] >= ROLLOUT  # rented rollout instances beside the holds at home
    summary["rollout_gpu_hours"] = float(((e - s) * held_gpus(rec, k))[rollout].sum())
    summary["rollout_lost_samples"] = _lost_samples(work, jobs_df["iterations"].to_numpy())
    return OptionTables(jobs=jobs_df, summary=summary, timeseries=timeseries, costs=costs,
                        phases=_phases(scenario, plan, work, jobs_df), cashflow=cash,
                        advice=checkpoint_advice(scenario, plan, work))


def build(scenario: Scenario, seed: int, plans: list[Plan], econ: EconomicsValues, records: list[UsageRecord],
          work: list[WorkPlan], demand: np.ndarray | None = None, *,
          access: Sequence[list[np.ndarray] | None] | None = None) -> Results:
    """All tables for all options, in option order. ``demand``: serving GPUs per hour, if any.
    ``access``: per option, the node groups each job may use (``workload.plan.group_access``), as
    the runs were given them; None: worked out here."""
    if access is None:
        access = [group_access(scenario, w.jobs, p) for p, w in zip(plans, work, strict=True)]
    if demand is not None:
        demand = demand[: len(bin_edges(scenario.horizon_h, 1.0)) - 1]
    # A job is held against an option only if it could finish somewhere: the same jobs, in the same
    # order, in every option's work plan, so its fastest run is the least over the options.
    fastest = np.min([w.run_h + _startup_h(p, r, w) for p, r, w in zip(plans, records, work, strict=True)], axis=0)
    can_finish = backlog.finishable(work[0].jobs.submit_h, fastest, scenario.horizon_h)
    tables = [_option_tables(scenario, p, econ, r, w, demand, backlog.cheapest_rent_usd_per_gpu_hour(plans, p, scenario.horizon_h),
                             can_finish, access=a)
              for p, r, w, a in zip(plans, records, work, access, strict=True)]
    refs = to_target.references(scenario, plans, work)  # per scaling class: its curve's compute per job
    summary = pd.DataFrame([t.summary for t in tables], columns=SUMMARY_COLUMNS)
    cash = pd.concat([t.cashflow for t in tables], ignore_index=True)
    return Results(
        scenario=scenario,
        seed=seed,
        jobs=pd.concat([t.jobs for t in tables], ignore_index=True),
        summary=summary,
        timeseries=pd.concat([t.timeseries for t in tables], ignore_index=True),
        costs=pd.concat([t.costs for t in tables], ignore_index=True),
        phases=pd.concat([t.phases for t in tables], ignore_index=True),
        cashflow=cash,
        breakeven=finance.breakeven(plans, summary, cash, scenario.horizon_h, econ.depreciation_years),
        advice=pd.concat([t.advice for t in tables], ignore_index=True),
        to_target=to_target.table([row for p, r, w, t in zip(plans, records, work, tables, strict=True)
                                   for row in to_target.option_rows(scenario, p.name, r, w, t.timeseries, refs)]),
        reward_by_day=to_target.trajectory_table([f for p, r, w in zip(plans, records, work, strict=True)
                                                  for f in to_target.option_trajectories(scenario, p.name, r, w,
                                                                                         refs)]),
    )
