"""Targets a configuration must meet: ``p95_delay_h<=4``, ``completion>=0.99``,
``rl_iterations_per_day>=N`` (the CLI's ``--target`` and ``costsim.decide(..., targets=)``).

A target names a metric of a run's summary row (or one derived from it), a comparison and a
number. ``value(row, metric)`` reads the metric from a summary row (or a row of means)."""

from __future__ import annotations

import math

from costsim.scenario.targets import DEFAULT_TARGETS, METRICS, SHARES, Target, parse_target, targets

MAJORITY = 0.5
"""The share of the replications (0–1) in which an option must keep up, or reach a target score,
to be said to: the verdict, the tornado, the optimiser, the Pareto table and time to target all
hold options to this one rule."""

__all__ = ["DEFAULT_TARGETS", "MAJORITY", "METRICS", "SHARES", "Target", "parse_target", "targets", "value"]


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
