"""How a fleet (and a hybrid, the fleet of one pool) routes its jobs: pools in order of preference,
then a burst after the job's wait.

A job arriving joins the queue of every pool part that could ever hold it (``fits_ever``; with
``bridge``, only those already delivered). The pools decide in one ``DECIDE`` event per instant,
in part order (``SharedDecider``), so when several could start a job at the same instant the first
part does. A job started on one pool is dropped from the others' queues (``OwnedCluster.forget``)
and stays with that pool for good (a failure sends it back to that pool's queue, where its work
and GPU-hours are). If it has never started when its wait ends (``TIMER``, after the releases and
the passes at that instant: ``costsim.engine.events``), it is withdrawn from every queue and runs
on the burst; a job no pool can hold (or, bridging, arriving before any is delivered) bursts at once,
as does a queued job (started or not) that a lease's return leaves no pool able to hold any more,
its checkpointed share of its run carried over (``OwnedCluster.on_stranded``).

With one pool part this is exactly the hybrid's rule: join the base's queue, burst after the wait.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import simpy

from costsim.engine.cloud import CloudPool
from costsim.engine.events import DECIDE, TIMER, At
from costsim.engine.owned import OwnedCluster
from costsim.engine.records import Recorder


class PartDecider:
    """One pool's handle on the fleet's ``SharedDecider``: what the pool calls ``request`` on."""

    def __init__(self, shared: SharedDecider, k: int):
        self.shared, self.k = shared, k

    def request(self) -> None:
        self.shared.request(self.k)


class SharedDecider:
    """Coalesces the pools' requests for a scheduling pass into one ``DECIDE`` event per instant,
    at which the pools that asked decide in part order (a pool asking again during it, e.g. after a
    job it queued started elsewhere, decides again in the same event if it comes later in the
    order, else in another ``DECIDE`` event at the same instant)."""

    def __init__(self, env: simpy.Environment, passes: Sequence[Callable[[], None]]):
        self.env, self.passes = env, passes
        self.asked = [False] * len(passes)
        self.pending = False

    def request(self, k: int) -> None:
        self.asked[k] = True
        if not self.pending:
            self.pending = True
            At(self.env, 0.0, DECIDE, self._fire)

    def _fire(self, _: Any) -> None:
        self.pending = False
        for k, decide in enumerate(self.passes):
            if self.asked[k]:
                self.asked[k] = False
                decide()


class PartsRouter:
    """What a router of jobs over several pools (a fleet's parts, a pool's node groups:
    ``costsim.engine.groups``) shares: the pools decide in one ``DECIDE`` event per instant, in
    part order (``SharedDecider``), and a job started on one pool is recorded as on that part and
    dropped from the others' queues (``OwnedCluster.forget``). ``parts``: the pools in part order."""

    def __init__(self, env: simpy.Environment, parts: Sequence[OwnedCluster], rec: Recorder):
        self.parts, self.rec = list(parts), rec
        shared = SharedDecider(env, [p.decide for p in self.parts])
        for k, part in enumerate(self.parts):
            part.decider = PartDecider(shared, k)  # type: ignore[assignment]
            part.on_start = lambda i, k=k: self.started(i, k)

    def started(self, i: int, k: int) -> None:
        """Job i started on part k now: it stays there for good (a failure sends it back to that
        part's queue, where its work and GPU-hours are)."""
        self.rec.part[i] = k
        for other, part in enumerate(self.parts):
            if other != k:
                part.forget(i)


class FleetRouter(PartsRouter):
    """A fleet's arrivals (see the module): ``pools`` in order of preference, ``burst`` last.
    ``wait_h[i]``: hours job i waits for the pools (``hybrid_waits``); ``gpus[k][i]``: the GPUs job
    i asks of pool k; ``bridge``: a pool not yet delivered takes no new job. The record's part of a
    job on pool k is k (the router's ``parts`` are the pools), on the burst ``burst_part``."""

    def __init__(self, env: simpy.Environment, pools: Sequence[OwnedCluster], burst: CloudPool,
                 wait_h: Sequence[float], bridge: bool, gpus: Sequence[Sequence[int]], rec: Recorder):
        super().__init__(env, pools, rec)
        self.env, self.burst = env, burst
        self.wait_h, self.bridge, self.gpus = wait_h, bridge, gpus
        self.burst_part = len(self.parts)
        for k, pool in enumerate(self.parts):
            pool.on_stranded = lambda i, k=k: self._stranded(i, k)

    def arrive(self, i: int) -> None:
        joined = False
        for k, pool in enumerate(self.parts):
            if (self.bridge and not pool.ready) or not pool.fits_ever(self.gpus[k][i]):
                continue
            pool.arrive(i)
            joined = True
        if not joined:
            self._burst(i)
            return
        At(self.env, self.wait_h[i], TIMER, lambda _e, i=i: self._waited(i))

    def _stranded(self, i: int, k: int) -> None:
        """Job i can never fit pool k again (a lease took its nodes back) and left its queue: unless
        another pool still queues it, it bursts now. Started on pool k, it keeps the share of its
        planned run it had checkpointed there (a checkpoint moves with the job), in the burst's hours."""
        if any(i in pool.waiting for pool in self.parts):
            return
        if self.rec.start_h[i] == self.rec.start_h[i]:  # started on pool k: pos is in its hours
            here, there = self.parts[k].progress.run_h[i], self.burst.progress.run_h[i]
            self.rec.pos_h[i] = self.rec.pos_h[i] / here * there if here > 0 else 0.0
        self._burst(i)

    def _waited(self, i: int) -> None:
        # withdraw from every pool (a list, not any(): each queue must let it go)
        if any([pool.withdraw(i) for pool in self.parts]):
            self._burst(i)

    def _burst(self, i: int) -> None:
        self.rec.part[i] = self.burst_part
        self.burst.arrive(i)
