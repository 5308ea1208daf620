"""An owned (or committed) GPU cluster: delivered after its lead time, run by a scheduler.

Schedulers:
- ``fifo``: strict submit order; the head job blocks everything behind it.
- ``priority``: highest ``priority`` first, then submit order; strict like fifo.
- ``backfill``: EASY backfilling. Jobs start in submit order while they fit. When the head does
  not fit, it gets a reservation at the earliest time enough running jobs will have ended
  (their nominal run times, which are exact without failures). A later job may start now if it
  fits now and either ends by that time or leaves room for the head's reservation. At most
  ``BACKFILL_DEPTH`` queued jobs are examined per pass (Slurm's ``bf_max_job_test`` default).

Serving (optional) takes GPUs first: an RL job starts only if, at every moment of its nominal run,
the RL GPUs held (running jobs release theirs as they end) plus its own plus serving's demand in
that hour fit the cluster. Serving is therefore never short while RL runs, and no job is ever
preempted for it. While jobs wait, the cluster re-decides every hour, as serving's demand moves.
The backfill reservation is computed without serving, so with serving EASY's no-delay promise to
the head job is approximate.
"""

from __future__ import annotations

import bisect
import heapq
from collections import deque
from typing import Any

import simpy

from costsim.serving import RangeMax

from .events import ARRIVAL, RELEASE, At, Decider
from .pool import Allocation, NodePool, held_gpus, nodes_needed
from .records import Recorder

BACKFILL_DEPTH = 500


class OwnedCluster:
    """Runs jobs (lists of GPUs, priority, run time, by job index) on ``nodes`` nodes; jobs arrive
    through ``arrive(i)`` and a queued job can be taken back with ``withdraw(i)``. Also serves as
    a reserved (committed) pool: nodes are instances and the lead time is zero."""

    def __init__(
        self,
        env: simpy.Environment,
        nodes: int,
        gpus_per_node: int,
        lead_time_h: float,
        scheduler: str,
        gpus: list[int],
        priority: list[int],
        run_h: list[float],
        rec: Recorder,
        serving: RangeMax | None = None,
    ):
        self.env = env
        self.serving = serving
        self.ends: list[tuple[float, int, int]] = []  # (end, held GPUs, job) of running jobs, sorted
        self.nodes = nodes
        self.gpn = gpus_per_node
        self.pool = NodePool(nodes, gpus_per_node)
        self.gpus = gpus
        self.priority = priority
        self.run_h = run_h
        self.rec = rec
        self.scheduler = scheduler
        self.running: dict[int, tuple[float, Allocation]] = {}
        self.fifo: deque[int] = deque()
        self.heap: list[tuple[int, int]] = []
        self.waiting: set[int] = set()  # queued and not withdrawn (the queues drop the rest lazily)
        self.ready = lead_time_h <= 0
        self.decider = Decider(env, self._decide)
        self.capacity_t = [0.0]
        self.capacity_gpus = [nodes * gpus_per_node if self.ready else 0]
        if not self.ready:
            At(env, lead_time_h, RELEASE, self._deliver)
        if serving is not None:
            At(env, 1.0, ARRIVAL, self._tick)

    def _tick(self, _: Any) -> None:
        if self.waiting:
            self.decider.request()
        At(self.env, 1.0, ARRIVAL, self._tick)

    def _room(self, i: int) -> bool:
        """Does job i leave serving its GPUs for its whole run? (Always, without serving.)"""
        if self.serving is None:
            return True
        cap = self.nodes * self.gpn
        need = held_gpus(self.gpus[i], self.gpn)
        t = self.env.now
        end = t + self.run_h[i]
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

    # -- events ---------------------------------------------------------------------------
    def _deliver(self, _: Any) -> None:
        self.ready = True
        self.capacity_t.append(self.env.now)
        self.capacity_gpus.append(self.nodes * self.gpn)
        self.decider.request()

    def fits_ever(self, gpus: int) -> bool:
        return held_gpus(gpus, self.gpn) <= self.nodes * self.gpn

    def withdraw(self, i: int) -> bool:
        """Take a queued job back (it will run elsewhere); False if it has already started."""
        if i in self.waiting:
            self.waiting.discard(i)
            return True
        return False

    def arrive(self, i: int) -> None:
        self.waiting.add(i)
        if self.scheduler == "priority":
            heapq.heappush(self.heap, (-self.priority[i], i))
        else:
            self.fifo.append(i)
        self.decider.request()

    def _start(self, i: int, alloc: Allocation) -> None:
        self.waiting.discard(i)
        now = self.env.now
        end = now + self.run_h[i]
        rec = self.rec
        rec.start_h[i] = now
        rec.end_h[i] = end
        rec.held_gpus[i] = held_gpus(self.gpus[i], self.gpn)
        self.running[i] = (end, alloc)
        if self.serving is not None:
            bisect.insort(self.ends, (end, rec.held_gpus[i], i))
        At(self.env, self.run_h[i], RELEASE, lambda _e, i=i: self._finish(i))

    def _finish(self, i: int) -> None:
        end, alloc = self.running.pop(i)
        self.pool.release(alloc)
        if self.serving is not None:
            del self.ends[bisect.bisect_left(self.ends, (end, self.rec.held_gpus[i], i))]
        if self.waiting:
            self.decider.request()

    # -- decisions ------------------------------------------------------------------------
    def _decide(self) -> None:
        if not self.ready:
            return
        waiting = self.waiting
        if self.scheduler == "priority":
            heap, pool, gpus = self.heap, self.pool, self.gpus
            while heap:
                if heap[0][1] not in waiting:
                    heapq.heappop(heap)
                    continue
                if not self._room(heap[0][1]):
                    return
                alloc = pool.allocate(gpus[heap[0][1]])
                if alloc is None:
                    return
                self._start(heapq.heappop(heap)[1], alloc)
            return
        queue, pool, gpus = self.fifo, self.pool, self.gpus
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
        queue, pool, gpus, gpn, run_h = self.fifo, self.pool, self.gpus, self.gpn, self.run_h
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
            if now + run_h[j] > shadow_t:
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
        """Earliest time the head fits as running jobs end (nominal run times), and the free
        GPUs per node then."""
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
                have += free[node] < good <= free[node] + n
                free[node] += n
            if have >= need:
                return end, free
        raise AssertionError("a queued job larger than the cluster passed validation")  # pragma: no cover
