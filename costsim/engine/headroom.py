"""Serving's admission on an owned cluster, answered from a running headroom rather than re-walked.

The rule (``costsim.engine.owned``): a job holding g GPUs for h hours may start at ``now`` only if
at every moment τ of [now, now + h) the RL GPUs held then (running jobs release theirs at their
planned ends), its own g and serving's demand in hour ⌊τ⌋ fit the GPUs in service now:
``RL(τ) + D(⌊τ⌋) <= cap − g``. ``reservation.serving_slack`` answers it by walking the planned ends
and the demand of every piece between them, per job and per pass.

Here it is answered from the first *bad* moment: the earliest τ >= now at which g more GPUs would
not fit. RL only falls as τ grows and the demand is constant within an hour, so a bad stretch
always begins at ``now`` or at a whole hour, and the job fits iff ``now + h`` is at most that
moment. The moment depends on g and on the planned profile, not on the job, so it is kept per g
and reused:

- while the profile is unchanged (``moved`` is called on every start, every stop that is not at
  its planned end, every failure, repair and delivery; a job ending as planned changes nothing
  from its end on), and
- while ``now`` has not passed it: the bad moments ahead are the same ones, and a later ``now``
  inside an hour already found good is good too (RL is no higher there).

Computing it walks the planned ends only until the first piece in which the demand is too high
(``RangeMax.peak``, O(1)) and then finds the hour (``RangeMax.first_above``, O(log hours)).
Hours in service and GPUs in GPUs; times in hours.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from costsim.engine.reservation import INF, serving_slack
from costsim.plan.options import held_gpus

if TYPE_CHECKING:
    import simpy

    from costsim.models.serving import RangeMax

    from .pool import NodePool


class CapacityHost(Protocol):
    """The cluster's GPUs in service now (nodes under repair and an undelivered cluster have none)."""

    @property
    def in_service(self) -> int: ...


class ServingHeadroom:
    """Serving's admission for one cluster: ``fits(held, hold_h)`` at ``env.now``.

    Reads (never changes) the cluster's ``pool`` (its free GPUs) and ``ends`` ((planned end, GPUs
    held, job) of running jobs, sorted), given by reference; ``demand`` is serving's hourly demand.
    ``version`` counts the profile's changes (``moved``): answers kept under one version hold for
    that version only."""

    def __init__(self, *, host: CapacityHost, env: simpy.Environment, pool: NodePool,
                 ends: Sequence[tuple[float, int, int]], demand: RangeMax):
        self.host = host
        self.env = env
        self.pool = pool
        self.ends = ends
        self.demand = demand
        self.after = np.maximum.accumulate(demand.demand[::-1])[::-1].tolist()  # the most from each hour on
        self.version = 0
        self.bad: dict[int, tuple[int, float]] = {}  # GPUs held -> (version, first bad moment)

    def moved(self) -> None:
        """The planned profile changed (a start, an early stop, a failure, a repair, a delivery)."""
        self.version += 1

    def fits(self, held: int, hold_h: float) -> bool:
        """Does a job holding ``held`` GPUs for ``hold_h`` hours from now leave serving its GPUs for
        its whole run? The answer of ``serving_slack(...) >= held``."""
        return self.refused_until(held, hold_h) == -INF

    def refused_until(self, held: int, hold_h: float) -> float:
        """``-inf`` if a job holding ``held`` GPUs for ``hold_h`` hours from now leaves serving its
        GPUs for its whole run; else a time (hours) before which it stays refused, the cluster
        unchanged: the first whole hour after now, or after its first short moment if that lies
        ahead, whose demand might no longer leave it short at its start (RL stays as it is until the
        next planned end, itself a change that asks for a pass)."""
        now = self.env.now
        end = now + hold_h
        if end <= now:  # an empty run: the rule then reads the hour it starts in, as the walk does
            cap = self.host.in_service
            slack = serving_slack(now, hold_h, cap - self.pool.free_gpus, cap, self.ends, self.demand.peak)
            return -INF if held <= slack else now
        room = self.room_now()
        if held > room:  # short already now
            return self.short_until(held, room)
        m = self.first_bad(held)
        if end <= m:
            return -INF
        # Its run covers its first short moment from any start up to it, and a start after it is
        # short itself until an hour leaves it room beside RL as now (a planned end before then is a
        # change, which asks for its own pass).
        return self.short_until(held, room, after_h=m)

    def starts_from(self, gpus: int, hold_h: float) -> float:
        """A time (hours) before which a job asking ``gpus`` GPUs for ``hold_h`` hours cannot start,
        the cluster unchanged: never while the pool cannot hold it, else not while serving refuses
        it (``refused_until``: ``-inf`` if serving admits it now)."""
        if gpus > self.pool.largest_fit():
            return INF
        return self.refused_until(held_gpus(gpus, self.pool.gpn), hold_h)

    def room_now(self) -> int:
        """The most GPUs a job starting now could hold in this hour beside RL and serving (its later
        hours aside): the GPUs free now, less serving's demand this hour."""
        now = self.env.now
        room = self.pool.free_gpus - self.demand.at(now)
        ends = self.ends
        if ends and ends[0][0] <= now:  # planned to end by now, not yet released: free, as the walk counts
            for e, h, _job in ends:
                if e > now:
                    break
                room += h
        return room

    def short_until(self, held: int, room: int, after_h: float | None = None) -> float:
        """For ``held`` GPUs, ``room`` being ``room_now()``: the first whole hour after now (or after
        ``after_h``) whose demand leaves them room beside RL as it is now, the profile unchanged."""
        now = self.env.now
        return self.demand.first_at_most(int(now if after_h is None else after_h) + 1, room + self.demand.at(now) - held)

    def first_bad(self, held: int) -> float:
        """The earliest moment from now on at which ``held`` more GPUs would leave serving short
        (``inf`` if none): kept per ``held`` while the profile is unchanged and now has not passed it."""
        now = self.env.now
        kept = self.bad.get(held)
        if kept is not None and kept[0] == self.version and now <= kept[1]:
            return kept[1]
        t = self.walk(now, held)
        self.bad[held] = (self.version, t)
        return t

    def walk(self, now: float, held: int) -> float:
        """``first_bad`` computed afresh: the planned ends in order, each piece between two of them
        (RL constant) checked against the demand's peak over the hours it touches."""
        cap = self.host.in_service
        room = cap - held  # RL plus serving must stay within this
        rl = cap - self.pool.free_gpus
        ends, first_above = self.ends, self.demand.first_above
        levels = self.demand.levels
        last = len(levels[0]) - 1
        n = len(ends)
        k = 0
        t = now
        while k < n and ends[k][0] <= t:
            rl -= ends[k][1]
            k += 1
        after = self.after
        while k < n:
            a = min(int(t), last)
            if after[a] <= room - rl:  # serving never asks more from here on, and RL only falls
                return INF
            e = ends[k][0]
            # The demand's peak over the hours [t, e) touches (``RangeMax.peak``, inlined: the hot loop).
            b = min(max(math.ceil(e) - 1, a), last)
            w = (b - a + 1).bit_length() - 1
            row = levels[w]
            if max(row[a], row[b - (1 << w) + 1]) > room - rl:  # some hour the piece touches is short
                return max(t, first_above(int(t), room - rl))
            t = e
            while k < n and ends[k][0] <= t:
                rl -= ends[k][1]
                k += 1
        return max(t, first_above(int(t), room - rl))
