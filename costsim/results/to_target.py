"""Time and cost to a target score: the ``to_target`` table, from the GPU-hours each
RL job of a class with ``scaling`` actually received on an option.

The curve applies per job: each job of the class is one training run that starts at R0 and climbs
its class's curve with the compute it receives (a ``count: 1`` class is the flagship run). The
class reaches the target when its first job does, so the class's reward on a day is that of its
leading run, R(max over jobs of their compute by then).

A job's compute by time t, in GPU-hours, is the share of its planned run (work and checkpoint
writes) it got through × the compute of that whole run on the reference option, the scenario's
first owned or cloud option or the class's ``scaling.reference_option`` (its GPUs × its run
there: ``reference_gpu_hours``). Work lost to
failures and preemptions and hours spent restarting, provisioning or waiting do not count; and a
GPU-hour is the reference's: an option on slower GPUs or a slower fabric gets through the same run,
so the same compute, later (a curve is a recipe's score against its compute on one system; its
iterations, not the hours another system takes for them, are what it learns from). That total is spread
over the hours the job held GPUs in proportion to the GPUs held (``held_intervals``): exact at
every job's end and at the horizon, and at every moment for a job never interrupted that starts
working at once; an interrupted job's losses are spread over its held time rather than placed at
the interruptions, and a start-up wait (cloud startup, an offloaded job's wait for its rollout
instances) is spread over its hold rather than placed first, which puts its reach earlier by at
most that wait.

An offloaded job (docs/rollout-offload.md) holds only its training GPUs at home; its compute is
spread over its holds at home (on the reference option itself: all its GPUs over its run without
the rollout pool's preemptions, ``Offloads.useful``: their stretch is time lost, not compute).

Not reached within the horizon: the projected day extrapolates each job's pace over the last 30
days (``PROJECTION_DAYS``; the whole horizon if shorter; from its first hold if that is later); a
job whose planned run is too short for the target, or that got no compute in that window, never
reaches it (``inf``); NaN when no job that could reach it has started (a cluster not yet
delivered, a queue): when it will start is not known. ``cost_usd``: the option's cumulative cost (``timeseries.cost_cum_usd``, all of its
jobs, serving and idle capacity) at the moment the target is reached, interpolated within the
hour; NaN when not reached.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from costsim.engine.run import ROLLOUT
from costsim.models import scaling
from costsim.plan.fleet import pools
from costsim.results.costing import held_intervals
from costsim.units import HOURS_PER_DAY

TO_TARGET_COLUMNS = [
    "option", "job_class", "target", "needed_gpu_hours", "reached", "day", "projected_day", "cost_usd",
    "gpu_hours", "reward_at_horizon", "marginal_gain_per_1000_gpu_h", "distance_to_asymptote", "reference_option",
]
REWARD_BY_DAY_COLUMNS = ["option", "job_class", "day", "gpu_hours", "reward"]
PROJECTION_DAYS = 30.0


@dataclass(frozen=True)
class Compute:
    """The useful compute a class's jobs received on one option, as GPU-hours (of the reference
    option) per hour over held intervals. ``job``: the job (0 … n_jobs − 1) of each interval
    [``start_h``, ``end_h``), which gives it ``rate`` GPU-hours per hour; ``planned_gpu_h``: per job,
    the compute of its whole planned run (``reference_gpu_hours``)."""

    job: np.ndarray
    start_h: np.ndarray
    end_h: np.ndarray
    rate: np.ndarray
    planned_gpu_h: np.ndarray

    @property
    def n_jobs(self) -> int:
        return len(self.planned_gpu_h)


def compute_at(c: Compute, t_h) -> np.ndarray:
    """Per job, the GPU-hours received by hour ``t_h`` (one hour, or one per interval)."""
    done = c.rate * np.clip(t_h - c.start_h, 0.0, c.end_h - c.start_h)
    return np.bincount(c.job, weights=done, minlength=c.n_jobs)


def reach_h(c: Compute, needed_gpu_h: float) -> np.ndarray:
    """Per job, the hour its compute first reaches ``needed_gpu_h`` GPU-hours; inf if it never
    does within its intervals. Intervals of one job do not overlap (one allocation at a time)."""
    order = np.lexsort((c.start_h, c.job))
    job, s, e, r = c.job[order], c.start_h[order], c.end_h[order], c.rate[order]
    gained = r * (e - s)
    cum = np.cumsum(gained)
    first_of_job = np.r_[True, job[1:] != job[:-1]]
    offset = np.maximum.accumulate(np.where(first_of_job, cum - gained, 0.0))  # compute before the job's first interval
    after = cum - offset  # the job's compute at each interval's end
    hit = np.flatnonzero(after >= needed_gpu_h * (1 - 1e-12))
    out = np.full(c.n_jobs, math.inf)
    if not len(hit):
        return out
    with np.errstate(over="ignore"):  # a subnormal rate: the quotient overflows, and the clip below bounds it
        at = s[hit] + np.divide(needed_gpu_h - (after[hit] - gained[hit]), r[hit], out=np.zeros(len(hit)), where=r[hit] > 0)
    # within the interval that reaches it (the tolerance above can put the quotient past its end)
    np.minimum.at(out, job[hit], np.clip(at, s[hit], e[hit]))  # a job's first hit is its earliest
    return out


def projected_h(c: Compute, needed_gpu_h: float, horizon_h: float, window_h: float) -> float:
    """The hour the first job would reach ``needed_gpu_h`` after the horizon at its pace over the
    last ``window_h`` hours (from its first hold, if later: a run that started within the window is
    not slowed by the days before it); inf when no job whose planned run is long enough is
    progressing; NaN when none of those has started (when it will is not known)."""
    now = compute_at(c, horizon_h)
    first = np.full(c.n_jobs, math.inf)
    np.minimum.at(first, c.job, c.start_h)
    since = np.maximum(horizon_h - min(window_h, horizon_h), first)
    span = horizon_h - since
    gained = now - compute_at(c, since[c.job])  # each interval at its job's window start
    rate = np.divide(gained, span, out=np.zeros(c.n_jobs), where=span > 0)
    long_enough = c.planned_gpu_h >= needed_gpu_h * (1 - 1e-9)
    can = long_enough & (rate > 0)
    if not can.any():
        return math.nan if long_enough.any() and not np.isfinite(first[long_enough]).any() else math.inf
    with np.errstate(over="ignore"):  # a vanishing rate: inf, never
        return float(horizon_h + np.min(np.maximum(needed_gpu_h - now[can], 0.0) / rate[can]))


def cost_at(hour_start: np.ndarray, cost_cum_usd: np.ndarray, horizon_h: float, t_h: float) -> float:
    """The option's cumulative cost at ``t_h``: linear within each hour of the timeseries (the last
    hour also holds lumps owed at the horizon, such as a reservation's remaining commitment)."""
    edges = np.append(hour_start, horizon_h)
    return float(np.interp(t_h, edges, np.concatenate([[0.0], cost_cum_usd])))


def trajectory(c: Compute, curve: scaling.Curve, horizon_h: float) -> pd.DataFrame:
    """Per day from 0 to the horizon: the leading run's GPU-hours and its score R (the reward
    against calendar day of the ``to_target`` view)."""
    days = np.append(np.arange(0.0, horizon_h / HOURS_PER_DAY, 1.0), horizon_h / HOURS_PER_DAY)
    days = np.unique(days)
    lead = np.array([compute_at(c, d * HOURS_PER_DAY).max(initial=0.0) for d in days])
    return pd.DataFrame({"day": days, "gpu_hours": lead,
                         "reward": scaling.reward(lead, curve.A, curve.B, curve.C_mid, curve.R0)})


def reference_gpu_hours(plans, works, option: str | None = None) -> tuple[str, np.ndarray]:
    """The reference option (``option``, else the scenario's first owned or cloud option) and, per
    job, the compute of its whole planned run in the curve's units: GPU-hours of the run there (all
    its GPUs, without a rollout pool's preemption stretch). A faster option gets through the same
    run, so the same compute, sooner."""
    plan, ref = next((p, w) for p, w in zip(plans, works, strict=True)
                     if (p.name == option if option is not None else len(pools(p)) == 1))
    useful = ref.offload.useful if ref.offload is not None else 1.0
    return plan.name, ref.run_h * useful * ref.jobs.gpus


def references(scenario, plans, works) -> dict[int, tuple[str, np.ndarray]]:
    """Per RL class with ``scaling`` (by index): its reference option and per-job compute."""
    return {k: reference_gpu_hours(plans, works, cls.scaling.reference_option)
            for k, cls in enumerate(scenario.workload.classes) if cls.scaling is not None}


def class_compute(rec, work, class_index: int, horizon_h: float, reference_gpu_h: np.ndarray) -> Compute:
    """The ``Compute`` of class ``class_index``'s jobs from an option's usage record and work plan
    (see the module docstring for what counts); ``reference_gpu_h``: per job, its whole run's compute
    (``reference_gpu_hours``)."""
    jobs = work.jobs
    idx = np.flatnonzero(jobs.class_index == class_index)
    local = np.full(len(jobs), -1, dtype=np.int64)
    local[idx] = np.arange(len(idx))
    job, s, e, k = held_intervals(rec, horizon_h)
    # An offloaded job's rollout instances (part ROLLOUT) run beside its hold at home, not after
    # it: its compute is spread over its home holds.
    mine = (local[job] >= 0) & (rec.alloc_part[k] < ROLLOUT)
    job, s, e, held = local[job[mine]], s[mine], e[mine], rec.alloc_held[k[mine]].astype(float)
    held_gpu_h = np.bincount(job, weights=(e - s) * held, minlength=len(idx))
    run_h = work.run_h[idx]
    planned = reference_gpu_h[idx]
    completed = ~np.isnan(rec.start_h[idx]) & (rec.end_h[idx] <= horizon_h)
    working = ~np.isnan(rec.end_h[idx])  # within an attempt (as ``_iterations`` reads the record)
    reached = rec.pos_h[idx] + np.where(working, np.maximum(horizon_h - rec.work_from_h[idx], 0.0), 0.0)
    done = np.where(completed, 1.0, np.minimum(reached, run_h) / run_h)  # share of its planned run got through
    useful = done * planned
    per_held = np.divide(useful, held_gpu_h, out=np.zeros(len(idx)), where=held_gpu_h > 0)
    return Compute(job, s, e, held * per_held[job], planned)


def class_row(option: str, job_class: str, c: Compute, curve: scaling.Curve, target: float,
              horizon_h: float, hour_start: np.ndarray, cost_cum_usd: np.ndarray) -> dict:
    """One row of ``to_target`` (columns ``TO_TARGET_COLUMNS``) for a class on an option."""
    params = (curve.A, curve.B, curve.C_mid, curve.R0)
    needed = scaling.compute_for(target, *params)
    first = float(reach_h(c, needed).min(initial=math.inf)) if math.isfinite(needed) else math.inf
    reached = first <= horizon_h
    projected = first if reached else (projected_h(c, needed, horizon_h, PROJECTION_DAYS * HOURS_PER_DAY)
                                       if math.isfinite(needed) else math.inf)
    lead = float(compute_at(c, horizon_h).max(initial=0.0))
    return {
        "option": option, "job_class": job_class, "target": target, "needed_gpu_hours": needed,
        "reached": bool(reached),
        "day": first / HOURS_PER_DAY if reached else math.nan,
        "projected_day": projected / HOURS_PER_DAY,
        "cost_usd": cost_at(hour_start, cost_cum_usd, horizon_h, first) if reached else math.nan,
        "gpu_hours": lead,
        "reward_at_horizon": scaling.reward(lead, *params),
        "marginal_gain_per_1000_gpu_h": scaling.marginal_gain(lead, *params),
        "distance_to_asymptote": scaling.distance_to_asymptote(lead, *params),
    }


def option_rows(scenario, option: str, rec, work, timeseries: pd.DataFrame,
                refs: dict[int, tuple[str, np.ndarray]]) -> list[dict]:
    """The ``to_target`` rows of one option: one per RL class with ``scaling``, in class order."""
    classes = [(k, cls) for k, cls in enumerate(scenario.workload.classes) if cls.scaling is not None]
    if not classes:
        return []
    H = scenario.horizon_h
    hours, cum = timeseries["hour"].to_numpy(), timeseries["cost_cum_usd"].to_numpy()
    return [{**class_row(option, cls.name, class_compute(rec, work, k, H, refs[k][1]),
                         scaling.curve_of(cls.scaling, scenario.base_dir), cls.scaling.target, H, hours, cum),
             "reference_option": refs[k][0]}
            for k, cls in classes]


def table(rows: list[dict]) -> pd.DataFrame:
    """The ``to_target`` table from the rows of every option."""
    return pd.DataFrame(rows, columns=TO_TARGET_COLUMNS)


def option_trajectories(scenario, option: str, rec, work, refs: dict[int, tuple[str, np.ndarray]]
                        ) -> list[pd.DataFrame]:
    """The ``reward_by_day`` rows of one option: per RL class with ``scaling`` (class order), its
    leading run's GPU-hours and score on each whole day 0, 1, … and at the horizon (``trajectory``).
    Empty when no class has ``scaling``."""
    H = scenario.horizon_h
    return [trajectory(class_compute(rec, work, k, H, refs[k][1]), scaling.curve_of(cls.scaling, scenario.base_dir), H)
            .assign(option=option, job_class=cls.name)[REWARD_BY_DAY_COLUMNS]
            for k, cls in enumerate(scenario.workload.classes) if cls.scaling is not None]


def trajectory_table(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The ``reward_by_day`` table from the frames of every option (columns
    ``REWARD_BY_DAY_COLUMNS``, typed even when there are none)."""
    if not frames:
        return pd.DataFrame({"option": pd.Series(dtype="str"), "job_class": pd.Series(dtype="str"),
                             "day": pd.Series(dtype=float), "gpu_hours": pd.Series(dtype=float),
                             "reward": pd.Series(dtype=float)})
    return pd.concat(frames, ignore_index=True)
