"""The results' public contract (DESIGN.md section 8): ``Results`` and the columns of its tables,
in the order they are written. ``tables.build`` fills them."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from costsim.results.costing import ALL_ITEMS
from costsim.scenario import Scenario

JOB_COLUMNS = [
    "option", "job_id", "job_class", "gpus", "submit_h", "start_h", "end_h", "queue_delay_h",
    "completed", "ran_on", "gpu_hours", "lost_gpu_hours", "restarts", "preemptions", "iterations", "cost_usd",
]
SUMMARY_COLUMNS = [
    "option", "kind", "pricing", "jobs_submitted", "jobs_completed", "jobs_finishable", "completion",
    "queue_delay_mean_h", "queue_delay_p50_h", "queue_delay_p95_h", "queue_delay_p99_h", "queued_gpu_hours",
    "jct_mean_h", "utilization", "iterations_per_day",
    "total_cost_usd", "cost_per_gpu_hour_used_usd", "cost_per_iteration_usd", "cost_per_completed_job_usd",
    "rl_jobs_cost_usd", "trace_jobs_cost_usd",
    "gpu_hours_used", "capacity_gpu_hours", "jobs_burst", "gpu_hours_burst", "idle_cost_usd", "npv_usd",
    "serving_gpu_hours", "serving_unmet_gpu_hours", "serving_unmet_rent_usd", "serving_cost_usd",
    "restarts", "preemptions", "lost_gpu_hours", "goodput", "lost_work_cost_usd", "interruption_delay_mean_h",
] + [f"cost_{item}_usd" for item in ALL_ITEMS] + [
    "cash_spent_usd", "book_value_usd", "offered_load", "work_submitted_gpu_hours", "work_unfinished_gpu_hours",
    "unfinished_rent_usd",
    "jobs_waiting", "jobs_stale", "stale_share",
    "rollout_gpu_hours", "rollout_lost_samples",
]
TIMESERIES_COLUMNS = [
    "option", "hour", "capacity_gpus", "busy_gpus", "queued_jobs", "queued_gpus", "rented_gpus", "serving_gpus",
    "cost_cum_usd",
]
COST_COLUMNS = ["option", "month", "item", "cost_usd"]
# capped_share: the share of the class's sampled responses (over its planned iterations) that
# hit the response-length cap, realized from the draws.
PHASE_COLUMNS = [
    "option", "job_class", "gpu_type", "network", "jobs", "iterations_planned",
    "rollout_s", "logprobs_s", "scoring_s", "update_s", "sync_s", "overhead_s", "iteration_s", "rollout_share",
    "straggler_share", "rollout_tokens_per_s_per_gpu", "capped_share",
    "iterations_done", "iterations_per_day", "cost_per_iteration_usd",
]


@dataclass(frozen=True)
class Results:
    """What ``costsim.simulate`` returns: the tables plus what produced them.

    ``cashflow``: per (option, month) capex, opex, rent (serving's included), the commitment owed
    and the book value credited at the horizon's end, cash, its cumulative and discounted value
    (``costsim.results.finance``). ``breakeven``: each owned, reserved,
    hybrid or fleet option against each on-demand or spot one.

    ``costs``: per (option, month, line item) USD; a fleet's items name the part they are paid on,
    ``item:part`` (``capital:own-256``, ``cloud:cloud-od``), summing per item to the summary's
    ``cost_<item>_usd`` (``plan.fleet.itemised_by_part``).

    ``phases``: mean seconds per iteration in each phase, per (option, RL job class), over the
    iterations planned for the class's jobs; ``iteration_s`` is the whole iteration (async
    overlaps rollout with training, so it is less than the sum of the phases there).

    ``to_target``: per (option, RL class with ``scaling``), the day its leading run reaches the
    target score, the option's cost by then, and the score and its marginal gain at the horizon
    (``costsim.results.to_target``); empty when no class has ``scaling``. ``reward_by_day``: per
    (option, RL class with ``scaling``) and whole day 0, 1, … plus the horizon, the leading run's
    compute (GPU-hours of its reference option, for the work it got through) and its score
    (``to_target.option_trajectories``); empty when none has it.
    """

    scenario: Scenario
    seed: int
    jobs: pd.DataFrame
    summary: pd.DataFrame
    timeseries: pd.DataFrame
    costs: pd.DataFrame
    phases: pd.DataFrame
    cashflow: pd.DataFrame
    breakeven: pd.DataFrame
    advice: pd.DataFrame
    to_target: pd.DataFrame
    reward_by_day: pd.DataFrame
