"""Targets a configuration must meet: ``p95_delay_h<=4``, ``completion>=0.99``,
``rl_iterations_per_day>=N`` (the CLI's ``--target`` and ``costsim.decide(..., targets=)``).

A target names a metric of a run's summary row (or one derived from it), a comparison and a
number. ``value(row, metric)`` reads the metric from a summary row (or a row of means);
``shortfall(row, wanted)`` says what such a row misses, in numbers."""

from __future__ import annotations

import math
from dataclasses import dataclass

from costsim.scenario.targets import DEFAULT_TARGETS, METRICS, SHARES, Target, parse_target, targets

MAJORITY = 0.5
"""The share of the replications (0–1) in which an option must keep up, or reach a target score,
to be said to: the verdict, the tornado, the optimiser, the Pareto table and time to target all
hold options to this one rule."""

__all__ = ["DEFAULT_TARGETS", "MAJORITY", "METRICS", "SHARES", "Shortfall", "Target", "parse_target", "shortfall",
           "targets", "value"]


def value(row, metric: str) -> float:
    """The metric's value in a summary row (a mapping or pandas row). ``completion`` is the
    summary's column (completed finishable jobs ÷ finishable jobs, ``costsim.results.backlog``);
    a row from before it was a column (or NaN there) falls back to completed ÷ submitted jobs."""
    column = METRICS[metric][0]
    if column == "completion":
        if "completion" in row and not math.isnan(float(row["completion"])):
            return float(row["completion"])
        return float(row["jobs_completed"]) / float(row["jobs_submitted"]) if row["jobs_submitted"] else math.nan
    return float(row[column])


@dataclass(frozen=True, kw_only=True)
class Shortfall:
    """What a row of means misses (``shortfall``): whether it keeps up (``why`` not: the gate's
    reason, ``fair.why_not``), each target it misses with the row's value of its metric, and
    ``far``: how far, the sum of relative shortfalls (an option that cannot keep up counts its
    excess load, or 1 when it has none to show; a target with no value, inf)."""

    keeps_up: bool = True
    why: str = ""
    missed: tuple[tuple[Target, float], ...] = ()
    far: float = 0.0

    @property
    def conditions(self) -> int:
        """How many conditions the row misses: keeping up, and each target."""
        return int(not self.keeps_up) + len(self.missed)


def shortfall(row, wanted: tuple[Target, ...]) -> Shortfall:
    """What ``row`` (a row of means with ``keeps_up``, ``why`` and ``offered_load``, as
    ``fair.fair_rows`` and the verdict's option table give) misses of keeping up and ``wanted``."""
    keeps_up, far = bool(row["keeps_up"]), 0.0
    if not keeps_up:
        load = row["offered_load"]
        far += max(load - 1.0, 0.0) if not math.isnan(load) and load > 1 else 1.0
    missed = []
    for t in wanted:
        x = value(row, t.metric)
        if not t.met(x):
            missed.append((t, x))
            far += abs(x - t.value) / max(abs(t.value), 1e-9) if not math.isnan(x) else math.inf
    return Shortfall(keeps_up=keeps_up, why="" if keeps_up else str(row["why"]), missed=tuple(missed), far=far)
