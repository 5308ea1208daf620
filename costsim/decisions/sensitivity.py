"""The sensitivity tornado (DESIGN.md section 14): which uncertain input moves the build-or-rent
answer most, and which one would flip it.

``tornado(scenario)`` sets each uncertain input (the catalog's ``ranges``) to its low and to its
high value, every other input at the scenario's, and measures for one fixed pair of options —
the base verdict's build option and rent option (``costsim.decide`` on the base run; when it does
not compare building with renting, the cheapest owned-side option against the cheapest rented
one):

- the build-minus-rent difference of fair totals (``fair.fair_rows``: amortised total plus
  unfinished work and unmet serving at the cheapest rent, and waiting at the scenario's
  ``decision.waiting_usd_per_gpu_hour``), USD, the mean over replications (negative: building is
  cheaper);
- the break-even month of the pair and its extrapolation (cash view) over the replications, as
  every surface has them (``costsim.results.finance.breakeven_over``).

It is a sweep of 1 + 2k variants of the scenario, each built and checked by the sweeps' variant
builder (``costsim.runs.variants``), run as the sweep's tasks (``costsim.runs.taskrun``:
replication r of every variant uses the same seed — common random numbers, so each swing is a
paired difference) on the sweep's executors. The ends of the inputs that are prices (the cloud
price, capex, electricity, PUE, depreciation, the cost of capital, the spot discount: what no run
reads, ``costsim.runs.memo.usage_key``) use the base's GPU-hours, so each replication simulates
the base once and re-costs it for them. Each task runs ``simulate`` once and keeps its summary
and its break-even table: a sweep's runs table has no cash flow, and running every variant
a second time for the break-even month would double the work. A caller that has the base's
replications already (the report: the verdict's runs) gives them (``Given``) with their verdict: the
base variant is then not run again, and its pair is the verdict's (no second ``decide``).

An end flips the verdict when the difference changes sign there, or when the option the base
recommends cannot keep up or misses one of the decision's targets there (``costsim.decide``
would not name it): a longer lead time that leaves the owned option's jobs waiting past the
p95 target flips the verdict even when waiting is not priced.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from costsim.catalog.load import Catalog, InputRange, default_catalog
from costsim.decisions.fair import fair_rows
from costsim.decisions.targets import Target
from costsim.decisions.targets import value as metric_value
from costsim.decisions.tornado_inputs import INPUTS, chosen_inputs
from costsim.decisions.verdict import Verdict, decide, held_to, option_table
from costsim.plan.fleet import Plan
from costsim.plan.resolve import resolve
from costsim.results.contract import Results
from costsim.results.finance import breakeven_over
from costsim.runs import api, arguments
from costsim.runs.executors import executor_settings, open_executor
from costsim.runs.sweep import SweepResults
from costsim.runs.sweepfile import Sweep, replication_seed
from costsim.runs.taskrun import TaskOutput, shared_runs, task_output, task_outputs, tasks
from costsim.runs.variants import Variant, VariantBuilder
from costsim.scenario import Problem, Scenario, ScenarioError

COLUMNS = ["input", "path", "unit", "base", "low", "high", "base_difference_usd", "low_difference_usd",
           "high_difference_usd", "swing_usd", "low_breakeven_month", "high_breakeven_month", "flips", "flips_at",
           "low_breakeven_month_extrapolated", "high_breakeven_month_extrapolated", "note"]
BASE = "base"


@dataclass(frozen=True, kw_only=True)
class Tornado:
    """What ``tornado`` returns. ``table``: one row per input (``COLUMNS``), sorted by ``swing_usd``
    (|high − low| of the difference) descending, inputs that do not apply last with a ``note``;
    differences are build − rent fair totals in USD. ``build``/``rent``: the pair's option names;
    ``base_breakeven_month``: the pair's break-even month at base, a month number counted from 1
    as ``finance.breakeven`` writes it, or a mean of them (NaN: not within the horizon;
    ``base_breakeven_month_extrapolated``: where the last three months' spending would bring it);
    ``breakeven``: the pair's ``finance.breakeven_over`` row per variant that compares it
    (``variant``, ``input`` — the table's label, "" at base — and ``end``: "base", "low" or "high";
    then that row's columns, replication counts included), from which every surface words a
    break-even cell (``headline.tornado_breakeven``); no row where the input was skipped or the
    pair is not one the break-even table compares (a reservation against a rental);
    ``scenario``: the base scenario (its options name the pair in words). What flips the verdict
    and what swings it most, in words: ``costsim.present.tornado.sentence``."""

    table: pd.DataFrame
    build: str
    rent: str
    base_difference_usd: float
    base_breakeven_month: float
    base_breakeven_month_extrapolated: float
    replications: int
    breakeven: pd.DataFrame = dataclasses.field(default_factory=pd.DataFrame)
    scenario: Scenario | None = None


@dataclass(frozen=True, kw_only=True)
class Given:
    """The base variant's runs a caller has already: ``runs``, replication r of the base scenario on
    ``replication_seed(seed, r)`` as a sweep seeds it (a report's replications), one per
    replication; ``verdict``: ``decide`` on those runs with the tornado's targets (None: the
    tornado decides on them itself, without the flip search)."""

    runs: Sequence[Results]
    verdict: Verdict | None = None


# ------------------------------------------------------------------ the sweep of 1 + 2k variants


def _plan(base: Scenario, ranges: dict[str, InputRange], cat: Catalog) -> tuple[list[Variant], dict[str, dict]]:
    """The variants (base first) and per input its row's fixed part (label, paths, values, note)."""
    plans = {p.name: p for p in resolve(base, cat)}
    builder = VariantBuilder(base, source="tornado")  # each end built and checked as a sweep's variants are
    variants, rows = [Variant(BASE, {}, base)], {}
    for name, r in ranges.items():
        label, edits_of, base_of = INPUTS[name]
        row = {"input": label, "path": r.applies_to, "unit": r.unit, "low": r.low, "high": r.high,
               "base": 1.0 if r.scale else (base_of(base, plans, cat) if base_of else math.nan), "note": ""}
        low, high = edits_of(base, plans, cat, r.low), edits_of(base, plans, cat, r.high)
        if isinstance(low, str):
            rows[name] = {**row, "note": f"skipped: {low}"}
            continue
        row["path"] = ", ".join(low)
        try:
            pair = [builder.build(vid=f"{name}-{end}", params=e) for end, e in (("low", low), ("high", high))]
        except ScenarioError as err:  # e.g. a lead time past the horizon for a scenario that forbids it
            rows[name] = {**row, "note": f"skipped: {err.problems[0].message if err.problems else err}"}
            continue
        variants += pair
        rows[name] = row
    return variants, rows


def _run(spec: Sweep, executor: str, workers: int, address: str | None, progress,
         given: Given | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The sweep's runs and break-even tables, in task order (the sweep's task loop: each task
    keeps its break-even table, the run's own months, extrapolation included; the price inputs'
    ends share one simulation of each replication and are only re-costed); the base's tasks from
    ``given``'s runs when given, not run again (``progress`` counts the tasks run)."""
    todo = tasks(spec, breakeven=True)
    outs: dict[int, TaskOutput] = {}
    if given is not None:
        outs = {i: task_output(t, given.runs[t.replication]) for i, t in enumerate(todo) if t.variant == BASE}
    left = [i for i in range(len(todo)) if i not in outs]
    if left:
        rest = [todo[i] for i in left]
        groups = shared_runs(rest)
        with open_executor(executor, min(workers, len(groups)), address) as run:
            outs.update((left[k], out) for k, out in task_outputs(run, rest, progress, groups=groups))
    ordered = [outs[i] for i in range(len(todo))]
    return (pd.concat([o.summary for o in ordered], ignore_index=True),
            pd.concat([o.breakeven for o in ordered if o.breakeven is not None], ignore_index=True))


# ------------------------------------------------------------------ measuring


def _pair_of(runs: pd.DataFrame, spec: Sweep, wanted: tuple[Target, ...],
             verdict: Verdict | None) -> tuple[str, str, str | None]:
    """(build, rent, the base verdict's recommendation): the base verdict's pair (``verdict``, or
    decided here when None) when it compares building with renting; else, per side, the cheapest
    option that keeps up and meets the targets (the cheapest of the side when none does)."""
    base = runs[runs["variant"] == BASE]
    if verdict is None:
        scenarios = {v.id: v.scenario for v in spec.variants}
        verdict = decide(SweepResults(base, pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), scenarios), wanted,
                         variant=BASE, flips=False)
    table = option_table(fair_rows(base, _waiting_price(spec)), wanted)
    sides = table.set_index("option")["side"]
    if verdict.option is not None and verdict.versus is not None and sides[verdict.option] != sides[verdict.versus]:
        a, b = verdict.option, verdict.versus
        return ((a, b) if sides[a] == "build" else (b, a)) + (verdict.option,)
    ranked = table.sort_values(["eligible", "fair_total_usd"], ascending=[False, True], kind="stable")
    build = ranked[ranked["side"] == "build"]["option"].iloc[0]  # both sides exist: _check_sides
    rent = ranked[ranked["side"] == "rent"]["option"].iloc[0]
    return str(build), str(rent), verdict.option


def _waiting_price(spec: Sweep) -> float:
    """The price of waiting the base scenario states (every variant keeps its ``decision``)."""
    return next(v.scenario.decision.waiting_usd_per_gpu_hour for v in spec.variants if v.id == BASE)


def _difference(runs: pd.DataFrame, variant: str, build: str, rent: str, price: float) -> float:
    """Mean over replications of build − rent fair totals (paired: same seed), USD."""
    rows = fair_rows(runs[runs["variant"] == variant], price)
    by = rows.pivot(index="replication", columns="option", values="fair_total_usd")
    return float((by[build] - by[rent]).mean())


def _pair_breakeven(breakeven: pd.DataFrame, variant: str, build: str, rent: str) -> pd.DataFrame:
    """The pair's ``finance.breakeven_over`` row over the variant's replications (each run's
    ``finance.breakeven`` table), with its counts; empty when the pair is not one that table
    compares (a reservation against a rental)."""
    rows = breakeven[(breakeven["variant"] == variant) & (breakeven["option"] == build) & (breakeven["versus"] == rent)]
    if rows.empty:
        return pd.DataFrame()
    return breakeven_over([g.drop(columns=["variant", "replication"]) for _, g in rows.groupby("replication", sort=True)])


def _months(over: pd.DataFrame) -> tuple[float, float]:
    """(break-even month, extrapolated month) of a ``_pair_breakeven`` row, as the table's numbers:
    the mean month over the replications that break even within the horizon (how many of them:
    the row's ``found`` of ``n``), and the mean extrapolated month of those that do not (the month
    itself when every one breaks even); NaN when none has one or there is no row."""
    if over.empty:
        return math.nan, math.nan
    month, extra = float(over["breakeven_month"].iloc[0]), float(over["breakeven_month_extrapolated"].iloc[0])
    return month, extra if extra == extra else month


def _eligibility_note(runs: pd.DataFrame, vid: str, end: str, build: str, rent: str, price: float,
                      wanted: tuple[Target, ...]) -> str:
    """"at high: own-256 cannot keep up; cloud-od misses p95_delay_h<=24" ("" when both qualify)."""
    table = option_table(fair_rows(runs[runs["variant"] == vid], price), wanted).set_index("option")
    notes = []
    for n in (build, rent):
        if not table.at[n, "keeps_up"]:
            notes.append(f"{n} cannot keep up")
        elif not table.at[n, "meets_targets"]:
            missed = [str(t) for t in wanted if not t.met(metric_value(table.loc[n], t.metric))]
            notes.append(f"{n} misses {' and '.join(missed)}")
    return f"at {end}: {'; '.join(notes)}" if notes else ""


def tornado(scenario: Scenario | str | Path, replications: int = 1, seed: int | None = None,
            inputs: Sequence[str] | Mapping[str, tuple[float, float]] | None = None, executor: str = "processes",
            progress: Callable[[int, int], None] | None = None, targets=None, workers: int | None = None,
            address: str | None = None, *, given: Given | None = None) -> Tornado:
    """The sensitivity tornado of ``scenario`` (see the module): each input of ``inputs`` (default:
    every input the catalog has a range for) at its low and high, ``replications`` runs per variant
    seeded as a sweep's (``seed`` None: the scenario's), on ``executor`` ("local": this process;
    "processes": a pool of ``workers`` processes, by default one per core; "dask": a Dask
    LocalCluster of as many, or the scheduler at ``address``, HOST:PORT), the same table from each;
    ``targets``: as ``decide``'s (None: the scenario's ``decision.targets``). ``progress(done,
    total)`` after each run. ``given``: the base's runs (and verdict) already made, used rather
    than run again (the same table either way). Raises ScenarioError for bad arguments or a
    scenario without both a build and a rent option."""
    if isinstance(scenario, Scenario):
        scenario = api.revalidated(scenario)[0]  # a Scenario.model_construct may lack any field
    else:
        scenario = api.load_scenario(arguments.path(scenario, "scenario", "tornado"))
    if isinstance(replications, bool) or not isinstance(replications, int) or not 1 <= replications <= 1000:
        raise arguments.error("tornado", "replications", f"must be a whole number from 1 to 1,000 (got {replications!r})")
    seed = arguments.seed(seed, "tornado")
    executor, workers, address = executor_settings(executor, workers, address, "tornado")
    progress = arguments.callback(progress, "progress", "tornado")
    ready = api.prepared(scenario, "tornado")
    base = ready.scenario
    _check_sides(ready.plans)
    wanted = held_to(targets, base)
    cat = default_catalog()
    variants, rows = _plan(base, chosen_inputs(inputs, cat), cat)
    spec = Sweep("tornado", Path(base.base_dir), tuple(variants), replications, base.seed if seed is None else seed)
    _check_given(given, spec, wanted)
    runs, breakeven = _run(spec, executor, workers, address, progress, given)
    build, rent, chosen = _pair_of(runs, spec, wanted, None if given is None else given.verdict)
    price = base.decision.waiting_usd_per_gpu_hour
    base_diff = _difference(runs, BASE, build, rent, price)
    ran = {v.id for v in variants}
    pair = _Pair(build, rent, base_diff, price, wanted, chosen)
    ends = [(BASE, "", "base")] + [(f"{n}-{e}", row["input"], e) for n, row in rows.items() for e in ("low", "high")]
    over = {vid: _pair_breakeven(breakeven, vid, build, rent).assign(variant=vid, input=label, end=end)
            for vid, label, end in ends if vid in ran}
    table = pd.DataFrame([_measured(name, row, runs, over, ran, pair) for name, row in rows.items()], columns=COLUMNS)
    table = table.sort_values("swing_usd", ascending=False, kind="stable", na_position="last").reset_index(drop=True)
    month, extrapolated = _months(over[BASE])
    found = [f for f in over.values() if len(f)]
    pairs = pd.concat(found, ignore_index=True) if found else pd.DataFrame(columns=["variant", "input", "end"])
    pairs = pairs[["variant", "input", "end", *[c for c in pairs.columns if c not in ("variant", "input", "end")]]]
    return Tornado(table=table, build=build, rent=rent, base_difference_usd=base_diff, base_breakeven_month=month,
                   base_breakeven_month_extrapolated=extrapolated, replications=replications, breakeven=pairs,
                   scenario=base)


def _check_given(given: Given | None, spec: Sweep, wanted: tuple[Target, ...]) -> None:
    """Refuse base runs that are not the base variant's tasks: one per replication, each on its
    seed and of the base scenario as the tornado checked it, and a verdict on other targets."""
    if given is None:
        return
    if not isinstance(given, Given):
        raise arguments.error("tornado", "given", f"must be a sensitivity.Given or None, got {type(given).__name__}")
    base = next(v.scenario for v in spec.variants if v.id == BASE).model_dump(mode="json")
    seeds = [replication_seed(spec.seed, r) for r in range(spec.replications)]
    if [r.seed for r in given.runs] != seeds or any(r.scenario.model_dump(mode="json") != base for r in given.runs):
        raise arguments.error("tornado", "given", f"must be the base scenario's {spec.replications} run(s) on the "
                              f"seeds {seeds}, in that order")
    v = given.verdict
    if v is not None and ({str(t) for t in (*v.targets, *v.unmeasured)} != {str(t) for t in wanted}
                          or v.replications != spec.replications):
        raise arguments.error("tornado", "given", "its verdict must be decided on its runs with the tornado's targets")


def _check_sides(plans: Sequence[Plan]) -> None:
    """Refuse, before anything runs, a scenario that has no build option or no rent option (each
    option's ``Plan.side``, the rule the verdict's table uses)."""
    sides = {plan.side for plan in plans}
    if sides != {"build", "rent"}:
        missing = "owned" if "build" not in sides else "rented"
        raise ScenarioError("tornado()", [Problem(("scenario",), "a tornado compares building with renting: the "
                                                  f"scenario has no {missing} option")])


@dataclass(frozen=True)
class _Pair:
    """The pair the tornado measures, the base difference (build − rent, USD) and the decision's
    price of waiting and targets."""

    build: str
    rent: str
    base_diff: float
    price: float
    wanted: tuple[Target, ...]
    chosen: str | None  # what the base verdict recommends (None: nothing qualifies)


def _measured(name: str, row: dict, runs: pd.DataFrame, over: dict[str, pd.DataFrame], ran: set[str],
              pair: _Pair) -> dict:
    """An input's row completed: differences, break-even months (from ``over``: each variant's
    ``_pair_breakeven``), swing, flips, eligibility notes."""
    build, rent, base_diff = pair.build, pair.rent, pair.base_diff
    row = {**row, "base_difference_usd": base_diff}
    for end in ("low", "high"):
        vid = f"{name}-{end}"
        if vid not in ran:  # skipped: not applicable to this scenario
            row.update({f"{end}_difference_usd": math.nan, f"{end}_breakeven_month": math.nan,
                        f"{end}_breakeven_month_extrapolated": math.nan})
            continue
        row[f"{end}_difference_usd"] = _difference(runs, vid, build, rent, pair.price)
        row[f"{end}_breakeven_month"], row[f"{end}_breakeven_month_extrapolated"] = _months(over[vid])
        note = _eligibility_note(runs, vid, end, build, rent, pair.price, pair.wanted)
        row["note"] = "; ".join(x for x in (row["note"], note) if x)
    row["swing_usd"] = abs(row["high_difference_usd"] - row["low_difference_usd"])  # NaN when skipped
    # The verdict flips at an end when the option recommended there (the cheapest fair total
    # among those that keep up and meet the targets) is not the base's: a change of sign in the
    # pair's difference is a flip only when the option it favours qualifies there.
    row["flips_at"] = ",".join(e for e in ("low", "high")
                               if f"{name}-{e}" in ran and _recommended(runs, f"{name}-{e}", pair) != pair.chosen)
    row["flips"] = bool(row["flips_at"])
    return row


def _recommended(runs: pd.DataFrame, vid: str, pair: _Pair) -> str | None:
    """What ``decide`` would recommend in variant ``vid``: the lowest mean fair total among the
    options that keep up (in at least ``MAJORITY`` of the replications) and meet the targets."""
    table = option_table(fair_rows(runs[runs["variant"] == vid], pair.price), pair.wanted)
    ok = table[table["eligible"]].sort_values("fair_total_usd", kind="stable")
    return None if ok.empty else str(ok["option"].iloc[0])


__all__ = ["COLUMNS", "INPUTS", "Given", "Tornado", "tornado"]
