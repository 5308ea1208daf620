"""Pay-as-you-go cloud: instances requested per job, delivered after a provisioning delay.

A job of g GPUs rents ⌈g / gpus_per_instance⌉ whole instances. With a quota (``max_gpus``), jobs
wait in submit order (strict FIFO) until their instances fit under it; instances count against
the quota from request to release. Billing starts at delivery: startup (boot, image pull, data
staging) is billed, then the job runs; the instances are released when it ends.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import simpy

from .events import RELEASE, At, Decider
from .records import Recorder


class CloudPool:
    def __init__(
        self,
        env: simpy.Environment,
        gpus_per_instance: int,
        max_gpus: int | None,
        provisioning_delay_h: float,
        startup_h: float,
        gpus: list[int],
        run_h: list[float],
        rec: Recorder,
    ):
        self.env = env
        self.gpi = gpus_per_instance
        self.max_gpus = max_gpus
        self.provisioning_delay_h = provisioning_delay_h
        self.startup_h = startup_h
        self.gpus = gpus
        self.run_h = run_h
        self.rec = rec
        self.in_use = 0  # GPUs under quota: requested and not yet released
        self.queue: deque[int] = deque()
        self.decider = Decider(env, self._decide)

    def fits_ever(self, gpus: int) -> bool:
        return self.max_gpus is None or -(-gpus // self.gpi) * self.gpi <= self.max_gpus

    def arrive(self, i: int) -> None:
        if self.max_gpus is None:
            self._request(i)
            return
        self.queue.append(i)
        self.decider.request()

    def _decide(self) -> None:
        queue, gpi, gpus = self.queue, self.gpi, self.gpus
        while queue:
            need = -(-gpus[queue[0]] // gpi) * gpi
            if self.in_use + need > self.max_gpus:  # type: ignore[operator]
                return
            self._request(queue.popleft())

    def _request(self, i: int) -> None:
        instances = -(-self.gpus[i] // self.gpi)
        rec = self.rec
        rec.instances[i] = instances
        rec.held_gpus[i] = instances * self.gpi
        self.in_use += instances * self.gpi
        if self.provisioning_delay_h > 0:
            At(self.env, self.provisioning_delay_h, RELEASE, lambda _e, i=i: self._deliver(i))
        else:
            self._deliver(i)

    def _deliver(self, i: int) -> None:
        hold = self.startup_h + self.run_h[i]
        now = self.env.now
        self.rec.start_h[i] = now
        self.rec.end_h[i] = now + hold
        At(self.env, hold, RELEASE, lambda _e, i=i: self._release(i))

    def _release(self, i: int) -> None:
        self.in_use -= self.rec.held_gpus[i]
        if self.queue:
            self.decider.request()
