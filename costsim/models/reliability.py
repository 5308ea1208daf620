"""Failures, checkpoints and restarts in closed form (DESIGN.md section 6): pure functions, hours.

A segment of w hours (work since the last checkpoint plus its write) under failures at rate λ per
hour, each costing a restart of R hours (no failures during the restart, no queueing after a
failure), takes on average
    E[T] = (e^{λw} − 1) (1/λ + R)
(number of failures e^{λw} − 1, each wasting its expected time before failing plus R; the last
attempt succeeds). Several independent causes (node failures, spot preemptions) act as one of
rate Σλ_c whose R is the rate-weighted mean Σλ_c·R_c / Σλ_c (``combined_interruptions``): each
interruption comes from cause c with probability λ_c / Σλ, independently of when it comes.
The Young/Daly interval sqrt(2 · write / λ) minimises the overhead of periodic checkpoints to
first order; ``advice`` compares a job's current interval with it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from costsim.units import HOURS_PER_DAY

_MAX_EXPONENT = 700.0  # math.exp overflows just above 709.78


def expected_segment_h(w_h: float, rate_per_h: float, restart_h: float) -> float:
    """Expected hours to finish a segment of ``w_h`` hours under failures at ``rate_per_h``."""
    if rate_per_h <= 0:
        return w_h
    if rate_per_h * w_h > _MAX_EXPONENT:  # e^{λw} overflows a float: the segment practically never ends
        return math.inf
    return math.expm1(rate_per_h * w_h) * (1.0 / rate_per_h + restart_h)


def expected_job_h(work_h: float, interval_h: float, write_h: float, rate_per_h: float, restart_h: float) -> float:
    """Expected hours for ``work_h`` of work checkpointed every ``interval_h`` (a write of
    ``write_h`` after each full interval except at the end). An interval of 0 (free checkpoints,
    taken continuously) is the limit interval → 0: no work is lost, each interruption costs its
    restart, ``work_h · (1 + λ·R)``."""
    if interval_h <= 0:
        return work_h * (1.0 + rate_per_h * restart_h)
    full = max(math.ceil(work_h / interval_h - 1e-9) - 1, 0)
    last = work_h - full * interval_h
    whole = full * expected_segment_h(interval_h + write_h, rate_per_h, restart_h) if full else 0.0  # not 0 · inf
    return whole + expected_segment_h(last, rate_per_h, restart_h)


def checkpoint_writes(duration_h: np.ndarray, every_h: float) -> np.ndarray:
    """Checkpoints a trace job of ``duration_h`` hours of work writes, one after each full
    ``every_h`` hours of it, none at its end."""
    return np.maximum(np.ceil(np.asarray(duration_h) / every_h - 1e-9) - 1, 0)


def combined_interruptions(causes: list[tuple[float, float]]) -> tuple[float, float]:
    """(rate per hour, hours lost per interruption) of independent Poisson causes, each given as
    (rate per hour, hours before work resumes): rates add, costs average weighted by rate.
    No cause, or all at rate 0: (0, 0)."""
    rate = sum(r for r, _ in causes)
    if rate <= 0:
        return 0.0, 0.0
    return rate, sum(r * cost for r, cost in causes) / rate


def young_daly_h(write_h: float, rate_per_h: float) -> float:
    """Checkpoint interval (hours of work) that minimises expected overhead: sqrt(2 · write / λ)."""
    return math.sqrt(2.0 * write_h / rate_per_h)


def job_failure_rate_per_h(nodes: int, failures_per_1000_node_days: float) -> float:
    """A gang job fails when any of its nodes does: nodes × per-node rate (per hour)."""
    return nodes * failures_per_1000_node_days / 1000.0 / HOURS_PER_DAY


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
        if math.isinf(self.expected_h):
            return math.inf
        return self.expected_h / self.optimal_expected_h - 1.0


def advice(work_h: float, interval_h: float, write_h: float, rate_per_h: float, restart_h: float) -> Advice:
    """Expected completion with the current checkpoint interval and with the Young/Daly one."""
    best = min(young_daly_h(write_h, rate_per_h), work_h) if rate_per_h > 0 else work_h
    return Advice(interval_h, best, expected_job_h(work_h, interval_h, write_h, rate_per_h, restart_h),
                  expected_job_h(work_h, best, write_h, rate_per_h, restart_h))
