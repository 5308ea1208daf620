"""The cheapest configuration in words (``costsim optimize``, ``costsim.optimize``): the answer in
one sentence with its 95 % intervals, and what limits it, from ``costsim.decisions.optimize``'s
``Optimum`` (money in USD, delays in hours)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from costsim.decisions.optimize import Optimum
from costsim.decisions.optimize import optimize as search
from costsim.decisions.targets import METRICS, Target, value
from costsim.present.formats import missing, money, plain, significant
from costsim.present.wording import misses


@dataclass(frozen=True, kw_only=True)
class WordedOptimum(Optimum):
    """An ``Optimum`` with its words: ``sentence``, the answer and its confidence, and ``notes``,
    what limits it (the run budget spent, a range edge reached, a target met on the mean but not
    surely)."""

    sentence: str
    notes: tuple[str, ...]


def _short_usd(x: float, half: float | None = None) -> str:
    """``$6.41 M`` (``formats.money``), with ``± $102 k`` when a half-width is given."""
    text = money(x)
    if half is not None and not missing(half) and not missing(x):
        text += f" ± {money(half)}"
    return text


def _configuration(values: dict[str, Any], option: str | None, several: bool) -> str:
    """The configuration in words; an option none of the varied fields applies to, by its name."""
    if not values:
        return f"{option} (as the scenario has it: no varied field applies to it)"
    text = ", ".join(f"{k}={plain(v)}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items())
    return f"{text} ({option})" if several else text


def sentence(o: Optimum) -> str:
    """"Cheapest meeting p95_delay_h<=4: options.own-256.gpus=448 at $6.41 M ± $102 k fair total
    (p95 queue delay 3.56 ± 0.41 h)."; when nothing meets, the closest and what it misses."""
    which = " and ".join(map(str, o.targets)) if o.targets else "(keeping up)"
    where = _configuration({p: o.values[p] for p in o.used}, o.option, len(o.searched) > 1)
    total = o.metrics["fair_total_usd"]
    if not o.meets:
        return (f"Nothing tried meets {which}: the closest is {where} at {_short_usd(total)} fair total, which "
                f"misses {'; '.join(misses(o.shortfall))}.")
    low, high = o.intervals["fair_total_usd"]
    shown = (", ".join(_shown(o.metrics, t, o.intervals[METRICS[t.metric][0]]) for t in o.targets)
             or f"offered load {o.metrics['offered_load'] * 100:.0f} %")
    return (f"Cheapest meeting {which}: {where} at {_short_usd(total, (high - low) / 2 if not math.isnan(low) else None)} "
            f"fair total ({shown}).")


def _shown(row, t: Target, interval: tuple[float, float] = (math.nan, math.nan)) -> str:
    """``p95 queue delay 3.56 ± 0.41 h`` (± the half-width of its 95 % interval, when there is one)."""
    words, unit = METRICS[t.metric][2].split(" (")[0], METRICS[t.metric][1]
    x, half = value(row, t.metric), (interval[1] - interval[0]) / 2
    if unit == "":
        x, half, unit = x * 100, half * 100, "%"
    pm = f" ± {significant(half, 2)}" if not math.isnan(half) else ""
    return f"{words} {significant(x)}{pm} {unit}".replace(" /day", "/day")


def unsure_note(t: Target, interval: tuple[float, float]) -> str:
    """A target met on the mean whose 95 % interval (low, high) straddles it, in words."""
    return (f"the 95 % interval of {METRICS[t.metric][2].split(' (')[0]} ({significant(interval[0])} to "
            f"{significant(interval[1])}) spans the target {t}: more replications would say whether it is met")


def notes(o: Optimum) -> tuple[str, ...]:
    """What limits the answer, in words: the run budget spent, a range edge reached, a target its
    intervals straddle."""
    out = []
    if o.stopped is not None:
        s = o.stopped
        out.append(f"stopped at max_runs={s.max_runs}: {s.path} is between {s.misses} (misses) and {s.meets} (meets)")
    out += [f"{e.path}={plain(e.value)} is the {'lowest' if e.lowest else 'highest'} value tried: the answer may lie "
            "beyond the range" for e in o.range_ends]
    out += [unsure_note(t, o.intervals[METRICS[t.metric][0]]) for t in o.unsure]
    return tuple(out)


def worded(o: Optimum) -> WordedOptimum:
    """``o`` with its sentence and notes."""
    return WordedOptimum(**{f.name: getattr(o, f.name) for f in fields(o)}, sentence=sentence(o), notes=notes(o))


def optimize(scenario_path: str | Path, targets, vary: list[str], replications: int = 3, seed: int | None = None,
             executor: str = "processes", workers: int | None = None, max_runs: int = 200,
             progress: Callable[[int, int], None] | None = None, address: str | None = None) -> WordedOptimum:
    """``costsim.decisions.optimize.optimize`` (the same arguments), with its words."""
    return worded(search(scenario_path, targets, vary, replications, seed, executor, workers, max_runs, progress,
                         address))
