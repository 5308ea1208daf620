"""An owned (or committed) GPU cluster: delivered after its lead time, run by a scheduler.

Schedulers:
- ``fifo``: strict submit order; the head job blocks everything behind it.
- ``priority``: highest ``priority`` first, then submit order; strict like fifo.
- ``sjf``: shortest requested duration first (trace jobs: ``duration_h``; RL jobs: their planned
  run on this option), then submit order; strict like fifo (the shortest waiting job blocks the rest).
- ``lifo``: the latest submitted job first (jobs submitted at one instant: the last in table order
  first); strict like fifo.
- ``backfill``: EASY backfilling. Jobs start in submit order while they fit. When the head does
  not fit, it gets a reservation at the earliest time it will (``costsim.engine.reservation``):
  running jobs end at their planned ends, nodes under repair return at their repair's end and,
  with serving, the head's GPUs must fit beside RL and serving over its whole run. A later job may
  start now if it fits now and either ends by that time or leaves the head both its nodes and
  the GPUs serving needs beside it then. At most ``BACKFILL_DEPTH`` queued jobs are examined per
  pass (Slurm's ``bf_max_job_test`` default). When nothing in sight makes room for the head
  (serving alone always leaves too little), later jobs start whenever they fit. The pass, and what
  keeps it near FIFO's cost on million-job traces, is ``costsim.engine.backfill``.

Tranches: a cluster bought over time (``PoolSpec.later``) has its later tranches' nodes out of
service until their delivery, as if under repair: each delivery brings them in and asks for a
pass, and a backfill reservation counts on them as on a repair's end. ``fits_ever`` is against
the most GPUs in service together from now on (``PoolSpec.in_service``: tranches to come, leases
not yet returned).

A lease ending within the horizon (``PoolSpec.returns``) takes its nodes out for good; a job on
them is interrupted as by a failure (no draining ahead: its lost work is an upper bound). A queued
job (interrupted or not) that can then never fit here again is handed to ``on_stranded`` (a fleet's
router bursts it); without one it waits for good.

Node failures (optional) are a Poisson process over all nodes; a failed node is out for its
repair time (capacity drops) and kills the jobs on it: they fall back to their last checkpoint,
give back their other nodes and rejoin the queue at its head (priority, sjf: ahead of the jobs
with the same key), to pay their restart time when they
start again. The backfill reservation uses planned ends, which failures can break. A job's hold
time is always ``Progress.hold_h``: its restart (once interrupted) plus the rest of its planned run.

Serving (optional) takes GPUs first: an RL job starts only if, at every moment of its planned run,
the RL GPUs held (running jobs release theirs as they end) plus its own plus serving's demand in
that hour fit the cluster's GPUs in service (fewer after a lease's return). Serving is therefore
never short while RL runs, and no job is preempted for it — except after a node failure, when
serving gets what is left until RL jobs end or the node is repaired (the shortfall is reported).
While jobs wait, the cluster re-decides on the hours serving's demand might let one start (the first
whole hour at or after the time its last pass names: ``_wake_by``), besides every change; an arrival
asks for a pass only if the new job might start before that time (``ServingHeadroom.starts_from``).
A job that serving's demand leaves too little room for at every hour from now to the horizon can
never run here (``fits_ever``): a hybrid sends it to its burst, and scenario checks reject it on a
cluster alone.

Every event that frees or withdraws capacity (a job's end, a delivery, a repair, a job taken back
by a hybrid) asks for a scheduling pass at that instant.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import simpy

from costsim.engine.backfill import BACKFILL_DEPTH, EasyBackfill
from costsim.engine.events import ARRIVAL, RELEASE, At, Decider
from costsim.engine.headroom import ServingHeadroom
from costsim.engine.pool import Allocation, NodePool
from costsim.engine.progress import Progress
from costsim.engine.records import Recorder, integers
from costsim.engine.reservation import INF
from costsim.engine.spec import PoolSpec, QueuedJobs
from costsim.engine.strict import strict_pass
from costsim.models.serving import RangeMax
from costsim.plan.options import held_gpus
from costsim.plan.tranches import InService

__all__ = ["BACKFILL_DEPTH", "OwnedCluster", "PoolSpec", "QueuedJobs"]


class OwnedCluster:
    """Runs jobs (by job index) on ``nodes`` nodes; jobs arrive through ``arrive(i)`` and a queued
    job can be taken back with ``withdraw(i)``. Also a reserved pool: nodes are instances, no lead time.

    ``backfill``: the EASY backfill pass the cluster runs after its strict pass (``backfill``
    scheduler only, else None)."""

    def __init__(self, env: simpy.Environment, *, spec: PoolSpec, jobs: QueuedJobs, progress: Progress,
                 rec: Recorder, serving: RangeMax | None = None, rng: np.random.Generator | None = None):
        """``spec``: the pool; ``jobs``: what the scheduler reads of each job; ``serving``: the
        inference demand that takes GPUs first; ``rng``: node failures' stream (needed with failures)."""
        nodes, gpus_per_node, lead_time_h, scheduler = spec.nodes, spec.gpus_per_node, spec.lead_time_h, spec.scheduler
        gpus, priority, duration_h = jobs.gpus, jobs.priority, jobs.duration_h
        failures_per_node_h, repair_h, horizon_h, placement = (spec.failures_per_node_h, spec.repair_h, spec.horizon_h,
                                                               spec.placement)
        self.env = env
        self.nodes = nodes
        self.gpn = gpus_per_node
        self.pool = NodePool(nodes, gpus_per_node, placement)
        self.gpus = gpus
        self.priority = priority
        # Heap-ordered schedulers queue (key, index): the key list is built once, not per arrival.
        if scheduler == "priority":
            self.key: Sequence[float] | None = integers(-np.asarray(priority, dtype=np.int64))
        elif scheduler == "sjf":
            assert duration_h is not None, "sjf orders by each job's requested duration"
            self.key = duration_h
        else:
            self.key = None
        self.lifo = scheduler == "lifo"
        self.progress = progress
        self.rec = rec
        self.scheduler = scheduler
        self.serving = serving
        self.running: dict[int, tuple[float, Allocation]] = {}
        self.on_node: dict[int, set[int]] = {}
        # (end, held, job) of running jobs sorted by planned end, kept on every start and stop when
        # backfill or serving reads it (the reservation walks it instead of sorting every pass).
        self.ends: list[tuple[float, int, int]] = []
        self.track_ends = serving is not None or scheduler == "backfill"
        self.changes = 0  # bumped by every start, stop, failure, repair, delivery and withdrawal
        # The last pass: ``changes`` after it, and a time before which another would start nothing
        # (until then, nothing changing and no job arriving, a pass returns at once).
        self.quiet_changes = -1
        self.quiet_until = -INF
        self.fifo: deque[int] = deque()
        self.heap: list[tuple[float, int]] = []
        self.waiting: set[int] = set()  # queued and not withdrawn (the queues drop the rest lazily)
        self.repair_end: dict[int, float] = {}  # node under repair (or not yet delivered) -> when it returns
        self.down_gpus = 0
        self.gone: set[int] = set()  # nodes back with the lessor (a lease ended): never in service again
        self.most_in_service = spec.in_service or InService.of([(lead_time_h, INF, nodes * gpus_per_node)])
        self._await_tranches(spec.later)
        self.ready = lead_time_h <= 0
        self.lead_time_h = lead_time_h
        self.decider = Decider(env, self.decide)  # a fleet puts its shared one here (engine.fleet)
        self.on_start: Callable[[int], None] | None = None  # a fleet's: job i starts here now
        # A fleet's: job i, dropped from the queue, can never fit here again (a lease took nodes back).
        self.on_stranded: Callable[[int], None] | None = None
        self.capacity_t = [0.0]
        self.capacity_gpus = [self.in_service]  # later tranches' nodes are down until delivered
        if not self.ready:
            At(env, lead_time_h, RELEASE, self._deliver)
        self.wake_at: float | None = None  # the hour of the earliest pending look (``_wake_by``)
        if serving is not None:
            demand = serving.demand[:max(1, math.ceil(min(horizon_h, len(serving.demand))))]
            # Least serving demand from each hour to the horizon: whether a job can ever fit from now.
            self.serving_floor = np.minimum.accumulate(demand[::-1])[::-1].tolist()
        self.headroom = ServingHeadroom(host=self, env=env, pool=self.pool, ends=self.ends,
                                        demand=serving) if serving is not None else None
        self.backfill = EasyBackfill(host=self, env=env, pool=self.pool, gpus=gpus, gpus_per_node=gpus_per_node,
                                     queue=self.fifo, waiting=self.waiting, running=self.running, ends=self.ends,
                                     repair_end=self.repair_end, progress=progress,
                                     headroom=self.headroom) if scheduler == "backfill" else None
        self.failure_rate = failures_per_node_h * nodes
        # Which jobs run on a node matters only if nodes fail or go back to a lessor.
        self.track_nodes = self.failure_rate > 0 or bool(spec.returns)
        for returned_h, first, n in spec.returns:
            At(env, returned_h, RELEASE, lambda _e, ns=range(first, first + n): self._returned(ns))
        self.repair_h = repair_h
        self.rng = rng
        if self.failure_rate > 0:
            assert rng is not None, "node failures are drawn from rng"
            At(env, max(lead_time_h, 0.0) + rng.exponential(1 / self.failure_rate), RELEASE, self._fail)

    def _await_tranches(self, later: tuple[tuple[float, int], ...]) -> None:
        """Later tranches' nodes are down until their delivery, which each backfill reservation
        sees coming as it sees a repair's end; node failures skip them (a node not there yet
        cannot fail: drawn over every node, those draws are thinned away)."""
        first = self.nodes - sum(n for _, n in later)
        for delivery_h, n in later:
            nodes = range(first, first + n)
            first += n
            for node in nodes:
                self.pool.down_node(node)
                self.repair_end[node] = delivery_h
            self.down_gpus += n * self.gpn
            At(self.env, delivery_h, RELEASE, lambda _e, ns=nodes: self._tranche_delivered(ns))

    def _tranche_delivered(self, nodes: range) -> None:
        for node in nodes:
            del self.repair_end[node]
            self.pool.up(node)
        self.down_gpus -= len(nodes) * self.gpn
        self._unplanned()
        self._capacity_changed()
        self.decider.request()

    @property
    def in_service(self) -> int:
        return (self.nodes * self.gpn - self.down_gpus) if self.ready else 0

    def _capacity_changed(self) -> None:
        self.capacity_t.append(self.env.now)
        self.capacity_gpus.append(self.in_service)

    # -- events ---------------------------------------------------------------------------
    def _deliver(self, _: Any) -> None:
        self.ready = True
        self._unplanned()
        self._capacity_changed()
        self.decider.request()

    def _wake_by(self, quiet_until: float) -> None:
        """Look again on the first whole hour after now and at or after ``quiet_until`` (the last
        pass's time before which another starts nothing, the cluster unchanged): serving's demand
        moves on the hour, and a change before then asks for its own pass. One look pending at a
        time, the earliest; a later one left from before only asks for a pass that finds nothing."""
        pending = self.wake_at
        if quiet_until == INF or (pending is not None and pending <= quiet_until):
            return  # none needed, or the pending look comes first (it is after now, at or before the hour)
        assert quiet_until > -INF, "a pass names a time, never -inf"
        now = self.env.now
        hour = max(math.ceil(quiet_until), math.floor(now) + 1.0)
        if pending is not None and pending <= hour:
            return
        self.wake_at = hour
        delay = hour - now
        while now + delay < hour:  # now + (hour − now) rounded below the hour: the same instants, exactly
            delay = math.nextafter(delay, INF)
        while now + delay > hour:
            delay = math.nextafter(delay, -INF)
        At(self.env, delay, ARRIVAL, self._wake)

    def _wake(self, _: Any) -> None:
        if self.wake_at == self.env.now:
            self.wake_at = None
        if self.waiting:
            self.decider.request()

    def fits_ever(self, gpus: int) -> bool:
        """Could a job of ``gpus`` start here at some hour from now (or delivery) to the horizon, with
        all nodes in service? The most GPUs in service together from now on (tranches delivered,
        leases not yet returned), less serving's least demand over those hours."""
        room = self.most_in_service.most_from(self.env.now)
        if self.serving is not None:
            floor = self.serving_floor
            room -= floor[min(int(max(self.env.now, self.lead_time_h)), len(floor) - 1)]
        return held_gpus(gpus, self.gpn) <= room

    def withdraw(self, i: int) -> bool:
        """Take a queued job back (it will run elsewhere); False if it is not waiting or has ever
        started here (a job interrupted by a failure stays: its work and GPU-hours are here).
        Withdrawing frees the queue's head, so it asks for a scheduling pass."""
        if i in self.waiting and self.rec.start_h[i] != self.rec.start_h[i]:  # NaN: never started
            self.waiting.discard(i)
            self.changes += 1
            self.decider.request()
            return True
        return False

    def forget(self, i: int) -> None:
        """Drop job i from the queue: it started on another pool of a fleet (which frees the queue's
        head, so it asks for a scheduling pass)."""
        if i in self.waiting:
            self.waiting.discard(i)
            self.changes += 1
            self.decider.request()

    def arrive(self, i: int, front: bool = False) -> None:
        """Queue job i (``front``: a job that failed keeps its place at the head)."""
        self.waiting.add(i)
        headroom = self.headroom
        if headroom is None or self.changes != self.quiet_changes or self.quiet_until <= self.env.now:
            self.quiet_until = -INF  # a pass is due anyway (without serving, cheap at a full pool)
        elif self.ready:  # before the last pass's quiet time, a pass could start only this job or one it goes before
            self.quiet_until = min(self.quiet_until, headroom.starts_from(self.gpus[i], self.progress.hold_h(i)))
        # (else: nothing starts before the delivery, which asks for a pass)
        if self.backfill is not None:
            self.backfill.queued(i)
        if self.key is not None:
            heapq.heappush(self.heap, (self.key[i], -1 - i if front else i))
        elif front or self.lifo:
            self.fifo.appendleft(i)
        else:
            self.fifo.append(i)
        self.decider.request()

    def start(self, i: int, alloc: Allocation) -> None:
        """Start job i now on ``alloc`` (already taken from the pool)."""
        self.waiting.discard(i)
        now = self.env.now
        end = self.progress.begin(i, now)
        rec = self.rec
        g = self.gpus[i]
        held = g if g <= self.gpn else held_gpus(g, self.gpn)
        if self.on_start is not None:
            self.on_start(i)
        rec.end_h[i] = end
        rec.hold(i, now, held)
        self.running[i] = (end, alloc)
        self.changes += 1
        if self.headroom is not None:
            self.headroom.moved()
        if self.track_nodes:
            for node, _n in alloc:
                self.on_node.setdefault(node, set()).add(i)
        if self.track_ends:
            bisect.insort(self.ends, (end, held, i))
        v = self.progress.version[i]
        At(self.env, end - now, RELEASE, lambda _e, i=i, v=v: self._finish(i, v))

    def _stop(self, i: int) -> None:
        """Job i gives back its GPUs (finished or killed)."""
        end, alloc = self.running.pop(i)
        self.pool.release(alloc)
        self.changes += 1
        if self.headroom is not None and self.env.now != end:  # RL from now on moved only if not as planned
            self.headroom.moved()
        if self.track_nodes:
            for node, _n in alloc:
                self.on_node[node].discard(i)
        if self.track_ends:
            del self.ends[bisect.bisect_left(self.ends, (end, self.rec.held_gpus[i], i))]
        self.rec.release(i, self.env.now)

    def _finish(self, i: int, version: int) -> None:
        if version != self.progress.version[i]:
            return  # an earlier attempt's end: the job was killed since
        self._stop(i)
        if self.waiting:
            self.decider.request()

    def _fail(self, _: Any) -> None:
        now = self.env.now
        rng = self.rng
        assert rng is not None  # failures are scheduled only with an rng
        node = int(rng.integers(self.nodes))
        if not self.pool.is_down(node):  # a node under repair cannot fail again
            self.pool.down_node(node)
            self._unplanned()
            self.down_gpus += self.gpn
            self._capacity_changed()
            for i in sorted(self.on_node.get(node, ())):
                self.progress.interrupt(i, now)
                self._stop(i)
                self.arrive(i, front=True)
            self.repair_end[node] = now + self.repair_h
            At(self.env, self.repair_h, RELEASE, lambda _e, n=node: self._repaired(n))
            if self.serving is not None and self.waiting:
                # Capacity fell without a pass: look on the next hour, as after any change, rather
                # than rest on the argument that less capacity never lets a waiting job start.
                self._wake_by(now)
        At(self.env, rng.exponential(1 / self.failure_rate), RELEASE, self._fail)

    def _returned(self, nodes: range) -> None:
        """A lease's term ends: its nodes leave for good, the jobs on them interrupted as by a failure."""
        now = self.env.now
        hit: set[int] = set()
        for node in nodes:
            self.gone.add(node)
            if self.pool.is_down(node):  # under repair: it never comes back (its repair end is void)
                self.repair_end.pop(node, None)
                continue
            self.pool.down_node(node)
            self.down_gpus += self.gpn
            hit |= self.on_node.get(node, set())
        self._unplanned()
        self._capacity_changed()
        for i in sorted(hit):
            self.progress.interrupt(i, now)
            self._stop(i)
            self.arrive(i, front=True)
        if self.on_stranded is not None:
            # Alone, a job too big for what is left waits (one never started is counted waiting; one
            # interrupted shows as unfinished work); a fleet can run
            # it elsewhere, started here or not, rather than leave it queued for good.
            for i in sorted(i for i in self.waiting if not self.fits_ever(self.gpus[i])):
                self.waiting.discard(i)
                self.changes += 1
                self.on_stranded(i)
        self.decider.request()

    def _repaired(self, node: int) -> None:
        if node in self.gone:  # went back to the lessor while under repair
            return
        del self.repair_end[node]
        self.pool.up(node)
        self._unplanned()
        self.down_gpus -= self.gpn
        self._capacity_changed()
        self.decider.request()

    def _unplanned(self) -> None:
        """Capacity changed other than by a planned end (delivery, failure, repair): the held
        reservation is void."""
        self.changes += 1
        if self.backfill is not None:
            self.backfill.unplanned()
        if self.headroom is not None:
            self.headroom.moved()

    def refused_until(self, i: int) -> float:
        """``-inf`` if job i leaves serving its GPUs for its whole run when started now (always,
        without serving); else a time before which it stays refused, the cluster unchanged."""
        headroom = self.headroom
        if headroom is None:
            return -INF
        return headroom.refused_until(held_gpus(self.gpus[i], self.gpn), self.progress.hold_h(i))

    # -- decisions ------------------------------------------------------------------------
    def decide(self) -> None:
        """A scheduling pass now, unless the last one says it would start nothing."""
        # With serving, most passes (on the hour, as its demand moves) start nothing: the last pass
        # says until when that holds, the cluster and its queue unchanged.
        if self.changes != self.quiet_changes or self.env.now >= self.quiet_until:
            self.quiet_until = self._pass()
            self.quiet_changes = self.changes
        if self.serving is not None and self.waiting:
            self._wake_by(self.quiet_until)

    def _pass(self) -> float:
        """One scheduling pass (``costsim.engine.strict``): a time before which another would start
        nothing, the cluster and its queue unchanged."""
        return strict_pass(self)
