"""The engine: one SimPy environment per option, every option on the same jobs.

The only package that imports simpy. It records usage (who held which GPUs when) and never
prices it; ``costsim.results`` applies costs afterwards. Same-instant ordering is documented in
``costsim.engine.events``.
"""

from __future__ import annotations

import functools
import gc
from array import array
from collections.abc import Sequence

import numpy as np
import simpy

from costsim.engine.bounded import EventLimitExceeded, events_scheduled, run_bounded
from costsim.engine.cloud import CloudPool
from costsim.engine.events import ArrivalFeed
from costsim.engine.fleet import FleetRouter
from costsim.engine.groups import GroupRouter
from costsim.engine.owned import OwnedCluster
from costsim.engine.progress import Progress
from costsim.engine.records import BASE, BURST, ROLLOUT, Recorder, UsageRecord, doubles, integers
from costsim.engine.rollouts import with_rollouts
from costsim.engine.spec import PoolSpec, QueuedJobs
from costsim.models.serving import RangeMax
from costsim.plan.fleet import FleetPlan, Plan
from costsim.plan.groups import GroupedPlan
from costsim.plan.options import CloudPlan, OwnedPlan
from costsim.workload.plan import WorkPlan

__all__ = ["BASE", "BURST", "ROLLOUT", "EventLimitExceeded", "UsageRecord", "run_groups", "run_option"]

COLLECT_ABOVE_JOBS = 50_000  # jobs in a run from which its memory is collected as soon as it ends


def hybrid_waits(plan: FleetPlan, work: WorkPlan) -> np.ndarray:
    """Hours each job waits for the hybrid's base (a fleet's pools) before it bursts, by ``plan.wait_policy`` (the
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


def part_failures(rngs: dict[str, np.random.Generator], name: str, k: int) -> np.random.Generator:
    """The node failures' stream of a fleet's later pool part ``k`` (its option ``name``): the
    caller's ``failures:<name>`` (the simulation gives the option's own stream), else one seeded
    by ``k`` (tests driving the engine directly)."""
    return rngs.get(f"failures:{name}") or np.random.default_rng(k)


def group_failures(rngs: dict[str, np.random.Generator], name: str, k: int) -> np.random.Generator:
    """The node failures' stream of a pool's later node group ``k`` (named ``name``): the caller's
    ``failures:<name>``, else one derived from the pool's ``failures`` stream's seed without drawing
    from it (so equal inputs give equal runs, however often called)."""
    given = rngs.get(f"failures:{name}")
    if given is not None:
        return given
    seed = rngs["failures"].bit_generator.seed_seq
    if not isinstance(seed, np.random.SeedSequence):
        return np.random.default_rng(k)
    return np.random.default_rng(np.random.SeedSequence(seed.generate_state(4).tolist(), spawn_key=(k,)))


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
                        later=tuple((t.delivery_h, t.nodes) for t in plan.purchases[1:]), returns=plan.node_returns,
                        in_service=plan.in_service)
        return OwnedCluster(env, spec=spec, jobs=queued, progress=progress, rec=rec, serving=serving, rng=rng)
    # Reserved: a committed pool of whole instances, ready at once; the provider handles failures.
    assert plan.reserved_gpus is not None, "a reserved option commits to reserved_gpus"
    spec = PoolSpec(nodes=plan.reserved_gpus // plan.gpus_per_instance, gpus_per_node=plan.gpus_per_instance,
                    scheduler=plan.scheduler, placement=plan.placement, horizon_h=horizon_h)
    return OwnedCluster(env, spec=spec, jobs=queued, progress=progress, rec=rec, serving=serving)


def run_option(plan: Plan, work: WorkPlan, horizon_h: float, burst_work: WorkPlan | Sequence[WorkPlan] | None = None,
               serving: RangeMax | None = None, rngs: dict[str, np.random.Generator] | None = None,
               max_events: int | None = None, may_use: Sequence[np.ndarray] | None = None) -> UsageRecord:
    """Simulate one option over ``[0, horizon_h)`` on ``work.jobs`` (sorted by submit time).

    ``work``: the jobs timed on the option (a hybrid or fleet: on its first part); ``burst_work``:
    timed on its other parts (``plan.fleet.pools`` order; a hybrid's burst alone may be given bare).
    ``serving``: hourly inference demand that owned and reserved pools serve before RL jobs (a
    fleet's first part only).
    ``rngs``: the option's ``failures``, ``preemptions`` and ``provisioning`` streams (``costsim.workload.rng``).
    ``max_events``: stop with ``EventLimitExceeded`` past this many events (``engine.bounded``).
    A pool of node groups: ``work`` and ``burst_work`` are the jobs timed on each group in order,
    ``may_use`` which groups each job may run on and could be held by (``run_groups``).
    """
    try:
        return _run(plan, work, horizon_h, burst_work, serving, rngs, max_events, may_use)
    finally:
        # The finished run (environment, pools, per-job state) is a web of reference cycles, so only
        # the cyclic collector frees it, perhaps much later; for a large run free it now, before the
        # tables or the next option need the memory. Small runs skip it: a full collection costs
        # tens of ms, more than the few MiB it would free.
        if len(work.jobs) >= COLLECT_ABOVE_JOBS:
            gc.collect()


def _groups(env: simpy.Environment, plan: GroupedPlan, works: Sequence[WorkPlan], rec: Recorder,
            rngs: dict[str, np.random.Generator], horizon_h: float,
            may_use: Sequence[np.ndarray] | None) -> tuple[list[OwnedCluster], GroupRouter]:
    """A pool of node groups' clusters, one per group, and the router that places its jobs on them
    (``run_groups``); sets the record's part of each job to the first group it would try."""
    groups = plan.groups
    assert len(works) == len(groups), "node groups need their jobs' run times on every group"
    assert all(w.offload is None for w in works), "node groups do not offload rollouts"
    jobs = works[0].jobs
    streams = [rngs["failures"], *(group_failures(rngs, g.name, k) for k, g in enumerate(groups) if k)]
    clusters = [_owned(env, g, w, _progress(w, rec), rec, None, rng, horizon_h)
                for g, w, rng in zip(groups, works, streams, strict=True)]
    # Without ``may_use``: the type each job asks for (its class's model is not checked here).
    allowed = [np.asarray(m, dtype=bool) for m in may_use] if may_use is not None else \
        plan.placeable(jobs.gpus, jobs.gpu_type)
    g = integers(jobs.gpus)
    router = GroupRouter(env, clusters, [g] * len(groups), [integers(m.astype(np.int64)) for m in allowed], rec)
    rec.part = array("b", plan.first_group(allowed).astype(np.int8).tobytes())
    return clusters, router


def _run(plan: Plan, work: WorkPlan, horizon_h: float, burst_work: WorkPlan | Sequence[WorkPlan] | None,
         serving: RangeMax | None, rngs: dict[str, np.random.Generator] | None, max_events: int | None,
         may_use: Sequence[np.ndarray] | None) -> UsageRecord:
    env = simpy.Environment()
    jobs = work.jobs
    rec = Recorder(len(jobs))
    rngs = rngs or {name: np.random.default_rng(0) for name in ("failures", "preemptions", "provisioning")}
    g = integers(jobs.gpus)  # per-job columns the event loop reads: typed arrays, not lists of boxed numbers
    works = [work, *((burst_work,) if isinstance(burst_work, WorkPlan) else (burst_work or ()))]
    cluster = None
    clusters: list[OwnedCluster] = []
    if isinstance(plan, GroupedPlan):  # serving is not run on node groups
        clusters, router = _groups(env, plan, works, rec, rngs, horizon_h, may_use)
        arrive = router.arrive
        cluster = clusters[0]
    elif isinstance(plan, FleetPlan):
        assert len(works) == len(plan.pool_parts) + 1, "a fleet needs its jobs' run times on every part"
        # Serving and the failures' stream are the first part's (its home); later pools serve nothing.
        clusters = [_owned(env, part, w, _progress(w, rec), rec, serving if k == 0 else None,
                           rngs["failures"] if k == 0 else part_failures(rngs, part.name, k), horizon_h)
                    for k, (part, w) in enumerate(zip(plan.pool_parts, works, strict=False))]
        burst = CloudPool(env, plan=plan.burst, gpus=g, progress=_progress(works[-1], rec), rec=rec, rngs=rngs)
        waits = doubles(hybrid_waits(plan, work))
        asked = [integers(w.home_gpus) if w.offload is not None else g for w in works[:-1]]
        arrive = FleetRouter(env, clusters, burst, waits, plan.bridge_until_ready, asked, rec).arrive
        cluster = clusters[0]
    elif plan.is_pool:
        cluster = _owned(env, plan, work, _progress(work, rec), rec, serving, rngs["failures"], horizon_h)
        arrive = cluster.arrive
    else:
        assert isinstance(plan, CloudPlan)  # not a pool: rented per use
        arrive = CloudPool(env, plan=plan, gpus=g, progress=_progress(work, rec), rec=rec, rngs=rngs).arrive
    ArrivalFeed(env, doubles(jobs.submit_h), arrive)
    run_bounded(env, horizon_h, max_events)
    cap_t, cap_g = (cluster.capacity_t, cluster.capacity_gpus) if cluster is not None else ([], [])
    cap_part = None
    if len(clusters) > 1:  # each pool's capacity, told apart by its part (a hybrid's one pool needs none)
        cap_t = [t for c in clusters for t in c.capacity_t]
        cap_g = [n for c in clusters for n in c.capacity_gpus]
        cap_part = [k for k, c in enumerate(clusters) for _ in c.capacity_t]
    frozen = rec.freeze(plan.name, plan.kind, cap_t, cap_g, events_scheduled(env), cap_part)
    return with_rollouts(frozen, work.offload) if work.offload is not None else frozen


def run_groups(plan: GroupedPlan, works: Sequence[WorkPlan], horizon_h: float,
               may_use: Sequence[np.ndarray] | None = None, rngs: dict[str, np.random.Generator] | None = None,
               max_events: int | None = None) -> UsageRecord:
    """Simulate an owned pool of node groups over ``[0, horizon_h)`` (``costsim.engine.groups``):
    ``run_option`` with the groups' work plans in a list.

    ``works[k]``: the same jobs (sorted by submit time) timed on group k's GPU type
    (``workload.plan.plan_work`` on ``plan.groups[k]``), so a job runs as long as its group makes it;
    ``may_use[k][i]``: whether job i may run on group k (its GPU type, its model) and group k could
    ever hold it: the workload's ``group_access`` or the plan's ``placeable`` (None or omitted:
    every group of the GPU type the job asks for, ``JobTable.gpu_type``, that can hold it; its
    class's model is not checked then). ``rngs``: as ``run_option``'s;
    group 0's node failures are drawn from ``failures`` (so one group is the plain cluster), each
    later group's from its own stream (``group_failures``). The record's ``part`` is each job's group:
    where it started, or, never started, the first it may use and could hold (the one it is timed
    on: its run there is its planned run);
    its capacity changes are told apart by group (``capacity_part``) when there are several. Serving
    and rollout offload are not run on node groups."""
    return run_option(plan, works[0], horizon_h, works[1:], rngs=rngs, max_events=max_events, may_use=may_use)
