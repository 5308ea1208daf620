"""Event plumbing shared by the pools, and the same-instant order every run obeys.

Same-instant order (enforced by SimPy event priorities, ties by creation order):

1. ``RELEASE`` (0): jobs ending, capacity arriving (an owned cluster's delivery), instances
   delivered after provisioning. Capacity freed at t is free for every decision at t.
2. ``ARRIVAL`` (1): jobs submitted at t join the queue.
3. ``DECIDE`` (2): one scheduling pass per instant, after every release and arrival at t, so
   a decision sees the whole state at t and runs are deterministic.
4. ``TIMER`` (3): a hybrid job's wait limit, after the releases and the pass at t. So a job whose
   wait ends at the very instant the base frees room for it starts on the base; otherwise (and
   only if it has never started on the base) it is withdrawn and bursts. A withdrawal asks for
   another ``DECIDE`` at t, which runs before the next timer at t (priority 2 < 3): jobs queued
   behind a withdrawn job start on the base at that instant if they fit, before their own limits
   at t are looked at. Timers due at the same instant fire in submit order (creation order).

Callbacks are plain functions on a bare event, not SimPy processes: a job costs its arrival,
its start-or-queue decision and its release, and no generator frames (see benchmarks/).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import simpy
from simpy.events import Event, EventPriority

RELEASE = EventPriority(0)
ARRIVAL = EventPriority(1)
DECIDE = EventPriority(2)
TIMER = EventPriority(3)


class At(Event):
    """An event ``delay`` hours from now, at ``priority``, that calls ``fn(event)``.

    ``fn`` is typed ``Callable[..., None]``, not ``Callable[[Any], None]``: callbacks bind their job
    as lambda defaults (``lambda _e, i=i: ...``), which mypy cannot infer against the latter."""

    def __init__(self, env: simpy.Environment, delay: float, priority: EventPriority, fn: Callable[..., None]):
        self.env = env
        self.callbacks = [fn]
        self._value = None
        self._ok = True
        env.schedule(self, priority, delay)


class ArrivalFeed:
    """Feeds jobs to ``on_arrival(i)`` at their submit times, one pending event at a time."""

    def __init__(self, env: simpy.Environment, submit_h: Sequence[float], on_arrival: Callable[[int], None]):
        self.env = env
        self.submit_h = submit_h
        self.on_arrival = on_arrival
        self.next = 0
        if submit_h:
            At(env, submit_h[0], ARRIVAL, self._fire)

    def _fire(self, _: Any) -> None:
        i = self.next
        submit = self.submit_h
        n = len(submit)
        now = self.env.now
        # Jobs submitted at the same instant arrive together, in table order.
        while i < n and submit[i] <= now:
            self.on_arrival(i)
            i += 1
        self.next = i
        if i < n:
            At(self.env, submit[i] - now, ARRIVAL, self._fire)


class Decider:
    """Coalesces requests for a scheduling pass into one ``DECIDE`` event per instant."""

    def __init__(self, env: simpy.Environment, decide: Callable[[], None]):
        self.env = env
        self.decide = decide
        self.pending = False

    def request(self) -> None:
        if not self.pending:
            self.pending = True
            At(self.env, 0.0, DECIDE, self._fire)

    def _fire(self, _: Any) -> None:
        self.pending = False
        self.decide()
