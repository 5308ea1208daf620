"""The verdict (DESIGN.md section 14): which option to choose, why, how sure, and what would
change it, in numbers (``costsim.present.verdict`` words it; ``costsim.decide`` returns it worded).

``decide(source, targets=None)`` takes one run (``costsim.simulate``'s Results), replications of one
scenario (a list of Results with different seeds), or a variant of a sweep (``costsim.sweep``'s
SweepResults), and:

1. holds every option to a service level: the ``targets`` given, else the scenario's
   ``decision.targets``, else ``DEFAULT_TARGETS`` (p95 queue delay ≤ 24 h, completion ≥ 99 %);
2. prices every run fairly (``fair.fair_rows``: the amortised total plus unfinished work and unmet
   serving at the cheapest rent and waiting at ``decision.waiting_usd_per_gpu_hour``); an option
   that cannot keep up is flagged and is never recommended;
3. keeps the options that keep up (in at least half the replications, ``MAJORITY``) and meet every
   target on their mean over the replications, and recommends the one with the lowest mean fair
   total; it is compared with the cheapest such option of the other side (build against rent; the
   next cheapest when the other side has none): the paired difference of their fair totals
   replication by replication, with its 95 % t-interval (``costsim.runs.stats.t_interval``).
   The same cost (a relative difference under ``TIE_TOLERANCE``, or an interval spanning zero) is
   called a tie. It names the target that binds (and the cheaper option it rules out);
4. when no option keeps up and meets the targets, names the closest (fewest conditions missed,
   then the smallest shortfall) and what it misses by;
5. says what would flip it (``flips``): the electricity price (exact) and the owned option's
   utilisation (re-simulated) at which the fair difference is zero, each omitted with a reason
   when there is none;
6. when a class has a ``scaling`` curve and runs (not a sweep's summary rows) are given, keeps how
   soon and for how much each option reaches its target, and the option the recommended one is set
   against there: the one that gets there first, or ``versus`` (``costsim.decisions.time_to_target``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from costsim.decisions import flips as flip_points
from costsim.decisions import time_to_target
from costsim.decisions.fair import fair_rows, why_over
from costsim.decisions.flips import NO_SCENARIO, NOT_SEARCHED, ORDER_DIFFERS, Flip
from costsim.decisions.targets import DEFAULT_TARGETS, MAJORITY, METRICS, Target, shortfall, value
from costsim.decisions.targets import targets as as_targets
from costsim.errors import ArgumentError
from costsim.plan.resolve import economics_values
from costsim.results.contract import Results
from costsim.runs.stats import t_interval
from costsim.scenario import Scenario

# Per option, the means reported in ``Verdict.options``.
MEANS = ["fair_total_usd", "total_cost_usd", "cash_spent_usd", "book_value_usd", "unfinished_rent_usd",
         "serving_unmet_rent_usd", "waiting_cost_usd", "queued_gpu_hours",
         "cost_per_work_gpu_hour_usd", "cost_per_iteration_usd", "queue_delay_mean_h", "queue_delay_p95_h",
         "completion", "iterations_per_day", "utilization", "offered_load", "stale_share", "cost_energy_usd",
         "cost_cloud_usd", "cost_rollout_usd"]
TIE_TOLERANCE = 0.005  # fair totals within 0.5 % of each other are the same cost
FLIP_RANGE = flip_points.FLIP_RANGE


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """What ``decide`` returns, in numbers (``costsim.present.verdict`` words it: the sentence, the
    time to target and why no utilisation flips it). Money in USD, fair totals (``fair.py``) unless
    named cash.

    ``option``: the recommended option (None when no option keeps up and meets the targets;
    ``closest`` then names the one that comes closest); ``versus``: what it is compared with;
    ``difference_usd`` (option − versus, mean of the paired differences) with its 95 % interval
    ``difference_low_usd``..``difference_high_usd`` (NaN with one replication); ``relative``: the
    difference ÷ the mean fair total of ``versus``; ``cash_difference_usd``: the same for cash
    spent; ``close_call``: the interval spans zero; ``same_cost``: a tie (``close_call``, or a
    relative difference under ``TIE_TOLERANCE``); ``binding``: the target (its text) that rules out
    a cheaper option, "" when none does, and ``binding_option``: that option; ``options``: per
    option its means (``MEANS``), ``keeps_up``, ``why`` (why not), ``side``, ``meets_targets`` and
    ``eligible``; ``rows``: the runs those means are over, one row per option and replication as
    ``fair.fair_rows`` priced them (the cards' intervals are drawn from them);
    ``electricity_flip_usd_per_kwh``/``utilization_flip``: where the verdict flips
    (NaN when it does not; ``utilization_search``: the search's record, ``flips.Flip``, with why
    there is none; None when building is not compared with renting at different costs);
    ``targets``: those held to, and ``unmeasured``: those set aside because no option has a value
    for them; ``waiting_usd_per_gpu_hour``: the price of waiting used; ``scenario``: the scenario
    decided on (None when only summary rows without it are given); ``to_target``: with a class that
    has ``scaling`` and runs given, ``time_to_target.summarize`` of them, and ``to_target_versus``:
    the option the recommended one is set against there (None when there is nothing to compare)."""

    option: str | None
    versus: str | None = None
    close_call: bool = False
    same_cost: bool = False
    difference_usd: float = math.nan
    difference_low_usd: float = math.nan
    difference_high_usd: float = math.nan
    relative: float = math.nan
    cash_difference_usd: float = math.nan
    electricity_flip_usd_per_kwh: float = math.nan
    utilization_flip: float = math.nan
    utilization_search: Flip | None = None
    binding: str = ""
    binding_option: str = ""
    closest: str | None = None
    replications: int
    targets: tuple[Target, ...]
    unmeasured: tuple[Target, ...] = ()
    waiting_usd_per_gpu_hour: float = 0.0
    options: pd.DataFrame
    rows: pd.DataFrame | None = None
    scenario: Scenario | None = None
    to_target: pd.DataFrame | None = None
    to_target_versus: str | None = None


def _runs(source, variant: str | None) -> tuple[pd.DataFrame, Scenario | None]:
    """(summary rows with ``replication`` and ``seed``, the scenario if known)."""
    from costsim.runs.sweep import SweepResults

    if isinstance(source, Results):
        source = [source]
    if isinstance(source, SweepResults):
        runs = source.runs
        variants = list(dict.fromkeys(runs["variant"]))
        if variant is None and len(variants) == 1:
            variant = variants[0]
        if variant not in variants:
            raise ArgumentError("decide", "variant", f"name one of the sweep's variants: {', '.join(variants[:10])}"
                                + (" …" if len(variants) > 10 else ""))
        scenario = (source.scenarios or {}).get(variant)
        return runs[runs["variant"] == variant].reset_index(drop=True), scenario
    if isinstance(source, Sequence) and source and all(isinstance(r, Results) for r in source):
        first = source[0]
        names = list(first.summary["option"])
        for r in source[1:]:
            if list(r.summary["option"]) != names or r.scenario.name != first.scenario.name:
                raise ArgumentError("decide", "source", "replications must be runs of one scenario (same options)")
        runs = pd.concat([r.summary.assign(replication=i, seed=r.seed) for i, r in enumerate(source)],
                         ignore_index=True)
        return runs, first.scenario
    raise ArgumentError("decide", "source", "needs a Results, a list of Results of one scenario, or SweepResults; "
                        f"got {type(source).__name__}")


def decide(source, targets=None, variant: str | None = None, *, flips: bool = True,
           simulate: flip_points.Simulate | None = None) -> Verdict:
    """The recommended option, why and how sure, in numbers (see the module).

    ``targets``: Targets or their text (``"p95_delay_h<=24"``); None: the scenario's
    ``decision.targets`` (``DEFAULT_TARGETS`` when it states none or is not known); ``[]``: none.
    ``flips``: search the utilisation flip by re-simulation (``flips.utilization_flip``; a few
    simulations of the two options compared); False leaves it out, saying so. ``simulate(scenario,
    seed) -> Results``: how those simulations run (default ``costsim.simulate``)."""
    v = _decide(source, targets, variant, flips, simulate)
    return _with_time_to_target(v, source)


def _with_time_to_target(v: Verdict, source) -> Verdict:
    """``v`` with the time-to-target table and the option compared there when runs with a
    ``scaling`` class are given (a sweep keeps no ``to_target`` table: unchanged)."""
    runs = [source] if isinstance(source, Results) else (
        list(source) if isinstance(source, Sequence) and source and all(isinstance(r, Results) for r in source) else [])
    if v.option is None or not runs or not time_to_target.has_scaling(runs[0].scenario):
        return v
    summary = time_to_target.summarize(runs)
    return dataclasses.replace(v, to_target=summary,
                               to_target_versus=time_to_target.compared_with(summary, v.option, v.versus))


def held_to(targets, scenario: Scenario | None, source: str = "targets") -> tuple[Target, ...]:
    """The targets a decision holds options to: those given, else the scenario's, else the defaults
    (a bad one given is a ScenarioError naming ``source``)."""
    if targets is not None:
        return as_targets(targets, source)
    stated = scenario.decision.stated_targets if scenario is not None else DEFAULT_TARGETS
    return as_targets(list(stated), "decision.targets")


def option_table(rows: pd.DataFrame, wanted: tuple[Target, ...]) -> pd.DataFrame:
    """Per option (in order), the means over the replications of ``fair_rows``' table, ``keeps_up``
    (in at least ``MAJORITY`` of them), ``why``, ``side``, ``meets_targets`` and ``eligible``."""
    extra = [METRICS[t.metric][0] for t in wanted if METRICS[t.metric][0] not in MEANS]
    groups = rows.groupby("option", sort=False)
    table = groups[MEANS + list(dict.fromkeys(extra))].mean()
    table["keeps_up"] = groups["keeps_up"].mean() >= MAJORITY
    table["why"] = [why_over(g) for _, g in groups]
    table["side"] = groups["side"].first()
    table["meets_targets"] = [all(t.met(value(r, t.metric)) for t in wanted) for _, r in table.iterrows()]
    table["eligible"] = table["keeps_up"] & table["meets_targets"]
    return table.reset_index()


def _decide(source, targets, variant: str | None, flips: bool, simulate) -> Verdict:
    runs, scenario = _runs(source, variant)
    wanted = held_to(targets, scenario)
    price = scenario.decision.waiting_usd_per_gpu_hour if scenario is not None else 0.0
    rows = fair_rows(runs, price)
    reps = int(rows["replication"].nunique())
    # A target no option has a value for (a delay with no job after the warm-up) cannot decide:
    # it is set aside, and the sentence says so.
    unmeasured = tuple(t for t in wanted if rows[METRICS[t.metric][0]].isna().all())
    wanted = tuple(t for t in wanted if t not in unmeasured)
    table = option_table(rows, wanted)
    common = dict(replications=reps, targets=wanted, unmeasured=unmeasured, waiting_usd_per_gpu_hour=price,
                  options=table, rows=rows, scenario=scenario)
    ok = table[table["eligible"]].sort_values("fair_total_usd", kind="stable")
    if ok.empty:
        return Verdict(option=None, closest=_closest(table, wanted), **common)
    best = ok.iloc[0]
    binding, ruled_out = _binding(table, best, wanted)
    others = ok[ok["option"] != best.option]
    across = others[others["side"] != best.side]
    alt = across.iloc[0] if not across.empty else (others.iloc[0] if not others.empty else None)
    if alt is None:
        return Verdict(option=best.option, binding=binding, binding_option=ruled_out, **common)
    pair = rows.pivot(index="replication", columns="option", values=["fair_total_usd", "cash_spent_usd"])
    d = pair["fair_total_usd"][best.option] - pair["fair_total_usd"][alt.option]
    mean, low, high = t_interval(d.to_numpy())
    cash = float((pair["cash_spent_usd"][best.option] - pair["cash_spent_usd"][alt.option]).mean())
    close = reps >= 2 and low <= 0 <= high
    relative = mean / alt.fair_total_usd if alt.fair_total_usd else math.nan
    same = close or (abs(relative) < TIE_TOLERANCE if not math.isnan(relative) else mean == 0)
    e_flip, u_search = math.nan, None
    if not same and {best.side, alt.side} == {"build", "rent"}:
        build, rent = (best, alt) if best.side == "build" else (alt, best)
        if scenario is not None:
            e_flip = flip_points.electricity_flip(mean, best.cost_energy_usd, alt.cost_energy_usd,
                                                  economics_values(scenario).electricity_usd_per_kwh)
        build_minus_rent = mean if best.side == "build" else -mean
        u_search = _utilization_flip(rows, scenario, build, rent, price, wanted, flips, build_minus_rent, simulate)
    return Verdict(option=best.option, versus=alt.option, close_call=close, same_cost=same, difference_usd=mean,
                   difference_low_usd=low, difference_high_usd=high, relative=relative, cash_difference_usd=cash,
                   electricity_flip_usd_per_kwh=e_flip, utilization_search=u_search,
                   utilization_flip=math.nan if u_search is None else u_search.utilization,
                   binding=binding, binding_option=ruled_out, **common)


def _utilization_flip(rows: pd.DataFrame, scenario: Scenario | None, build, rent, price: float,
                      wanted: tuple[Target, ...], search: bool, build_minus_rent: float, simulate) -> Flip:
    """The owned option's utilisation at the flip (``flips.utilization_flip``), or why there is none
    (``NOT_SEARCHED``, ``NO_SCENARIO``, ``ORDER_DIFFERS`` or the search's reason);
    ``build_minus_rent``: the mean fair difference over the replications."""
    if not search:
        return Flip(reason=NOT_SEARCHED)
    if scenario is None or "seed" not in rows:
        return Flip(reason=NO_SCENARIO)
    first = rows[rows["replication"] == rows["replication"].min()]
    b = first[first["option"] == build.option].iloc[0]
    r = first[first["option"] == rent.option].iloc[0]
    if (b.fair_total_usd - r.fair_total_usd > 0) != (build_minus_rent > 0):
        return Flip(reason=ORDER_DIFFERS)
    return flip_points.utilization_flip(scenario, int(b.seed), b, r, price=price, wanted=wanted, simulate=simulate)


def _binding(table: pd.DataFrame, best, wanted: tuple[Target, ...]) -> tuple[str, str]:
    """(the target that rules out the cheapest option dearer options were preferred to, that
    option): the cheapest option cheaper than ``best`` that keeps up but misses a target; ("", "")
    when none does. Options that cannot keep up are reported by other clauses."""
    cheaper = table[(table["fair_total_usd"] < best.fair_total_usd) & table["keeps_up"] & ~table["meets_targets"]]
    if cheaper.empty:
        return "", ""
    row = cheaper.sort_values("fair_total_usd", kind="stable").iloc[0]
    missed = [t for t in wanted if not t.met(value(row, t.metric))]
    return " and ".join(map(str, missed)), str(row.option)


def _closest(table: pd.DataFrame, wanted: tuple[Target, ...]) -> str:
    """The option that comes closest: fewest conditions missed, then the smallest relative shortfall,
    then the lowest fair total."""
    keyed = [(s.conditions, s.far, r.fair_total_usd, r.option)
             for s, (_, r) in zip((shortfall(r, wanted) for _, r in table.iterrows()), table.iterrows(), strict=True)]
    return str(min(keyed)[3])
