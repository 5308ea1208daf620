"""The cheapest capacity plan that meets the service level (``costsim plan``): a seeded search
over a space the user writes (``--vary``, as ``costsim optimize`` reads it: sizes, reservations,
burst waits, any scenario field), for the configuration and option of lowest mean fair total cost
(``fair.py``, USD) that keeps up and meets every target on its mean over the replications.

Where ``optimize`` bisects one monotone field, a plan has several fields that trade against each
other (a smaller owned base with a longer burst wait, a reservation beside it), so the search is a
model-based one:

1. **Trials** (``trials``, in batches of ``batch``): Optuna's TPE sampler (Watanabe 2023, "Tree-
   structured Parzen Estimator: Understanding Its Algorithm Components"), seeded from the root
   seed, proposes each field's level; a configuration's value is the lowest fair total among the
   options that meet the targets there, and one that none meets is infeasible by how far the
   closest misses (``targets.shortfall``: conditions missed plus relative shortfall), which the
   sampler's constraints keep it away from. Each batch's configurations run side by side on the
   executor with ``replications`` on common random numbers (replication r on the same seed in
   every configuration, so comparisons are paired). A configuration proposed again is not run again;
   one the scenario refuses (a tranche ordered before the one it follows, a size a class cannot
   fit) runs nothing and is logged as refused, with the scenario's message.
2. **Refinement**: a pattern search from the best configuration, over the fields its option uses:
   each field a step up and down (first an eighth of its levels), moving to any cheaper one that
   meets, halving the steps when none does, until steps of one level find nothing cheaper.
3. **Growth**: when the scenario's workload grows (``growth_per_year`` on a class), the answer and
   the runner-ups run again, on the same seeds, with every class's growth at ``GROWTH_FACTORS``
   (half and one and a half times the scenario's): whether each still meets the targets, and at
   what fair total, says how the answer moves if demand grows slower or faster than planned.
4. The answer is ``optimize``'s (``optimize.answer``: the cheapest qualifying configuration, its
   means and 95 % t-intervals, everything evaluated, the cost-vs-delay frontier, what limits it),
   with the runner-up plans (the next cheapest configurations that meet and differ from the
   answer and each other by more than a rounding: ``costsim.decisions.runner_ups``) and the
   trials in the order run.

The batch size, not the number of workers, fixes what the sampler sees, so the answer and every
table are the same from every executor; the run budget (``max_runs``) bounds the search's
simulations (a batch it cannot cover runs in part and the search stops); the growth check's runs
(at most ``len(GROWTH_FACTORS)`` × (1 + ``runner_ups.RUNNER_UPS``) configurations ×
replications) come on top.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from costsim.decisions.optimize import Optimum, answer, option_uses, whole_flag
from costsim.decisions.runner_ups import runner_ups
from costsim.decisions.search import Point, Search, key, point
from costsim.decisions.space import Dimension, parse_space
from costsim.decisions.targets import shortfall
from costsim.decisions.verdict import held_to
from costsim.runs import api, arguments
from costsim.runs.executors import executor_settings, open_executor
from costsim.runs.sweepfile import MAX_REPLICATIONS
from costsim.scenario import Problem, Scenario, ScenarioError

FIRST_STEP = 8  # the refinement's first step: an eighth of a field's levels
GROWTH_FACTORS = (0.5, 1.5)  # the scenario's workload growth scaled by these, for the answer and runner-ups


@dataclass(frozen=True, kw_only=True)
class CapacityPlan:
    """What ``capacity_plan`` returns: ``optimum`` (the answer, as ``optimize`` gives it: values,
    option, means, intervals, everything evaluated, frontier, shortfall), ``runner_ups`` (up to
    ``runner_ups.RUNNER_UPS`` rows of ``optimum.evaluated``: the next cheapest configurations that meet, one per
    option and plan, ``runner_ups``; ``base_option``: the scenario's option it is, as
``uses`` names them), ``uses`` (per option of the scenario, the varied paths that can change its
runs), ``growth`` (one row per growth factor in ``GROWTH_FACTORS`` and configuration — the answer,
then the runner-ups —: ``growth_factor``, ``growth_per_year`` (the first growing class's, scaled),
``plan`` (1 the answer, 2… the runner-ups), the varied values, ``option``, ``fair_total_usd``,
``meets``; empty when no class grows), ``trials`` (one row per configuration in the order
    the search ran it: ``trial``, ``stage`` — search or refinement —, the varied values, the
    cheapest option meeting there or the closest, ``fair_total_usd`` and ``meets``), ``seed`` (the
    sampler's) and ``batch``."""

    optimum: Optimum
    runner_ups: pd.DataFrame
    trials: pd.DataFrame
    uses: dict[str, tuple[str, ...]]
    growth: pd.DataFrame
    seed: int
    batch: int


def _sampler_seed(search: Search, base) -> int:
    """The sampler's seed: from the root seed, so a plan repeats for a seed."""
    root = base.seed if search.seed is None else search.seed
    return int(root) % 2**32


@dataclass(frozen=True)
class _Score:
    """A configuration's score: ``value`` (the fair total, USD: the cheapest option meeting there,
    else the closest's), ``violation`` (0 when an option meets, else how far the closest misses,
    ``REFUSED`` when the scenario refuses the configuration), the option as it ran (``shown``) and
    as the scenario names it (``option``), whether it meets, and a refusal's message."""

    value: float
    violation: float
    shown: str
    option: str
    meets: bool
    refused: str = ""


REFUSED = 1e9  # the violation of a configuration the scenario refuses: worse than any that runs
REFUSED_VALUE = 1e30  # what the sampler is told a refused configuration costs (its violation rules it out first)


def _score(table: pd.DataFrame, p: Point, wanted) -> _Score:
    """The cheapest option meeting at ``p``, else the closest one: the fewest conditions missed,
    then the smallest relative shortfall (``targets.shortfall``), ranked as ``optimize.answer``
    ranks them; its violation is the conditions missed plus that shortfall (capped), so the sampler
    sees both."""
    rows = table[table["_point"] == key(p)]
    ok = rows[rows["meets"]]
    if not ok.empty:
        best = ok.sort_values("fair_total_usd", kind="stable").iloc[0]
        return _Score(float(best["fair_total_usd"]), 0.0, str(best["option"]), str(best["_option"]), True)
    far = [(s.conditions, min(s.far, 1e6), r["fair_total_usd"], i)
           for i, (s, (_, r)) in enumerate(zip((shortfall(r, wanted) for _, r in rows.iterrows()), rows.iterrows(),
                                               strict=True))]
    conditions, how_far, total, i = min(far)
    return _Score(float(total), float(conditions + how_far), str(rows.iloc[i]["option"]),
                  str(rows.iloc[i]["_option"]), False)


class _Runner:
    """Runs configurations on the search's executor, each once, and keeps the trial log."""

    def __init__(self, search: Search):
        self.search = search  # which reports progress as runs come back
        self.scores: dict[Point, _Score] = {}
        self.log: list[dict[str, Any]] = []

    def affordable(self, n: int) -> int:
        """How many of ``n`` new configurations the run budget still allows."""
        left = self.search.max_runs - self.search.done
        return max(0, min(n, left // self.search.replications))

    def run(self, points: list[Point], stage: str, guesses: Sequence[Point] = ()) -> list[_Score]:
        """Each point's score, running those not run before side by side (the caller checked the
        budget); a configuration the scenario refuses (tranches out of order, a size a class cannot
        fit) runs nothing and scores as refused, with the scenario's message in the log.
        ``guesses``: points the caller may want next, run only on lanes these runs leave idle (the
        tail of a round whose runs do not divide among the workers) and recorded only once wanted
        (``Search.guess``), so the answer is the same whichever of them ran."""
        fresh = list(dict.fromkeys(p for p in points if p not in self.scores))
        self.search.planned = max(self.search.planned, self.search.done + len(fresh) * self.search.replications)
        ran = []
        for p in fresh:
            try:
                self.search.want([p])
            except ScenarioError as err:
                self.scores[p] = _Score(REFUSED_VALUE, REFUSED, "", "", False, refused="; ".join(
                    x.message for x in err.problems)[:300])
                continue
            ran.append(p)
        if guesses:
            # Guesses only fill lanes this round leaves idle, at most one a lane: more would never
            # run before the next round's; the last round's unchosen ones would queue behind, for good.
            fresh_guesses = [g for g in dict.fromkeys(guesses) if g not in self.scores][:self.search.slots()]
            self.search.forget(keep=fresh_guesses)
            self.search.guess(fresh_guesses)
        for p in ran:
            self.search.settle([p], stage)
        table = self.search.table() if self.search.frames else None
        for p in fresh:
            if p in ran:
                assert table is not None
                self.scores[p] = _score(table, p, self.search.wanted)
            sc = self.scores[p]
            self.log.append({"trial": len(self.log) + 1, "stage": stage, **self.search.values(p), "option": sc.shown,
                             "fair_total_usd": sc.value if not sc.refused else math.nan, "meets": sc.meets,
                             "refused": sc.refused})
        return [self.scores[p] for p in points]

    def best(self) -> Point | None:
        """The cheapest configuration that meets, else the closest to meeting (never a refused one)."""
        ran = [p for p in self.scores if not self.scores[p].refused]
        if not ran:
            return None
        return min(ran, key=lambda p: (not self.scores[p].meets, self.scores[p].violation, self.scores[p].value))


def _trials(runner: _Runner, dims: list[Dimension], trials: int, batch: int, seed: int) -> None:
    """The sampler's trials, ``batch`` at a time, told in the order asked; when the run budget
    cannot cover a whole batch, the part it covers runs and the search stops."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # A trial's constraint (set_constraint: feasible at 0 or less) keeps the sampler from configurations that miss.
    sampler = optuna.samplers.TPESampler(seed=seed, multivariate=True, n_startup_trials=min(trials, 2 * batch))
    study = optuna.create_study(direction="minimize", sampler=sampler)
    space: dict[str, optuna.distributions.BaseDistribution] = {
        f"d{i}": optuna.distributions.IntDistribution(0, d.count - 1) for i, d in enumerate(dims)}
    asked = 0
    while asked < trials:
        wanted = min(batch, trials - asked)
        batch_trials = [study.ask(space) for _ in range(wanted)]
        points = [tuple(int(t.params[f"d{i}"]) for i in range(len(dims))) for t in batch_trials]
        fresh = list(dict.fromkeys(p for p in points if p not in runner.scores))
        room = runner.affordable(len(fresh))
        covered = set(fresh[:room]) | set(runner.scores)
        runnable = [(t, p) for t, p in zip(batch_trials, points, strict=True) if p in covered]
        scores = runner.run([p for _, p in runnable], "search") if runnable else []
        for (t, _), sc in zip(runnable, scores, strict=True):
            t.set_constraint("shortfall", sc.violation)
            study.tell(t, sc.value)
        for t, p in zip(batch_trials, points, strict=True):
            if p not in covered:
                study.tell(t, state=optuna.trial.TrialState.FAIL)
        if room < len(fresh):
            return
        asked += wanted


def around(p: Point, steps: dict[int, int], dims: list[Dimension]) -> list[Point]:
    """The pattern search's neighbours of ``p``: each field ``i`` of ``steps`` a step down and up,
    within its levels."""
    return [p[:i] + (p[i] + s,) + p[i + 1:] for i, step in steps.items() for s in (-step, step)
            if 0 <= p[i] + s < dims[i].count]


def next_round(best: Point, steps: dict[int, int], near: list[Point], dims: list[Dimension]) -> list[Point]:
    """The points the refinement's next round may try, whichever way the round of ``near`` goes: the
    same steps around each of them (the best may move there), then the halved steps around ``best``
    (it may stay)."""
    halved = {i: s // 2 for i, s in steps.items() if s > 1}
    return [q for p in near for q in around(p, steps, dims)] + around(best, halved, dims)


def _refine(runner: _Runner, dims: list[Dimension], uses: dict[str, list[int]]) -> None:
    """Pattern search from the best configuration over the fields its option uses. Each round
    guesses the next one's points (``next_round``) for the lanes its own runs leave idle."""
    best = runner.best()
    if best is None:
        return
    fields = uses[runner.scores[best].option]
    steps = {i: max(1, dims[i].count // FIRST_STEP) for i in fields if dims[i].count > 1}
    while steps:
        near = [p for p in around(best, steps, dims) if p not in runner.scores]
        if runner.affordable(len(near)) < len(near):
            return
        runner.run(near, "refinement", guesses=next_round(best, steps, near, dims))
        moved = runner.best()
        if moved is not None and moved != best and runner.scores[moved].meets:
            best = moved
            continue
        steps = {i: s // 2 for i, s in steps.items() if s > 1}


def scaled_growth(base: Scenario, factor: float) -> Scenario | None:
    """``base`` with every class's ``growth_per_year`` times ``factor``; None when none grows."""
    data = base.model_dump(mode="json")
    classes = [*(data["workload"].get("classes") or []), *(data["workload"].get("job_classes") or [])]
    growing = [c for c in classes if c.get("growth_per_year")]
    if not growing:
        return None
    for c in growing:
        c["growth_per_year"] = c["growth_per_year"] * factor
    return api.scenario_from_data(data, base.name, base.base_dir)


def _growth(search: Search, base: Scenario, plans: list[tuple[Point, str]]) -> pd.DataFrame:
    """The plans (configuration, the scenario's option) again at each scaled growth, paired."""
    rows = []
    workload = base.model_dump(mode="json")["workload"]
    first = next((c["growth_per_year"] for c in [*(workload.get("classes") or []), *(workload.get("job_classes") or [])]
                  if c.get("growth_per_year")), None)
    for factor in GROWTH_FACTORS:
        try:
            edited = scaled_growth(base, factor)
        except ScenarioError:  # scaled past what the schema takes (more than +1,000 %/yr): not asked
            continue
        if edited is None or first is None:
            return pd.DataFrame()
        other = Search(path=search.path, dims=search.dims, candidates=search.candidates, wanted=search.wanted,
                       replications=search.replications, seed=search.seed, max_runs=10**9, lanes=search.lanes,
                       progress=None, waiting_usd_per_gpu_hour=search.waiting_usd_per_gpu_hour)
        other.base, other.uses = edited, search.uses
        points = list(dict.fromkeys(p for p, _ in plans))
        for p in points:
            other.want([p])
        for p in points:
            other.settle([p], f"growth x{factor:g}")
        table = other.table()
        for rank, (p, option) in enumerate(plans, start=1):
            r = table[(table["_point"] == key(p)) & (table["_option"] == option)].iloc[0]
            rows.append({"growth_factor": factor, "growth_per_year": first * factor, "plan": rank,
                         **search.values(p), "option": r["option"], "fair_total_usd": float(r["fair_total_usd"]),
                         "meets": bool(r["meets"])})
    return pd.DataFrame(rows)


def capacity_plan(scenario_path: str | Path, targets, vary: list[str], *, replications: int = 3,
                  seed: int | None = None, trials: int = 24, batch: int = 4, executor: str = "processes",
                  workers: int | None = None, max_runs: int = 400, address: str | None = None,
                  progress: Callable[[int, int], None] | None = None) -> CapacityPlan:
    """The cheapest plan of ``scenario_path`` meeting every target (see the module).

    ``targets``: ``"p95_delay_h<=4"`` strings or Targets (None: the scenario's ``decision.targets``,
    else the defaults); ``vary``: ``"PATH=LOW..HIGH"`` or ``"PATH=V1,V2"`` strings (``optimize``'s);
    ``trials``: configurations the sampler proposes (the refinement adds its own); ``batch``:
    configurations proposed and run at a time; ``max_runs``: simulations at most; ``executor``,
    ``workers``, ``address``: where the runs go, as ``optimize``; ``progress(done, total)`` as
    simulations come back. Raises ScenarioError naming the flag or the scenario file before
    anything runs."""
    path = arguments.path(scenario_path, "scenario_path", "plan")
    replications = whole_flag(replications, "--replications", 1, MAX_REPLICATIONS)
    trials = whole_flag(trials, "--trials", 1, 10_000)
    batch = whole_flag(batch, "--batch", 1, 64)
    max_runs = whole_flag(max_runs, "--max-runs", 1)
    progress = arguments.callback(progress, "progress", "plan")
    executor, workers, address = executor_settings(executor, workers, address, "plan")
    _needs_optuna()
    base = api.load_scenario(path)
    wanted = held_to(targets, base, "--target")
    dims = parse_space(vary, base.model_dump(mode="json"))
    if max_runs < replications:
        raise ScenarioError("--max-runs", [Problem((), f"{max_runs} runs cannot cover one configuration with "
                                                       f"{replications} replication(s)")])
    candidates = [o.name for o in base.options]
    search = Search(path=path, dims=dims, candidates=candidates, wanted=wanted, replications=replications,
                    seed=seed, max_runs=max_runs, lanes=None, progress=progress,
                    waiting_usd_per_gpu_hour=base.decision.waiting_usd_per_gpu_hour)
    search.uses = option_uses(base, dims, candidates)
    search.planned = min(max_runs, trials * replications)
    runner = _Runner(search)
    sampler_seed = _sampler_seed(search, base)
    with open_executor(executor, workers, address) as lanes:
        search.lanes = lanes
        try:
            _trials(runner, dims, trials, batch, sampler_seed)
            _refine(runner, dims, search.uses)
        finally:
            search.forget()
        if runner.best() is None:  # every configuration tried was refused: say why, as the scenario did
            first = next(iter(runner.scores.values()))
            raise ScenarioError("--vary", [Problem((), f"every configuration tried is refused by the scenario, "
                                                       f"e.g.: {first.refused}")])
        table = search.table()
        optimum = answer(search, table, None)
        ups = runner_ups(table, search.uses, [d.path for d in dims])
        plans = [(point(k), o) for k, o in zip(ups["_point"], ups["base_option"], strict=True)]
        best = table[table["meets"]].sort_values("fair_total_usd", kind="stable").head(1)
        plans = [(point(k), o) for k, o in zip(best["_point"], best["_option"], strict=True)] + plans
        growth = _growth(search, base, plans) if plans else pd.DataFrame()
    if progress is not None:
        progress(search.done, search.done)
    uses = {o: tuple(dims[i].path for i in found) for o, found in search.uses.items()}
    return CapacityPlan(optimum=optimum, runner_ups=ups.drop(columns=["_point"]), trials=pd.DataFrame(runner.log),
                        uses=uses, growth=growth, seed=sampler_seed, batch=batch)


def _needs_optuna() -> None:
    try:
        import optuna  # noqa: F401
    except ImportError:
        raise ScenarioError("costsim plan", [Problem((), "needs Optuna, the search's sampler: pip install "
                                                         "'costsim[plan]' (make installs it)")]) from None


__all__ = ["FIRST_STEP", "around", "next_round", "GROWTH_FACTORS", "CapacityPlan", "capacity_plan", "scaled_growth"]
