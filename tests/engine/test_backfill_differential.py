"""The optimised owned-cluster scheduler against a frozen copy of the one it replaced.

``RefCluster`` below is the EASY backfill (and the strict orders) of ``costsim.engine.owned`` as it
was before the optimisation, simplified but behaviour-identical: every pass sorts all running jobs
by planned end to find the head's reservation and tries each candidate by allocating and releasing
it; its pool is a brute-force list of free GPUs per node (best fit: the fewest free that fit, then
the lowest index; first fit: the lowest index; a gang: the lowest-indexed whole free nodes). Its
reservation and serving admission are frozen copies (tests/frozen_reservation.py) of the functions
the engine used before it kept serving's headroom incrementally; it shares only ``Progress``, the
records and the event plumbing with the engine. It also has the cluster's lead time (nothing starts
before delivery) and ``withdraw`` (a hybrid taking a queued job back), so
tests/engine/test_serving_differential.py can hold the engine to it under serving, failures, lead
times and withdrawals.

On random traces with multi-node jobs, with and without serving and node failures, under every
scheduler and placement, both must start every job at the same instant on the same nodes, job for
job and attempt for attempt. A second test shows the cases are not vacuous: jobs are backfilled
(some past the head's reservation), gang jobs run, failures kill jobs. (``reference_easy`` in
tests/engine/test_engine_owned.py counts GPUs only: no nodes, serving, failures or backfill depth, so it
could not hold this scheduler to its placements.)
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import deque

import numpy as np
import pytest
import simpy
from frozen_reservation import RangeMax as FrozenRangeMax
from frozen_reservation import reserve, serving_slack

from costsim.engine.backfill import EasyBackfill
from costsim.engine.events import ARRIVAL, RELEASE, TIMER, ArrivalFeed, At, Decider
from costsim.engine.owned import OwnedCluster, PoolSpec, QueuedJobs
from costsim.engine.progress import Progress
from costsim.engine.records import Recorder
from costsim.models.serving import RangeMax, hourly_demand

DEPTH = 500  # Slurm's bf_max_job_test, as in the engine


def whole(g: int, gpn: int) -> int:
    """GPUs a job holds: itself within a node, whole nodes beyond."""
    return g if g <= gpn else -(-g // gpn) * gpn


class RefPool:
    """Free GPUs per node, searched by brute force."""

    def __init__(self, nodes: int, gpn: int, placement: str):
        self.gpn, self.free, self.down, self.first = gpn, [gpn] * nodes, set(), placement == "first_fit"

    @property
    def free_gpus(self) -> int:
        return sum(self.free)

    def allocate(self, g: int):
        gpn, free = self.gpn, self.free
        if g > self.free_gpus:
            return None
        if g <= gpn:
            fits = [n for n, f in enumerate(free) if f >= g]
            if not fits:
                return None
            node = fits[0] if self.first else min(fits, key=lambda n: (free[n], n))
            free[node] -= g
            return ((node, g),)
        nodes = [n for n, f in enumerate(free) if f == gpn][:-(-g // gpn)]
        if len(nodes) < -(-g // gpn):
            return None
        for n in nodes:
            free[n] = 0
        return tuple((n, gpn) for n in nodes)

    def release(self, alloc) -> None:
        for node, n in alloc:
            if node not in self.down:
                self.free[node] += n


class RefCluster:
    """The frozen reference scheduler, kept as first written (with a lead time and withdrawals added
    since); ``log`` gets ``(job, time, allocation)`` per start."""

    def __init__(self, env, nodes, gpn, scheduler, gpus, priority, progress, rec, serving=None,
                 fail_per_node_h=0.0, repair_h=0.0, rng=None, placement="best_fit", duration_h=None, lead_h=0.0):
        self.env, self.nodes, self.gpn, self.scheduler = env, nodes, gpn, scheduler
        self.pool = RefPool(nodes, gpn, placement)
        # Serving's demand through the frozen range maximum, never the engine's.
        serving = FrozenRangeMax(serving.demand) if serving is not None else None
        self.gpus, self.progress, self.rec, self.serving = gpus, progress, rec, serving
        self.key = [-p for p in priority] if scheduler == "priority" else duration_h if scheduler == "sjf" else None
        self.running, self.on_node, self.ends = {}, {}, []
        self.fifo, self.heap, self.waiting = deque(), [], set()
        self.down_gpus, self.repair_end, self.log = 0, {}, []
        self.backfilled = self.past = 0  # jobs backfilled; of them, jobs running past the reservation
        self.serving_refusals = 0  # admissions serving refused with enough GPUs free in the pool
        self.decider = Decider(env, self._decide)
        self.ready = lead_h <= 0
        if not self.ready:
            At(env, lead_h, RELEASE, self._deliver)
        if serving is not None:
            At(env, 1.0, ARRIVAL, self._tick)
            d = serving.demand
            self.lookahead_h = 25.0 if len(d) <= 24 or bool(np.all(d[24:] >= d[:-24])) else float(len(d))
        self.rate, self.repair_h, self.rng = fail_per_node_h * nodes, repair_h, rng
        if self.rate > 0:
            At(env, max(lead_h, 0.0) + rng.exponential(1 / self.rate), RELEASE, self._fail)

    def _deliver(self, _):
        self.ready = True
        self.decider.request()

    def withdraw(self, i):
        """Take a queued job back if it never started; the queues drop it lazily."""
        if i in self.waiting and self.rec.start_h[i] != self.rec.start_h[i]:
            self.waiting.discard(i)
            self.log.append((i, self.env.now, None))
            self.decider.request()

    def _tick(self, _):
        if self.waiting:
            self.decider.request()
        At(self.env, 1.0, ARRIVAL, self._tick)

    def arrive(self, i, front=False):
        self.waiting.add(i)
        if self.key is not None:
            heapq.heappush(self.heap, (self.key[i], -1 - i if front else i))
        elif front or self.scheduler == "lifo":
            self.fifo.appendleft(i)
        else:
            self.fifo.append(i)
        self.decider.request()

    def _start(self, i, alloc):
        self.log.append((i, self.env.now, alloc))
        self.waiting.discard(i)
        now = self.env.now
        end = self.progress.begin(i, now)
        held = whole(self.gpus[i], self.gpn)
        self.rec.end_h[i] = end
        self.rec.hold(i, now, held)
        self.running[i] = (end, alloc)
        for node, _n in alloc:
            self.on_node.setdefault(node, set()).add(i)
        bisect.insort(self.ends, (end, held, i))
        v = self.progress.version[i]
        At(self.env, end - now, RELEASE, lambda _e, i=i, v=v: self._finish(i, v))

    def _stop(self, i):
        end, alloc = self.running.pop(i)
        self.pool.release(alloc)
        for node, _n in alloc:
            self.on_node[node].discard(i)
        self.ends.remove((end, self.rec.held_gpus[i], i))
        self.rec.release(i, self.env.now)

    def _finish(self, i, version):
        if version == self.progress.version[i]:
            self._stop(i)
            if self.waiting:
                self.decider.request()

    def _fail(self, _):
        now = self.env.now
        node = int(self.rng.integers(self.nodes))
        if node not in self.pool.down:
            self.pool.free[node] = 0
            self.pool.down.add(node)
            self.down_gpus += self.gpn
            for i in sorted(self.on_node.get(node, ())):
                self.progress.interrupt(i, now)
                self._stop(i)
                self.arrive(i, front=True)
            self.repair_end[node] = now + self.repair_h
            At(self.env, self.repair_h, RELEASE, lambda _e, n=node: self._repaired(n))
        At(self.env, self.rng.exponential(1 / self.rate), RELEASE, self._fail)

    def _repaired(self, node):
        del self.repair_end[node]
        self.pool.down.discard(node)
        self.pool.free[node] = self.gpn
        self.down_gpus -= self.gpn
        self.decider.request()

    def _room(self, i):
        if self.serving is None:
            return True
        cap = self.nodes * self.gpn - self.down_gpus if self.ready else 0
        slack = serving_slack(self.env.now, self.progress.hold_h(i), cap - self.pool.free_gpus, cap, self.ends,
                              self.serving.peak)
        fits = whole(self.gpus[i], self.gpn) <= slack
        self.serving_refusals += not fits and self.pool.free_gpus >= self.gpus[i]
        return fits

    def _decide(self):
        if not self.ready:
            return
        if self.key is not None:
            while self.heap:
                j = self.heap[0][1]
                i = j if j >= 0 else -1 - j
                if i not in self.waiting:
                    heapq.heappop(self.heap)
                    continue
                alloc = self.pool.allocate(self.gpus[i]) if self._room(i) else None
                if alloc is None:
                    return
                heapq.heappop(self.heap)
                self._start(i, alloc)
            return
        queue = self.fifo
        while queue:
            if queue[0] not in self.waiting:  # withdrawn
                queue.popleft()
                continue
            alloc = self.pool.allocate(self.gpus[queue[0]]) if self._room(queue[0]) else None
            if alloc is None:
                break
            self._start(queue.popleft(), alloc)
        if self.scheduler == "backfill" and len(queue) > 1 and self.pool.free_gpus > 0:
            self._backfill()

    def _backfill(self):
        queue, pool, gpus, gpn = self.fifo, self.pool, self.gpus, self.gpn
        head_g = gpus[queue[0]]
        shadow_t, shadow, slack = self._reservation(queue[0])
        wide = head_g > gpn
        good = gpn if wide else head_g
        spare = sum(1 for f in shadow if f >= good) - (-(-head_g // gpn) if wide else 1)
        now, too_big, started = self.env.now, head_g + gpn + 1, []
        for pos in range(1, min(len(queue), DEPTH)):
            if pool.free_gpus == 0:
                break
            j = queue[pos]
            g = gpus[j]
            if g >= too_big or j not in self.waiting or not self._room(j):
                continue
            alloc = pool.allocate(g)
            if alloc is None:
                too_big = g
                continue
            if now + self.progress.hold_h(j) > shadow_t:
                lost = sum(1 for node, n in alloc if shadow[node] >= good > shadow[node] - n)
                if lost > spare or whole(g, gpn) > slack:
                    pool.release(alloc)
                    continue
                spare -= lost
                slack -= whole(g, gpn)
                self.past += 1
                for node, n in alloc:
                    shadow[node] -= n
            started.append((pos, j, alloc))
        self.backfilled += len(started)
        for pos, _j, _a in reversed(started):
            del queue[pos]
        for _pos, j, alloc in started:
            self._start(j, alloc)

    def _reservation(self, head):
        gpn, g = self.gpn, self.gpus[head]
        events = [(end, self.rec.held_gpus[i], alloc, 0) for i, (end, alloc) in self.running.items()]
        events += [(t, 0, ((node, gpn),), gpn) for node, t in self.repair_end.items()]
        events.sort(key=lambda e: e[0])
        good, need = (gpn, -(-g // gpn)) if g > gpn else (g, 1)
        if self.serving is None:
            return reserve(self.env.now, list(self.pool.free), events, good, need)
        cap = self.nodes * self.gpn - self.down_gpus if self.ready else 0
        return reserve(self.env.now, list(self.pool.free), events, good, need, self.serving.peak, whole(g, gpn),
                       self.progress.hold_h(head), cap - self.pool.free_gpus, cap, self.lookahead_h)


class CheckedBackfill(EasyBackfill):
    """The engine's backfill pass; every reservation it holds over from an earlier pass must be the
    one a fresh walk over the running jobs finds now."""

    def held_reservation(self, head):
        res = super().held_reservation(head)
        t, shadow, have = self.walk(head)
        g = self.gpus[head]
        need = -(-g // self.gpn) if g > self.gpn else 1
        assert (res.shadow_t, res.shadow, res.spare) == (t, shadow, have - need), (self.env.now, head, res.shadow_t, t)
        return res


class Logged(OwnedCluster):
    """The engine's cluster, logging its starts as the reference does, with its backfill checked."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.backfill is not None:  # the same pass, state and all, with the check added
            self.backfill.__class__ = CheckedBackfill

    def start(self, i, alloc):
        self.log.append((i, self.env.now, alloc))
        super().start(i, alloc)

    def withdraw(self, i):
        taken = super().withdraw(i)
        if taken:
            self.log.append((i, self.env.now, None))
        return taken


def trace(seed: int, nodes: int, gpn: int, n: int, serving_base: int):
    """Random jobs: submit hours, GPUs (a third wider than a node), planned run hours, checkpoints."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.uniform(0, 120, n)).tolist()
    sizes = [1, 2, 3, 4, gpn, gpn + 1, 2 * gpn, 3 * gpn]
    top = nodes * gpn - math.ceil(serving_base * 1.5)  # every job fits beside serving's peak
    gpus = np.minimum(rng.choice(sizes, n, p=[.25, .15, .1, .1, .1, .1, .1, .1]), top).clip(1).tolist()
    run_h = (rng.lognormal(1.0, 1.0, n) + 0.05).tolist()
    if seed % 3 == 0:  # whole hours: ties between ends, reservations and starts
        run_h = np.ceil(run_h).tolist()
        submit = np.floor(submit).tolist()
    return submit, gpus, run_h, rng.integers(0, 3, n).tolist()


def simulate(cls, seed, scheduler, placement, serving, fail, nodes=4, gpn=4, n=120):
    """One run of ``cls`` on ``trace(seed, ...)``; returns (start log, start_h, end_h, cluster)."""
    submit, gpus, run_h, prio = trace(seed, nodes, gpn, n, 3 if serving else 0)
    return replay(cls, submit, gpus, run_h, prio, nodes, gpn, scheduler, placement, serving, fail, seed)


def replay(cls, submit, gpus, run_h, prio, nodes, gpn, scheduler, placement="best_fit", serving=False, fail=0.0,
           seed=0, *, demand=None, lead_h=0.0, wait_h=None, repair_h=2.0, restart_h=0.25, until=400):
    """One run of ``cls`` on these jobs (a checkpoint every hour, restarts of ``restart_h``).

    ``serving``: a fixed small demand; ``demand``: serving's hourly demand instead; ``lead_h``: the
    cluster's delivery; ``wait_h``: per job, hours after its arrival at which it is withdrawn if it
    has never started (a hybrid's wait limit; None: never); ``fail``: node failures per node-day."""
    n = len(submit)
    env = simpy.Environment()
    rec = Recorder(n)
    progress = Progress(run_h, lambda i: np.append(np.arange(1.0, run_h[i], 1.0), run_h[i]), [restart_h] * n, rec)
    if demand is not None:
        rm = RangeMax(demand)
    else:
        rm = RangeMax(hourly_demand(3, 0.5, 0.0, 1000)) if serving else None
    args = (env, nodes, gpn)
    common = dict(serving=rm, rng=np.random.default_rng(seed + 7), placement=placement,
                  duration_h=run_h if scheduler == "sjf" else None)
    rates = (fail / 24, repair_h) if fail else (0.0, 0.0)
    if cls is RefCluster:
        c = RefCluster(*args, scheduler, gpus, prio, progress, rec, fail_per_node_h=rates[0], repair_h=rates[1],
                       lead_h=lead_h, **common)
    else:
        spec = PoolSpec(nodes=nodes, gpus_per_node=gpn, scheduler=scheduler, placement=placement,
                        failures_per_node_h=rates[0], repair_h=rates[1], lead_time_h=lead_h)
        c = Logged(env, spec=spec, jobs=QueuedJobs(gpus=gpus, priority=prio, duration_h=common["duration_h"]),
                   progress=progress, rec=rec, serving=rm, rng=common["rng"])
        c.log = []
    arrive = c.arrive
    if wait_h is not None:
        def arrive(i, c=c):
            c.arrive(i)
            At(env, wait_h[i], TIMER, lambda _e, i=i: c.withdraw(i))
    ArrivalFeed(env, submit, arrive)
    env.run(until=until)
    return c.log, np.asarray(rec.start_h), np.asarray(rec.end_h), c


CASES = [(s, "best_fit", serving, fail) for s in ("backfill",) for serving in (False, True) for fail in (0.0, 8.0)]
CASES += [("backfill", "first_fit", False, 8.0), ("backfill", "first_fit", True, 0.0)]
CASES += [(s, p, False, 8.0) for s in ("fifo", "priority", "sjf", "lifo") for p in ("best_fit", "first_fit")]
CASES += [("fifo", "best_fit", True, 8.0)]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("scheduler,placement,serving,fail", CASES)
def test_same_schedule_as_the_reference(seed, scheduler, placement, serving, fail):
    want_log, want_start, want_end, _ = simulate(RefCluster, seed, scheduler, placement, serving, fail)
    got_log, got_start, got_end, _ = simulate(OwnedCluster, seed, scheduler, placement, serving, fail)
    assert got_log == want_log  # every attempt: job, instant, nodes and GPUs on each
    np.testing.assert_array_equal(got_start, want_start)
    np.testing.assert_array_equal(got_end, want_end)


def test_the_cases_are_not_vacuous():
    backfilled = past = gangs = killed = 0
    for seed in range(4):
        for serving, fail in ((False, 0.0), (True, 8.0)):
            log, _start, _end, c = simulate(RefCluster, seed, "backfill", "best_fit", serving, fail)
            backfilled, past = backfilled + c.backfilled, past + c.past
            gangs += sum(1 for _i, _t, a in log if len(a) > 1)
            killed += len(log) - len({i for i, _t, _a in log})
    assert backfilled > 300 and past > 100 and gangs > 200 and killed > 100, (backfilled, past, gangs, killed)


def test_a_size_refused_past_the_reservation_is_tried_again_once_the_pool_changes():
    # 4 nodes of 8. At 0: a (5 GPUs, 100 h) on node 0, b (7, 10 h) on node 1, c (8, 10 h) on node 2,
    # d (8, 100 h) on node 3. At 1 the head (16) is reserved at 10 on nodes 1 and 2, none to spare.
    # p (1 GPU, 50 h) would best-fit node 1 (1 free) and keep it from the head: refused. q (2, 2 h)
    # ends by 10, so it starts on node 0 (3 free -> 1). Now r (1 GPU, 50 h) best-fits node 0 (1 free,
    # lowest index), which the head does not need: it starts at 1. p starts with the head at 10
    # (node 0: 2 free once q has ended).
    submit = [0, 0, 0, 0, 1, 1, 1, 1]
    gpus = [5, 7, 8, 8, 16, 1, 2, 1]
    run_h = [100, 10, 10, 100, 5, 50, 2, 50]
    want = replay(RefCluster, submit, gpus, run_h, [0] * 8, 4, 8, "backfill")
    got = replay(OwnedCluster, submit, gpus, run_h, [0] * 8, 4, 8, "backfill")
    assert [(i, t) for i, t, _a in want[0]][4:] == [(6, 1), (7, 1), (4, 10), (5, 10)]  # by hand
    assert want[0][5][2] == ((0, 1),)  # r on node 0
    assert got[0] == want[0]


@pytest.mark.parametrize("seed,fail", [(0, 0.0), (1, 8.0)])
def test_same_schedule_with_a_queue_deeper_than_the_backfill_depth(seed, fail):
    """800 jobs on 16 GPUs: the queue passes the 500-job backfill depth, where the optimised pass
    resumes its scan (found by review: the other cases never queue that deep)."""
    rng = np.random.default_rng(seed)
    n = 800
    submit = np.sort(rng.uniform(0, 20, n)).tolist()
    gpus = rng.choice([1, 2, 3, 4, 5, 8, 12], n).tolist()
    run_h = (rng.lognormal(0.5, 1.0, n) + 0.05).tolist()
    want = replay(RefCluster, submit, gpus, run_h, [0] * n, 4, 4, "backfill", fail=fail, seed=seed)
    got = replay(OwnedCluster, submit, gpus, run_h, [0] * n, 4, 4, "backfill", fail=fail, seed=seed)
    assert got[0] == want[0]
