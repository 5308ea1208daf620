"""The cheapest configuration that meets every target (DESIGN.md section 14, ``costsim optimize``).

``optimize(scenario, targets, vary)`` searches the fields ``vary`` names (``space.py``) for the
configuration of lowest mean fair total cost (``fair.py``: amortised total plus unfinished work at
the cheapest rent, USD) that keeps up and meets every target on its mean over the replications:

1. **Grid**: about ``GRID_POINTS`` (5) evenly spaced levels per dimension, both ends included (fewer
   when ``max_runs`` would be exceeded), run as one sweep with ``replications`` and common random
   numbers (``costsim.runs.sweepfile.sweep_from_sets``: replication r runs on the same seed in
   every configuration, here and in the refinement, so comparisons are paired).
2. **Which configurations qualify**: every option of the scenario is priced fairly per run (the
   varied option's grid *and* the other options, which may already meet the targets for less);
   an (configuration, option) meets when it keeps up in at least half the replications and its
   means meet every target (as ``costsim.decide``: the targets given, else the scenario's
   ``decision.targets``, else the defaults; waiting priced at its ``decision``).
3. **Bisection** along the first dimension on which qualifying is monotone over the grid (more GPUs
   never worsen delay: every grid line goes fail…pass as the level rises, or pass…fail), with the
   other fields fixed at the cheapest qualifying grid point: between that point and its failing
   grid neighbour, halve the gap until the two are adjacent levels (one node, one listed value or
   1/64 of a real range): the boundary value, to the step resolution. Each step waits for the one
   before, so while a step runs, workers it leaves idle start the next step's runs for either
   outcome (``costsim.decisions.search``: guesses, recorded only once wanted), and the other guess
   is dropped: on one worker nothing is guessed, on several the same steps come sooner.
4. The answer is the cheapest qualifying configuration evaluated, with its means and 95 %
   t-intervals over the replications (``costsim.runs.stats.t_interval``), everything evaluated and
   its Pareto frontier (``pareto.frontier``: fair total vs p95 queue delay, configurations that
   keep up, each option once per setting of the fields it uses). When nothing qualifies it names
   the closest configuration and what it misses.

The whole search runs on one executor (a process pool by default), started once; configurations
that differ only in a price (a varied rent, an economics field) share one simulation per
replication (``costsim.runs.taskrun``). The answer and its tables are the same whatever the
executor, the workers and whichever guesses ran.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from costsim.decisions.pareto import frontier as pareto_frontier
from costsim.decisions.search import Point, Search, key, point
from costsim.decisions.space import Dimension, parse_space
from costsim.decisions.targets import METRICS, Shortfall, Target, shortfall
from costsim.decisions.verdict import held_to
from costsim.plan import facts
from costsim.runs import api, arguments
from costsim.runs.executors import executor_settings, open_executor
from costsim.runs.stats import t_interval
from costsim.runs.sweepfile import MAX_REPLICATIONS
from costsim.scenario import Problem, ScenarioError

GRID_POINTS = 5


@dataclass(frozen=True, kw_only=True)
class Stopped:
    """The bisection along ``path`` stopped at the run budget (``max_runs``) between a value that
    misses and one that meets."""

    path: str
    misses: Any
    meets: Any
    max_runs: int


@dataclass(frozen=True, kw_only=True)
class RangeEnd:
    """The answer sits at an end of a varied range: ``path`` at ``value``, its ``lowest`` (else its
    highest) value tried, so the answer may lie beyond the range."""

    path: str
    value: Any
    lowest: bool


@dataclass(frozen=True, kw_only=True)
class Optimum:
    """What ``optimize`` returns, in numbers (``costsim.present.optimize`` words it: the answer in
    one sentence and its notes). ``meets``: whether ``values``/``option`` meet every target (when
    not, they are the closest configuration evaluated, and ``shortfall`` says what it misses);
    ``option`` is the name it ran as (a resized option follows ``costsim.scenario.naming``: own-256
    at 320 GPUs is own-320). ``values``: varied path -> value (every varied path); ``used``: the
    varied paths that apply to ``option`` (its own fields, those of the options it is made of, and
    those outside ``options``); ``searched``: the scenario's options searched (all of them);
    ``metrics``: its means (``verdict.MEANS``: USD, hours, shares); ``intervals``: metric -> (low,
    high), the 95 % t-interval over the replications (NaN with one); ``evaluated``: one row per
    (configuration, option) evaluated — the varied values, ``option``, ``n``, the means,
    ``keeps_up``, ``why``, ``meets_targets``, ``meets``, ``stage`` (grid or bisection);
    ``frontier``: ``pareto.frontier`` of the evaluated rows that keep up; what limits the answer:
    ``stopped`` (the run budget spent), ``range_ends`` (a range edge reached) and ``unsure`` (the
    targets its 95 % intervals straddle); ``runs``: simulations run."""

    values: dict[str, Any]
    option: str | None
    metrics: dict[str, float]
    intervals: dict[str, tuple[float, float]]
    evaluated: pd.DataFrame
    frontier: pd.DataFrame
    meets: bool
    targets: tuple[Target, ...]
    runs: int
    used: tuple[str, ...]
    searched: tuple[str, ...]
    shortfall: Shortfall
    stopped: Stopped | None = None
    range_ends: tuple[RangeEnd, ...] = ()
    unsure: tuple[Target, ...] = ()


def whole_flag(x: Any, flag: str, low: int, high: float = math.inf) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or not low <= x <= high:
        top = "" if math.isinf(high) else f" to {high:,}"
        raise ScenarioError(flag, [Problem((), f"must be a whole number from {low}{top} (got {x!r})")])
    return x


def _with_level(p: Point, d: int, k: int) -> Point:
    """``p`` with level ``k`` on dimension ``d``."""
    return p[:d] + (k,) + p[d + 1:]


def _monotone(meets: dict[Point, bool], d: int) -> str | None:
    """"up" when along dimension ``d`` every grid line goes fail…pass as the level rises, "down"
    when pass…fail; None when a line changes twice, lines disagree, or none changes."""
    lines: dict[Point, list[tuple[int, bool]]] = {}
    for p, ok in meets.items():
        lines.setdefault(p[:d] + p[d + 1:], []).append((p[d], ok))
    seen = set()
    for line in lines.values():
        s = [ok for _, ok in sorted(line)]
        changes = sum(a != b for a, b in itertools.pairwise(s))
        if changes > 1:
            return None
        if changes == 1:
            seen.add("down" if s[0] else "up")
    return seen.pop() if len(seen) == 1 else None


@dataclass(frozen=True)
class _Bracket:
    """Where the bisection runs: along dimension ``d`` from ``best`` (the cheapest qualifying grid
    point, of the scenario's option ``option``), between level ``good`` (it) and ``fail`` (its
    failing grid neighbour)."""

    best: Point
    option: str
    d: int
    fail: int
    good: int


def _bracket(search: Search, table: pd.DataFrame, grids: list[list[int]]) -> _Bracket | None:
    """The bisection's bracket on the grid's ``table``: along the first monotone dimension from the
    cheapest qualifying grid point (None when nothing qualifies or no dimension brackets it)."""
    ok = table[table["meets"]].sort_values("fair_total_usd", kind="stable")
    if ok.empty:
        return None
    best, option = point(ok.iloc[0]["_point"]), ok.iloc[0]["_option"]
    mine = table[table["_option"] == option]
    meets = {point(r["_point"]): bool(r["meets"]) for _, r in mine.iterrows()}
    for d in range(len(search.dims)):
        direction = _monotone(meets, d)
        if direction is None:
            continue
        levels = grids[d]
        i = levels.index(best[d])
        j = i - 1 if direction == "up" else i + 1
        if not 0 <= j < len(levels):  # the best is at the range's end (``_edges`` says so)
            continue
        if meets.get(_with_level(best, d, levels[j]), True):
            continue
        return _Bracket(best=best, option=option, d=d, fail=levels[j], good=best[d])
    return None


def _refine(search: Search, table: pd.DataFrame, grids: list[list[int]]) -> Stopped | None:
    """Bisection within ``_bracket``; where it stopped when the run budget ran out first. While a
    step's runs go, lanes they leave idle start on the next step's (its midpoint if this one meets,
    and if it misses; first the one its replications back so far point to): the same steps, sooner,
    on more than one worker."""
    bracket = _bracket(search, table, grids)
    if bracket is None:
        search.forget()
        return None
    best, option, d, fail, good = bracket.best, bracket.option, bracket.d, bracket.fail, bracket.good
    dim = search.dims[d]
    steps = math.ceil(math.log2(abs(good - fail))) if abs(good - fail) > 1 else 0
    search.planned = search.done + steps * search.replications
    search.forget([_with_level(best, d, (good + fail) // 2)])  # a guess the grid's last runs proved wrong
    try:
        while abs(good - fail) > 1:
            if search.done + search.replications > search.max_runs:
                return Stopped(path=dim.path, misses=dim.value(fail), meets=dim.value(good), max_runs=search.max_runs)
            mid = (good + fail) // 2
            here = _with_level(best, d, mid)
            search.want([here])
            if search.done + 2 * search.replications <= search.max_runs:  # a next step within the budget
                search.guess([_with_level(best, d, n) for n in _next_mids(fail, mid, good)])
            search.settle([here], "bisection", functools.partial(_lean, search, best, d, option, fail, mid, good))
            if _meets(search.table(), here, option):
                good = mid
            else:
                fail = mid
            search.forget([_with_level(best, d, (good + fail) // 2)])
    finally:
        search.forget()
    return None


def _grid_lean(search: Search, grid: list[Point], grids: list[list[int]]) -> None:
    """Once the grid's runs still out are fewer than the lanes, an idle lane starts the bisection's
    first midpoint where the grid's runs back so far place it (a guess, dropped if the whole grid
    places it elsewhere)."""
    if search.outstanding(grid) >= search.slots() or len(grid) * search.replications + \
            search.replications > search.max_runs:
        return
    bracket = _bracket(search, search.partial(grid), grids)
    if bracket is None or abs(bracket.good - bracket.fail) <= 1:
        return
    first = _with_level(bracket.best, bracket.d, (bracket.good + bracket.fail) // 2)
    search.forget([first])
    search.guess([first])
    search.prefer([first])


def _lean(search: Search, best: Point, d: int, option: str, fail: int, mid: int, good: int) -> None:
    """The next step's guess that the midpoint's replications back so far point to, first."""
    here = _with_level(best, d, mid)
    after = (fail + mid) // 2 if _meets(search.partial([here]), here, option) else (mid + good) // 2
    search.prefer([_with_level(best, d, after)])


def _meets(table: pd.DataFrame, p: Point, option: str) -> bool:
    """Whether ``option`` at ``p`` meets every target in ``table`` (``Search.table``)."""
    hit = table[(table["_point"] == key(p)) & (table["_option"] == option)]
    return bool(hit["meets"].iloc[0])


def _next_mids(fail: int, mid: int, good: int) -> list[int]:
    """The bisection's next midpoint if ``mid`` meets (then it is the good end) and if it misses."""
    return [(a + b) // 2 for a, b in ((fail, mid), (mid, good)) if abs(a - b) > 1]


def _range_ends(dims: list[Dimension], point: Point, uses: list[int]) -> tuple[RangeEnd, ...]:
    """The ranges (of the fields the option uses) whose end the answer sits at."""
    return tuple(RangeEnd(path=dims[i].path, value=dims[i].value(point[i]), lowest=point[i] == 0) for i in uses
                 if dims[i].kind != "list" and dims[i].count > 1 and point[i] in (0, dims[i].count - 1))


def unsure(wanted: tuple[Target, ...], intervals: dict[str, tuple[float, float]]) -> tuple[Target, ...]:
    """The targets whose metric's 95 % interval (``intervals``: column -> (low, high)) straddles
    them: met on the mean, not surely."""
    return tuple(t for t in wanted if intervals[METRICS[t.metric][0]][0] < t.value < intervals[METRICS[t.metric][0]][1])


def optimize(scenario_path: str | Path, targets, vary: list[str], replications: int = 3, seed: int | None = None,
             executor: str = "processes", workers: int | None = None, max_runs: int = 200,
             progress: Callable[[int, int], None] | None = None, address: str | None = None) -> Optimum:
    """The cheapest configuration of ``scenario_path`` meeting every target (see the module).

    ``targets``: ``"p95_delay_h<=4"`` strings or Targets (None: the scenario's ``decision.targets``,
    else the defaults; ``[]``: none); ``vary``: ``"PATH=LOW..HIGH"`` or
    ``"PATH=V1,V2"`` strings; ``max_runs``: simulations at most (configurations × replications);
    ``executor``: where the simulations run, one executor for the whole search ("local": this
    process; "processes": a pool of ``workers`` processes, by default one per core; "dask": a Dask
    LocalCluster of as many, or the scheduler at ``address``, HOST:PORT), the same answer from each;
    ``progress(done, total)``: as simulations come back (``total`` grows once the bisection starts).
    Raises ScenarioError naming ``--vary``, ``--target``, ``--replications``, ``--max-runs`` or the
    scenario file before anything runs."""
    path = arguments.path(scenario_path, "scenario_path", "optimize")
    replications = whole_flag(replications, "--replications", 1, MAX_REPLICATIONS)
    max_runs = whole_flag(max_runs, "--max-runs", 1)
    progress = arguments.callback(progress, "progress", "optimize")
    executor, workers, address = executor_settings(executor, workers, address, "optimize")
    base = api.load_scenario(path)
    wanted = held_to(targets, base, "--target")
    dims = parse_space(vary, base.model_dump(mode="json"))
    candidates = [o.name for o in base.options]
    points = next((n for n in range(GRID_POINTS, 1, -1)
                   if math.prod(min(n, d.count) for d in dims) * replications <= max_runs), None)
    if points is None:
        need = math.prod(min(2, d.count) for d in dims) * replications
        raise ScenarioError("--max-runs", [Problem((), f"{max_runs} runs cannot cover even the ends of every --vary "
                                                       f"range with {replications} replication(s): needs {need}")])
    grids = [d.grid(points) for d in dims]
    gaps = [max((b - a for a, b in itertools.pairwise(g)), default=1) for g in grids]
    search = Search(path=path, dims=dims, candidates=candidates, wanted=wanted, replications=replications,
                    seed=seed, max_runs=max_runs, lanes=None, progress=progress,
                    waiting_usd_per_gpu_hour=base.decision.waiting_usd_per_gpu_hour)
    search.uses = option_uses(base, dims, candidates)
    search.planned = math.prod(map(len, grids)) * replications + \
        max(math.ceil(math.log2(g)) if g > 1 else 0 for g in gaps) * replications
    grid = list(itertools.product(*grids))
    search.plan(grid)  # a value the scenario refuses is named before any worker starts
    with open_executor(executor, workers, address) as lanes:
        search.lanes = lanes
        search.want(grid)
        search.settle(grid, "grid", functools.partial(_grid_lean, search, grid, grids))
        stopped = _refine(search, search.table(), grids)
    if progress is not None:
        progress(search.done, search.done)
    return answer(search, search.table(), stopped)


# Fields of an on-demand or spot option that set its price, and so the cheapest rental price every
# option's unfinished work and unmet serving are priced at (``results.backlog.cheapest_rent_usd_per_gpu_hour``).
RENT_PRICE_FIELDS = ("price_per_gpu_hour", "price_change_per_year", "price_tier", "pricing", "gpu_type")


def _sets_rent_price(base, d: Dimension) -> bool:
    """Whether ``d`` can move the cheapest rental price: a price field of an on-demand or spot option
    (or the pricing of any cloud option, which may make it one)."""
    loc = d.path.split(".")
    if d.option is None or len(loc) != 3 or loc[2] not in RENT_PRICE_FIELDS:
        return False
    opt = next((o for o in base.options if o.name == d.option), None)
    return opt is not None and facts.is_cloud(opt) and (loc[2] == "pricing" or facts.pay_as_you_go(opt))


def option_uses(base, dims: list[Dimension], candidates: list[str]) -> dict[str, list[int]]:
    """Per candidate option, the dimensions that can change its runs or its fair total: its own
    fields, those of the options it is made of (a hybrid's base and burst, a fleet's parts, a rollout
    pool), fields outside ``options`` (economics, workload), and the price fields of every on-demand
    or spot option (``RENT_PRICE_FIELDS``: the cheapest of their prices prices any option's
    unfinished work and unmet serving, ``fair.py``)."""
    parts = {o.name: {o.name, *facts.parts_of(o), o.rollout_pool or o.name} for o in base.options}
    rent = {i for i, d in enumerate(dims) if _sets_rent_price(base, d)}
    return {c: [i for i, d in enumerate(dims) if d.option is None or d.option in parts[c] or i in rent]
            for c in candidates}


def answer(search: Search, table: pd.DataFrame, stopped: Stopped | None) -> Optimum:
    wanted = search.wanted
    ok = table[table["meets"]].sort_values("fair_total_usd", kind="stable")
    meets = not ok.empty
    if meets:
        row = ok.iloc[0]
    else:  # the closest: fewest conditions missed, then the smallest relative shortfall
        far = [(s.conditions, s.far, r["fair_total_usd"])
               for s, (_, r) in zip((shortfall(r, wanted) for _, r in table.iterrows()), table.iterrows(), strict=True)]
        row = table.iloc[min(range(len(far)), key=far.__getitem__)]
    at, option, shown_as = point(row["_point"]), row["_option"], row["option"]
    runs = search.runs_of(at, option)
    intervals = {m: t_interval(runs[m].to_numpy(dtype=float))[1:] for m in search.columns}
    evaluated = table.drop(columns=["_point", "_option"])
    # An option appears once per setting of the fields it uses: a field of another option (a
    # hybrid's wait, for the owned option) gives the same runs again, not another configuration.
    own = [tuple(p.split(",")[i] for i in search.uses[o])
           for p, o in zip(table["_point"], table["_option"], strict=True)]
    distinct = ~pd.Series(list(zip(table["_option"], own, strict=True))).duplicated().to_numpy()
    front = pareto_frontier(evaluated[evaluated["keeps_up"].to_numpy() & distinct].reset_index(drop=True))
    return Optimum(values=search.values(at), option=shown_as, metrics={m: float(row[m]) for m in search.columns},
                   intervals=intervals, evaluated=evaluated, frontier=front, meets=meets, targets=wanted,
                   runs=search.done, used=tuple(search.dims[i].path for i in search.uses[option]),
                   searched=tuple(search.candidates), shortfall=shortfall(row, wanted), stopped=stopped,
                   range_ends=_range_ends(search.dims, at, search.uses[option]), unsure=unsure(wanted, intervals))


__all__ = ["GRID_POINTS", "RENT_PRICE_FIELDS", "Optimum", "RangeEnd", "Stopped", "answer", "option_uses", "optimize", "unsure", "whole_flag"]
