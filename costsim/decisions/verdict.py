"""The verdict (DESIGN.md section 14): which option to choose, why, how sure, and what would
change it.

``decide(source, targets)`` takes one run (``costsim.simulate``'s Results), replications of one
scenario (a list of Results with different seeds), or a variant of a sweep (``costsim.sweep``'s
SweepResults), and:

1. prices every run fairly (``fair.fair_rows``): an option that cannot keep up is flagged and is
   never recommended;
2. keeps the options that keep up (in at least half the replications) and meet every target on
   their mean over the replications;
3. recommends the one with the lowest mean fair total (amortised, unfinished work at the cheapest
   rent), and compares it with the cheapest such option of the other side (build against rent;
   the next cheapest when the other side has none): the paired difference of their fair totals
   replication by replication, with its 95 % t-interval (``costsim.runs.stats.t_interval``). When
   the interval spans zero the verdict is "too close to call";
4. says what would change it: the utilisation at which owning and renting cost the same per
   GPU-hour (the break-even table), and the electricity price at which the difference is zero
   (the difference is linear in that price: energy is the only cost line that moves with it).
5. when a class has a ``scaling`` curve and runs (not a sweep's summary rows) are given, adds how
   soon and for how much the recommended option reaches its target against the option that gets
   there first, or ``versus`` (``costsim.decisions.time_to_target``); without one the sentence is
   the same as before.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from costsim.catalog import economics_values
from costsim.decisions.fair import fair_rows
from costsim.decisions import time_to_target
from costsim.decisions.targets import METRICS, Target, targets as as_targets, value
from costsim.results import Results
from costsim.runs.stats import t_interval
from costsim.scenario import Problem, Scenario, ScenarioError

# Per option, the means reported in ``Verdict.options``.
MEANS = ["fair_total_usd", "total_cost_usd", "cash_spent_usd", "book_value_usd", "unfinished_rent_usd",
         "cost_per_work_gpu_hour_usd", "cost_per_iteration_usd", "queue_delay_mean_h", "queue_delay_p95_h",
         "completion", "iterations_per_day", "utilization", "offered_load", "stale_share", "cost_energy_usd"]


FLIP_RANGE = 10.0  # a flip price further than this factor from today's is not reported


@dataclass(frozen=True)
class Verdict:
    """What ``decide`` returns. Money in USD, fair totals (``fair.py``) unless named cash.

    ``option``: the recommended option (None when no option keeps up and meets the targets);
    ``versus``: what it is compared with; ``difference_usd`` (option − versus, mean of the paired
    differences) with its 95 % interval ``difference_low_usd``..``difference_high_usd`` (NaN with one
    replication); ``relative``: the difference ÷ the mean fair total of ``versus``;
    ``cash_difference_usd``: the same for cash spent; ``close_call``: the interval spans zero;
    ``options``: per option its means (``MEANS``), ``keeps_up``, ``why`` (why not), ``meets_targets``
    and ``eligible``; ``electricity_flip_usd_per_kwh``/``utilization_flip``: where the verdict flips
    (NaN when it does not within reason); ``time_to_target``: the time-to-target sentence appended
    to ``sentence`` ("" when no class has ``scaling`` or there is nothing to compare)."""

    option: str | None
    versus: str | None
    sentence: str
    close_call: bool
    difference_usd: float
    difference_low_usd: float
    difference_high_usd: float
    relative: float
    cash_difference_usd: float
    electricity_flip_usd_per_kwh: float
    utilization_flip: float
    replications: int
    targets: tuple[Target, ...]
    options: pd.DataFrame
    time_to_target: str = ""


def _runs(source, variant: str | None) -> tuple[pd.DataFrame, Scenario | None, pd.DataFrame | None]:
    """(summary rows with ``replication``, the scenario if known, break-even rows if known)."""
    from costsim.runs.sweep import SweepResults

    if isinstance(source, Results):
        source = [source]
    if isinstance(source, SweepResults):
        runs = source.runs
        variants = list(dict.fromkeys(runs["variant"]))
        if variant is None and len(variants) == 1:
            variant = variants[0]
        if variant not in variants:
            raise ScenarioError("decide", [Problem(("variant",), f"name one of the sweep's variants: {', '.join(variants[:10])}"
                                                   + (" …" if len(variants) > 10 else ""))])
        scenario = (source.scenarios or {}).get(variant)
        return runs[runs["variant"] == variant].reset_index(drop=True), scenario, None
    if isinstance(source, Sequence) and source and all(isinstance(r, Results) for r in source):
        first = source[0]
        names = list(first.summary["option"])
        for r in source[1:]:
            if list(r.summary["option"]) != names or r.scenario.name != first.scenario.name:
                raise ScenarioError("decide", [Problem((), "replications must be runs of one scenario (same options)")])
        runs = pd.concat([r.summary.assign(replication=i) for i, r in enumerate(source)], ignore_index=True)
        breakeven = pd.concat([r.breakeven for r in source], ignore_index=True)
        return runs, first.scenario, breakeven
    raise ScenarioError("decide", [Problem((), "needs a Results, a list of Results of one scenario, or SweepResults; "
                                               f"got {type(source).__name__}")])


def decide(source, targets=None, variant: str | None = None) -> Verdict:
    """The recommended option, its reason in one sentence and its confidence (see the module)."""
    return _with_time_to_target(_decide(source, targets, variant), source)


def _with_time_to_target(v: Verdict, source) -> Verdict:
    """``v`` with the time-to-target sentence appended when runs with a ``scaling`` class are given
    (a sweep keeps no ``to_target`` table: unchanged)."""
    runs = [source] if isinstance(source, Results) else (
        list(source) if isinstance(source, Sequence) and source and all(isinstance(r, Results) for r in source) else [])
    if v.option is None or not runs or not time_to_target.has_scaling(runs[0].scenario):
        return v
    summary = time_to_target.summarize(runs)
    other = time_to_target.compared_with(summary, v.option, v.versus)
    text = time_to_target.target_sentence(summary, v.option, other) if other is not None else ""
    return dataclasses.replace(v, sentence=f"{v.sentence} {text}", time_to_target=text) if text else v


def _decide(source, targets, variant: str | None) -> Verdict:
    wanted = as_targets(targets)
    runs, scenario, breakeven = _runs(source, variant)
    rows = fair_rows(runs)
    reps = int(rows["replication"].nunique())
    extra = [METRICS[t.metric][0] for t in wanted if METRICS[t.metric][0] not in MEANS]
    table = rows.groupby("option", sort=False)[MEANS + list(dict.fromkeys(extra))].mean()
    table["keeps_up"] = rows.groupby("option", sort=False)["keeps_up"].mean() >= 0.5
    table["why"] = rows.groupby("option", sort=False)["why"].agg(lambda w: next((x for x in w if x), ""))
    table["side"] = rows.groupby("option", sort=False)["side"].first()
    table["meets_targets"] = [all(t.met(value(r, t.metric)) for t in wanted) for _, r in table.iterrows()]
    table["eligible"] = table["keeps_up"] & table["meets_targets"]
    table = table.reset_index()
    ok = table[table["eligible"]].sort_values("fair_total_usd", kind="stable")
    nan = math.nan
    if ok.empty:
        return Verdict(None, None, _none_sentence(table, wanted), False, nan, nan, nan, nan, nan, nan, nan, reps,
                       wanted, table)
    best = ok.iloc[0]
    others = ok[ok["option"] != best.option]
    across = others[others["side"] != best.side]
    alt = across.iloc[0] if not across.empty else (others.iloc[0] if not others.empty else None)
    if alt is None:
        return Verdict(best.option, None, _only_sentence(best, table, wanted, scenario), False, nan, nan, nan, nan,
                       nan, nan, nan, reps, wanted, table)
    pair = rows.pivot(index="replication", columns="option", values=["fair_total_usd", "cash_spent_usd"])
    d = pair["fair_total_usd"][best.option] - pair["fair_total_usd"][alt.option]
    mean, low, high = t_interval(d.to_numpy())
    cash = float((pair["cash_spent_usd"][best.option] - pair["cash_spent_usd"][alt.option]).mean())
    close = reps >= 2 and low <= 0 <= high
    e_flip = _electricity_flip(mean, best, alt, scenario)
    u_flip = _utilization_flip(best, alt, breakeven)
    verdict = dict(option=best.option, versus=alt.option, close_call=close, difference_usd=mean,
                   difference_low_usd=low, difference_high_usd=high, relative=mean / alt.fair_total_usd,
                   cash_difference_usd=cash, electricity_flip_usd_per_kwh=e_flip, utilization_flip=u_flip,
                   replications=reps, targets=wanted, options=table)
    return Verdict(sentence=_sentence(best, alt, verdict, scenario), **verdict)


def _electricity_flip(diff: float, best, alt, scenario: Scenario | None) -> float:
    """The electricity price (USD/kWh) at which the fair difference is zero; NaN unless it is within
    a factor ``FLIP_RANGE`` of the scenario's price (beyond that it is no guide to a decision).

    Energy cost is proportional to the price p: Δ(p) = Δ(p0) + (E_best − E_alt)·(p/p0 − 1)."""
    slope = best.cost_energy_usd - alt.cost_energy_usd
    if scenario is None or slope == 0 or math.isnan(diff):
        return math.nan
    p0 = economics_values(scenario).electricity_usd_per_kwh
    p = p0 * (1 - diff / slope)
    return p if p0 / FLIP_RANGE <= p <= p0 * FLIP_RANGE else math.nan


def _utilization_flip(best, alt, breakeven: pd.DataFrame | None) -> float:
    """Break-even utilisation of the build option of the pair against the rent one (mean)."""
    if breakeven is None or breakeven.empty:
        return math.nan
    build, rent = (best, alt) if best.side == "build" else (alt, best)
    hit = breakeven[(breakeven["option"] == build.option) & (breakeven["versus"] == rent.option)]
    return float(hit["breakeven_utilization"].mean()) if not hit.empty else math.nan


def describe(name: str, scenario: Scenario | None) -> str:
    """An option in words: "owning 384 H100s (own-384)", "renting on-demand H100s (cloud-od)", "owning 256
    H100s with rollouts on spot H100s (own-spot)"."""
    opt = next((o for o in scenario.options if o.name == name), None) if scenario is not None else None
    if opt is None:
        return name
    # Rollout offload (docs/rollout-offload.md): name the pool by its pricing and GPU.
    pool = next((o for o in scenario.options if o.name == opt.rollout_pool), None) if opt.rollout_pool else None
    sampling = f" with rollouts on {pool.pricing.replace('_', '-')} {pool.gpu_type}s" if pool is not None else ""
    if opt.kind == "owned":
        return f"owning {opt.gpus:,} {opt.gpu_type}s{sampling} ({name})"
    if opt.kind == "cloud":
        if opt.pricing == "reserved" and opt.reserved_gpus:
            return f"reserving {opt.reserved_gpus:,} {opt.gpu_type}s{sampling} ({name})"
        return f"renting {opt.pricing.replace('_', '-')} {opt.gpu_type}s ({name})"
    return (f"{describe(opt.base, scenario).split(' (')[0]} and bursting to {describe(opt.burst, scenario).split(' (')[0]}"
            f"{sampling} ({name})")


def _horizon(scenario: Scenario | None) -> str:
    if scenario is None:
        return "the horizon"
    days = scenario.horizon_days
    years = round(days / 365)
    if years >= 1 and abs(days / 365 - years) < 0.01:
        return "1 year" if years == 1 else f"{years} years"
    return f"{days:g} days"


def _pct(x: float) -> str:
    """A share as a percentage: whole percents, one decimal below 10 %."""
    return f"{x * 100:.1f} %" if abs(x) < 0.1 else f"{x * 100:.0f} %"


def _targets_clause(row, wanted: tuple[Target, ...]) -> str:
    parts = []
    for t in wanted:
        unit = METRICS[t.metric][1]
        x = value(row, t.metric)
        op = t.op.replace("<=", "≤").replace(">=", "≥")
        if unit == "":  # a share
            shown = f"{x * 100:.1f} % {op} {t.value * 100:g} %"
        else:
            shown = f"{x:,.3g} {unit} {op} {t.value:g} {unit}".replace(" /day", "/day")
        parts.append(f"{METRICS[t.metric][2].split(' (')[0]} {shown}")
    return " and ".join(parts)


def _sentence(best, alt, v: dict, scenario: Scenario | None) -> str:
    a, b = describe(best.option, scenario), describe(alt.option, scenario)
    rel, reps = -v["relative"], v["replications"]
    if reps >= 2:
        half = (v["difference_high_usd"] - v["difference_low_usd"]) / 2 / alt.fair_total_usd
        size = f"{_pct(rel)} ± {_pct(half)}"
    else:
        size = _pct(rel)
    when = _targets_clause(best, v["targets"])
    if v["close_call"]:
        s = (f"Too close to call: {a} and {b} differ by {size} over {_horizon(scenario)} "
             "(the 95 % interval of the paired difference spans zero)")
    else:
        s = f"{a[0].upper()}{a[1:]} costs {size} less than {b} over {_horizon(scenario)}"
    if reps < 2:
        s += " (one run: no confidence interval; replications give one)"
    if when:
        s += f", at {when}"
    else:  # no target on delay: say what the cheaper option makes jobs wait, beside the other's
        s += (f", at p95 queue delay {best.queue_delay_p95_h:,.3g} h against "
              f"{alt.queue_delay_p95_h:,.3g} h")
    flips = []
    u, e = v["utilization_flip"], v["electricity_flip_usd_per_kwh"]
    if best.side == "build" and alt.side == "rent":
        if not math.isnan(u):
            flips.append(f"below {u * 100:.0f} % utilisation")
        if not math.isnan(e) and best.cost_energy_usd > alt.cost_energy_usd:
            flips.append(f"above ${e:.2f} per kWh")
    elif best.side == "rent" and alt.side == "build":
        if not math.isnan(u):
            flips.append(f"if the owned cluster were used above {u * 100:.0f} %")
        if not math.isnan(e) and best.cost_energy_usd < alt.cost_energy_usd:
            flips.append(f"below ${e:.2f} per kWh")
    if flips and not v["close_call"]:
        s += f"; it stops being cheaper {' or '.join(flips)}"
    return s + "."


def _only_sentence(best, table: pd.DataFrame, wanted, scenario) -> str:
    a = describe(best.option, scenario)
    left = table[~table["eligible"]]
    s = f"{a[0].upper()}{a[1:]} is the only option that keeps up" + (" and meets the targets" if wanted else "")
    if not left.empty:
        s += "; " + "; ".join(f"{r.option}: {r.why or 'misses a target'}" for r in left.itertuples())
    return s + "."


def _none_sentence(table: pd.DataFrame, wanted) -> str:
    s = "No option keeps up" + (" and meets the targets" if wanted else "")
    return s + ": " + "; ".join(f"{r.option}: {r.why or 'misses a target'}" for r in table.itertuples()) + "."
