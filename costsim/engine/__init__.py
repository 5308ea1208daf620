"""The engine: one SimPy environment per option, every option on the same jobs.

The only package that imports simpy. It records usage (who held which GPUs when) and never
prices it; ``costsim.results`` applies costs afterwards. Same-instant ordering is documented in
``costsim.engine.events``.
"""

from __future__ import annotations

import numpy as np
import simpy

from costsim.catalog import CloudPlan, OwnedPlan, Plan

from .cloud import CloudPool
from .owned import OwnedCluster
from .records import Recorder, UsageRecord

__all__ = ["UsageRecord", "run_option"]


def run_option(
    plan: Plan, submit_h: np.ndarray, gpus: np.ndarray, priority: np.ndarray, run_h: np.ndarray, horizon_h: float
) -> UsageRecord:
    """Simulate one option over ``[0, horizon_h)``; jobs are sorted by submit time."""
    env = simpy.Environment()
    n = len(submit_h)
    rec = Recorder(n)
    submit = submit_h.tolist()
    g = gpus.tolist()
    run = run_h.tolist()
    if isinstance(plan, OwnedPlan):
        cluster = OwnedCluster(
            env, plan.nodes, plan.gpus_per_node, plan.lead_time_h, plan.scheduler,
            submit, g, priority.tolist(), run, rec,
        )
        env.run(until=horizon_h)
        return rec.freeze(plan.name, plan.kind, cluster.capacity_t, cluster.capacity_gpus, _events(env))
    assert isinstance(plan, CloudPlan)
    CloudPool(
        env, plan.gpus_per_instance, plan.max_gpus, plan.provisioning_delay_h, plan.startup_h,
        submit, g, run, rec,
    )
    env.run(until=horizon_h)
    return rec.freeze(plan.name, plan.kind, [], [], _events(env))


def _events(env: simpy.Environment) -> int:
    """Events scheduled so far: SimPy numbers every scheduled event with this counter."""
    return next(env._eid)  # type: ignore[attr-defined]
