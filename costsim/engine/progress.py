"""How far each job has got, and what an interruption costs it.

A job's nominal timeline is its planned run (work plus checkpoint writes, ``costsim.workload.plan``);
``boundaries(i)`` are the points on it where a checkpoint write completes (the last is the end).
An attempt works from ``pos`` (the last completed checkpoint); interrupted after e hours of work it
falls back to the last boundary reached: the rest is lost work. Resuming costs the job's restart
time first, during which it holds its GPUs and cannot make progress (and, as in the closed form of
``costsim.models.reliability``, its failure clock has not started).

An interruption never shortens a job: a delay still owed when it strikes (cloud startup, a node swap
not yet done) is carried into the next attempt, and a restart it cuts short is paid again in full.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence

import numpy as np

from costsim.engine.records import Recorder


class Progress:
    """Per job (by index): ``run_h`` planned hours held, ``restart_h`` restart hours after an
    interruption, ``first_h`` hours held before its first attempt works (an offloaded job's wait for
    its rollout instances, ``WorkPlan.first_h``; none if not given) (lists or ``array.array``
    columns, read per event), ``boundaries(i)`` its checkpoint points. The per-job state kept here
    is typed ``array.array`` columns, not lists of boxed numbers."""

    def __init__(self, run_h: Sequence[float], boundaries: Callable[[int], np.ndarray], restart_h: Sequence[float],
                 rec: Recorder, first_h: Sequence[float] | None = None):
        self.run_h = run_h
        self.boundaries = boundaries
        self.restart_h = restart_h
        self.first_h = first_h
        self.rec = rec
        self.pos = rec.pos_h  # recorded, so results can tell how far a job cut by the horizon got
        self.work_from = rec.work_from_h
        n = len(run_h)
        self.version = array("q", [0]) * n  # bumped by every interruption: events of an earlier attempt are stale
        self.attempt_restart = array("d", [0.0]) * n  # restart hours the current attempt began with
        self.owed_h = array("d", [0.0]) * n  # delay (startup, swap) the last interruption left unserved

    def hold_h(self, i: int) -> float:
        """Hours job i would hold its GPUs from now if started now: its restart time (when it has been
        interrupted before) plus the rest of its planned run. The one answer used by admission under
        serving, backfill candidates and reservations."""
        return self.restart_due(i) + self.run_h[i] - self.pos[i]

    def restart_due(self, i: int) -> float:
        """Hours job i restarts for before working again: its restart time once it has been
        interrupted; before that its first wait (``first_h``, if any)."""
        if self.rec.restarts[i]:
            return self.restart_h[i]
        return self.first_h[i] if self.first_h is not None else 0.0

    def begin(self, i: int, now: float, delay_h: float = 0.0) -> float:
        """Start or resume job i after ``delay_h`` (startup, a node swap) and, when resuming, its
        restart time; returns when it will end if nothing interrupts it."""
        restart = self.restart_due(i)
        self.rec.overhead_h[i] += restart
        self.attempt_restart[i] = restart
        self.work_from[i] = now + delay_h + restart
        return self.work_from[i] + (self.run_h[i] - self.pos[i])

    def interrupt(self, i: int, now: float) -> float:
        """Job i stops now: it falls back to its last completed checkpoint. Returns the hours lost.

        If it was still in its delay (startup, swap) the unserved part is kept in ``owed_h[i]`` for the
        caller to carry over; an unfinished restart is not counted as overhead (it is paid again)."""
        ahead = max(0.0, self.work_from[i] - now)  # hours of delay and restart not yet served
        unserved_restart = min(ahead, self.attempt_restart[i])
        self.owed_h[i] = ahead - unserved_restart
        self.rec.overhead_h[i] -= unserved_restart
        reached = min(self.pos[i] + max(now - self.work_from[i], 0.0), self.run_h[i])
        b = self.boundaries(i)
        k = int(np.searchsorted(b, reached + 1e-12, side="right"))
        back = max(float(b[k - 1]) if k else 0.0, self.pos[i])
        lost = reached - back
        self.pos[i] = back
        self.version[i] += 1
        self.rec.restarts[i] += 1
        self.rec.lost_h[i] += lost
        self.rec.end_h[i] = float("nan")  # no planned end until it runs again
        return lost
