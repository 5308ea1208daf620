"""The checks that need the resolved plans, beyond what the schema sees in one field: a job that can
never fit an option (too big for it ever, or never left room by serving), an RL class whose model
does not fit an option's GPUs, a class whose rollouts could never run on the pool it offloads to,
and the scaling curves. Each returns ``Problem``s at the field to fix; ``plan_problems`` runs them
all in the order the front door reports them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from costsim.models.reliability import checkpoint_writes
from costsim.models.scaling import scaling_problems
from costsim.models.serving import can_ever_start, hourly_demand
from costsim.plan.class_pools import model_problem, usable_pools
from costsim.plan.fleet import FleetPlan, HybridPlan, Plan, pools, pools_for
from costsim.plan.groups import GroupedPlan
from costsim.plan.options import CloudPlan, OwnedPlan
from costsim.scenario import Problem, Scenario, TraceTable
from costsim.scenario.classes import RLClass
from costsim.scenario.trace import ANY_GPU, GPU_TYPES
from costsim.units import HOURS_PER_DAY, HOURS_PER_YEAR

# How an error message names a pool's limit (``JobLimit.field``): its GPUs, in words.
_LIMIT_WORDS = {"gpus": "{} GPUs", "reserved_gpus": "{} reserved GPUs", "max_gpus": "a quota of {} GPUs"}


def serving_demand(scenario: Scenario) -> np.ndarray | None:
    """Serving GPUs per hour over the horizon and, for jobs that run past it, a year more; None
    without serving."""
    if scenario.serving is None:
        return None
    g = scenario.serving.gpus
    hours = int(np.ceil(scenario.horizon_h + HOURS_PER_YEAR))
    return hourly_demand(g.base, g.diurnal_amplitude, g.growth_per_year, hours)


@dataclass(frozen=True)
class JobsToFit:
    """Jobs to check against every option: sizes (GPUs), earliest submission (hours) and the hours
    they hold GPUs once started."""

    gpus: np.ndarray
    earliest_h: np.ndarray
    hold_h: np.ndarray
    disaggregated: bool = False  # an RL class that offloads its rollouts where a pool has a rollout_pool:
    home_gpus: np.ndarray | None = None  # there it asks only its training GPUs
    gpu_type: str | None = None  # the GPU type they ask for (None: any): only a node group of it takes them
    model: RLClass | None = None  # their RL class: only a node group whose GPUs hold its model takes them


@dataclass(frozen=True)
class PoolVerdict:
    """Which jobs can never run on one pool: ``too_big`` for it ever, or ``crowded`` out by serving
    (not too big, but never left room for their hold time); ``has``: what the pool has, in words."""

    too_big: np.ndarray
    crowded: np.ndarray
    has: str
    most: np.ndarray | None = None  # per job: the most GPUs in service together from its submission on
    limit_gpus: int = 0  # the pool's GPUs (``job_limit``)

    def says(self, first: int) -> str:
        """What the pool has, in words, for job ``first``: its GPUs, and how few of them are ever in
        service together from the job's submission on when leases ending leave fewer."""
        if self.most is None or self.most[first] >= self.limit_gpus:
            return self.has
        return (f"{self.has}, at most {int(self.most[first])} of them in service together from its "
                f"submission on (a lease gives its nodes back within the horizon)")


@dataclass(frozen=True)
class NeverFit:
    """Which jobs can never run on an option (``bad``), the option field to name (``""``: the option
    as a whole, a hybrid) and why, in words."""

    bad: np.ndarray
    field: str
    why: str


def pool_verdict(pool: OwnedPlan | CloudPlan, jobs: JobsToFit, demand: np.ndarray | None) -> PoolVerdict | None:
    """Which jobs can never run on one pool: too big for it ever, or (owned and reserved pools,
    which serve first) never left room by serving for their hold time between their submission
    (or the pool's delivery) on; None for unlimited rented capacity. ``demand``: serving GPUs per
    hour (``serving_demand``) or None."""
    limit = pool.job_limit
    if limit is None:
        return None
    offloads = jobs.disaggregated and pool.is_pool and pool.rollout is not None
    asked = jobs.home_gpus if offloads and jobs.home_gpus is not None else jobs.gpus
    held = pool.held_gpus(asked)  # an offloaded class trains here, samples there
    earliest = np.maximum(jobs.earliest_h, pool.delivery_h)
    # Leases returned within the horizon shrink an owned pool: a job fits only what is still (or
    # will be) in service together from its submission on.
    most = pool.most_gpus_from(earliest)
    too_big = held > most
    crowded = np.zeros(len(held), dtype=bool)
    if demand is not None and pool.is_pool:
        # Any start the demand table covers (the horizon and a year more): a job that only misses
        # the horizon is a queueing outcome, not an error; one serving never leaves room for is.
        # Against the most in service from its submission on: a check that never refuses a job
        # that could run, where capacity moves over its hold.
        crowded = ~too_big & ~can_ever_start(demand, most - held, earliest, jobs.hold_h, float(len(demand)))
    return PoolVerdict(too_big, crowded, _LIMIT_WORDS[limit.field].format(limit.gpus), most, limit.gpus)


def never_fit(plan: Plan, jobs: JobsToFit, demand: np.ndarray | None) -> NeverFit | None:
    """Which jobs can never run on the option (a hybrid: on neither part), the field to name and
    why; None when every job can."""
    # Serving runs on the option's home only (a fleet's later pools do not serve).
    usable = usable_pools(plan, jobs.gpu_type, jobs.model)
    if not usable:  # no node group holds their model: ``layout_problems`` says so
        return None
    verdicts = [pool_verdict(p, jobs, demand if p is plan.home else None) for p in usable]
    found = [v for v in verdicts if v is not None]
    if len(found) < len(verdicts):  # an unlimited part takes any job
        return None
    bad = np.ones(len(jobs.gpus), dtype=bool)
    for v in found:
        bad &= v.too_big | v.crowded
    if not bad.any():
        return None
    first = int(np.flatnonzero(bad)[0])

    def says(verdict: PoolVerdict) -> str:
        if verdict.crowded[first]:
            return (f"{verdict.says(first)}, and serving never leaves that many free for the "
                    f"{jobs.hold_h[first]:,.1f} h it holds them at any time after its submission")
        return verdict.says(first)

    if isinstance(plan, HybridPlan):
        return NeverFit(bad, "", f"neither base {plan.base.name!r} ({says(found[0])}) nor burst "
                                 f"{plan.burst.name!r} ({says(found[1])})")
    if isinstance(plan, FleetPlan):
        return NeverFit(bad, "", "none of its parts: " + "; ".join(
            f"{p.name!r} ({says(v)})" for p, v in zip(pools(plan), found, strict=True)))
    if isinstance(plan, GroupedPlan):  # a job never spans groups: the largest it may use is its limit
        of_type = f" of {jobs.gpu_type}" if jobs.gpu_type is not None else ""
        return NeverFit(bad, "node_groups", f"none of option {plan.name!r}'s node groups{of_type} holds it: " + "; ".join(
            f"{p.name!r} ({says(v)})" for p, v in zip(usable, found, strict=True)))
    limit = plan.job_limit
    assert limit is not None  # a pool without a limit has returned above
    return NeverFit(bad, limit.field, f"option {plan.name!r} has {says(found[0])}")


def fit_problems(scenario: Scenario, plans: list[Plan], trace: TraceTable | None,
                 demand: np.ndarray | None) -> list[Problem]:
    """A job that can never fit an option is an error, not a silent infinite wait: each RL class
    is checked by its size and each job class by its largest GPU count (and, beside serving, for an
    hour's room from its first arrival on: their jobs' run times are not drawn here), trace jobs
    submitted within the horizon one by one, with their hold times (work plus checkpoint writes).
    Trace jobs asking for a GPU type are checked against the node groups of it only. A job class's
    problem is at its ``workload.job_classes.K.gpus``; the others at the option.
    Then the classes whose model does not fit an option (``layout_problems``)."""
    problems = []
    H = scenario.horizon_h
    groups: list[tuple[str, str, tuple | np.ndarray | None, JobsToFit]] = [
        (f"class {cls.name!r} needs {cls.gpus} GPUs per job", "its jobs could never run", None,
         JobsToFit(np.array([cls.gpus]), np.array([cls.start_day * HOURS_PER_DAY]), np.array([1.0]),
                   cls.placement == "disaggregated", np.array([cls.train_gpus]), cls.gpu_type, cls))
        for cls in scenario.workload.classes]
    groups += [(f"job class {cls.name!r} needs up to {cls.max_gpus} GPUs per job", "its largest jobs could never run",
                ("workload", "job_classes", k, "gpus"),
                JobsToFit(np.array([cls.max_gpus]), np.array([cls.start_day * HOURS_PER_DAY]), np.array([1.0]),
                          gpu_type=cls.gpu_type))
               for k, cls in enumerate(scenario.workload.job_classes)]
    if trace is not None:
        within = trace.submit_h < H
        hold = trace.duration_h[within].astype(float)
        ckpt = scenario.workload.checkpoint
        if ckpt is not None:
            hold = hold + checkpoint_writes(hold, ckpt.every_hours) * ckpt.write_minutes / 60.0
        # Trace jobs asking for a GPU type fit only node groups of it: checked apart, type by type.
        types = trace.gpu_type[within]
        codes = np.unique(types)
        job_ids, gpus, submit = trace.job_id[within], trace.gpus[within], trace.submit_h[within]
        for code in codes:
            mine = slice(None) if len(codes) == 1 else types == code  # one type (or any): no copies
            groups.append(("", "it could never run", job_ids[mine],
                           JobsToFit(gpus[mine], submit[mine], hold[mine],
                                     gpu_type=None if code == ANY_GPU else GPU_TYPES[int(code)])))
    for i, plan in enumerate(plans):
        for what, never, ids, jobs in groups:
            verdict = never_fit(plan, jobs, demand) if len(jobs.gpus) else None
            if verdict is None:
                continue
            bad, where = verdict.bad, verdict.why
            if isinstance(ids, tuple):  # a job class: the problem is at its gpus
                problems.append(Problem(ids, f"{what} but {where}: {never}"))
                continue
            if ids is not None:
                first = int(np.flatnonzero(bad)[0])
                others = f" ({int(bad.sum()) - 1} more such jobs)" if bad.sum() > 1 else ""
                what, never = f"job {ids[first]!r} needs {int(jobs.gpus[first])} GPUs", never + others
            at = ("options", i, verdict.field) if verdict.field else ("options", i)
            problems.append(Problem(at, f"{what} but {where}: {never}"))
    problems.extend(layout_problems(scenario, plans))
    return problems


def layout_problems(scenario: Scenario, plans: list[Plan]) -> list[Problem]:
    """An RL class whose model does not fit the GPUs of an option (rollout replicas, training
    layout), once per pool and reason; on a pool of node groups, only when no group of the type it
    asks for holds it (the class runs on those that do: ``class_pools``)."""
    problems: list[Problem] = []
    for k, cls in enumerate(scenario.workload.classes):
        seen = set()
        for plan in plans:
            if isinstance(plan, GroupedPlan):
                problems.extend(Problem(("workload", "classes", k), why) for why in _groups_refuse(plan, cls))
                continue
            for pool in pools_for(plan, cls.gpu_type):
                why = model_problem(cls, pool)
                if why is None or (pool.name, why) in seen:
                    continue
                seen.add((pool.name, why))
                problems.append(Problem(("workload", "classes", k),
                                        f"class {cls.name!r} cannot run on option {pool.name!r} ({pool.gpu.name}): {why}"))
    return problems


def _groups_refuse(plan: GroupedPlan, cls: RLClass) -> list[str]:
    """Why RL class ``cls`` can run on no node group of ``plan`` of the type it asks for (one
    message); none when some group holds its model."""
    usable = pools_for(plan, cls.gpu_type)
    if usable_pools(plan, cls.gpu_type, cls):
        return []
    whys = "; ".join(f"node group {g.name!r} ({g.gpu.name}): {model_problem(cls, g)}" for g in usable)
    others = [t for t in plan.gpu_types if t != cls.gpu_type and usable_pools(plan, t, cls)]
    fix = (f"ask for gpu_type {' or '.join(others)}, whose node groups hold it" if others else
           "give the option a node group of GPUs that hold it")
    of_type = f" of {cls.gpu_type}" if cls.gpu_type is not None else ""
    return [f"class {cls.name!r} cannot run on any node group{of_type} of option {plan.name!r}: {whys}; {fix}"]


def offload_problems(scenario: Scenario, plans: list[Plan]) -> list[Problem]:
    """A disaggregated class whose rollout GPUs, in whole instances, exceed the quota of the rollout
    pool an option names: its rollouts could never run there (docs/rollout-offload.md)."""
    problems = []
    for i, (opt, plan) in enumerate(zip(scenario.options, plans, strict=True)):
        pool = plan.home.rollout
        if opt.rollout_pool is None or pool is None or pool.max_gpus is None:
            continue
        for cls in scenario.workload.classes:
            held = int(pool.held_gpus(np.array([cls.rollout_gpus]))[0])
            if cls.placement == "disaggregated" and held > pool.max_gpus:
                problems.append(Problem(("options", i, "rollout_pool"), (
                    f"class {cls.name!r} samples on {cls.rollout_gpus} GPUs ({held} in whole instances) but "
                    f"option {pool.name!r} has a quota of {pool.max_gpus} GPUs: its rollouts could never run there")))
    return problems


def plan_problems(scenario: Scenario, plans: list[Plan], trace: TraceTable | None,
                  demand: np.ndarray | None) -> list[Problem]:
    """Every check above, in the order they are reported: jobs that never fit and class layouts,
    the scaling curves, rollout pools. ``demand``: ``serving_demand(scenario)``."""
    return fit_problems(scenario, plans, trace, demand) + scaling_problems(scenario) + offload_problems(scenario, plans)
