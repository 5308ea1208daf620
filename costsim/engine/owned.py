"""An owned (or committed) GPU cluster: delivered after its lead time, run by a scheduler.

Schedulers:
- ``fifo``: strict submit order; the head job blocks everything behind it.
- ``priority``: highest ``priority`` first, then submit order; strict like fifo.
- ``backfill``: EASY backfilling. Jobs start in submit order while they fit. When the head does
  not fit, it gets a reservation at the earliest time enough running jobs will have ended
  (their planned ends). A later job may start now if it fits now and either ends by that time
  or leaves room for the head's reservation. At most ``BACKFILL_DEPTH`` queued jobs are examined
  per pass (Slurm's ``bf_max_job_test`` default).

Node failures (optional) are a Poisson process over all nodes; a failed node is out for its
repair time (capacity drops) and kills the jobs on it: they fall back to their last checkpoint,
give back their other nodes and rejoin the queue at its head, to pay their restart time when they
start again. The backfill reservation uses planned ends, which failures can break.

Serving (optional) takes GPUs first: an RL job starts only if, at every moment of its planned run,
the RL GPUs held (running jobs release theirs as they end) plus its own plus serving's demand in
that hour fit the cluster's GPUs in service. Serving is therefore never short while RL runs, and no
job is preempted for it — except after a node failure, when serving gets what is left until RL jobs
end or the node is repaired (the shortfall is reported). While jobs wait, the cluster
re-decides every hour, as serving's demand moves.
"""

from __future__ import annotations

import bisect
import heapq
from collections import deque
from typing import Any

import numpy as np
import simpy

from costsim.serving import RangeMax

from .events import ARRIVAL, RELEASE, At, Decider
from .pool import Allocation, NodePool, held_gpus, nodes_needed
from .progress import Progress
from .records import Recorder

BACKFILL_DEPTH = 500


class OwnedCluster:
    """Runs jobs (by job index) on ``nodes`` nodes; jobs arrive through ``arrive(i)`` and a queued
    job can be taken back with ``withdraw(i)``. Also a reserved pool: nodes are instances, no lead time."""

    def __init__(self, env: simpy.Environment, nodes: int, gpus_per_node: int, lead_time_h: float, scheduler: str,
                 gpus: list[int], priority: list[int], progress: Progress, rec: Recorder,
                 serving: RangeMax | None = None, failures_per_node_h: float = 0.0, repair_h: float = 0.0,
                 rng: np.random.Generator | None = None):
        self.env = env
        self.nodes = nodes
        self.gpn = gpus_per_node
        self.pool = NodePool(nodes, gpus_per_node)
        self.gpus = gpus
        self.priority = priority
        self.progress = progress
        self.rec = rec
        self.scheduler = scheduler
        self.serving = serving
        self.running: dict[int, tuple[float, Allocation]] = {}
        self.on_node: dict[int, set[int]] = {}
        self.ends: list[tuple[float, int, int]] = []  # (end, held, job) of running jobs, sorted (serving)
        self.fifo: deque[int] = deque()
        self.heap: list[tuple[int, int]] = []
        self.waiting: set[int] = set()  # queued and not withdrawn (the queues drop the rest lazily)
        self.down_gpus = 0
        self.ready = lead_time_h <= 0
        self.decider = Decider(env, self._decide)
        self.capacity_t = [0.0]
        self.capacity_gpus = [nodes * gpus_per_node if self.ready else 0]
        if not self.ready:
            At(env, lead_time_h, RELEASE, self._deliver)
        if serving is not None:
            At(env, 1.0, ARRIVAL, self._tick)
        self.failure_rate = failures_per_node_h * nodes
        self.track_nodes = self.failure_rate > 0  # which jobs run on a node matters only if nodes fail
        self.repair_h = repair_h
        self.rng = rng
        if self.failure_rate > 0:
            At(env, max(lead_time_h, 0.0) + rng.exponential(1 / self.failure_rate), RELEASE, self._fail)

    @property
    def in_service(self) -> int:
        return (self.nodes * self.gpn - self.down_gpus) if self.ready else 0

    def _capacity_changed(self) -> None:
        self.capacity_t.append(self.env.now)
        self.capacity_gpus.append(self.in_service)

    # -- events ---------------------------------------------------------------------------
    def _deliver(self, _: Any) -> None:
        self.ready = True
        self._capacity_changed()
        self.decider.request()

    def _tick(self, _: Any) -> None:
        if self.waiting:
            self.decider.request()
        At(self.env, 1.0, ARRIVAL, self._tick)

    def fits_ever(self, gpus: int) -> bool:
        return held_gpus(gpus, self.gpn) <= self.nodes * self.gpn

    def withdraw(self, i: int) -> bool:
        """Take a queued job back (it will run elsewhere); False if it has already started."""
        if i in self.waiting:
            self.waiting.discard(i)
            return True
        return False

    def arrive(self, i: int, front: bool = False) -> None:
        """Queue job i (``front``: a job that failed keeps its place at the head)."""
        self.waiting.add(i)
        if self.scheduler == "priority":
            heapq.heappush(self.heap, (-self.priority[i], -1 - i if front else i))
        elif front:
            self.fifo.appendleft(i)
        else:
            self.fifo.append(i)
        self.decider.request()

    def _start(self, i: int, alloc: Allocation) -> None:
        self.waiting.discard(i)
        now = self.env.now
        end = self.progress.begin(i, now)
        rec = self.rec
        g = self.gpus[i]
        held = g if g <= self.gpn else held_gpus(g, self.gpn)
        rec.end_h[i] = end
        rec.hold(i, now, held)
        self.running[i] = (end, alloc)
        if self.track_nodes:
            for node, _n in alloc:
                self.on_node.setdefault(node, set()).add(i)
        if self.serving is not None:
            bisect.insort(self.ends, (end, held, i))
        v = self.progress.version[i]
        At(self.env, end - now, RELEASE, lambda _e, i=i, v=v: self._finish(i, v))

    def _stop(self, i: int) -> None:
        """Job i gives back its GPUs (finished or killed)."""
        end, alloc = self.running.pop(i)
        self.pool.release(alloc)
        if self.track_nodes:
            for node, _n in alloc:
                self.on_node[node].discard(i)
        if self.serving is not None:
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
        node = int(self.rng.integers(self.nodes))
        if not self.pool.is_down(node):  # a node under repair cannot fail again
            self.pool.down_node(node)
            self.down_gpus += self.gpn
            self._capacity_changed()
            for i in sorted(self.on_node.get(node, ())):
                self.progress.interrupt(i, now)
                self._stop(i)
                self.arrive(i, front=True)
            At(self.env, self.repair_h, RELEASE, lambda _e, n=node: self._repaired(n))
        At(self.env, self.rng.exponential(1 / self.failure_rate), RELEASE, self._fail)

    def _repaired(self, node: int) -> None:
        self.pool.up(node)
        self.down_gpus -= self.gpn
        self._capacity_changed()
        self.decider.request()

    def _room(self, i: int) -> bool:
        """Does job i leave serving its GPUs for its whole run? (Always, without serving.)"""
        if self.serving is None:
            return True
        cap = self.in_service
        need = held_gpus(self.gpus[i], self.gpn)
        t = self.env.now
        end = t + self.progress.run_h[i] - self.progress.pos[i]
        rl = cap - self.pool.free_gpus
        peak = self.serving.peak
        for e, h, _j in self.ends:
            if e >= end:
                break
            if e > t:
                if rl + need + peak(t, e) > cap:
                    return False
                t = e
            rl -= h
        return rl + need + peak(t, end) <= cap

    # -- decisions ------------------------------------------------------------------------
    def _decide(self) -> None:
        if not self.ready:
            return
        waiting = self.waiting
        pool, gpus = self.pool, self.gpus
        if self.scheduler == "priority":
            heap = self.heap
            while heap:
                j = heap[0][1]
                i = j if j >= 0 else -1 - j
                if i not in waiting:
                    heapq.heappop(heap)
                    continue
                if not self._room(i):
                    return
                alloc = pool.allocate(gpus[i])
                if alloc is None:
                    return
                heapq.heappop(heap)
                self._start(i, alloc)
            return
        queue = self.fifo
        while queue:
            if queue[0] not in waiting:
                queue.popleft()
                continue
            if not self._room(queue[0]):
                break
            alloc = pool.allocate(gpus[queue[0]])
            if alloc is None:
                break
            self._start(queue.popleft(), alloc)
        if self.scheduler == "backfill" and len(queue) > 1 and pool.free_gpus > 0:
            self._backfill()

    def _backfill(self) -> None:
        queue, pool, gpus, gpn = self.fifo, self.pool, self.gpus, self.gpn
        head_g = gpus[queue[0]]
        shadow_t, shadow = self._reservation(head_g)
        # The head fits at shadow_t iff enough nodes are "good" for it then: fully free nodes for
        # a multi-node head, nodes with >= head_g free otherwise. ``spare`` is how many good nodes
        # later jobs may still take (exact, without copying the free vector per candidate).
        wide = head_g > gpn
        good = gpn if wide else head_g
        spare = sum(1 for f in shadow if f >= good) - (nodes_needed(head_g, gpn) if wide else 1)
        now = self.env.now
        too_big = head_g + gpn + 1  # smallest size that failed to fit now (fit is monotone in size)
        started = []
        for pos in range(1, min(len(queue), BACKFILL_DEPTH)):
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
            if now + self.progress.run_h[j] - self.progress.pos[j] > shadow_t:
                # Still running at the reservation: it must not take nodes the head needs then.
                lost = sum(1 for node, n in alloc if shadow[node] >= good > shadow[node] - n)
                if lost > spare:
                    pool.release(alloc)
                    continue
                spare -= lost
                for node, n in alloc:
                    shadow[node] -= n
            started.append((pos, j, alloc))
        for pos, _j, _alloc in reversed(started):
            del queue[pos]
        for _pos, j, alloc in started:
            self._start(j, alloc)

    def _reservation(self, head_gpus: int) -> tuple[float, list[int]]:
        """Earliest time the head fits as running jobs end (planned ends; nodes under repair stay
        out), and the free GPUs per node then."""
        gpn = self.gpn
        free = list(self.pool.free)
        wide = head_gpus > gpn
        good = gpn if wide else head_gpus
        need = nodes_needed(head_gpus, gpn) if wide else 1
        have = sum(1 for f in free if f >= good)
        if have >= need:  # it fits now and waits for serving's room only: reserve its nodes now
            return self.env.now, free
        for end, alloc in sorted(self.running.values(), key=lambda v: v[0]):
            for node, n in alloc:
                if not self.pool.is_down(node):
                    have += free[node] < good <= free[node] + n
                    free[node] += n
            if have >= need:
                return end, free
        return float("inf"), free  # only repairs can make room: start nothing that would block it
