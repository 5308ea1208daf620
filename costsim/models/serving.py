"""Serving load (DESIGN.md section 5): inference GPUs over time, a daily swing around a growing base.

Demand is a step function of whole GPUs, constant within each hour h:
``D_h = ceil(base · (1 + growth · t/8760) · (1 + amplitude · sin(2π t / 24)))`` at the middle of the
hour, t = h + 0.5. ``RangeMax`` answers "most GPUs serving needs over [t0, t1)" in O(1) and "the
first hour from h on that asks for more than x" in O(log hours): what RL admission on owned and
reserved capacity asks, and "the first hour from h on that asks for at most x" likewise.
"""

from __future__ import annotations

import math

import numpy as np

from costsim.units import HOURS_PER_DAY, HOURS_PER_YEAR


def hourly_demand(base_gpus: float, diurnal_amplitude: float, growth_per_year: float, hours: int) -> np.ndarray:
    """Whole GPUs serving asks for in each hour [h, h + 1), h = 0 .. hours − 1."""
    t = np.arange(hours) + 0.5
    level = base_gpus * (1 + growth_per_year * t / HOURS_PER_YEAR) * (1 + diurnal_amplitude * np.sin(2 * np.pi * t / HOURS_PER_DAY))
    return np.ceil(np.maximum(level, 0.0) - 1e-9).astype(np.int64)


AT_MOST_KEPT = 100_000  # ``first_at_most`` answers kept at most (then forgotten at once): a few MB


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
        self.minima: list[list[int]] | None = None  # the same over minima, for ``first_at_most``
        # ``first_at_most``'s answers: a scheduler asks the same (hour, GPUs) again for each waiting
        # job of one size, and in each pass of one hour (7 asks in 10 on a year's lab).
        self.at_most: dict[tuple[int, int], float] = {}

    def peak(self, t0: float, t1: float) -> int:
        """Most GPUs demanded in any hour overlapping [t0, t1) (hours past the table: its last hour)."""
        n = len(self.levels[0])
        a = min(int(t0), n - 1)
        b = min(max(math.ceil(t1) - 1, a), n - 1)
        k = (b - a + 1).bit_length() - 1
        row = self.levels[k]
        return max(row[a], row[b - (1 << k) + 1])

    def first_at_most(self, hour: int, gpus: int) -> float:
        """The first hour from ``hour`` on in which serving asks for at most ``gpus`` (hours past the
        table ask what its last hour does), or ``inf`` if none does. O(log hours) on a table of
        minima built on first use, each answer kept."""
        key = (hour, gpus)
        known = self.at_most.get(key)
        if known is None:
            if len(self.at_most) >= AT_MOST_KEPT:
                self.at_most.clear()
            known = self.at_most[key] = self._search_at_most(hour, gpus)
        return known

    def _search_at_most(self, hour: int, gpus: int) -> float:
        """``first_at_most`` computed afresh."""
        if self.minima is None:
            rows = [np.array(self.levels[0], dtype=np.int64)]  # the table as built, not the caller's array
            width = 1
            while 2 * width <= len(rows[0]):
                prev = rows[-1]
                rows.append(np.minimum(prev[:-width], prev[width:]))
                width *= 2
            self.minima = [row.tolist() for row in rows]
        levels = self.minima
        d = levels[0]
        n = len(d)
        if hour >= n - 1:
            return hour if d[n - 1] <= gpus else math.inf
        for k in range(hour, min(hour + 4, n)):  # most answers are a few hours on
            if d[k] <= gpus:
                return k
        k = hour
        for j in range(len(levels) - 1, -1, -1):
            w = 1 << j
            if k + w <= n and levels[j][k] > gpus:
                k += w
        return k if k < n else math.inf

    def at(self, t: float) -> int:
        """GPUs demanded in the hour containing ``t`` (past the table: its last hour)."""
        d = self.levels[0]
        return d[min(int(t), len(d) - 1)]

    def first_above(self, hour: int, gpus: int) -> float:
        """The first hour from ``hour`` on in which serving asks for more than ``gpus`` (hours past
        the table ask what its last hour does), or ``inf`` if none does. O(log hours): the sparse
        table is descended, widest blocks first, over the hours that ask for no more."""
        levels = self.levels
        d = levels[0]
        n = len(d)
        if hour >= n - 1:
            return hour if d[n - 1] > gpus else math.inf
        if d[hour] > gpus:
            return hour
        k = hour
        for j in range(len(levels) - 1, -1, -1):
            w = 1 << j
            if k + w <= n and levels[j][k] <= gpus:
                k += w
        return k if k < n else math.inf


def can_ever_start(demand: np.ndarray, room_gpus: np.ndarray, earliest_h: np.ndarray, hold_h: np.ndarray,
                   horizon_h: float) -> np.ndarray:
    """Whether each job could start, alone on its pool, at some time in [``earliest_h``, horizon)
    with serving's hourly ``demand`` at most ``room_gpus`` (the pool's GPUs less the job's) in every
    hour its ``hold_h`` hours touch — the admission rule of owned and reserved pools, failures
    aside. Demand is a step per whole hour, so the candidate
    starts are ``earliest_h`` itself and every whole hour after it: a start inside hour h touches
    hour h and at least the hours a start at h would.

    Per distinct room: the hours with demand ≤ room form runs; ``run[h]`` is how many such hours
    follow from h, and a job of k = ⌈hold⌉ hours fits at whole hour h iff run[h] ≥ k."""
    room_gpus = np.asarray(room_gpus, dtype=np.int64)
    earliest_h = np.asarray(earliest_h, dtype=float)
    hold_h = np.asarray(hold_h, dtype=float)
    d = np.asarray(demand, dtype=np.int64)
    # Whole hours a run touches; windows stay inside the table (a run longer than half of it only
    # needs room for that long: the table's trend and daily swing have shown themselves by then).
    k = np.minimum(np.maximum(np.ceil(hold_h - 1e-9), 1).astype(np.int64), max(len(d) // 2, 1))
    last_start = min(int(np.ceil(horizon_h)), len(d)) - 1  # whole-hour starts before the horizon
    first_whole = np.ceil(earliest_h - 1e-9).astype(np.int64)
    table = RangeMax(d)
    ok_out = np.zeros(len(room_gpus), dtype=bool)
    idx_all = np.arange(len(d))
    for room in np.unique(room_gpus):
        jobs = np.flatnonzero(room_gpus == room)
        if room < 0:
            continue
        bad = np.where(d > room, idx_all, len(d))
        next_bad = np.minimum.accumulate(bad[::-1])[::-1]  # first hour ≥ h where serving leaves too little
        run = next_bad - idx_all
        best = np.maximum.accumulate(run[: last_start + 1][::-1])[::-1] if last_start >= 0 else np.zeros(0, np.int64)
        a = first_whole[jobs]
        within = a <= last_start
        fits = np.zeros(len(jobs), dtype=bool)
        fits[within] = best[a[within]] >= k[jobs][within]
        for j in np.flatnonzero(~fits):  # a start at the earliest time itself, inside its hour
            t0 = earliest_h[jobs[j]]
            if t0 < horizon_h and table.peak(t0, t0 + hold_h[jobs[j]]) <= room:
                fits[j] = True
        ok_out[jobs] = fits
    return ok_out
