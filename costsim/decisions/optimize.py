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
   1/64 of a real range): the boundary value, to the step resolution.
4. The answer is the cheapest qualifying configuration evaluated, with its means and 95 %
   t-intervals over the replications (``costsim.runs.stats.t_interval``), everything evaluated and
   its Pareto frontier (``pareto.frontier``: fair total vs p95 queue delay, configurations that
   keep up, each option once per setting of the fields it uses). When nothing qualifies it names
   the closest configuration and what it misses.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from costsim.decisions.fair import fair_rows
from costsim.decisions.pareto import frontier as pareto_frontier
from costsim.decisions.space import Dimension, parse_space
from costsim.decisions.targets import MAJORITY, METRICS, Shortfall, Target, shortfall, value
from costsim.decisions.verdict import MEANS, held_to
from costsim.runs import api, arguments
from costsim.runs.stats import t_interval
from costsim.runs.sweepfile import MAX_REPLICATIONS, sweep_from_sets
from costsim.scenario import Problem, ScenarioError

GRID_POINTS = 5
Point = tuple[int, ...]  # a configuration: one level index per dimension


def _key(p: Point) -> str:
    """A configuration as a table cell ("3,0"): tuples in a column are taken for lists by pandas."""
    return ",".join(map(str, p))


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


def _whole(x: Any, flag: str, low: int, high: float = math.inf) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or not low <= x <= high:
        top = "" if math.isinf(high) else f" to {high:,}"
        raise ScenarioError(flag, [Problem((), f"must be a whole number from {low}{top} (got {x!r})")])
    return x


class _Search:
    """The state of one search: the runs so far, priced fairly, by configuration."""

    def __init__(self, path: Path, dims: list[Dimension], candidates: list[str], wanted: tuple[Target, ...],
                 replications: int, seed: int | None, executor: str, workers: int | None, max_runs: int,
                 progress: Callable[[int, int], None] | None, waiting_usd_per_gpu_hour: float):
        self.path, self.dims, self.candidates, self.wanted = path, dims, candidates, wanted
        self.replications, self.seed, self.executor, self.workers = replications, seed, executor, workers
        self.max_runs, self.progress = max_runs, progress
        self.waiting_usd_per_gpu_hour = waiting_usd_per_gpu_hour
        # the means reported, and any a target reads that a verdict does not report (p99 delay)
        self.columns = list(dict.fromkeys([*MEANS, *(METRICS[t.metric][0] for t in wanted)]))
        self.frames: list[pd.DataFrame] = []
        self.uses: dict[str, list[int]] = {c: list(range(len(dims))) for c in candidates}
        self.stage: dict[str, str] = {}  # by configuration as a table cell (_key)
        self.done = 0
        self.planned = 0

    def values(self, p: Point) -> dict[str, Any]:
        return {d.path: d.value(k) for d, k in zip(self.dims, p, strict=True)}

    def run(self, points: list[Point], stage: str) -> None:
        """Simulate ``points`` (a product of per-dimension levels, or one point) as one sweep."""
        from costsim.runs.sweep import run_sweep

        axes = [sorted({p[i] for p in points}) for i in range(len(self.dims))]
        sets = [f"{d.path}={','.join(d.text(k) for k in levels)}" for d, levels in zip(self.dims, axes, strict=True)]
        try:
            spec = sweep_from_sets(self.path, sets, self.replications, self.seed)
        except ScenarioError as err:  # a value the scenario refuses: the --vary that gave it
            raise (ScenarioError("--vary", err.problems) if err.source == "--set" else err) from None
        product = list(itertools.product(*axes))  # sweep_from_sets' variant order
        start = self.done

        def step(done: int, total: int) -> None:
            self.done = start + done
            if self.progress is not None:
                self.progress(self.done, max(self.planned, self.done))

        results = run_sweep(spec, None, self.executor, self.workers, None, progress=step, label="--out")
        ids = {v.id: product[k] for k, v in enumerate(spec.variants)}
        # A resized option runs under the name the sweep gave it (own-256 at 320 GPUs: own-320); the
        # search follows each option of the scenario by its place, the table shows the name it ran as.
        origin = {(v.id, o.name): self.candidates[i] for v in spec.variants for i, o in enumerate(v.scenario.options)}
        runs = results.runs.assign(_option=[origin[key] for key in zip(results.runs["variant"], results.runs["option"],
                                                                            strict=True)])
        rows = fair_rows(runs.reset_index(drop=True), self.waiting_usd_per_gpu_hour)
        rows["_point"] = [_key(ids[v]) for v in rows["variant"]]
        self.frames.append(rows)
        for p in product:
            self.stage.setdefault(_key(p), stage)

    def table(self) -> pd.DataFrame:
        """Per (configuration, option): the varied values, means, keep-up and target flags."""
        rows = pd.concat(self.frames, ignore_index=True)
        groups = rows.groupby(["_point", "_option"], sort=False)
        t = groups[self.columns].mean()
        t["option"] = groups["option"].first()
        t["n"] = groups.size()
        t["keeps_up"] = groups["keeps_up"].mean() >= MAJORITY
        t["why"] = groups["why"].agg(lambda w: next((x for x in w if x), ""))
        t = t.reset_index()
        t["meets_targets"] = [all(g.met(value(r, g.metric)) for g in self.wanted) for _, r in t.iterrows()]
        t["meets"] = t["keeps_up"] & t["meets_targets"]
        t["stage"] = [self.stage[p] for p in t["_point"]]
        levels = [tuple(map(int, k.split(","))) for k in t["_point"]]
        for i, d in enumerate(self.dims):
            t.insert(i, d.path, [d.value(p[i]) for p in levels])
        return t[[*(d.path for d in self.dims), "option", "n", *self.columns, "keeps_up", "why", "meets_targets",
                  "meets", "stage", "_point", "_option"]]

    def runs_of(self, p: Point, option: str) -> pd.DataFrame:
        """The runs at ``p`` of the scenario's option ``option`` (by its name in the scenario)."""
        rows = pd.concat(self.frames, ignore_index=True)
        return rows[(rows["_point"] == _key(p)) & (rows["_option"] == option)]


def _point(row) -> Point:
    return tuple(map(int, row["_point"].split(",")))


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


def _refine(search: _Search, table: pd.DataFrame, grids: list[list[int]]) -> Stopped | None:
    """Bisection along the first monotone dimension from the cheapest qualifying grid point; where
    it stopped when the run budget ran out first."""
    ok = table[table["meets"]].sort_values("fair_total_usd", kind="stable")
    if ok.empty:
        return None
    best, option = _point(ok.iloc[0]), ok.iloc[0]["_option"]
    mine = table[table["_option"] == option]
    meets = {_point(r): bool(r["meets"]) for _, r in mine.iterrows()}
    for d, dim in enumerate(search.dims):
        direction = _monotone(meets, d)
        if direction is None:
            continue
        levels = grids[d]
        i = levels.index(best[d])
        j = i - 1 if direction == "up" else i + 1
        if not 0 <= j < len(levels):  # the best is at the range's end (``_edges`` says so)
            continue
        fail, good = levels[j], best[d]
        if meets.get(_with_level(best, d, fail), True):
            continue
        steps = math.ceil(math.log2(abs(good - fail))) if abs(good - fail) > 1 else 0
        search.planned = search.done + steps * search.replications
        while abs(good - fail) > 1:
            if search.done + search.replications > search.max_runs:
                return Stopped(path=dim.path, misses=dim.value(fail), meets=dim.value(good), max_runs=search.max_runs)
            mid = (good + fail) // 2
            search.run([_with_level(best, d, mid)], "bisection")
            t = search.table()
            hit = t[(t["_point"] == _key(_with_level(best, d, mid))) & (t["_option"] == option)]
            if bool(hit["meets"].iloc[0]):
                good = mid
            else:
                fail = mid
        return None
    return None


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
             progress: Callable[[int, int], None] | None = None) -> Optimum:
    """The cheapest configuration of ``scenario_path`` meeting every target (see the module).

    ``targets``: ``"p95_delay_h<=4"`` strings or Targets (None: the scenario's ``decision.targets``,
    else the defaults; ``[]``: none); ``vary``: ``"PATH=LOW..HIGH"`` or
    ``"PATH=V1,V2"`` strings; ``max_runs``: simulations at most (configurations × replications);
    ``progress(done, total)``: after each simulation (``total`` grows once the bisection starts).
    Raises ScenarioError naming ``--vary``, ``--target``, ``--replications``, ``--max-runs`` or the
    scenario file before anything runs."""
    path = arguments.path(scenario_path, "scenario_path", "optimize")
    replications = _whole(replications, "--replications", 1, MAX_REPLICATIONS)
    max_runs = _whole(max_runs, "--max-runs", 1)
    progress = arguments.callback(progress, "progress", "optimize")
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
    search = _Search(path, dims, candidates, wanted, replications, seed, executor, workers, max_runs, progress,
                     base.decision.waiting_usd_per_gpu_hour)
    search.uses = _uses(base, dims, candidates)
    gaps = [max((b - a for a, b in itertools.pairwise(g)), default=1) for g in grids]
    search.planned = math.prod(map(len, grids)) * replications + \
        max(math.ceil(math.log2(g)) if g > 1 else 0 for g in gaps) * replications
    search.run(list(itertools.product(*grids)), "grid")
    stopped = _refine(search, search.table(), grids)
    if progress is not None:
        progress(search.done, search.done)
    return _answer(search, search.table(), stopped)


def _uses(base, dims: list[Dimension], candidates: list[str]) -> dict[str, list[int]]:
    """Per candidate option, the dimensions that can change its runs: its own fields, those of the
    options it is made of (a hybrid's base and burst, a rollout pool), and fields outside
    ``options`` (economics, workload)."""
    parts = {o.name: {o.name, getattr(o, "base", o.name), getattr(o, "burst", o.name), o.rollout_pool or o.name}
             for o in base.options}
    return {c: [i for i, d in enumerate(dims) if d.option is None or d.option in parts[c]] for c in candidates}


def _answer(search: _Search, table: pd.DataFrame, stopped: Stopped | None) -> Optimum:
    wanted = search.wanted
    ok = table[table["meets"]].sort_values("fair_total_usd", kind="stable")
    meets = not ok.empty
    if meets:
        row = ok.iloc[0]
    else:  # the closest: fewest conditions missed, then the smallest relative shortfall
        far = [(s.conditions, s.far, r["fair_total_usd"])
               for s, (_, r) in zip((shortfall(r, wanted) for _, r in table.iterrows()), table.iterrows(), strict=True)]
        row = table.iloc[min(range(len(far)), key=far.__getitem__)]
    point, option, shown_as = _point(row), row["_option"], row["option"]
    runs = search.runs_of(point, option)
    intervals = {m: t_interval(runs[m].to_numpy(dtype=float))[1:] for m in search.columns}
    evaluated = table.drop(columns=["_point", "_option"])
    # An option appears once per setting of the fields it uses: a field of another option (a
    # hybrid's wait, for the owned option) gives the same runs again, not another configuration.
    own = [tuple(p.split(",")[i] for i in search.uses[o])
           for p, o in zip(table["_point"], table["_option"], strict=True)]
    distinct = ~pd.Series(list(zip(table["_option"], own, strict=True))).duplicated().to_numpy()
    front = pareto_frontier(evaluated[evaluated["keeps_up"].to_numpy() & distinct].reset_index(drop=True))
    return Optimum(values=search.values(point), option=shown_as, metrics={m: float(row[m]) for m in search.columns},
                   intervals=intervals, evaluated=evaluated, frontier=front, meets=meets, targets=wanted,
                   runs=search.done, used=tuple(search.dims[i].path for i in search.uses[option]),
                   searched=tuple(search.candidates), shortfall=shortfall(row, wanted), stopped=stopped,
                   range_ends=_range_ends(search.dims, point, search.uses[option]), unsure=unsure(wanted, intervals))


__all__ = ["GRID_POINTS", "Optimum", "RangeEnd", "Stopped", "optimize", "unsure"]
