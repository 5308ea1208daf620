"""A frozen copy of the serving-aware reservation and admission functions the owned-cluster
scheduler used before serving's headroom was kept incrementally (``costsim.engine.reservation`` and
``costsim.models.serving.RangeMax`` as they were), so the reference scheduler of
tests/engine/test_backfill_differential.py shares no serving code with the engine it checks.

Copied verbatim; do not edit: the point is that it does not move with the engine.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

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
            head_gpus: int = 0, hold_h: float = 0.0, rl: int = 0, cap: int = 0,
            lookahead_h: float = INF) -> tuple[float, list[int], float]:
    """Earliest time the head can start, the free GPUs per node then, and the GPUs to spare for
    serving and RL over its run (``inf`` without serving).

    ``free``: free GPUs per node now (updated in place to the reserved time). ``events``: planned
    capacity changes ``(time, RL GPUs released, ((node, GPUs freed), ...), GPUs back in service)``
    sorted by time — running jobs' planned ends and repaired nodes. The head fits when ``need`` nodes
    have at least ``good`` free GPUs and, with serving (``peak``), its ``head_gpus`` fit beside RL
    (``rl`` held now) and serving over its ``hold_h`` hours within ``cap`` GPUs in service. Admission
    is re-decided at every release and every hour, so those are the candidate times. Returns ``inf``
    when nothing in sight makes room: past the last event and ``lookahead_h`` more hours.
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
            if k < n:
                nxt = min(nxt, events[k][0])
            elif nxt > last + lookahead_h:
                return INF, free, 0.0
        elif k < n:
            nxt = events[k][0]
        else:
            return INF, free, 0.0
        t = nxt  # always later than t: events up to t are applied, short hours are at or after t


class RangeMax:
    """Sparse table over hourly demand: the maximum over the hours an interval touches."""

    def __init__(self, demand: np.ndarray):
        self.demand = np.asarray(demand, dtype=np.int64)
        levels = [self.demand]
        width = 1
        while 2 * width <= len(self.demand):
            prev = levels[-1]
            levels.append(np.maximum(prev[:-width], prev[width:]))
            width *= 2
        self.levels = [lv.tolist() for lv in levels]

    def peak(self, t0: float, t1: float) -> int:
        """Most GPUs demanded in any hour overlapping [t0, t1) (hours past the table: its last hour)."""
        n = len(self.demand)
        a = min(int(t0), n - 1)
        b = min(max(int(np.ceil(t1)) - 1, a), n - 1)
        k = (b - a + 1).bit_length() - 1
        row = self.levels[k]
        return max(row[a], row[b - (1 << k) + 1])
