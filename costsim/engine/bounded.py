"""Running an environment with a ceiling on its events, checked between chunks of simulated time.

``costsim.runs.budget`` refuses runs whose ESTIMATED events exceed the limit before they start; this
is the backstop for where the estimate is badly wrong: the run stops with ``EventLimitExceeded``
instead of going on for hours. Nothing is checked per event — SimPy runs each chunk at full
speed and the counter is read once per chunk — and chunks change nothing about the run: SimPy
resumes with the same queue of events in the same order.
"""

from __future__ import annotations

import simpy

FIRST_CHUNK = 1 / 1024  # of the horizon: the first look at the event rate comes early
MIN_CHUNK = 1 / 65536  # of the horizon: at most this many chunks, so the chunking itself stays cheap
CHUNK_SHARE = 1 / 16  # of the remaining budget each later chunk is sized to spend at the rate so far


class EventLimitExceeded(RuntimeError):
    """A run scheduled more events than it was allowed; ``now_h`` is how far it got."""

    def __init__(self, events: int, limit: int, now_h: float, until_h: float):
        self.events, self.limit, self.now_h, self.until_h = events, limit, now_h, until_h
        # Simulated hours are finite and non-negative: plain fixed-point reads as the formatter would.
        super().__init__(f"{events:,} simulation events by hour {now_h:,.1f} of {until_h:,.1f}, "
                         f"above the limit of {limit:,}")


def events_scheduled(env: simpy.Environment) -> int:
    """Events scheduled so far: SimPy numbers every scheduled event with this counter."""
    return next(env._eid)


def run_bounded(env: simpy.Environment, until_h: float, max_events: int | None) -> None:
    """``env.run(until=until_h)``, stopping with ``EventLimitExceeded`` once more than
    ``max_events`` events have been scheduled in it (``None``: no limit, one plain run).

    The first chunk is ``FIRST_CHUNK`` of the horizon; each later one is sized so that, at the
    event rate seen so far, it would spend ``CHUNK_SHARE`` of the budget left (never shorter than
    ``MIN_CHUNK`` of the horizon). Reading the counter itself schedules nothing.
    """
    if max_events is None:
        env.run(until=until_h)
        return
    start_events, start_h = events_scheduled(env), env.now
    span = until_h - start_h
    step = span * FIRST_CHUNK
    while env.now < until_h:
        stop = min(env.now + max(step, span * MIN_CHUNK), until_h)
        env.run(until=stop)
        used = events_scheduled(env) - start_events
        if used > max_events:
            raise EventLimitExceeded(used, max_events, env.now, until_h)
        rate = used / (env.now - start_h)  # events per simulated hour so far
        step = (max_events - used) * CHUNK_SHARE / rate if rate > 0 else span
