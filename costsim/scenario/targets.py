"""Service-level targets: ``p95_delay_h<=24``, ``completion>=0.99``, ``rl_iterations_per_day>=N``.

The scenario's ``decision.targets``, the CLI's ``--target`` and ``costsim.decide(..., targets=)``
take the same text. A target names a metric of a run's summary row, a comparison and a number;
this module only parses them (the schema checks them at load); reading a metric from a row is
``costsim.decisions.targets.value``."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from costsim.scenario.errors import Problem, ScenarioError

# name -> (summary column, unit as shown, what it is: its first word(s) before any parenthesis is
# how a verdict sentence names it)
METRICS: dict[str, tuple[str, str, str]] = {
    "p95_delay_h": ("queue_delay_p95_h", "h", "p95 queue delay"),
    "p99_delay_h": ("queue_delay_p99_h", "h", "p99 queue delay"),
    "mean_delay_h": ("queue_delay_mean_h", "h", "mean queue delay"),
    "completion": ("completion", "", "completion (share of the jobs that could finish within the horizon "
                                     "that did)"),
    "rl_iterations_per_day": ("iterations_per_day", "/day", "RL iterations per day"),
    "utilization": ("utilization", "", "utilisation (share of the capacity used)"),
    "total_cost_usd": ("total_cost_usd", "USD", "amortised total cost"),
}
# What a lab holds itself to when a scenario states no targets: a day's wait at p95 is the longest
# a researcher's next experiment can sit before the queue, not the budget, sets the pace, and 99 %
# of the jobs that could finish within the horizon finishing is a queue that drains.
DEFAULT_TARGETS: tuple[str, ...] = ("p95_delay_h<=24", "completion>=0.99")
# Shares are between 0 and 1; a share target outside that range can never (or always) be met.
SHARES = ("completion", "utilization")
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


def target_problem(text: object) -> tuple[Target | None, str]:
    """(the target, "") or (None, why ``text`` is not one)."""
    m = _FORM.match(text) if isinstance(text, str) else None
    if m is None:
        return None, (f"{text!r} is not METRIC<=NUMBER or METRIC>=NUMBER (metrics: {', '.join(METRICS)})")
    metric, op, number = m.groups()
    if metric not in METRICS:
        return None, f"unknown metric {metric!r} in {text!r}; one of: {', '.join(METRICS)}"
    try:
        value = float(number)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        return None, f"{number!r} in {text!r} is not a finite number"
    if metric in SHARES and not 0 <= value <= 1:
        return None, f"{metric} is a share from 0 to 1 (0.99 for 99 %); {text!r} can never be decided by it"
    if value < 0:
        return None, f"{metric} is never negative; {text!r} asks for the impossible"
    return Target(metric, op, value), ""


def parse_target(text: str, source: str = "--target") -> Target:
    """``"p95_delay_h<=4"`` as a Target; ScenarioError naming the metrics there are otherwise."""
    target, why = target_problem(text)
    if target is None:
        raise ScenarioError(source, [Problem((), why)])
    return target


def targets(given, source: str = "targets") -> tuple[Target, ...]:
    """Targets from Target objects or their text forms (None: none)."""
    if given is None:
        return ()
    if isinstance(given, (str, Target)):
        given = [given]
    if not isinstance(given, (list, tuple)):
        raise ScenarioError(source, [Problem((), "must be a list of METRIC<=NUMBER strings "
                                                 f"(got {type(given).__name__})")])
    return tuple(t if isinstance(t, Target) else parse_target(t, source) for t in given)
