"""The package's front door: load and check a scenario, simulate it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from costsim import engine, results, workload
from costsim.rng import stream
from costsim.serving import RangeMax, hourly_demand
from costsim.workplan import plan_work
from costsim.catalog import CloudPlan, HybridPlan, OwnedPlan, Plan, default_catalog, economics_values, resolve
from costsim.engine.pool import held_gpus, nodes_needed
from costsim.scenario import Problem, Scenario, ScenarioError, TraceTable, read_scenario, read_trace, scenario_from_yaml
from costsim.units import HOURS_PER_YEAR
from costsim.scenario.errors import Loc


def _limit(plan: OwnedPlan | CloudPlan) -> tuple[int, str, str] | None:
    """The most GPUs a pool can ever give one job, the field that sets it, and how to say it;
    None for unlimited on-demand or spot capacity."""
    if isinstance(plan, OwnedPlan):
        return plan.gpus, "gpus", f"{plan.gpus} GPUs"
    if plan.reserved:
        return plan.reserved_gpus, "reserved_gpus", f"{plan.reserved_gpus} reserved GPUs"
    if plan.max_gpus is not None:
        return plan.max_gpus, "max_gpus", f"a quota of {plan.max_gpus} GPUs"
    return None


def _held(plan: OwnedPlan | CloudPlan, gpus: np.ndarray) -> np.ndarray:
    """GPUs jobs of ``gpus`` need from a pool: whole instances, or whole nodes beyond one."""
    if isinstance(plan, CloudPlan):
        return nodes_needed(gpus, plan.gpus_per_instance) * plan.gpus_per_instance
    return np.array([held_gpus(int(g), plan.gpus_per_node) for g in gpus], dtype=np.int64)


def _never_fit(plan: Plan, gpus: np.ndarray) -> tuple[np.ndarray, str, str] | None:
    """Which of these job sizes can never run on the option (a hybrid: on neither part)."""
    pools = [plan.base, plan.burst] if isinstance(plan, HybridPlan) else [plan]
    limits = [_limit(p) for p in pools]
    if any(lim is None for lim in limits):
        return None
    bad = np.ones(len(gpus), dtype=bool)
    for pool, (limit, _, _) in zip(pools, limits, strict=True):  # type: ignore[misc]
        bad &= _held(pool, gpus) > limit
    if isinstance(plan, HybridPlan):
        return bad, "", f"neither base {plan.base.name!r} ({limits[0][2]}) nor burst {plan.burst.name!r} ({limits[1][2]})"  # type: ignore[index]
    return bad, limits[0][1], f"option {plan.name!r} has {limits[0][2]}"  # type: ignore[index]


def _fit_problems(scenario: Scenario, plans: list[Plan], trace: TraceTable | None) -> list[Problem]:
    """A job that can never fit an option is an error, not a silent infinite wait: each RL class
    is checked by its size, trace jobs (those submitted within the horizon) one by one."""
    problems = []
    if trace is not None:
        within = trace.submit_h < scenario.horizon_h
        trace_gpus, trace_ids = trace.gpus[within], trace.job_id[within]
    for i, plan in enumerate(plans):
        for cls in scenario.workload.classes:
            verdict = _never_fit(plan, np.array([cls.gpus]))
            if verdict is not None and verdict[0][0]:
                _, field, where = verdict
                problems.append(Problem(("options", i, field) if field else ("options", i),
                                        f"class {cls.name!r} needs {cls.gpus} GPUs per job but {where}: "
                                        "its jobs could never run"))
        verdict = _never_fit(plan, trace_gpus) if trace is not None and len(trace_gpus) else None
        if verdict is not None and verdict[0].any():
            bad, field, where = verdict
            first = int(np.flatnonzero(bad)[0])
            others = f" ({int(bad.sum()) - 1} more such jobs)" if bad.sum() > 1 else ""
            problems.append(Problem(("options", i, field) if field else ("options", i),
                                    f"job {trace_ids[first]!r} needs {int(trace_gpus[first])} GPUs but "
                                    f"{where}: it could never run{others}"))
    return problems


def check(scenario: Scenario, source: str, lines: dict[Loc, tuple[int, int]] | None = None) -> Scenario:
    """Everything beyond the schema: catalog resolution, the trace file, jobs that can never fit."""
    lines = lines or {}
    try:
        plans = resolve(scenario, source=source)
        trace = None
        if scenario.workload.trace is not None:
            trace_path = scenario.base_dir / scenario.workload.trace
            if not trace_path.is_file():
                raise ScenarioError(source, [Problem(("workload", "trace"), f"trace file not found: {trace_path}")])
            trace = read_trace(trace_path)
        problems = _fit_problems(scenario, plans, trace)
        if problems:
            raise ScenarioError(source, problems)
    except ScenarioError as err:
        raise err.with_lines(lines) from None
    return scenario


def load_scenario(path: Path | str) -> Scenario:
    """Read, validate and check a scenario file; raises ScenarioError (file, field, line)."""
    scenario, lines = read_scenario(path)
    return check(scenario, str(path), lines)


def load_scenario_text(text: str, source: str, base_dir: Path | str) -> Scenario:
    """As ``load_scenario`` for YAML text (dashboard uploads); relative paths from ``base_dir``."""
    scenario, lines = scenario_from_yaml(text, source, base_dir)
    return check(scenario, source, lines)


def simulate(
    scenario: Scenario | Path | str,
    seed: int | None = None,
    on_option: Callable[[str, int, int], None] | None = None,
) -> results.Results:
    """Run every option of the scenario on the same jobs and return the result tables.

    ``seed`` overrides the scenario's root seed. ``on_option(name, done, total)`` is called before
    each option and once more (name "tables") before the tables are built: for progress bars.
    """
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    seed = scenario.seed if seed is None else seed
    plans = resolve(scenario, default_catalog())
    econ = economics_values(scenario)
    jobs = workload.generate(scenario, seed)
    demand = serving_demand(scenario)
    table = RangeMax(demand) if demand is not None else None
    records, work = [], []
    for k, plan in enumerate(plans):
        if on_option is not None:
            on_option(plan.name, k, len(plans))
        rngs = {name: stream(seed, name, k) for name in ("failures", "preemptions", "provisioning")}
        if isinstance(plan, HybridPlan):  # a job's run time depends on the part it runs on
            base, burst = plan_work(scenario, jobs, plan.base), plan_work(scenario, jobs, plan.burst)
            rec = engine.run_option(plan, base, scenario.horizon_h, burst, serving=table, rngs=rngs)
            work.append(base.merged(rec.part == engine.BURST, burst))
        else:
            work.append(plan_work(scenario, jobs, plan))
            rec = engine.run_option(plan, work[-1], scenario.horizon_h, serving=table, rngs=rngs)
        records.append(rec)
    if on_option is not None:
        on_option("tables", len(plans), len(plans))
    return results.build(scenario, seed, plans, econ, records, work, demand)


def serving_demand(scenario: Scenario) -> np.ndarray | None:
    """Serving GPUs per hour over the horizon and, for jobs that run past it, a year more."""
    if scenario.serving is None:
        return None
    g = scenario.serving.gpus
    hours = int(np.ceil(scenario.horizon_h + HOURS_PER_YEAR))
    return hourly_demand(g.base, g.diurnal_amplitude, g.growth_per_year, hours)
