"""Failures, checkpoints and restarts in closed form (DESIGN.md section 6): pure functions, hours.

A segment of w hours (work since the last checkpoint plus its write) under failures at rate λ per
hour, each costing a restart of R hours (no failures during the restart, no queueing after a
failure), takes on average
    E[T] = (e^{λw} − 1) (1/λ + R)
(number of failures e^{λw} − 1, each wasting its expected time before failing plus R; the last
attempt succeeds). The Young/Daly interval sqrt(2 · write / λ) minimises the overhead of periodic
checkpoints to first order; ``advice`` compares a job's current interval with it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def expected_segment_h(w_h: float, rate_per_h: float, restart_h: float) -> float:
    """Expected hours to finish a segment of ``w_h`` hours under failures at ``rate_per_h``."""
    if rate_per_h <= 0:
        return w_h
    return math.expm1(rate_per_h * w_h) * (1.0 / rate_per_h + restart_h)


def expected_job_h(work_h: float, interval_h: float, write_h: float, rate_per_h: float, restart_h: float) -> float:
    """Expected hours for ``work_h`` of work checkpointed every ``interval_h`` (a write of
    ``write_h`` after each full interval except at the end)."""
    full = max(math.ceil(work_h / interval_h - 1e-9) - 1, 0)
    last = work_h - full * interval_h
    return full * expected_segment_h(interval_h + write_h, rate_per_h, restart_h) + expected_segment_h(
        last, rate_per_h, restart_h
    )


def young_daly_h(write_h: float, rate_per_h: float) -> float:
    """Checkpoint interval (hours of work) that minimises expected overhead: sqrt(2 · write / λ)."""
    return math.sqrt(2.0 * write_h / rate_per_h)


def job_failure_rate_per_h(nodes: int, failures_per_1000_node_days: float) -> float:
    """A gang job fails when any of its nodes does: nodes × per-node rate (per hour)."""
    return nodes * failures_per_1000_node_days / 1000.0 / 24.0


@dataclass(frozen=True)
class Advice:
    """Checkpoint advice for one job shape: expected hours now and at the Young/Daly interval."""

    interval_h: float
    optimal_interval_h: float
    expected_h: float
    optimal_expected_h: float

    @property
    def excess(self) -> float:
        """How much longer the current interval makes the job than the optimal one (0.1 = 10 %)."""
        return self.expected_h / self.optimal_expected_h - 1.0


def advice(work_h: float, interval_h: float, write_h: float, rate_per_h: float, restart_h: float) -> Advice:
    """Expected completion with the current checkpoint interval and with the Young/Daly one."""
    best = min(young_daly_h(write_h, rate_per_h), work_h) if rate_per_h > 0 else work_h
    return Advice(interval_h, best, expected_job_h(work_h, interval_h, write_h, rate_per_h, restart_h),
                  expected_job_h(work_h, best, write_h, rate_per_h, restart_h))
