"""The verdict in words: options, durations, shares, targets, what an option misses and why no
utilisation flips the verdict.

Pure functions from numbers (and the scenario, for an option's name in words) to text, shared by
the verdict, the tornado and ``costsim optimize``. Every money figure they print says which total
it is: the fair total (amortised cost plus the lines ``fair.FAIR_LINES`` adds), amortised or cash."""

from __future__ import annotations

import math
from collections.abc import Callable

from costsim.decisions import flips
from costsim.decisions.targets import METRICS, Shortfall, Target, value
from costsim.plan import facts
from costsim.present.formats import duration, money, percent, plain, significant
from costsim.scenario import Scenario

__all__ = ["capitalised", "delay_trade", "describe", "flip_reason", "gpus_text", "horizon", "met_clause", "metric_name", "misses",
           "misses_briefly", "pct", "shown", "target_text", "targets_text"]


def describe(name: str, scenario: Scenario | None) -> str:
    """An option in words: "owning 384 H100s (own-384)", "renting on-demand H100s (cloud-od)", "owning 256
    H100s with rollouts on spot H100s (own-spot)"."""
    if scenario is None:
        return name
    opt = next((o for o in scenario.options if o.name == name), None)
    if opt is None:
        return name
    # Rollout offload (docs/rollout-offload.md): name the pool by its pricing and GPU.
    pool = facts.rollout_pool(scenario, opt)
    sampling = f" with rollouts on {pool.pricing.replace('_', '-')} {pool.gpu_type}s" if pool is not None else ""
    parts = facts.parts_of(opt)
    if parts:  # a hybrid or fleet: its pools in order, bursting to its burst (the last part)
        *pools, burst = (describe(part, scenario).split(" (")[0] for part in parts)
        return f"{', then '.join(pools)} and bursting to {burst}{sampling} ({name})"
    gpu = facts.gpu_type(opt)
    if facts.is_owned(opt):
        return f"owning {gpus_text(opt)}{sampling} ({name})"
    committed = facts.committed_gpus(opt)
    if committed:
        return f"reserving {committed:,} {gpu}s{sampling} ({name})"
    return f"renting {facts.pricing_label(scenario, opt).replace('_', '-')} {gpu}s ({name})"


def gpus_text(opt: facts.OptionLike) -> str:
    """What an owned or reserved option holds, in words: "384 H100s", a pool of node groups' types
    "128 H100s + 64 A100s"; "" when its data does not say (an option being edited)."""
    return " + ".join(f"{count:,} {gpu}s" for count, gpu in facts.gpu_counts(opt))


def capitalised(text: str) -> str:
    """``text`` with its first letter upper case (option names inside it are left as written)."""
    return text[:1].upper() + text[1:]


def horizon(scenario: Scenario | None) -> str:
    """The horizon in words: "1 year", "3 years", "270 days"."""
    if scenario is None:
        return "the horizon"
    days = scenario.horizon_days
    years = round(days / 365)
    if years >= 1 and abs(days / 365 - years) < 0.01:
        return "1 year" if years == 1 else f"{years} years"
    return f"{plain(days)} days"


def pct(x: float) -> str:
    """A share as a percentage: whole percents, one decimal below 10 % (``formats.percent``)."""
    return percent(x)


def metric_name(metric: str) -> str:
    """How a sentence names a metric: its description up to any parenthesis."""
    return METRICS[metric][2].split(" (")[0]


def shown(metric: str, x: float) -> str:
    """A metric's value with its unit: "12 days", "97.5 %", "2,400/day"."""
    unit = METRICS[metric][1]
    if math.isnan(x):
        return duration(x)
    if unit == "h":
        return duration(x) if x > 0 else "0 h"
    if unit == "":
        return percent(x, 1)
    if unit == "USD":
        return money(x)
    return significant(x, 3) + (unit if unit.startswith("/") else f" {unit}")


def target_text(t: Target) -> str:
    """A target in words: "p95 queue delay ≤ 24 h", "completion ≥ 99 %"."""
    op = t.op.replace("<=", "≤").replace(">=", "≥")
    unit = METRICS[t.metric][1]
    if unit == "":
        limit = f"{plain(t.value * 100)} %"
    elif unit == "USD":
        limit = money(t.value)
    elif unit.startswith("/"):
        limit = f"{plain(t.value)}{unit}"
    else:
        limit = f"{plain(t.value)} {unit}"
    return f"{metric_name(t.metric)} {op} {limit}"


def targets_text(wanted: tuple[Target, ...]) -> str:
    return " and ".join(map(target_text, wanted))


def met_clause(row, wanted: tuple[Target, ...]) -> str:
    """How ``row`` meets the targets: "p95 queue delay 3.2 h ≤ 24 h and completion 99.6 % ≥ 99 %"."""
    parts = []
    for t in wanted:
        op, limit = target_text(t).removeprefix(metric_name(t.metric) + " ").split(" ", 1)
        parts.append(f"{metric_name(t.metric)} {shown(t.metric, value(row, t.metric))} {op} {limit}")
    return " and ".join(parts)


def misses(s: Shortfall) -> list[str]:
    """What a row misses (``targets.shortfall``), in words: "cannot keep up (offered load 150 % …)",
    "p95 queue delay ≤ 24 h (p95 queue delay 6.8 days)"."""
    words = [] if s.keeps_up else [f"cannot keep up ({s.why})"]
    return words + [f"{target_text(t)} ({metric_name(t.metric)} {shown(t.metric, x)})" for t, x in s.missed]


def misses_briefly(s: Shortfall, value_text: Callable[[str, float], str] | None = None) -> list[str]:
    """The targets a row misses with its value, in few words: "p95 queue delay ≤ 24 h: 3.4 days"
    (``misses`` without the metric named twice; nothing for keeping up, which has its own mark).
    ``value_text(metric column, value)``: how the value is written (default ``shown``), so a line
    beside a card can write it as the card does; a value written as its limit is written with the
    side it is on ("> 24.0 h"): rounded, it would read as met."""
    out = []
    for t, x in s.missed:
        column = METRICS[t.metric][0]
        write = (lambda v, m=t.metric: shown(m, v)) if value_text is None else \
            (lambda v, c=column: value_text(c, v))
        text = write(x)
        if text == write(t.value):
            text = f"{'>' if t.op == '<=' else '<'} {text}"
        out.append(f"{target_text(t)}: {text}")
    return out


def delay_trade(a_name: str, a_row, b_name: str, b_row) -> str:
    """The delay trade in words: "at p95 a job waits 12 days on own-256 against 15 minutes on
    cloud-od"; "no job waits at p95 on either" when neither makes one wait; "no jobs after the
    warm-up to measure delays on" when there are none."""
    a, b = a_row["queue_delay_p95_h"], b_row["queue_delay_p95_h"]
    if math.isnan(a) and math.isnan(b):
        return "no jobs were submitted after the warm-up to measure delays on"
    if a <= 0 and b <= 0:
        return "no job waits at p95 on either"
    return f"at p95 a job waits {duration(a)} on {a_name} against {duration(b)} on {b_name}"


def flip_reason(f: flips.Flip | None) -> str:
    """Why no utilisation flips the verdict, in words ("" when one does, or none was looked for)."""
    if f is None or not f.reason:
        return ""
    if f.reason == flips.WINNER_MISSES:
        assert f.shortfall is not None  # the search records what the winner misses
        why = "; ".join(misses(f.shortfall))
        return (f"where {f.winner} would cost less ({pct(f.owned_utilization)} utilisation of {f.owned}) it "
                f"{'misses ' if f.shortfall.keeps_up else ''}{why}")
    if f.reason == flips.UNCHANGED:
        return (f"with less work, down to {pct(flips.MIN_FACTOR)} of today's work, the order does not change"
                if f.less_work else "with more work, up to 100 % utilisation of the owned option, the order does not change")
    return {flips.UNUSED: "the owned option is not used, or the two cost the same today",
            flips.FULL: f"the owned option is already {pct(f.owned_utilization)} used: no more work fits",
            flips.NOT_NARROWED: f"not narrowed to {pct(flips.UTILIZATION_STEP)} of utilisation within "
                                f"{flips.FLIP_SIMULATIONS} simulations",
            flips.NOT_SEARCHED: "not searched", flips.NO_SCENARIO: "the scenario is not known",
            flips.ORDER_DIFFERS: "the first replication orders the two the other way"}[f.reason]
