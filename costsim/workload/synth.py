"""Synthetic job traces: Poisson arrivals of job groups with chosen sizes and run-time laws.

Used to make the shipped lab trace (``scenarios/traces/make_traces.py``), the queueing-theory
tests and the benchmarks. Seeded by one ``numpy.random.SeedSequence``: per group, a stream of
arrivals (drawn in sequence) and one of run times (drawn per job).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from costsim.models.sampling import lognormal
from costsim.workload.arrivals import SHAPE_BLOCK, in_blocks, unit_process

HOURS_PER_YEAR = 8760.0


@dataclass(frozen=True)
class JobGroup:
    """Jobs of one kind: Poisson arrivals at ``per_day``; run time with mean ``mean_h`` and
    coefficient of variation ``cv`` (0: deterministic, 1 with ``law='exponential'``, else lognormal)."""

    name: str
    per_day: float
    gpus: int
    mean_h: float
    cv: float = 1.0
    law: str = "lognormal"  # lognormal | exponential | deterministic
    priority: int = 0
    growth_per_year: float = 0.0  # arrival rate grows linearly: rate(t) = per_day · (1 + g · t/365 d)

    def draw_durations(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray]:
        """``n`` run times (hours) of this group's jobs, as the one column ``in_blocks`` draws."""
        return (durations(rng, n, self.mean_h, self.cv, self.law),)


def durations(rng: np.random.Generator, n: int, mean_h: float, cv: float, law: str) -> np.ndarray:
    """``n`` run times (hours) with the given mean and coefficient of variation."""
    if law == "deterministic" or cv == 0:
        return np.full(n, float(mean_h))
    if law == "exponential":
        return rng.exponential(mean_h, n)
    return lognormal(rng, n, mean_h, cv)


def growing_poisson_times(rng: np.random.Generator, per_h: float, horizon_h: float, growth_per_year: float) -> np.ndarray:
    """Poisson arrivals on [0, horizon_h) whose rate grows linearly, λ(t) = per_h · (1 + g · t / 8760)
    (g = ``growth_per_year``; a negative g stops the arrivals where the rate reaches 0), drawn in
    sequence: t = Λ⁻¹(S) of a unit-rate process (``costsim.workload.arrivals.unit_process``), with
    Λ(t) = per_h · (t + g t² / 17520). A longer horizon keeps every earlier arrival."""
    if per_h <= 0:
        return np.zeros(0)
    g = growth_per_year / HOURS_PER_YEAR
    stop = horizon_h if g >= 0 else min(horizon_h, -1.0 / g)  # the rate is 0 from -1/g on
    s, _ = unit_process(rng, per_h * (stop + g * stop * stop / 2))
    x = s / per_h
    # The root of t + g t²/2 = x that is 0 at x = 0, in the form without cancellation.
    t = 2 * x / (1 + np.sqrt(np.maximum(1 + 2 * g * x, 0.0)))
    return t[t < stop]


def make_trace(groups: Sequence[JobGroup], horizon_days: float, seed: int) -> pd.DataFrame:
    """A trace table (``submit_h, gpus, duration_h, job_id, job_class, priority``) sorted by submit
    time. Group i's arrivals come from stream ``SeedSequence(seed, spawn_key=(i, 0))`` and its jobs'
    run times, in blocks of ``SHAPE_BLOCK`` jobs, from ``(i, 1)``: the trace over a shorter horizon
    is the first rows of the trace over a longer one, ids included."""
    horizon_h = horizon_days * 24.0
    parts = []
    for i, group in enumerate(groups):
        arrivals, shapes = (np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(i, part))) for part in (0, 1))
        t = growing_poisson_times(arrivals, group.per_day / 24.0, horizon_h, group.growth_per_year)
        (hours,) = in_blocks(shapes, group.draw_durations, len(t), SHAPE_BLOCK)
        parts.append(pd.DataFrame({
            "submit_h": t,
            "gpus": group.gpus,
            "duration_h": hours,
            "job_class": group.name,
            "priority": group.priority,
        }))
    df = pd.concat(parts, ignore_index=True).sort_values("submit_h", kind="stable", ignore_index=True)
    df.insert(3, "job_id", [f"j{i:06d}" for i in range(len(df))])
    return df[["submit_h", "gpus", "duration_h", "job_id", "job_class", "priority"]]
