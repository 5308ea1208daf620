"""The engine: one SimPy environment per option, every option on the same jobs.

The only package that imports simpy. It records usage (who held which GPUs when) and never
prices it; ``costsim.results`` applies costs afterwards. Same-instant ordering is documented in
``costsim.engine.events``.
"""

from __future__ import annotations

import numpy as np
import simpy

from costsim.catalog import CloudPlan, HybridPlan, OwnedPlan, Plan

from costsim.serving import RangeMax

from .cloud import CloudPool
from .owned import OwnedCluster
from .events import TIMER, ArrivalFeed, At
from .records import BASE, BURST, Recorder, UsageRecord

__all__ = ["BASE", "BURST", "UsageRecord", "run_option"]


class Router:
    """A hybrid's arrivals: to the burst while the base is not delivered (when bridging) or for a
    job the base can never hold; else to the base, with a timer that sends the job to the burst
    if it is still waiting ``max_wait_h`` later."""

    def __init__(self, env: simpy.Environment, base: OwnedCluster, burst: CloudPool, max_wait_h: float,
                 bridge: bool, gpus: list[int], rec: Recorder):
        self.env, self.base, self.burst = env, base, burst
        self.max_wait_h, self.bridge, self.gpus, self.rec = max_wait_h, bridge, gpus, rec

    def arrive(self, i: int) -> None:
        if (self.bridge and not self.base.ready) or not self.base.fits_ever(self.gpus[i]):
            self._burst(i)
            return
        self.base.arrive(i)
        At(self.env, self.max_wait_h, TIMER, lambda _e, i=i: self._waited(i))

    def _waited(self, i: int) -> None:
        if self.base.withdraw(i):
            self._burst(i)

    def _burst(self, i: int) -> None:
        self.rec.part[i] = BURST
        self.burst.arrive(i)


def _owned(env, plan: OwnedPlan | CloudPlan, g, priority, run, rec, serving: RangeMax | None) -> OwnedCluster:
    if isinstance(plan, OwnedPlan):
        return OwnedCluster(env, plan.nodes, plan.gpus_per_node, plan.lead_time_h, plan.scheduler, g, priority, run,
                            rec, serving)
    # Reserved: a committed pool of whole instances, ready at once.
    return OwnedCluster(env, plan.reserved_gpus // plan.gpus_per_instance, plan.gpus_per_instance, 0.0,
                        plan.scheduler, g, priority, run, rec, serving)


def _cloud(env, plan: CloudPlan, g, run, rec) -> CloudPool:
    return CloudPool(env, plan.gpus_per_instance, plan.max_gpus, plan.provisioning_delay_h, plan.startup_h, g, run, rec)


def run_option(
    plan: Plan, submit_h: np.ndarray, gpus: np.ndarray, priority: np.ndarray, run_h: np.ndarray, horizon_h: float,
    burst_run_h: np.ndarray | None = None, serving: RangeMax | None = None,
) -> UsageRecord:
    """Simulate one option over ``[0, horizon_h)``; jobs are sorted by submit time. ``run_h``: each
    job's hours on the option (a hybrid: on its base; ``burst_run_h``: on its burst). ``serving``:
    hourly inference demand that owned and reserved pools serve before RL jobs."""
    env = simpy.Environment()
    rec = Recorder(len(submit_h))
    g, prio, run = gpus.tolist(), priority.tolist(), run_h.tolist()
    cluster = None
    if isinstance(plan, HybridPlan):
        assert burst_run_h is not None, "a hybrid needs its jobs' run times on the burst"
        cluster = _owned(env, plan.base, g, prio, run, rec, serving)
        router = Router(env, cluster, _cloud(env, plan.burst, g, burst_run_h.tolist(), rec), plan.max_wait_h,
                        plan.bridge_until_ready, g, rec)
        arrive = router.arrive
    elif isinstance(plan, OwnedPlan) or plan.reserved:
        cluster = _owned(env, plan, g, prio, run, rec, serving)
        arrive = cluster.arrive
    else:
        arrive = _cloud(env, plan, g, run, rec).arrive
    ArrivalFeed(env, submit_h.tolist(), arrive)
    env.run(until=horizon_h)
    cap_t, cap_g = (cluster.capacity_t, cluster.capacity_gpus) if cluster is not None else ([], [])
    return rec.freeze(plan.name, plan.kind, cap_t, cap_g, _events(env))


def _events(env: simpy.Environment) -> int:
    """Events scheduled so far: SimPy numbers every scheduled event with this counter."""
    return next(env._eid)  # type: ignore[attr-defined]
