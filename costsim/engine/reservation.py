"""When the head of the queue will start, planned from the state now: EASY backfill's reservation.

Pure functions over plain lists (no SimPy). Times in hours, sizes in GPUs. The plan assumes jobs end
at their planned ends and nodes under repair come back at their repair's end (failures to come are
unknown, so a later failure can break a reservation).

Serving (optional) is the admission rule of ``costsim.engine.owned``: a job may start at t only if,
at every moment of [t, t + hold), the RL GPUs held (running jobs releasing theirs at their planned
ends), its own GPUs and serving's demand in that hour fit the GPUs in service at t.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from costsim.engine.pool import Allocation

INF = float("inf")

Peak = Callable[[float, float], int]  # most GPUs serving needs in any hour overlapping [t0, t1)


def serving_slack(t: float, hold_h: float, rl: int, cap: int, ends: Sequence[tuple], peak: Peak,
                  first: int = 0) -> int:
    """GPUs left over during [t, t + hold_h) once RL and serving are served: the minimum over that
    interval of ``cap − RL(τ) − demand(τ)``. ``rl`` RL GPUs are held at t; ``ends[first:]`` are planned
    releases ``(time, GPUs, ...)`` sorted by time, each lowering RL from its time on. A job of g GPUs
    fits the interval iff the slack is at least g."""
    end = t + hold_h
    slack = cap  # any value the minimum below undercuts (demand and RL are never negative)
    for k in range(first, len(ends)):
        e, h = ends[k][0], ends[k][1]
        if e >= end:
            break
        if e > t:
            slack = min(slack, cap - rl - peak(t, e))
            t = e
        rl -= h
    return min(slack, cap - rl - peak(t, end))


def first_short_hour(t: float, hold_h: float, rl: int, cap: int, ends: Sequence[tuple], peak: Peak,
                     need: int, first: int = 0) -> int | None:
    """The first hour of [t, t + hold_h) in which ``need`` more GPUs would not fit beside RL and
    serving (as ``serving_slack``), or None if they fit throughout."""
    end = t + hold_h
    pieces = []  # (from, to, RL GPUs) with RL constant in between
    for k in range(first, len(ends)):
        e, h = ends[k][0], ends[k][1]
        if e >= end:
            break
        if e > t:
            pieces.append((t, e, rl))
            t = e
        rl -= h
    pieces.append((t, end, rl))
    for a, b, held in pieces:
        room = cap - held - need  # serving may take this much in the piece
        if peak(a, b) > room:
            lo, hi = int(a), max(math.ceil(b) - 1, int(a))  # the hours the piece touches
            while lo < hi:  # the first of them whose demand is above the room
                mid = (lo + hi) // 2
                if peak(max(a, lo), mid + 1) > room:
                    hi = mid
                else:
                    lo = mid + 1
            return lo
    return None


def reserve(now: float, free: list[int], events: list[tuple], good: int, need: int, peak: Peak | None = None,
            head_gpus: int = 0, hold_h: float = 0.0, rl: int = 0, cap: int = 0, lookahead_h: float = INF,
            first_at_most: Callable[[int, int], float] | None = None) -> tuple[float, list[int], float]:
    """Earliest time the head can start, the free GPUs per node then, and the GPUs to spare for
    serving and RL over its run (``inf`` without serving).

    ``free``: free GPUs per node now (updated in place to the reserved time). ``events``: planned
    capacity changes ``(time, RL GPUs released, ((node, GPUs freed), ...), GPUs back in service)``
    sorted by time — running jobs' planned ends and repaired nodes. The head fits when ``need`` nodes
    have at least ``good`` free GPUs and, with serving (``peak``), its ``head_gpus`` fit beside RL
    (``rl`` held now) and serving over its ``hold_h`` hours within ``cap`` GPUs in service. Admission
    is re-decided at every release and (as if) every whole hour, so those are the candidate times. Returns ``inf``
    when nothing in sight makes room: past the last event and ``lookahead_h`` more hours.
    ``first_at_most(h, x)``: the first hour from h on in which serving asks for at most x GPUs; with
    it, the hours before the next event in which the head would be short at its very start are
    passed over at once rather than one by one (each would find itself its first short hour).
    """
    have = sum(1 for f in free if f >= good)
    n = len(events)
    last = events[-1][0] if events else now
    k = 0
    t = now
    while True:
        while k < n and events[k][0] <= t:
            _e, released, alloc, back = events[k]
            for node, g in alloc:
                f = free[node]
                have += f < good <= f + g
                free[node] = f + g
            rl -= released
            cap += back
            k += 1
        if have >= need:
            if peak is None:
                return t, free, INF
            short = first_short_hour(t, hold_h, rl, cap, events, peak, head_gpus, k)
            if short is None:
                return t, free, serving_slack(t, hold_h, rl, cap, events, peak, k) - head_gpus
            # Any start before the end of the short hour still covers it with the same RL held.
            nxt = float(short + 1)
            if first_at_most is not None and (k >= n or nxt < events[k][0]):
                nxt = float(first_at_most(short + 1, cap - rl - head_gpus))
            if k < n:
                nxt = min(nxt, events[k][0])
            elif nxt > last + lookahead_h:
                return INF, free, 0.0
        elif k < n:
            nxt = events[k][0]
        else:
            return INF, free, 0.0
        t = nxt  # always later than t: events up to t are applied, short hours are at or after t


def earliest_start(now: float, free: list[int], have: int, good: int, need: int, ends: Sequence[tuple],
                   running: Mapping[int, tuple[float, Allocation]], repairs: Sequence[tuple[float, int]],
                   gpus_per_node: int) -> tuple[float, int]:
    """When ``need`` nodes first have at least ``good`` free GPUs, and how many nodes have then.

    ``free``: free GPUs per node now, updated in place to that time; ``have``: nodes with at least
    ``good`` free now. ``ends``: ``(planned end, GPUs held, job)`` of running jobs sorted by end, each
    job's nodes in ``running[job][1]``; ``repairs``: ``(time, node)`` sorted, nodes coming back with
    every GPU free. Events at or before a time count at that time. ``inf`` if nothing in sight
    makes room (``free`` then holds every release). The answer of ``reservation.reserve`` without
    serving, from the order the cluster keeps rather than a sort of every planned event."""
    k, n = 0, len(ends)
    r, m = 0, len(repairs)
    t = now
    while True:
        while k < n and ends[k][0] <= t:
            for node, g in running[ends[k][2]][1]:
                f = free[node]
                have += f < good <= f + g  # the node becomes good for the head
                free[node] = f + g
            k += 1
        while r < m and repairs[r][0] <= t:
            node = repairs[r][1]
            f = free[node]
            have += f < good <= f + gpus_per_node
            free[node] = f + gpus_per_node
            r += 1
        if have >= need:
            return t, have
        t = min(ends[k][0] if k < n else INF, repairs[r][0] if r < m else INF)
        if t == INF:
            return INF, have


@dataclass(slots=True, kw_only=True)
class ServingReservation:
    """The head job's reservation with serving, kept between passes while the planned profile is the
    one it was made under (``ServingHeadroom.version``) and its time is still ahead: the head, that
    version, the hour it can start (``shadow_t``, finite), free GPUs per node then, good nodes to
    spare then, and the GPUs later jobs may still hold then beside it and serving (``slack``)."""

    head: int
    version: int
    shadow_t: float
    shadow: list[int]
    spare: int
    slack: float
