"""The package's front door: load and check a scenario, simulate it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from costsim.engine import run as engine
from costsim.results import tables as results
from costsim.workload import jobs as workload
from costsim.runs import arguments
from costsim.runs import budget
from costsim.runs.memo import RunMemo, cached, file_identity
from costsim.models.scaling import scaling_problems
from costsim.models import rl
from costsim.workload.rng import stream
from costsim.models.serving import RangeMax, can_ever_start, hourly_demand
from costsim.workload.plan import checkpoint_writes, hardware, plan_work
from costsim.workload.plan import shape as workplan_shape
from costsim.plan.options import CloudPlan, HybridPlan, OwnedPlan, Plan, pools
from costsim.catalog.load import default_catalog
from costsim.plan.resolve import economics_values, resolve
from costsim.scenario import Problem, Scenario, ScenarioError, TraceTable, read_scenario, read_trace, scenario_from_yaml
from costsim.scenario import dump_scenario as schema_dump
from costsim.scenario import scenario_from_data as schema_from_data
from costsim.units import HOURS_PER_DAY, HOURS_PER_YEAR
from costsim.scenario.errors import Loc
from costsim.scenario.filekind import input_file_problem


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
    """GPUs jobs of ``gpus`` need from a pool (``held_gpus``: a reserved pool as the engine runs it)."""
    return plan.held_gpus(gpus)


def _pool_verdict(pool: OwnedPlan | CloudPlan, jobs: _Jobs, demand: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, str] | None:
    """Which jobs can never run on one pool: too big for it ever, or (owned and reserved pools,
    which serve first) never left room by serving for their hold time between their submission
    (or the pool's delivery) on. Returns (too big, crowded out by serving, what the
    pool has); None for unlimited rented capacity."""
    limit = _limit(pool)
    if limit is None:
        return None
    offloads = jobs.disaggregated and pool.is_pool and pool.rollout is not None
    held = _held(pool, jobs.home_gpus if offloads else jobs.gpus)  # an offloaded class trains here, samples there
    too_big = held > limit[0]
    crowded = np.zeros(len(held), dtype=bool)
    if demand is not None and pool.is_pool:
        delivered = pool.lead_time_h if isinstance(pool, OwnedPlan) else 0.0
        earliest = np.maximum(jobs.earliest_h, delivered)
        # Any start the demand table covers (the horizon and a year more): a job that only misses
        # the horizon is a queueing outcome, not an error; one serving never leaves room for is.
        crowded = ~too_big & ~can_ever_start(demand, limit[0] - held, earliest, jobs.hold_h, float(len(demand)))
    return too_big, crowded, limit[2]


@dataclass(frozen=True)
class _Jobs:
    """Jobs to check against every option: sizes, earliest submission and hours they hold GPUs."""

    gpus: np.ndarray
    earliest_h: np.ndarray
    hold_h: np.ndarray
    disaggregated: bool = False  # an RL class that offloads its rollouts where a pool has a rollout_pool:
    home_gpus: np.ndarray | None = None  # there it asks only its training GPUs


def _never_fit(plan: Plan, jobs: _Jobs, demand: np.ndarray | None):
    """Which jobs can never run on the option (a hybrid: on neither part), the field to name and
    why; None when every job can."""
    verdicts = [_pool_verdict(p, jobs, demand) for p in pools(plan)]
    if any(v is None for v in verdicts):
        return None
    bad = np.ones(len(jobs.gpus), dtype=bool)
    for too_big, crowded, _ in verdicts:  # type: ignore[misc]
        bad &= too_big | crowded
    if not bad.any():
        return None
    first = int(np.flatnonzero(bad)[0])

    def says(pool: OwnedPlan | CloudPlan, verdict) -> str:
        too_big, crowded, has = verdict
        if crowded[first]:
            return (f"{has}, and serving never leaves that many free for the "
                    f"{jobs.hold_h[first]:,.1f} h it holds them at any time after its submission")
        return has

    if isinstance(plan, HybridPlan):
        return bad, "", (f"neither base {plan.base.name!r} ({says(plan.base, verdicts[0])}) nor burst "
                         f"{plan.burst.name!r} ({says(plan.burst, verdicts[1])})")
    return bad, _limit(plan)[1], f"option {plan.name!r} has {says(plan, verdicts[0])}"  # type: ignore[index]


def _fit_problems(scenario: Scenario, plans: list[Plan], trace: TraceTable | None) -> list[Problem]:
    """A job that can never fit an option is an error, not a silent infinite wait: each RL class
    is checked by its size and each job class by its largest GPU count (and, beside serving, for an
    hour's room from its first arrival on: their jobs' run times are not drawn here), trace jobs
    submitted within the horizon one by one, with their hold times (work plus checkpoint writes).
    A job class's problem is at its ``workload.job_classes.K.gpus``; the others at the option."""
    problems = []
    demand = serving_demand(scenario)
    H = scenario.horizon_h
    groups = [(f"class {cls.name!r} needs {cls.gpus} GPUs per job", "its jobs could never run", None,
               _Jobs(np.array([cls.gpus]), np.array([cls.start_day * HOURS_PER_DAY]), np.array([1.0]),
                     cls.placement == "disaggregated", np.array([cls.train_gpus])))
              for cls in scenario.workload.classes]
    groups += [(f"job class {cls.name!r} needs up to {cls.max_gpus} GPUs per job", "its largest jobs could never run",
                ("workload", "job_classes", k, "gpus"),
                _Jobs(np.array([cls.max_gpus]), np.array([cls.start_day * HOURS_PER_DAY]), np.array([1.0])))
               for k, cls in enumerate(scenario.workload.job_classes)]
    if trace is not None:
        within = trace.submit_h < H
        hold = trace.duration_h[within].astype(float)
        ckpt = scenario.workload.checkpoint
        if ckpt is not None:
            hold = hold + checkpoint_writes(hold, ckpt.every_hours) * ckpt.write_minutes / 60.0
        groups.append(("", "it could never run", trace.job_id[within],
                       _Jobs(trace.gpus[within], trace.submit_h[within], hold)))
    for i, plan in enumerate(plans):
        for what, never, ids, jobs in groups:
            verdict = _never_fit(plan, jobs, demand) if len(jobs.gpus) else None
            if verdict is None:
                continue
            bad, field, where = verdict
            if isinstance(ids, tuple):  # a job class: the problem is at its gpus
                problems.append(Problem(ids, f"{what} but {where}: {never}"))
                continue
            if ids is not None:
                first = int(np.flatnonzero(bad)[0])
                others = f" ({int(bad.sum()) - 1} more such jobs)" if bad.sum() > 1 else ""
                what, never = f"job {ids[first]!r} needs {int(jobs.gpus[first])} GPUs", never + others
            problems.append(Problem(("options", i, field) if field else ("options", i), f"{what} but {where}: {never}"))
    problems.extend(_layout_problems(scenario, plans))
    return problems


def _layout_problems(scenario: Scenario, plans: list[Plan]) -> list[Problem]:
    """An RL class whose model does not fit the GPUs of an option (rollout replicas, training layout)."""
    problems = []
    for k, cls in enumerate(scenario.workload.classes):
        seen = set()
        for plan in plans:
            for pool in pools(plan):
                why = rl.fit_problem(workplan_shape(cls), hardware(pool))
                if why is None or (pool.name, why) in seen:
                    continue
                seen.add((pool.name, why))
                problems.append(Problem(("workload", "classes", k),
                                        f"class {cls.name!r} cannot run on option {pool.name!r} ({pool.gpu.name}): {why}"))
    return problems


def _offload_problems(scenario: Scenario, plans: list[Plan]) -> list[Problem]:
    """A disaggregated class whose rollout GPUs do not fit the quota of the rollout pool an option
    names: its rollouts could never run there (docs/rollout-offload.md)."""
    problems = []
    for i, (opt, plan) in enumerate(zip(scenario.options, plans, strict=True)):
        home = plan.base if isinstance(plan, HybridPlan) else plan
        pool = home.rollout
        if opt.rollout_pool is None or pool is None or pool.max_gpus is None:
            continue
        for cls in scenario.workload.classes:
            held = int(_held(pool, np.array([cls.rollout_gpus]))[0])
            if cls.placement == "disaggregated" and held > pool.max_gpus:
                problems.append(Problem(("options", i, "rollout_pool"), (
                    f"class {cls.name!r} samples on {cls.rollout_gpus} GPUs ({held} in whole instances) but "
                    f"option {pool.name!r} has a quota of {pool.max_gpus} GPUs: its rollouts could never run there")))
    return problems


def check(scenario: Scenario, source: str, lines: dict[Loc, tuple[int, int]] | None = None) -> Scenario:
    """Everything beyond the schema: catalog resolution, the trace file, jobs that can never fit."""
    return _checked(scenario, source, lines)[0]


def _checked(scenario: Scenario, source: str,
             lines: dict[Loc, tuple[int, int]] | None = None) -> tuple[Scenario, TraceTable | None]:
    """``check``, also returning the trace it read, so a run reads the file once."""
    lines = lines or {}
    try:
        plans = resolve(scenario, source=source)
        trace = None
        if scenario.workload.trace is not None:
            trace_path = scenario.base_dir / scenario.workload.trace
            problem = input_file_problem(trace_path)  # a stat only: a FIFO is never opened
            if problem is not None:
                shown = (f"trace file not found: {trace_path}" if problem == "file not found"
                         else f"the trace file {trace_path} {problem}")
                raise ScenarioError(source, [Problem(("workload", "trace"), shown)])
            trace = read_trace(trace_path)
            clashes = workload.reserved_id_problems(scenario, trace.job_id)  # job ids unique by construction
            if clashes:
                raise ScenarioError(str(trace_path), clashes)
        problems = _fit_problems(scenario, plans, trace) + scaling_problems(scenario) + _offload_problems(scenario, plans)
        if problems:
            raise ScenarioError(source, problems)
    except ScenarioError as err:
        raise err.with_lines(lines) from None
    return scenario, trace


def load_scenario(path: Path | str) -> Scenario:
    """Read, validate and check a scenario file; raises ScenarioError (file, field, line)."""
    path = arguments.path(path, "path", "load_scenario")
    scenario, lines = read_scenario(path)
    return check(scenario, str(path), lines)


def load_scenario_text(text: str, source: str, base_dir: Path | str) -> Scenario:
    """As ``load_scenario`` for YAML text (dashboard uploads); relative paths from ``base_dir``."""
    text = arguments.text(text, "text", "load_scenario_text")
    source = arguments.text(source, "source", "load_scenario_text")
    base_dir = arguments.path(base_dir, "base_dir", "load_scenario_text")
    scenario, lines = scenario_from_yaml(text, source, base_dir)
    return check(scenario, source, lines)


def scenario_from_data(data: dict, source: str = "scenario", base_dir: Path | str = ".") -> Scenario:
    """A validated AND checked Scenario from plain data (a variant: ``scenario.model_dump(mode="json")``
    edited), relative paths read from ``base_dir``; raises ScenarioError like ``load_scenario``."""
    source = arguments.text(source, "source", "scenario_from_data")
    base_dir = arguments.path(base_dir, "base_dir", "scenario_from_data")
    return check(schema_from_data(data, source, base_dir), source)


def dump_scenario(scenario: Scenario) -> str:
    """The scenario as YAML that loads back equal (``costsim.scenario.dump_scenario``)."""
    if not isinstance(scenario, Scenario):
        raise arguments.error("dump_scenario", "scenario", f"must be a costsim.Scenario, got {type(scenario).__name__}")
    return schema_dump(scenario)


def revalidated(scenario: Scenario) -> tuple[Scenario, str]:
    """A Scenario object may have skipped validation (``Scenario.model_construct``, ``model_copy
    (update=...)``): its data validated again, as a copy with the same base folder, and the source
    messages name it by. ScenarioError naming each missing or wrong field, never an AttributeError
    for a field the object lacks."""
    name = getattr(scenario, "__dict__", {}).get("name")  # model_construct may leave it out
    source = f"scenario {name!r}" if isinstance(name, str) else "scenario"
    try:
        data = scenario.model_dump(warnings=False, exclude_unset=True)  # unset fields stay unset (defaults refill); validation says what is wrong
        base_dir = scenario.base_dir
    except Exception as exc:
        raise ScenarioError(source, [Problem((), f"cannot be read back: {exc}".splitlines()[0])]) from None
    return schema_from_data(data, source, base_dir), source


def rechecked(scenario: Scenario) -> tuple[Scenario, TraceTable | None]:
    """``revalidated``, then ``check``. Cheap: no workload is drawn. Returns the validated copy
    (same data, same base folder) and its trace."""
    scenario, source = revalidated(scenario)
    return _checked(scenario, source)


def simulate(
    scenario: Scenario | Path | str,
    seed: int | None = None,
    on_option: Callable[[str, int, int], None] | None = None,
    max_events: int | None = budget.DEFAULT_MAX_EVENTS,
    memo: RunMemo | None = None,
) -> results.Results:
    """Run every option of the scenario on the same jobs and return the result tables.

    ``scenario``: a Scenario (validated and checked again here, whatever built it) or a file path.
    ``seed`` overrides the scenario's root seed. ``on_option(name, done, total)`` is called before
    each option and once more (name "tables") before the tables are built: for progress bars.
    ``max_events``: a run estimated (``costsim.runs.budget``) to need more SimPy events than this is
    refused with a ScenarioError before it starts, and one that actually passes
    ``budget.ENGINE_MARGIN`` times it is stopped; None: no limit. ``memo``: a ``RunMemo`` that
    keeps the jobs, work plans and option runs for later calls in this process, which then repeat
    only what their changes touch (``costsim.runs.memo``); the tables are the same either way.
    """
    seed = arguments.seed(seed)
    on_option = arguments.callback(on_option, "on_option")
    max_events = arguments.max_events(max_events)
    if memo is not None and not isinstance(memo, RunMemo):
        raise arguments.error("simulate", "memo", f"must be a costsim.runs.memo.RunMemo or None, got {type(memo).__name__}")
    if isinstance(scenario, Scenario):
        scenario, source = revalidated(scenario)  # a Scenario.model_construct may lack any field
        trace_id = _trace_identity(scenario)  # before the trace is read: see memo.file_identity
        scenario, trace = _checked(scenario, source)
    else:
        arguments.scenario_like(scenario)
        path = arguments.path(scenario, "path", "load_scenario")
        scenario, lines = read_scenario(path)
        trace_id = _trace_identity(scenario)
        scenario, trace = _checked(scenario, str(path), lines)
    source = f"scenario {scenario.name!r}"
    seed = scenario.seed if seed is None else seed
    plans = resolve(scenario, default_catalog())
    econ = economics_values(scenario)
    rows = len(trace) if trace is not None else 0
    budget.refuse_above(budget.estimate_events(scenario, plans, *budget.expected_workload(scenario, rows)),
                        max_events, source)  # before drawing: a huge horizon must not hang the draws
    # What the jobs and work plans read (see costsim.runs.memo): a memo hit needs all of it equal.
    # (An RL class's scaling curve only reads the results: a target knob reruns nothing.)
    jobs_key = (seed, scenario.workload.model_dump_json(exclude={"classes": {"__all__": {"scaling"}}}),
                repr(scenario.horizon_h), str(scenario.base_dir), trace_id)
    jobs = cached(memo, "jobs", jobs_key, lambda t=trace: workload.generate(scenario, seed, t))
    trace = None  # read once, by the check above; the jobs now hold what the runs need

    def work_of(part: OwnedPlan | CloudPlan):
        part = unpriced(part)  # a work plan never reads prices: a price knob keeps it
        return cached(memo, "works", (jobs_key, repr(part)), lambda: plan_work(scenario, jobs, part))

    works = [(work_of(plan.base), work_of(plan.burst)) if isinstance(plan, HybridPlan) else (work_of(plan),)
             for plan in plans]
    budget.refuse_above(budget.estimate_events(scenario, plans, len(jobs), len(jobs.length_sum), works),
                        max_events, source)
    demand = serving_demand(scenario)
    table = RangeMax(demand) if demand is not None else None
    serving_key = None if scenario.serving is None else scenario.serving.model_dump_json()
    ceiling = None if max_events is None else budget.ENGINE_MARGIN * max_events
    records, work = [], []
    for k, (plan, parts) in enumerate(zip(plans, works, strict=True)):
        if on_option is not None:
            on_option(plan.name, k, len(plans))
        # Streams keyed by the option's name: adding or reordering options never shifts its draws.
        rngs = {name: stream(seed, name, plan.name) for name in ("failures", "preemptions", "provisioning")}
        left = None if ceiling is None else max(ceiling - sum(r.events for r in records), 1)
        bare = unpriced(plan)  # nor does a run: prices are applied by results.build
        run_key = (jobs_key, repr(bare), serving_key, left)  # the work, horizon and seed are in jobs_key

        def run_it(plan=bare, parts=parts, rngs=rngs, left=left):
            return engine.run_option(plan, parts[0], scenario.horizon_h, parts[1] if len(parts) > 1 else None,
                                     serving=table, rngs=rngs, max_events=left)

        try:
            rec = cached(memo, "runs", run_key, run_it)
        except engine.EventLimitExceeded as exc:
            raise ScenarioError(source, [Problem(("options", k), (
                f"option {plan.name!r} was stopped after {exc.events:,} simulation events at hour "
                f"{exc.now_h:,.0f} of {exc.until_h:,.0f}, far above the estimate; if the run is meant, raise "
                "the limit: simulate(..., max_events=N) or costsim run --max-events N"))]) from None
        # A hybrid job's run time is the one on the part it ran on.
        work.append(parts[0].merged(rec.part == engine.BURST, parts[1]) if len(parts) > 1 else parts[0])
        records.append(rec)
    if on_option is not None:
        on_option("tables", len(plans), len(plans))
    return results.build(scenario, seed, plans, econ, records, work, demand)


def unpriced(plan: Plan) -> Plan:
    """The plan with its prices (capex, $/GPU-hour, billing rules) set to NaN (``Plan.unpriced``):
    what work plans and runs are given, so a price edit finds them in a memo, and a price read there
    by mistake would turn the tables to NaN (tests/test_run_memo.py) instead of going unnoticed."""
    return plan.unpriced()


def _trace_identity(scenario: Scenario) -> tuple[int, ...] | None:
    """The scenario's trace file's identity (``memo.file_identity``), None without a trace."""
    if scenario.workload.trace is None:
        return None
    return file_identity(scenario.base_dir / scenario.workload.trace)


def serving_demand(scenario: Scenario) -> np.ndarray | None:
    """Serving GPUs per hour over the horizon and, for jobs that run past it, a year more."""
    if scenario.serving is None:
        return None
    g = scenario.serving.gpus
    hours = int(np.ceil(scenario.horizon_h + HOURS_PER_YEAR))
    return hourly_demand(g.base, g.diurnal_amplitude, g.growth_per_year, hours)
