"""Work plans: how long each job holds its GPUs on one option, and what it gets done.

The same jobs (``costsim.workload``) meet each option's hardware here: RL iterations are timed
by ``costsim.models.rl`` — vectorised over every iteration of every job of a class at once — and
summed into checkpoint segments with numpy. A checkpoint write follows every
``every_iterations`` iterations (trace jobs: every ``every_hours`` of work), except at the end.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from costsim.models import offload, rl
from costsim.models.reliability import checkpoint_writes
from costsim.plan.class_pools import usable_pools
from costsim.plan.fleet import Plan, node_group_pool
from costsim.plan.hardware import hardware, shape
from costsim.plan.options import CloudPlan, OwnedPlan
from costsim.scenario import Problem, Scenario, ScenarioError
from costsim.scenario.classes import RLClass
from costsim.units import SECONDS_PER_HOUR
from costsim.workload.jobs import JobTable

PHASES = ("rollout", "logprobs", "scoring", "update", "sync", "overhead", "total", "straggler")


@dataclass(frozen=True)
class Segment:
    """Work between checkpoints: hours of work, iterations it completes, then hours writing."""

    work_h: float
    iterations: int
    write_h: float


@dataclass(frozen=True)
class Offloads:
    """Per job, its rollouts on a rented pool while it trains on this option (docs/rollout-offload.md,
    ``costsim.models.offload``); zeros and ``offloads`` false for a job that does not offload.

    ``home_gpus``: GPUs it asks of this option's pool (its training GPUs when it offloads, else all
    of them);
    ``offloads``: whether it samples on the option's rollout pool; ``instances`` of ``gpus_per_instance`` GPUs it rents there; ``share``: instance-hours
    billed per instance and hour it holds its GPUs at home (availability × (1 + preemptions × billed
    restart)); ``delivery_h``: hours from each start at home to its rollout instances' delivery;
    ``first_h``: hours it holds its GPUs at home before its first iteration (delivery, startup, the
    first weight push; a restart takes at least as long, as it re-acquires them); ``lost_samples``:
    samples lost to preemptions and generated again over its whole planned run (expected);
    ``useful``: the share of its planned run that is work, the rest the stretch of the pool's
    preemptions (1 without offload)."""

    home_gpus: np.ndarray
    offloads: np.ndarray
    instances: np.ndarray
    gpus_per_instance: np.ndarray
    share: np.ndarray
    delivery_h: np.ndarray
    first_h: np.ndarray
    lost_samples: np.ndarray
    useful: np.ndarray

    @classmethod
    def none(cls, gpus: np.ndarray) -> Offloads:
        n = len(gpus)
        return cls(np.asarray(gpus).copy(), np.zeros(n, dtype=bool), np.zeros(n, dtype=np.int64),
                   np.zeros(n, dtype=np.int64), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n), np.ones(n))

    def without(self, mask: np.ndarray, gpus: np.ndarray) -> Offloads:
        """The jobs in ``mask`` not offloaded (they ran on a hybrid's burst, with all their GPUs); each
        keeps ``home_gpus``, what it asked of the base while it waited there."""
        none = Offloads.none(gpus)
        return Offloads(*(getattr(self, f) if f == "home_gpus" else np.where(mask, getattr(none, f), getattr(self, f))
                          for f in self.__dataclass_fields__))


@dataclass(frozen=True)
class WorkPlan:
    """One option's plan for every job of a JobTable.

    ``run_h``: hours each job holds its GPUs (work plus checkpoint writes). ``iter_h``: hours of
    each RL iteration (aligned with ``JobTable.length_sum``). ``phase_s``: per job, Σ seconds in
    each of ``PHASES`` over its iterations (zeros for trace jobs). ``every``/``write_h`` per job:
    checkpoint spacing (iterations for RL jobs, hours for trace jobs; 0: none) and write hours.
    """

    run_h: np.ndarray
    iter_h: np.ndarray
    phase_s: np.ndarray
    every: np.ndarray
    write_h: np.ndarray
    jobs: JobTable
    restart_h: np.ndarray  # per job: hours to restart from a checkpoint after an interruption
    offload: Offloads | None = None  # None: no job offloads its rollouts on this option

    @property
    def home_gpus(self) -> np.ndarray:
        """GPUs each job asks of this option (an offloaded job: its training GPUs)."""
        return self.jobs.gpus if self.offload is None else self.offload.home_gpus

    def boundaries(self, i: int) -> np.ndarray:
        """Points on job i's planned run (hours) where a checkpoint write completes; the last is its end."""
        return np.cumsum([s.work_h + s.write_h for s in self.segments(i)])

    def segments(self, i: int) -> list[Segment]:
        """Job i's checkpoint segments; their work and writes add up to ``run_h[i]``."""
        j = self.jobs
        n, every, write = int(j.iterations[i]), self.every[i], float(self.write_h[i])
        if n == 0:  # trace job: every_hours of work per segment
            work = float(j.duration_h[i])
            if every <= 0:
                return [Segment(work, 0, 0.0)]
            cuts = int(np.ceil(work / every - 1e-9))
            spans = [min(every, work - k * every) for k in range(cuts)]
            return [Segment(float(s), 0, write if k < cuts - 1 else 0.0) for k, s in enumerate(spans)]
        a = int(j.iter_start[i])
        hours = self.iter_h[a:a + n]
        bounds = list(range(0, n, int(every))) + [n]
        return [Segment(float(hours[lo:hi].sum()), hi - lo, write if hi < n else 0.0)
                for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]

    def merged(self, use_other: np.ndarray, other: WorkPlan) -> WorkPlan:
        """This plan, with the jobs in ``use_other`` taken from ``other`` (a hybrid's burst part)."""
        j = self.jobs
        per_iter = np.zeros(len(self.iter_h), dtype=bool)
        per_iter[iteration_rows(j.iter_start[use_other], j.iterations[use_other])] = True
        return WorkPlan(
            run_h=np.where(use_other, other.run_h, self.run_h),
            iter_h=np.where(per_iter, other.iter_h, self.iter_h),
            phase_s=np.where(use_other[:, None], other.phase_s, self.phase_s),
            every=self.every,
            write_h=self.write_h,
            jobs=j,
            restart_h=self.restart_h,
            offload=None if self.offload is None else self.offload.without(use_other, j.gpus),
        )

    def iterations_done(self, i: int, planned_h: float) -> int:
        """Iterations job i has completed once ``planned_h`` hours of its planned run are done."""
        n = int(self.jobs.iterations[i])
        if n == 0:
            return 0
        a = int(self.jobs.iter_start[i])
        k = np.arange(1, n + 1)
        ends = np.cumsum(self.iter_h[a:a + n]) + (k - 1) // int(self.every[i]) * self.write_h[i]
        return int(np.searchsorted(ends, planned_h + 1e-12, side="right"))


def iteration_rows(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Rows of every iteration of the given jobs in the concatenated iteration arrays, job after job."""
    return np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))


def plan_work(scenario: Scenario, jobs: JobTable, plan: OwnedPlan | CloudPlan, *,
              shared: dict[tuple[int, str], rl.PhaseTimes] | None = None) -> WorkPlan:
    """Time every job of ``jobs`` on one pool (an owned or cloud option, or a hybrid's part).

    ``shared``: phase times already computed for these same ``jobs``, by (class index, the pool's
    ``rl.Hardware`` as text); filled here. Options whose GPUs and fabric are the same (a cluster at
    256, 384 and 512 GPUs) time a class's iterations identically, so one call times them for all:
    pass one dict to every option's call for one job table, never across job tables."""
    n = len(jobs)
    run_h = np.zeros(n)
    every = np.zeros(n)
    write_h = np.zeros(n)
    phase_s = np.zeros((n, len(PHASES)))
    iter_h = np.zeros(len(jobs.length_sum))
    restart_h = np.zeros(n)

    trace = np.flatnonzero(jobs.class_index < 0)
    ckpt = scenario.workload.checkpoint
    run_h[trace] = jobs.duration_h[trace]
    if ckpt is not None and len(trace):
        every[trace], write_h[trace] = ckpt.every_hours, ckpt.write_minutes / 60.0
        restart_h[trace] = ckpt.restart_minutes / 60.0
        run_h[trace] += checkpoint_writes(jobs.duration_h[trace], ckpt.every_hours) * write_h[trace]

    hw = hardware(plan)
    timed = {} if shared is None else shared
    pool = plan.rollout if plan.is_pool else None  # the option's rollout_pool
    takes = [pool is not None and cls.placement == "disaggregated" for cls in scenario.workload.classes]
    off = Offloads.none(jobs.gpus) if any(takes) else None
    for k, cls in enumerate(scenario.workload.classes):
        idx = np.flatnonzero(jobs.class_index == k)
        if not len(idx):
            continue
        counts = jobs.iterations[idx]
        starts = jobs.iter_start[idx]
        its = iteration_rows(starts, counts)
        first = np.cumsum(counts) - counts
        lengths = (jobs.length_sum[its], jobs.length_max[its], jobs.length_sq_sum[its])
        if takes[k]:
            assert off is not None and pool is not None  # takes[k]: a rollout pool, whose offloads are kept
            pt, lost, nominal_s = _offloaded(cls, hw, _offload_columns(off, idx, cls, pool, hw, plan.rollout_link_gb_s),
                                             *lengths)
            if not np.isfinite(pt.total).all():
                raise ScenarioError(f"scenario {scenario.name!r}", [Problem(("workload", "classes", k), (
                    f"class {cls.name!r}: preemptions on {pool.name!r} (the rollout_pool of option {plan.name!r}) "
                    "destroy samples as fast as its rollouts make them (docs/rollout-offload.md): its iterations "
                    "would never end; choose a pool preempted less often or a shorter restart"))])
            off.lost_samples[idx] = np.add.reduceat(lost, first)
        else:
            key = (k, repr(hw))
            if key not in timed:
                timed[key] = rl.phase_times(shape(cls), hw, *lengths)
            pt = timed[key]
        iter_h[its] = pt.total / SECONDS_PER_HOUR
        for p, name in enumerate(PHASES):
            phase_s[idx, p] = np.add.reduceat(getattr(pt, name), first)
        every[idx] = cls.checkpoint.every_iterations
        write_h[idx] = cls.checkpoint.write_minutes / 60.0
        restart_h[idx] = cls.checkpoint.restart_minutes / 60.0
        writes = (counts - 1) // cls.checkpoint.every_iterations
        run_h[idx] = phase_s[idx, PHASES.index("total")] / SECONDS_PER_HOUR + writes * write_h[idx]
        if takes[k]:
            # Work done is the run without preemptions (the stretch is time lost, not compute), and a
            # restart re-acquires rollout instances while the checkpoint reloads: the longer of the two.
            assert off is not None
            nominal_h = np.add.reduceat(nominal_s, first) / SECONDS_PER_HOUR + writes * write_h[idx]
            off.useful[idx] = nominal_h / run_h[idx]
            restart_h[idx] = np.maximum(restart_h[idx], off.first_h[idx])
    return WorkPlan(run_h=run_h, iter_h=iter_h, phase_s=phase_s, every=every, write_h=write_h, jobs=jobs,
                    restart_h=restart_h, offload=off)


@dataclass(frozen=True)
class _Pool:
    """What an offloaded class's iteration reads of its rollout pool."""

    hardware: rl.Hardware
    link_gb_s: float
    preemptions_per_day: float
    restart_h: float
    push_s: float
    startup_h: float
    instances: int


def _offload_columns(off: Offloads, idx: np.ndarray, cls: RLClass, pool: CloudPlan, home: rl.Hardware,
                     link: float) -> _Pool:
    """Fill ``off`` for a class's jobs ``idx`` offloading to ``pool`` over a ``link`` of GB/s from the
    ``home`` hardware, and return what their iterations read of it. A node failure on the pool loses
    the instance's samples as a preemption does (the provider swaps it): both count in the rate."""
    per_day = (pool.preemptions_per_instance_h + pool.failures_per_node_h) * 24.0
    restart_h = pool.reacquire_delay_h + pool.provisioning_delay_h + pool.startup_h
    push_s = offload.weight_push_s(shape(cls), home, link)
    instances = -(-cls.rollout_gpus // pool.gpus_per_instance)
    off.home_gpus[idx] = cls.train_gpus
    off.offloads[idx] = True
    off.instances[idx] = instances
    off.gpus_per_instance[idx] = pool.gpus_per_instance
    off.share[idx] = offload.instance_hours(SECONDS_PER_HOUR, 1, per_day, restart_h, push_s, pool.startup_h)
    off.delivery_h[idx] = pool.provisioning_delay_h
    off.first_h[idx] = pool.provisioning_delay_h + pool.startup_h + push_s / SECONDS_PER_HOUR
    return _Pool(hardware(pool), link, per_day, restart_h, push_s, pool.startup_h, instances)


def _offloaded(cls: RLClass, home: rl.Hardware, pool: _Pool, len_sum, len_max, len_sq
               ) -> tuple[rl.PhaseTimes, np.ndarray, np.ndarray]:
    """Phase times of an offloaded class's iterations with its pool's preemptions, the samples each
    iteration loses (``costsim.models.offload``), and each iteration's seconds without preemptions."""
    sh = shape(cls)
    pt, pipelined = offload.split_phase_times(sh, home, pool.hardware, pool.link_gb_s, len_sum, len_max, len_sq)
    inflight = offload.inflight_samples(sh, pool.hardware, len_sum, len_sq)
    o = offload.offloaded(pt, sh.asynchronous, len_sum, len_sq, inflight, pool.instances, pool.preemptions_per_day,
                          pool.restart_h, pool.push_s, pool.startup_h, pipelined)
    return replace(pt, rollout=o.rollout_s, total=o.total_s), o.lost_samples, pt.total


def group_access(scenario: Scenario, jobs: JobTable, plan: Plan) -> list[np.ndarray] | None:
    """Per node group of ``plan``, per job: whether the job may run there — the GPU type its class
    asks for (``JobTable.gpu_type``), an RL job only on groups whose GPUs hold its model
    (``plan.class_pools.usable_pools``) — and the group could ever hold it. None for an option
    that is not a pool of node groups."""
    pool = node_group_pool(plan)
    if pool is None:
        return None
    allowed = pool.may_use(jobs.gpu_type)
    for k, cls in enumerate(scenario.workload.classes):
        usable = {g.name for g in usable_pools(pool, cls.gpu_type, cls)}
        of_class = jobs.class_index == k
        for mask, group in zip(allowed, pool.groups, strict=True):
            if group.name not in usable:
                mask &= ~of_class
    return [mask & holds for mask, holds in zip(allowed, pool.can_hold(jobs.gpus), strict=True)]
