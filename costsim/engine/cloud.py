"""Rented capacity, on demand or spot: instances requested per job, delivered after provisioning.

A job of g GPUs rents ⌈g / gpus_per_instance⌉ whole instances. With a quota (``max_gpus``), jobs
wait in submit order (strict FIFO) until their instances fit under it; instances count against
the quota from request to release. A large request may find no capacity (stock-out) and is tried
again later. The provisioning delay is constant or lognormal. Billing starts at delivery: startup
(boot, image pull, data staging) is billed, then the job runs; instances are released when it ends.

Interruptions (each instance fails or is preempted independently, so a job on k instances at k
times the rate):
- a node failure: the job falls back to its last checkpoint; the provider swaps the node after the
  provisioning delay, the job keeps (and pays for) its other instances meanwhile, then restarts. A
  failure during startup (or during an earlier swap) leaves the rest of that delay still owed after
  the swap, and one during a restart makes the job restart again in full: a failure never makes a
  job end earlier or cost less;
- a spot preemption: the instances are taken back (billing stops); after ``reacquire_delay_h`` the
  job asks for capacity again, as if newly submitted, and restarts from its checkpoint.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import numpy as np
import simpy

from costsim.engine.events import RELEASE, At, Decider
from costsim.engine.progress import Progress
from costsim.engine.records import Recorder
from costsim.plan.options import CloudPlan, nodes_needed


class CloudPool:
    def __init__(self, env: simpy.Environment, *, plan: CloudPlan, gpus: Sequence[int], progress: Progress, rec: Recorder,
                 rngs: dict[str, np.random.Generator]):
        self.env = env
        self.gpi = plan.gpus_per_instance
        self.max_gpus = plan.max_gpus
        self.plan = plan
        self.gpus = gpus
        self.progress = progress
        self.rec = rec
        self.rngs = rngs
        self.in_use = 0  # GPUs under quota: requested and not yet released
        self.queue: deque[int] = deque()
        self.decider = Decider(env, self._decide)
        self.failure_rate = plan.failures_per_node_h
        self.preempt_rate = plan.preemptions_per_instance_h

    def fits_ever(self, gpus: int) -> bool:
        return self.max_gpus is None or nodes_needed(gpus, self.gpi) * self.gpi <= self.max_gpus

    def arrive(self, i: int) -> None:
        if self.max_gpus is None:
            self._request(i)
            return
        self.queue.append(i)
        self.decider.request()

    def _decide(self) -> None:
        queue, gpi, gpus = self.queue, self.gpi, self.gpus
        assert self.max_gpus is not None  # only a quota queues (``arrive``)
        while queue:
            need = nodes_needed(gpus[queue[0]], gpi) * gpi
            if self.in_use + need > self.max_gpus:
                return
            self._request(queue.popleft())

    def _provisioning_h(self) -> float:
        mean, cv = self.plan.provisioning_delay_h, self.plan.provisioning_cv
        if cv <= 0 or mean <= 0:
            return mean
        s2 = np.log1p(cv * cv)
        return float(self.rngs["provisioning"].lognormal(np.log(mean) - s2 / 2, np.sqrt(s2)))

    def _request(self, i: int) -> None:
        instances = nodes_needed(self.gpus[i], self.gpi)
        held = instances * self.gpi
        plan = self.plan
        if plan.stockout_probability > 0 and held >= plan.stockout_min_gpus:
            if self.rngs["provisioning"].uniform() < plan.stockout_probability:
                At(self.env, plan.stockout_retry_h, RELEASE, lambda _e, i=i: self.arrive(i))
                return
        self.in_use += held
        delay = self._provisioning_h()
        if delay > 0:
            At(self.env, delay, RELEASE, lambda _e, i=i: self._deliver(i, instances))
        else:
            self._deliver(i, instances)

    def _deliver(self, i: int, instances: int) -> None:
        now = self.env.now
        self.rec.hold(i, now, instances * self.gpi, instances)
        self._run(i, self.progress.begin(i, now, self.plan.startup_h))

    def _run(self, i: int, end: float) -> None:
        """The job works until ``end`` unless a failure or preemption comes first."""
        now = self.env.now
        self.rec.end_h[i] = end
        v = self.progress.version[i]
        k = self.rec.instances[i]
        fail = self.rngs["failures"].exponential(1 / (k * self.failure_rate)) if self.failure_rate > 0 else np.inf
        pre = self.rngs["preemptions"].exponential(1 / (k * self.preempt_rate)) if self.preempt_rate > 0 else np.inf
        first = min(fail, pre)
        if now + first < end:
            what = self._failed if fail <= pre else self._preempted
            At(self.env, first, RELEASE, lambda _e, i=i, v=v: what(i, v))
        else:
            At(self.env, end - now, RELEASE, lambda _e, i=i, v=v: self._release(i, v))

    def _failed(self, i: int, version: int) -> None:
        if version != self.progress.version[i]:
            return
        now = self.env.now
        self.progress.interrupt(i, now)
        swap = self._provisioning_h()  # the provider swaps the node; the job waits, holding the rest
        self.rec.overhead_h[i] += swap
        # Startup (or an earlier swap) still owed is not erased by the failure: it comes after the swap.
        self._run(i, self.progress.begin(i, now, swap + self.progress.owed_h[i]))

    def _preempted(self, i: int, version: int) -> None:
        if version != self.progress.version[i]:
            return
        now = self.env.now
        self.progress.interrupt(i, now)
        self.rec.preemptions[i] += 1
        self._give_back(i)
        At(self.env, self.plan.reacquire_delay_h, RELEASE, lambda _e, i=i: self.arrive(i))

    def _release(self, i: int, version: int) -> None:
        if version != self.progress.version[i]:
            return
        self._give_back(i)

    def _give_back(self, i: int) -> None:
        self.in_use -= self.rec.held_gpus[i]
        self.rec.release(i, self.env.now)
        if self.queue:
            self.decider.request()
