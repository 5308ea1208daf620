"""The package's front door: load and check a scenario, simulate it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from costsim import engine, results, workload
from costsim.workplan import plan_work
from costsim.catalog import CloudPlan, Plan, default_catalog, economics_values, resolve
from costsim.engine.pool import held_gpus
from costsim.scenario import Problem, Scenario, ScenarioError, read_scenario, scenario_from_yaml
from costsim.scenario.errors import Loc


def _held(plan: Plan, gpus: np.ndarray) -> np.ndarray:
    """GPUs a job of ``gpus`` needs from an option: whole instances, or whole nodes beyond one."""
    if isinstance(plan, CloudPlan):
        return -(-gpus // plan.gpus_per_instance) * plan.gpus_per_instance
    return np.array([held_gpus(int(g), plan.gpus_per_node) for g in gpus], dtype=np.int64)


def _fit_problems(scenario: Scenario, plans: list[Plan], jobs: workload.JobTable) -> list[Problem]:
    """A job that can never fit an option is an error, not a silent infinite wait: each RL class
    is checked by its size, trace jobs one by one."""
    problems = []
    trace = jobs.class_index < 0
    for i, plan in enumerate(plans):
        if isinstance(plan, CloudPlan) and plan.max_gpus is None:
            continue
        limit = plan.max_gpus if isinstance(plan, CloudPlan) else plan.gpus
        field = "max_gpus" if isinstance(plan, CloudPlan) else "gpus"
        has = f"a quota of {limit} GPUs" if isinstance(plan, CloudPlan) else f"{limit} GPUs"
        for cls in scenario.workload.classes:
            need = int(_held(plan, np.array([cls.gpus]))[0])
            if need > limit:
                problems.append(Problem(("options", i, field), f"class {cls.name!r} needs {need} GPUs per job but "
                                        f"option {plan.name!r} has {has}: its jobs could never run"))
        if trace.any():
            need = _held(plan, jobs.gpus[trace])
            worst = int(np.argmax(need))
            if need[worst] > limit:
                count = int((need > limit).sum())
                others = f" ({count - 1} more such jobs)" if count > 1 else ""
                problems.append(Problem(("options", i, field), f"job {jobs.job_id[trace][worst]!r} needs {int(need[worst])} "
                                        f"GPUs but option {plan.name!r} has {has}: it could never run{others}"))
    return problems


def check(scenario: Scenario, source: str, lines: dict[Loc, tuple[int, int]] | None = None) -> Scenario:
    """Everything beyond the schema: catalog resolution, the trace file, jobs that can never fit."""
    lines = lines or {}
    try:
        plans = resolve(scenario, source=source)
        if scenario.workload.trace is not None:
            trace_path = scenario.base_dir / scenario.workload.trace
            if not trace_path.is_file():
                raise ScenarioError(source, [Problem(("workload", "trace"), f"trace file not found: {trace_path}")])
        jobs = workload.generate(scenario)
        problems = _fit_problems(scenario, plans, jobs)
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
    records, work = [], []
    for k, plan in enumerate(plans):
        if on_option is not None:
            on_option(plan.name, k, len(plans))
        work.append(plan_work(scenario, jobs, plan))
        records.append(engine.run_option(plan, jobs.submit_h, jobs.gpus, jobs.priority, work[-1].run_h,
                                         scenario.horizon_h))
    if on_option is not None:
        on_option("tables", len(plans), len(plans))
    return results.build(scenario, seed, plans, econ, records, work)
