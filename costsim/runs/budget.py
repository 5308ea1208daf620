"""How much work a run will be, before it runs: an estimate of its SimPy events.

``costsim.simulate`` refuses a run whose estimate exceeds ``max_events`` (``costsim run
--max-events N``) with a ``ScenarioError`` instead of running for hours: within the schema's
bounds a 30-year horizon of 10⁷ GPUs failing daily, millions of jobs, or a one-minute checkpoint
interval on year-long jobs with failures are all valid and all enormous. The estimate is made
twice: from the scenario alone before the workload is drawn (``expected_workload``: drawing the
jobs can itself be the enormous part), and from the drawn jobs' work plans (run times,
checkpoint segments) before any option runs. Each is

    E = I + Σ_options [ 4·J  (+ J for a hybrid's wait timers)  + H
                        + 2·H                                   (each owned/reserved pool, with serving)
                        + 3·N·λ_node·(H − lead)                 (each owned pool with failures)
                        + Σ_jobs (4·X_j + n_j·min(1, X_j) + 2·Y_j) ]   (second estimate only)

with
- I: RL iterations (each is drawn, timed per option and kept in memory: one unit, like an event);
- J: jobs (arrival, scheduling pass, start or delivery, release);
- H: horizon hours (one time-series row per option and hour; with serving, an hourly
  re-decision and its scheduling pass);
- N nodes failing at λ_node per node-hour after the lead time (failure, repair, scheduling pass);
- per job j on u_j nodes or instances, interrupted at λ_j = u_j·(failure + preemption rate):
  X_j = λ_j·min(T_j, H − submit_j) expected interruptions (each an interruption, a re-queue or
  re-request, a restart and a release), where T_j = n_j·(e^{λ_j·w_j} − 1)(1/λ_j + restart_j) is
  the expected time to finish its n_j checkpoint segments of w_j = run_j/n_j hours (DESIGN.md
  §6); n_j checkpoint boundaries built once if it is interrupted; Y_j stock-out retries,
  p/(1 − p) per request (1 + X_j) of at least the stock-out size, at most one per ``retry_h``
  until the horizon.

The constants match the 3–4 events per job measured on the shipped scenarios. Anything
non-finite (an infinite rate given to the pure functions) counts as infinitely many events.
"""

from __future__ import annotations

import math

import numpy as np

from costsim.engine.pool import nodes_needed
from costsim.plan.fleet import Plan, pools
from costsim.plan.options import CloudPlan, OwnedPlan
from costsim.scenario import Problem, Scenario, ScenarioError
from costsim.scenario.classes import Spread
from costsim.workload.jobclass import expected_jobs
from costsim.workload.jobs import expected_class_jobs
from costsim.workload.plan import WorkPlan

DEFAULT_MAX_EVENTS = 50_000_000
"""The default limit. The engine runs about 0.1 M events a second on one core where queues are
short (fewer where a deep queue makes every scheduling pass long), so 50 M is roughly ten minutes
or more: the largest runs the README promises (a million-job trace on three options, ~12 M) fit,
a run one would wait hours for does not. Raise it with ``max_events`` / ``--max-events``."""

ENGINE_MARGIN = 4
"""The engine stops a run whose ACTUAL event count passes this multiple of the limit (checked
between chunks of simulated time): a backstop for where the estimate is far too low."""

EVENTS_PER_JOB = 4.0  # arrival, scheduling pass, start (or cloud delivery), release
EVENTS_PER_SERVING_HOUR = 2.0  # at most: a look on an hour while jobs wait, and its scheduling pass
EVENTS_PER_NODE_FAILURE = 3.0  # failure, repair, scheduling pass
EVENTS_PER_INTERRUPTION = 4.0  # interruption, re-queue or re-request, restart, release
EVENTS_PER_STOCKOUT = 2.0  # the retry and its scheduling pass


def expected_workload(scenario: Scenario, trace_rows: int) -> tuple[float, float]:
    """Expected jobs and RL iterations before anything is drawn.

    Per class: min(count, arrivals_per_day × arrival_scale × (horizon_days − start_day)) jobs of
    mean ``iterations`` (with ``growth_per_year``, the integral of the growing rate instead); per job class: the integral of its profiled rate from start_day to the
    horizon (no iterations); a trace: rows × arrival_scale (rows past the horizon counted too: an
    upper bound). Floats: a 10³⁰-day horizon is a number here, never an array.
    """
    days, scale = float(scenario.horizon_days), float(scenario.workload.arrival_scale)
    jobs = float(trace_rows) * max(scale, 1.0)
    iterations = 0.0
    for cls in scenario.workload.classes:
        if cls.growth_per_year == 0:
            n = float(cls.arrivals_per_day) * scale * max(days - float(cls.start_day), 0.0)
        else:  # the integral of the growing rate (a float for any horizon)
            n = expected_class_jobs(cls, scale, float(scenario.horizon_h))
        if cls.count is not None:
            n = min(n, float(cls.count))
        mean = float(cls.iterations.mean) if isinstance(cls.iterations, Spread) else float(cls.iterations)
        jobs += n
        iterations += n * mean
    for job_class in scenario.workload.job_classes:
        jobs += expected_jobs(job_class, scale, float(scenario.horizon_h))
    return jobs, iterations


def pool_events(pool: OwnedPlan | CloudPlan, horizon_h: float, serving: bool) -> float:
    """Events of one pool that do not depend on the jobs: serving's hourly ticks, node failures."""
    events = 0.0
    if serving and pool.is_pool:  # owned and reserved pools serve inference first
        events += EVENTS_PER_SERVING_HOUR * horizon_h
    own = pool.owned
    if own is not None and own.failures_per_node_h > 0:
        up_h = max(horizon_h - own.lead_time_h, 0.0)
        events += EVENTS_PER_NODE_FAILURE * own.nodes * own.failures_per_node_h * up_h
    return events


def _segments(work: WorkPlan) -> np.ndarray:
    """Checkpoint segments per job: ⌈duration / every_hours⌉ (trace), ⌈iterations / every⌉ (RL), else 1."""
    jobs = work.jobs
    rl = jobs.iterations > 0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        per = np.where(rl, jobs.iterations, jobs.duration_h) / np.where(work.every > 0, work.every, np.inf)
    return np.where(work.every > 0, np.maximum(np.ceil(per - 1e-9), 1.0), 1.0)


def interruption_events(pool: OwnedPlan | CloudPlan, work: WorkPlan, horizon_h: float) -> float:
    """Events and checkpoint boundaries the interruptions of ``work``'s jobs on ``pool`` cost
    (the Σ_jobs term of the module docstring)."""
    jobs = work.jobs
    if not len(jobs):
        return 0.0
    causes = pool.interruptions(0.0)  # none on a reserved pool: the provider handles its failures
    units = nodes_needed(jobs.gpus, pool.node_gpus) if causes else np.zeros(len(jobs))
    rate = sum(cause.per_node_h for cause in causes)
    window = np.maximum(horizon_h - jobs.submit_h, 0.0)
    n = _segments(work)
    with np.errstate(all="ignore"):
        lam = units * float(rate)
        w = work.run_h / n
        finish = np.where(lam > 0, n * np.expm1(lam * w) * (1.0 / lam + work.restart_h), work.run_h)
        hits = np.where(lam > 0, lam * np.minimum(finish, window), 0.0)
        hits = np.nan_to_num(hits, nan=np.inf)
        total = EVENTS_PER_INTERRUPTION * hits + n * np.minimum(hits, 1.0)
        rental = pool.rental
        if rental is not None and rental.stockout_probability > 0:
            p = float(rental.stockout_probability)
            tries = p / (1.0 - p) if p < 1 else np.inf
            cap = window / rental.stockout_retry_h if rental.stockout_retry_h > 0 else np.inf
            big = units * rental.gpus_per_instance >= rental.stockout_min_gpus
            retries = np.where(big, (1.0 + hits) * np.minimum(tries, cap), 0.0)
            total = total + EVENTS_PER_STOCKOUT * np.nan_to_num(retries, nan=np.inf)
        return float(np.sum(total))


def estimate_events(scenario: Scenario, plans: list[Plan], jobs: float, iterations: float,
                    works: list[tuple[WorkPlan, ...]] | None = None) -> float:
    """The module docstring's E for ``jobs`` jobs and ``iterations`` RL iterations on ``plans``;
    with ``works`` (per plan: its work plan, or a hybrid's base and burst plans) the per-job
    interruption terms too. Returns ``inf`` for anything unbounded."""
    horizon_h = float(scenario.horizon_h)
    serving = scenario.serving is not None
    total = float(iterations)
    for k, plan in enumerate(plans):
        total += EVENTS_PER_JOB * jobs + (jobs if len(pools(plan)) > 1 else 0.0) + horizon_h  # a hybrid's timers
        for p, pool in enumerate(pools(plan)):
            total += pool_events(pool, horizon_h, serving)
            if works is not None:
                total += interruption_events(pool, works[k][p], horizon_h)
    return total if math.isfinite(total) else math.inf


def refuse_above(estimate: float, max_events: int | None, source: str) -> None:
    """A ScenarioError when ``estimate`` exceeds ``max_events`` (None: no limit)."""
    if max_events is None or estimate <= max_events:
        return
    size = "an unbounded number of" if not math.isfinite(estimate) else f"about {estimate:,.0f}"
    raise ScenarioError(source, [Problem((), (
        f"this run would take {size} simulation events, above the limit of {max_events:,} "
        "(a horizon, a failure or preemption rate, or a checkpoint interval far out of scale?); "
        "if it is meant, raise the limit: simulate(..., max_events=N) or costsim run --max-events N"))])
