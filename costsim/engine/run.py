"""The engine: one SimPy environment per option, every option on the same jobs.

The only package that imports simpy. It records usage (who held which GPUs when) and never
prices it; ``costsim.results`` applies costs afterwards. Same-instant ordering is documented in
``costsim.engine.events``.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Sequence

import numpy as np
import simpy

from costsim.engine.bounded import EventLimitExceeded, events_scheduled, run_bounded
from costsim.engine.cloud import CloudPool
from costsim.engine.events import TIMER, ArrivalFeed, At
from costsim.engine.owned import OwnedCluster, PoolSpec, QueuedJobs
from costsim.engine.progress import Progress
from costsim.engine.records import BASE, BURST, ROLLOUT, Recorder, UsageRecord, doubles, integers
from costsim.engine.rollouts import with_rollouts
from costsim.models.serving import RangeMax
from costsim.plan.options import CloudPlan, HybridPlan, OwnedPlan, Plan
from costsim.workload.plan import WorkPlan

__all__ = ["BASE", "BURST", "ROLLOUT", "EventLimitExceeded", "UsageRecord", "run_option"]

COLLECT_ABOVE_JOBS = 50_000  # jobs in a run from which its memory is collected as soon as it ends


class Router:
    """A hybrid's arrivals: to the burst while the base is not delivered (when bridging) or for a
    job the base can never hold (too big, or too big beside serving's least demand from now to the
    horizon); else to the base, with a timer that sends the job to the burst if it is still
    waiting ``wait_h[i]`` later (``hybrid_waits``) and has never started on the base. A job that started on the base
    and was interrupted by a failure stays with the base (its work and GPU-hours are there). Taking
    a job back from the base's queue triggers a scheduling pass there at the same instant."""

    def __init__(self, env: simpy.Environment, base: OwnedCluster, burst: CloudPool, wait_h: Sequence[float],
                 bridge: bool, gpus: Sequence[int], rec: Recorder):
        self.env, self.base, self.burst = env, base, burst
        self.wait_h, self.bridge, self.gpus, self.rec = wait_h, bridge, gpus, rec

    def arrive(self, i: int) -> None:
        if (self.bridge and not self.base.ready) or not self.base.fits_ever(self.gpus[i]):
            self._burst(i)
            return
        self.base.arrive(i)
        At(self.env, self.wait_h[i], TIMER, lambda _e, i=i: self._waited(i))

    def _waited(self, i: int) -> None:
        if self.base.withdraw(i):
            self._burst(i)

    def _burst(self, i: int) -> None:
        self.rec.part[i] = BURST
        self.burst.arrive(i)


def hybrid_waits(plan: HybridPlan, work: WorkPlan) -> np.ndarray:
    """Hours each job waits for the hybrid's base before it bursts, by ``plan.wait_policy`` (the
    waiting policies of Starburst, Luo et al., USENIX ATC'24):
    ``constant``: ``max_wait_h`` for every job; ``zero``: 0 (a job the base cannot start at its
    arrival bursts at once); ``linear_runtime``: ``wait_per_hour_h`` × the job's planned run on the
    base (hours); ``linear_gpus``: ``wait_per_gpu_h`` × its GPUs; ``linear_cost``:
    ``wait_per_gpu_hour_h`` × its GPUs × its planned run. Computed once, before the run."""
    n = len(work.jobs)
    policy = plan.wait_policy
    if policy == "constant":
        return np.full(n, plan.max_wait_h)
    if policy == "zero":
        return np.zeros(n)
    if policy == "linear_runtime":
        return plan.wait_per_hour_h * np.asarray(work.run_h, dtype=float)
    if policy == "linear_gpus":
        return plan.wait_per_gpu_h * np.asarray(work.jobs.gpus, dtype=float)
    if policy == "linear_cost":
        return plan.wait_per_gpu_hour_h * np.asarray(work.jobs.gpus, dtype=float) * np.asarray(work.run_h, dtype=float)
    raise ValueError(f"unknown wait_policy {policy!r}")


def sjf_durations(work: WorkPlan) -> np.ndarray:
    """What ``sjf`` orders by, per job (hours): a trace job's requested ``duration_h``, an RL job's
    planned run on the option (``run_h``)."""
    jobs = work.jobs
    return np.where(np.asarray(jobs.class_index) < 0, jobs.duration_h, work.run_h)


def _progress(work: WorkPlan, rec: Recorder) -> Progress:
    # Checkpoint boundaries are computed only for jobs that are interrupted, once each.
    first = doubles(work.offload.first_h) if work.offload is not None else None
    return Progress(doubles(work.run_h), functools.cache(work.boundaries), doubles(work.restart_h), rec, first)


def _owned(env, plan: OwnedPlan | CloudPlan, work: WorkPlan, progress: Progress, rec, serving: RangeMax | None,
           rng: np.random.Generator, horizon_h: float) -> OwnedCluster:
    jobs = work.jobs
    g, prio = integers(work.home_gpus), integers(jobs.priority)  # offloaded jobs hold their training GPUs here
    duration_h = doubles(sjf_durations(work)) if plan.scheduler == "sjf" else None
    queued = QueuedJobs(gpus=g, priority=prio, duration_h=duration_h)
    if isinstance(plan, OwnedPlan):
        spec = PoolSpec(nodes=plan.nodes, gpus_per_node=plan.gpus_per_node, scheduler=plan.scheduler,
                        lead_time_h=plan.lead_time_h, placement=plan.placement,
                        failures_per_node_h=plan.failures_per_node_h, repair_h=plan.repair_h, horizon_h=horizon_h,
                        later=tuple((t.delivery_h, t.nodes) for t in plan.purchases[1:]))
        return OwnedCluster(env, spec=spec, jobs=queued, progress=progress, rec=rec, serving=serving, rng=rng)
    # Reserved: a committed pool of whole instances, ready at once; the provider handles failures.
    assert plan.reserved_gpus is not None, "a reserved option commits to reserved_gpus"
    spec = PoolSpec(nodes=plan.reserved_gpus // plan.gpus_per_instance, gpus_per_node=plan.gpus_per_instance,
                    scheduler=plan.scheduler, placement=plan.placement, horizon_h=horizon_h)
    return OwnedCluster(env, spec=spec, jobs=queued, progress=progress, rec=rec, serving=serving)


def run_option(plan: Plan, work: WorkPlan, horizon_h: float, burst_work: WorkPlan | None = None,
               serving: RangeMax | None = None, rngs: dict[str, np.random.Generator] | None = None,
               max_events: int | None = None) -> UsageRecord:
    """Simulate one option over ``[0, horizon_h)`` on ``work.jobs`` (sorted by submit time).

    ``work``: the jobs timed on the option (a hybrid: on its base; ``burst_work``: on its burst).
    ``serving``: hourly inference demand that owned and reserved pools serve before RL jobs.
    ``rngs``: the option's ``failures``, ``preemptions`` and ``provisioning`` streams (``costsim.workload.rng``).
    ``max_events``: stop with ``EventLimitExceeded`` past this many events (``engine.bounded``).
    """
    try:
        return _run(plan, work, horizon_h, burst_work, serving, rngs, max_events)
    finally:
        # The finished run (environment, pools, per-job state) is a web of reference cycles, so only
        # the cyclic collector frees it, perhaps much later; for a large run free it now, before the
        # tables or the next option need the memory. Small runs skip it: a full collection costs
        # tens of ms, more than the few MiB it would free.
        if len(work.jobs) >= COLLECT_ABOVE_JOBS:
            gc.collect()


def _run(plan: Plan, work: WorkPlan, horizon_h: float, burst_work: WorkPlan | None, serving: RangeMax | None,
         rngs: dict[str, np.random.Generator] | None, max_events: int | None) -> UsageRecord:
    env = simpy.Environment()
    jobs = work.jobs
    rec = Recorder(len(jobs))
    rngs = rngs or {name: np.random.default_rng(0) for name in ("failures", "preemptions", "provisioning")}
    g = integers(jobs.gpus)  # per-job columns the event loop reads: typed arrays, not lists of boxed numbers
    cluster = None
    if isinstance(plan, HybridPlan):
        assert burst_work is not None, "a hybrid needs its jobs' run times on the burst"
        cluster = _owned(env, plan.base, work, _progress(work, rec), rec, serving, rngs["failures"], horizon_h)
        burst = CloudPool(env, plan=plan.burst, gpus=g, progress=_progress(burst_work, rec), rec=rec, rngs=rngs)
        waits = doubles(hybrid_waits(plan, work))
        base_g = integers(work.home_gpus) if work.offload is not None else g
        arrive = Router(env, cluster, burst, waits, plan.bridge_until_ready, base_g, rec).arrive
    elif plan.is_pool:
        cluster = _owned(env, plan, work, _progress(work, rec), rec, serving, rngs["failures"], horizon_h)
        arrive = cluster.arrive
    else:
        assert isinstance(plan, CloudPlan)  # not a pool: rented per use
        arrive = CloudPool(env, plan=plan, gpus=g, progress=_progress(work, rec), rec=rec, rngs=rngs).arrive
    ArrivalFeed(env, doubles(jobs.submit_h), arrive)
    run_bounded(env, horizon_h, max_events)
    cap_t, cap_g = (cluster.capacity_t, cluster.capacity_gpus) if cluster is not None else ([], [])
    frozen = rec.freeze(plan.name, plan.kind, cap_t, cap_g, events_scheduled(env))
    return with_rollouts(frozen, work.offload) if work.offload is not None else frozen
