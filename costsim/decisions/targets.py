"""Targets a configuration must meet: ``p95_delay_h<=4``, ``completion>=0.99``,
``rl_iterations_per_day>=N`` (the CLI's ``--target`` and ``costsim.decide(..., targets=)``).

A target names a metric of a run's summary row (or one derived from it), a comparison and a
number. ``value(row, metric)`` reads the metric from a summary row (or a row of means)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from costsim.scenario.errors import Problem, ScenarioError

# name -> (summary column or derived, unit as shown, what it is: its first word(s) before any
# parenthesis is how a verdict sentence names it)
METRICS: dict[str, tuple[str, str, str]] = {
    "p95_delay_h": ("queue_delay_p95_h", "h", "p95 queue delay"),
    "p99_delay_h": ("queue_delay_p99_h", "h", "p99 queue delay"),
    "mean_delay_h": ("queue_delay_mean_h", "h", "mean queue delay"),
    "completion": ("completion", "", "completion (share of the jobs that could finish within the horizon done)"),
    "rl_iterations_per_day": ("iterations_per_day", "/day", "RL iterations per day"),
    "utilization": ("utilization", "", "utilisation (share of the capacity used)"),
    "total_cost_usd": ("total_cost_usd", "USD", "amortised total cost"),
}
_FORM = re.compile(r"^\s*([a-z0-9_]+)\s*(<=|>=)\s*([-+0-9.eE]+)\s*$")


@dataclass(frozen=True)
class Target:
    """``metric`` (a key of ``METRICS``) ``op`` (``<=`` or ``>=``) ``value``."""

    metric: str
    op: str
    value: float

    def met(self, x: float) -> bool:
        """Whether ``x`` meets the target (NaN never does)."""
        if math.isnan(x):
            return False
        return x <= self.value if self.op == "<=" else x >= self.value

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.value:g}"


def parse_target(text: str, source: str = "--target") -> Target:
    """``"p95_delay_h<=4"`` as a Target; ScenarioError naming the metrics there are otherwise."""
    m = _FORM.match(text) if isinstance(text, str) else None
    if m is None:
        raise ScenarioError(source, [Problem((), f"{text!r} is not METRIC<=NUMBER or METRIC>=NUMBER "
                                                 f"(metrics: {', '.join(METRICS)})")])
    metric, op, number = m.groups()
    if metric not in METRICS:
        raise ScenarioError(source, [Problem((), f"unknown metric {metric!r} in {text!r}; one of: {', '.join(METRICS)}")])
    try:
        value = float(number)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ScenarioError(source, [Problem((), f"{number!r} in {text!r} is not a finite number")])
    return Target(metric, op, value)


def targets(given) -> tuple[Target, ...]:
    """Targets from Target objects or their text forms."""
    if given is None:
        return ()
    if isinstance(given, (str, Target)):
        given = [given]
    return tuple(t if isinstance(t, Target) else parse_target(t, "targets") for t in given)


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
