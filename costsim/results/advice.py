"""Checkpoint advice per (option, job class): the Young/Daly interval against the current one,
from ``costsim.models.reliability``'s closed form, for options where jobs are interrupted.

What an interruption costs before work resumes (waiting for capacity — a quota, a stock-out, owned
nodes under repair — is ignored, as in DESIGN §6; provisioning at its mean):
- owned node failure: the restart (``restart_minutes``);
- rented (on-demand or spot) node failure: the provider's node swap (the provisioning delay)
  plus the restart;
- spot preemption: ``reacquire_delay_h``, then provisioning, startup and the restart.
Failures and preemptions combine into one rate with a rate-weighted cost per interruption.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from costsim.models import reliability as rel
from costsim.plan.fleet import Plan
from costsim.plan.options import nodes_needed
from costsim.scenario import Scenario
from costsim.workload.plan import PHASES, WorkPlan

ADVICE_COLUMNS = [
    "option", "job_class", "interruptions_per_h", "interruption_cost_h", "interval_h", "optimal_interval_h",
    "every_iterations", "optimal_every_iterations", "expected_job_h", "optimal_expected_job_h", "excess",
]


def interruption_causes(plan: Plan, gpus: int, restart_h: float) -> list[tuple[float, float]]:
    """Each way a job of ``gpus`` is interrupted on this option, as (rate per hour, hours before
    its work resumes): every node or instance it holds can fail (and, on spot, be preempted), as
    the pool says (``interruptions``). A hybrid: its base's causes. A reserved pool: none (its
    nodes do not fail in the engine)."""
    part = plan.home
    k = nodes_needed(gpus, part.node_gpus)
    return [(k * cause.per_node_h, cause.resume_h) for cause in part.interruptions(restart_h)]


def interruption_rate_per_h(plan: Plan, gpus: int) -> float:
    """How often a job of ``gpus`` is interrupted (per hour), all causes together."""
    return rel.combined_interruptions(interruption_causes(plan, gpus, 0.0))[0]


def checkpoint_advice(scenario: Scenario, plan: Plan, work: WorkPlan) -> pd.DataFrame:
    """One row per RL class the option interrupts: expected hours per job now and at Young/Daly.
    ``interruption_cost_h``: mean hours from an interruption until work resumes."""
    jobs = work.jobs
    rows = []
    home = plan.home
    for k, cls in enumerate(scenario.workload.classes):
        idx = np.flatnonzero(jobs.class_index == k)
        # A job that offloads its rollouts (docs/rollout-offload.md) holds its training GPUs here, and
        # a restart re-acquires its rollout instances too (the plan's restart time says how long).
        offloads = home.rollout is not None and cls.placement == "disaggregated"
        restart_h = float(work.restart_h[idx[0]]) if offloads and len(idx) else cls.checkpoint.restart_minutes / 60.0
        gpus = cls.train_gpus if offloads else cls.gpus
        rate, cost_h = rel.combined_interruptions(interruption_causes(plan, gpus, restart_h))
        if rate <= 0 or not len(idx):
            continue
        iters = jobs.iterations[idx]
        per_iter_h = float(work.phase_s[idx, PHASES.index("total")].sum() / iters.sum() / 3600.0)
        work_h = float(iters.mean() * per_iter_h)
        every = cls.checkpoint.every_iterations
        a = rel.advice(work_h, every * per_iter_h, cls.checkpoint.write_minutes / 60.0, rate, cost_h)
        rows.append({
            "option": plan.name, "job_class": cls.name, "interruptions_per_h": rate, "interruption_cost_h": cost_h,
            "interval_h": a.interval_h, "optimal_interval_h": a.optimal_interval_h, "every_iterations": every,
            "optimal_every_iterations": max(int(round(a.optimal_interval_h / per_iter_h)), 1),
            "expected_job_h": a.expected_h, "optimal_expected_job_h": a.optimal_expected_h, "excess": a.excess,
        })
    return pd.DataFrame(rows, columns=ADVICE_COLUMNS)
