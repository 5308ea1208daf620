"""EASY backfill's pass over an owned cluster's queue, and the head's reservation it protects.

When the head of a ``backfill`` queue does not fit, it gets a reservation at the earliest time it
will (its "shadow time") and a later job may start now if it fits now and either ends by then or
leaves the head the nodes (and, with serving, the GPUs) it needs then (``costsim.engine.owned``
states the policy). What keeps a pass cheap on a million-job trace, with the schedule unchanged
(tests/engine/test_backfill_differential.py holds it against a frozen copy of the slower pass):

- running jobs are kept sorted by planned end as they start and stop (the cluster's ``ends``), so
  the reservation walks them only as far as the head needs (``earliest_start``) instead of
  sorting every running job on every pass;
- without serving the reservation is held between passes (``HeldReservation``): planned ends and
  backfilled jobs leave it as it is (the latter update it in place), so only a new head or an
  unplanned change (failure, repair, delivery) computes it again;
- a candidate is filtered by size (``NodePool.largest_fit``) and by whether it ends by the shadow
  time before any allocation is tried; a size refused for running past it stays refused until the
  pool changes (where a job goes depends only on its size), so most candidates cost a few
  comparisons and at most one trial allocation per size is made between starts;
- a pass after nothing but arrivals (no start, stop or failure since the last, same head) looks
  only at the jobs queued since: the earlier ones would be refused again.

With serving, the pool nearly always has free GPUs (serving's share is not allocated), so a pass
runs at almost every instant and hour, and serving's demand moves with time. What keeps it near a
pass without serving:

- serving's admission comes from ``ServingHeadroom`` (the first moment a size would be short, kept
  per size while the planned profile holds), not from a walk per job;
- a pass returns at once when serving leaves no waiting size room: the hour's room bounds the sizes
  tried, and of each size only the waiting job with the shortest hold is asked (it is admitted
  whenever any is; ``ShortestWaiting``), sizes that would run past the reservation by one trial
  allocation; it returns a time before which that stays so, which spares the hourly passes (for
  sizes held off by the reservation alone, the reservation's time: they only run further past it);
- the reservation is held between passes while the profile it was planned under holds (planned
  ends leave it as it is) and its time is ahead (``ServingReservation``);
- the scan after nothing but time and arrivals skips the jobs scanned before while what serving
  refused then is still refused (``Refusals``).

Times in hours, sizes in GPUs.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Protocol

import numpy as np

from costsim.engine.pool import Allocation, NodePool
from costsim.engine.reservation import INF, ServingReservation, earliest_start, reserve
from costsim.engine.serving_queue import Refusals, ShortestWaiting
from costsim.plan.options import held_gpus, nodes_needed

if TYPE_CHECKING:
    import simpy

    from .headroom import ServingHeadroom
    from .progress import Progress

BACKFILL_DEPTH = 500  # queued jobs examined per pass (Slurm's bf_max_job_test default)


@dataclass(slots=True, kw_only=True)
class HeldReservation:
    """The head job's reservation, kept between backfill passes without serving: the head, the hour
    it can start as planned (``shadow_t``), free GPUs per node then (``shadow``, taken down as
    backfilled jobs that run past it are placed) and how many nodes good for the head are spare then."""

    head: int
    shadow_t: float
    shadow: list[int]
    spare: int


class BackfillHost(Protocol):
    """What the pass needs of the cluster it serves beyond the structures it is given: two live
    counts and the action that starts a job."""

    @property
    def changes(self) -> int:
        """Bumped on every start, stop, failure, repair, delivery and withdrawal."""

    @property
    def in_service(self) -> int:
        """GPUs in service now (nodes under repair and an undelivered cluster have none)."""

    def start(self, i: int, alloc: Allocation) -> None:
        """Start job i now on ``alloc`` (already taken from the pool)."""


class EasyBackfill:
    """EASY backfill over a cluster's queue: ``run()`` starts the later jobs that may start now
    without delaying the head.

    It reads, never changes, the structures the cluster keeps (given by reference): the ``queue``
    (job indices; the pass removes the jobs it starts), the ``waiting`` set (queued and not
    withdrawn), ``running`` (job -> (planned end, allocation)), ``ends`` ((planned end, GPUs held,
    job) sorted), ``repair_end`` (node under repair -> its return, hours) and the ``pool`` (whose
    allocations it takes and gives back while trying candidates). Its own state: each queued job's
    hold time (``queued(i)`` on arrival, hours), the held reservation (``unplanned()`` voids it) and
    where the last scan stopped. ``audit``: None in runs; a test may set a list to receive, for every
    pass that starts jobs, ``(time, head, reservation before, reservation recomputed after)``."""

    def __init__(self, *, host: BackfillHost, env: simpy.Environment, pool: NodePool, gpus: Sequence[int],
                 gpus_per_node: int, queue: deque[int], waiting: set[int],
                 running: Mapping[int, tuple[float, Allocation]], ends: Sequence[tuple[float, int, int]],
                 repair_end: Mapping[int, float], progress: Progress, headroom: ServingHeadroom | None):
        """``gpus``: GPUs asked per job; ``headroom``: serving's admission when the cluster serves
        first, or None."""
        self.host = host
        self.env = env
        self.pool = pool
        self.gpus = gpus
        self.gpn = gpus_per_node
        self.queue = queue
        self.waiting = waiting
        self.running = running
        self.ends = ends
        self.repair_end = repair_end
        self.progress = progress
        self.headroom = headroom
        if headroom is not None:
            # Demand never lower a day later (growth >= 0): a day past the last planned release shows
            # every start the head will ever get, so the reservation need not look further.
            d = headroom.demand.demand
            self.lookahead_h = 25.0 if len(d) <= 24 or bool(np.all(d[24:] >= d[:-24])) else float(len(d))
        # Each queued job's ``Progress.hold_h``, fixed while it waits, read once on arrival rather
        # than on each of the many passes that look at it.
        self.hold = array("d", [0.0]) * len(gpus)
        self.smallest = min(gpus, default=1)  # GPUs of the smallest job
        asked = np.asarray(gpus, dtype=np.int64)
        # GPUs each job holds (whole nodes beyond one), read per candidate.
        self.held = array("q", np.where(asked <= gpus_per_node, asked, nodes_needed(asked, gpus_per_node) * gpus_per_node).tolist())
        # Without serving: the head's reservation, kept between passes (planned ends and backfills
        # leave it as it is), and (changes, head, position) where the last scan of the queue stopped.
        self.held_res: HeldReservation | None = None
        self.scanned = (-1, -1, 1)
        # With serving: the head's reservation while it holds, and what serving refused in the scans
        # since the last full one.
        self.serving_res: ServingReservation | None = None
        self.refusals = Refusals()
        self.shortest = ShortestWaiting() if headroom is not None else None
        self.audit: list[tuple[float, int, float, float]] | None = None

    def queued(self, i: int) -> None:
        """Job i joined the queue: its hold time is fixed until it starts."""
        h = self.hold[i] = self.progress.hold_h(i)
        if self.shortest is not None:
            self.shortest.push(self.gpus[i], h, i)

    def unplanned(self) -> None:
        """Capacity changed other than by a planned end (delivery, failure, repair): the held
        reservation is void."""
        self.held_res = None

    def run(self) -> float:
        """One pass: the head (``queue[0]``, waiting) does not fit now; start every later job, up to
        ``BACKFILL_DEPTH`` deep, that may start now without delaying the head's reservation. Returns
        a time (hours) before which another pass would start nothing, the cluster and its queue
        unchanged: at most now if none is known (always, without serving)."""
        queue, pool, gpus, gpn = self.queue, self.pool, self.gpus, self.gpn
        head = queue[0]
        head_g = gpus[head]
        headroom = self.headroom
        now = self.env.now
        # Sizes of at least too_big are not tried: wider than fits in the pool now (fit is monotone in
        # size), or more than a node wider than the head (the bound this pass has always kept), or,
        # with serving, holding more than serving leaves free in this hour (it would be refused).
        too_big = min(head_g + gpn + 1, pool.largest_fit() + 1)
        pool_too_big = too_big
        admitted: list[tuple[int, float]] = []  # with serving: (GPUs, shortest hold) of each size it admits
        if headroom is not None:
            # Serving would refuse every waiting job that fits the pool: nothing starts.
            if pool_too_big <= self.smallest:
                return INF
            room = headroom.room_now()
            if room < self.smallest:
                return headroom.short_until(self.smallest, room)
            too_big = min(too_big, room + 1)
            assert self.shortest is not None  # kept with serving
            # Among the waiting jobs of a size, the shortest is admitted by serving whenever any is.
            quiet = INF
            for g, h, j in self.shortest.shortest(pool_too_big, self.waiting, self.hold):
                until = headroom.short_until(g, room) if g >= too_big else headroom.refused_until(self.held[j], h)
                if until == -INF:
                    admitted.append((g, h))
                else:
                    quiet = min(quiet, until)
            if not admitted:
                return quiet
        # The head fits at shadow_t iff enough nodes are "good" for it then: fully free nodes for
        # a multi-node head, nodes with >= head_g free otherwise. ``spare`` is how many good nodes
        # later jobs may still take (exact, without copying the free vector per candidate);
        # ``slack`` how many GPUs they may still hold then without leaving serving short beside it.
        held_res = None
        if headroom is not None:
            res, kept = self.serving_reservation(head)
            shadow_t, shadow, spare, slack = res.shadow_t, res.shadow, res.spare, res.slack
        else:
            held_res = self.held_reservation(head)
            shadow_t, shadow, spare = held_res.shadow_t, held_res.shadow, held_res.spare
            slack = INF
            kept = True
        wide = head_g > gpn
        good = gpn if wide else head_g
        if headroom is not None and all(now + h > shadow_t and not self.spares(g, good, shadow, spare, slack)
                                        for g, h in admitted):
            # Every size serving admits would run past the reservation and take what the head needs
            # then (where a job goes depends only on its size): nothing starts. That stays so, the
            # cluster unchanged, until a refused size is admitted or the reservation is planned
            # afresh (kept until its time): they run past it all the more as time goes on.
            return min(quiet, shadow_t)
        host = self.host
        changes = host.changes
        # Nothing started, stopped or failed since the last pass, same head and reservation: the jobs
        # it scanned would be refused again (nothing fits better, and time only brings ends later),
        # so only jobs queued since are new. With serving, time also moves serving's demand, so the
        # jobs serving refused must still be refused (``Refusals``).
        seen_changes, seen_head, seen_pos = self.scanned
        first = 1
        if changes == seen_changes and head == seen_head and kept and (
                headroom is None or self.refusals.hold(headroom, now, too_big)):
            first = seen_pos
        refusals = self.refusals if first > 1 else Refusals()
        shortest = refusals.shortest
        limits: dict[int, float] = {}  # GPUs held -> serving's first short moment for them, this profile
        stop = min(len(queue), BACKFILL_DEPTH)
        # Sizes refused because, running past shadow_t, they would take what the head needs then:
        # where a job goes depends only on its size until the pool changes, so they stay refused.
        refused: set[int] = set()
        waiting, hold, helds = self.waiting, self.hold, self.held
        started = []
        for pos, j in enumerate(islice(queue, first, stop), first):
            g = gpus[j]
            if g >= too_big:
                if g < pool_too_big and g < refusals.least_over_room:  # refused by serving this hour
                    refusals.least_over_room = g
                continue
            if j not in waiting:
                continue
            held = helds[j]
            if headroom is not None:
                # Serving's answer, ``headroom.fits``, from its first short moment per size this pass.
                h = hold[j]
                end = now + h
                limit = limits.get(held)
                if limit is None:
                    limit = limits[held] = now if held > headroom.room_now() else headroom.first_bad(held)
                if end > limit or (end <= now and not headroom.fits(held, h)):
                    if h < shortest.get(held, INF):
                        shortest[held] = h
                    continue
            past = now + hold[j] > shadow_t
            if past and g in refused:
                continue
            alloc = pool.allocate(g)
            assert alloc is not None  # g < too_big: it fits now
            if past:
                # Still running at the reservation: it must not take nodes the head needs then, nor
                # GPUs serving needs beside the head (counted as held over the head's whole run).
                lost = sum(1 for node, n in alloc if shadow[node] >= good > shadow[node] - n)
                if lost > spare or held > slack:
                    pool.release(alloc)
                    refused.add(g)
                    continue
                spare -= lost
                slack -= held
                for node, n in alloc:
                    shadow[node] -= n
            started.append((pos, j, alloc, past))
            refused.clear()
            too_big = min(too_big, pool.largest_fit() + 1)
            pool_too_big = min(pool_too_big, too_big)
            if headroom is not None:  # it holds its GPUs from now on: serving's answers move
                headroom.moved()
                limits.clear()
                too_big = min(too_big, headroom.room_now() + 1)
            if too_big <= self.smallest:  # no job fits what is free, or what serving leaves
                break
        self.scanned = (changes, head, stop)
        self.refusals = refusals
        if held_res is not None:
            held_res.spare = spare
        for pos, _j, _alloc, _past in reversed(started):
            del queue[pos]
        running = self.running
        for _pos, j, alloc, past in started:
            host.start(j, alloc)
            if (running[j][0] > shadow_t) != past:  # rounding put its planned end on the other side
                # Defence only: a restarted job's hold (restart + rest of run) and its planned end
                # ((now + restart) + rest) are rounded apart; no test or random trace has hit it.
                self.held_res = None
        if self.audit is not None and started:  # tests: the head's reservation before and after
            self.audit.append((now, head, shadow_t, self.reservation(head)[0]))
        return now

    def spares(self, g: int, good: int, shadow: list[int], spare: int, slack: float) -> bool:
        """Would a job of ``g`` GPUs started now and running past the reservation leave the head what
        it needs then (``good``: free GPUs a node needs to be good for the head; ``shadow``, ``spare``,
        ``slack``: the reservation's)? Tried on the pool and given back."""
        alloc = self.pool.allocate(g)
        assert alloc is not None  # g fits now
        lost = sum(1 for node, n in alloc if shadow[node] >= good > shadow[node] - n)
        self.pool.release(alloc)
        return lost <= spare and held_gpus(g, self.gpn) <= slack

    def serving_reservation(self, head: int) -> tuple[ServingReservation, bool]:
        """The head's reservation with serving, and whether it is the one kept since an earlier pass:
        kept while the head, the planned profile and the hold are those it was made under and its
        time is still ahead (the earliest start from now on is then the same); else planned afresh.
        One that finds no start in sight is planned afresh on every pass."""
        headroom = self.headroom
        assert headroom is not None
        res = self.serving_res
        if res is not None and res.head == head and res.version == headroom.version and self.env.now <= res.shadow_t:
            return res, True
        g = self.gpus[head]
        good, need = (self.gpn, nodes_needed(g, self.gpn)) if g > self.gpn else (g, 1)
        shadow_t, shadow, slack = self.reservation(head)
        res = ServingReservation(head=head, version=headroom.version, shadow_t=shadow_t, shadow=shadow,
                                 spare=sum(1 for f in shadow if f >= good) - need, slack=slack)
        self.serving_res = res if shadow_t < INF else None
        return res, False

    def held_reservation(self, head: int) -> HeldReservation:
        """The head's reservation without serving: the one held since an earlier pass while it holds
        (same head, no unplanned change, still ahead), else computed afresh. Backfilled jobs update
        it in place."""
        res = self.held_res
        if res is None or res.head != head or res.shadow_t <= self.env.now:
            g = self.gpus[head]
            need = nodes_needed(g, self.gpn) if g > self.gpn else 1
            shadow_t, shadow, have = self.walk(head)
            res = self.held_res = HeldReservation(head=head, shadow_t=shadow_t, shadow=shadow, spare=have - need)
        return res

    def walk(self, head: int) -> tuple[float, list[int], int]:
        """Without serving: when the head can start as planned, free GPUs per node then, and how many
        nodes are good for it then (walking running jobs by planned end as far as it needs)."""
        gpn, pool = self.gpn, self.pool
        g = self.gpus[head]
        good, need = (gpn, nodes_needed(g, gpn)) if g > gpn else (g, 1)
        free = list(pool.free)
        repairs = sorted((t, node) for node, t in self.repair_end.items())
        shadow_t, have = earliest_start(self.env.now, free, pool.nodes_with(good), good, need, self.ends,
                                        self.running, repairs, gpn)
        return shadow_t, free, have

    def reservation(self, head: int) -> tuple[float, list[int], float]:
        """When the head can start as planned (running jobs end, nodes under repair return), the
        free GPUs per node then, and the GPUs later jobs may still hold then beside it and serving."""
        if self.headroom is None:
            shadow_t, shadow, _have = self.walk(head)
            return shadow_t, shadow, INF
        gpn = self.gpn
        g = self.gpus[head]
        wide = g > gpn
        running = self.running
        # Running jobs already in order of planned end; repairs (few) merged in.
        events = [(end, held, running[i][1], 0) for end, held, i in self.ends]
        if self.repair_end:
            events += [(t, 0, ((node, gpn),), gpn) for node, t in self.repair_end.items()]
            events.sort(key=lambda e: e[0])
        good, need = (gpn, nodes_needed(g, gpn)) if wide else (g, 1)
        cap = self.host.in_service
        demand = self.headroom.demand
        return reserve(self.env.now, list(self.pool.free), events, good, need, demand.peak, held_gpus(g, gpn),
                       self.progress.hold_h(head), cap - self.pool.free_gpus, cap, self.lookahead_h,
                       demand.first_at_most)
