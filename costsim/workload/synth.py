"""Synthetic job traces: Poisson arrivals of job groups with chosen sizes and run-time laws.

Used to make the shipped lab trace (``scenarios/traces/README.md`` says how), the queueing-theory
tests and the benchmarks. Seeded by one ``numpy.random.SeedSequence``: a stream per group.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from costsim.models.sampling import lognormal, poisson_times


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


def durations(rng: np.random.Generator, n: int, mean_h: float, cv: float, law: str) -> np.ndarray:
    """``n`` run times (hours) with the given mean and coefficient of variation."""
    if law == "deterministic" or cv == 0:
        return np.full(n, float(mean_h))
    if law == "exponential":
        return rng.exponential(mean_h, n)
    return lognormal(rng, n, mean_h, cv)


def growing_poisson_times(rng: np.random.Generator, per_h: float, horizon_h: float, growth_per_year: float) -> np.ndarray:
    """Poisson arrivals on [0, horizon_h) whose rate grows linearly by ``growth_per_year``
    (thinning: candidates at the peak rate kept with probability rate(t) / peak)."""
    peak = per_h * (1 + max(growth_per_year, 0.0) * horizon_h / 8760.0)
    t = poisson_times(rng, peak, 0.0, horizon_h)
    if growth_per_year:
        keep = rng.uniform(0.0, 1.0, len(t)) < per_h * (1 + growth_per_year * t / 8760.0) / peak
        t = t[keep]
    return t


def make_trace(groups: Sequence[JobGroup], horizon_days: float, seed: int) -> pd.DataFrame:
    """A trace table (``submit_h, gpus, duration_h, job_id, job_class, priority``) sorted by submit time."""
    horizon_h = horizon_days * 24.0
    streams = np.random.SeedSequence(seed).spawn(len(groups))
    parts = []
    for group, ss in zip(groups, streams, strict=True):
        rng = np.random.default_rng(ss)
        t = growing_poisson_times(rng, group.per_day / 24.0, horizon_h, group.growth_per_year)
        parts.append(pd.DataFrame({
            "submit_h": t,
            "gpus": group.gpus,
            "duration_h": durations(rng, len(t), group.mean_h, group.cv, group.law),
            "job_class": group.name,
            "priority": group.priority,
        }))
    df = pd.concat(parts, ignore_index=True).sort_values("submit_h", kind="stable", ignore_index=True)
    df.insert(3, "job_id", [f"j{i:06d}" for i in range(len(df))])
    return df[["submit_h", "gpus", "duration_h", "job_id", "job_class", "priority"]]
