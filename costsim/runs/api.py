"""The package's front door: load and check a scenario, simulate it."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

from costsim.engine import run as engine
from costsim.models.serving import RangeMax
from costsim.plan.fleet import burst_of, pools
from costsim.plan.options import CloudPlan, OwnedPlan
from costsim.plan.prepare import Prepared, attached
from costsim.plan.prepare import prepare as prepare_plan
from costsim.results import tables as results
from costsim.runs import arguments, budget
from costsim.runs.memo import RunMemo, cached, serving_key, unpriced_key, workload_key
from costsim.scenario import Problem, Scenario, ScenarioError, TraceTable, read_scenario, scenario_from_yaml
from costsim.scenario import dump_scenario as schema_dump
from costsim.scenario import scenario_from_data as schema_from_data
from costsim.scenario.errors import Loc
from costsim.workload import jobs as workload
from costsim.workload.plan import WorkPlan, group_access, plan_work
from costsim.workload.rng import stream


def prepared(scenario: Scenario, source: str, lines: dict[Loc, tuple[int, int]] | None = None) -> Prepared:
    """``check``, returning all it resolved: the checked scenario, its plans and economics, its trace
    (read once) and serving demand (``costsim.plan.prepare.Prepared``)."""
    return prepare_plan(scenario, source=source, lines=lines, trace_check=workload.reserved_id_problems)


def check(scenario: Scenario, source: str, lines: dict[Loc, tuple[int, int]] | None = None) -> Scenario:
    """Everything beyond the schema: catalog resolution, the trace file, jobs that can never fit."""
    return prepared(scenario, source, lines).scenario


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
    ready = prepared(scenario, source)
    return ready.scenario, ready.trace


def prepare(scenario: Scenario | Path | str) -> Prepared:
    """What ``simulate`` runs: a Scenario validated and checked again (whatever built it) or a
    scenario file read and checked, resolved against the catalog, its trace read once and its
    serving demand computed (``costsim.plan.prepare.Prepared``). Give it to ``simulate`` to run one
    scenario on many seeds without preparing it each time; raises ScenarioError as ``simulate``
    does."""
    return _prepare(scenario, "prepare")


def _prepare(scenario: Scenario | Path | str, function: str) -> Prepared:
    """``prepare``, a bad argument named as ``function``'s."""
    if isinstance(scenario, Scenario):
        scenario, source = revalidated(scenario)  # a Scenario.model_construct may lack any field
        return prepared(scenario, source)
    arguments.scenario_like(scenario, function)
    path = arguments.path(scenario, "path", "load_scenario")
    scenario, lines = read_scenario(path)
    return prepared(scenario, str(path), lines)


def simulate(
    scenario: Scenario | Prepared | Path | str,
    seed: int | None = None,
    on_option: Callable[[str, int, int], None] | None = None,
    max_events: int | None = budget.DEFAULT_MAX_EVENTS,
    memo: RunMemo | None = None,
) -> results.Results:
    """Run every option of the scenario on the same jobs and return the result tables.

    ``scenario``: a Scenario (validated and checked again here, whatever built it), a file path, or
    a ``Prepared`` (``prepare``: run as it was prepared, so replications of one scenario prepare it
    once). ``seed`` overrides the scenario's root seed. ``on_option(name, done, total)`` is called
    before each option and once more (name "tables") before the tables are built: for progress bars.
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
    ready = attached(scenario) if isinstance(scenario, Prepared) else _prepare(scenario, "simulate")
    scenario, plans, econ, trace, demand, trace_id = (ready.scenario, list(ready.plans), ready.economics, ready.trace,
                                                      ready.serving_demand, ready.trace_identity)
    del ready  # so a trace prepared here (perhaps millions of rows) is freed once the jobs are drawn, below
    source = f"scenario {scenario.name!r}"
    seed = scenario.seed if seed is None else seed
    rows = len(trace) if trace is not None else 0
    budget.refuse_above(budget.estimate_events(scenario, plans, *budget.expected_workload(scenario, rows)),
                        max_events, source)  # before drawing: a huge horizon must not hang the draws
    # What the jobs and work plans read (see costsim.runs.memo): a memo hit needs all of it equal.
    jobs_key = (seed, workload_key(scenario, trace_id))
    jobs = cached(memo, "jobs", jobs_key, functools.partial(workload.generate, scenario, seed, trace))
    trace = None  # read once, by the check above; the jobs now hold what the runs need

    timed: dict = {}  # phase times of these jobs, shared by options of the same hardware

    def work_of(part: OwnedPlan | CloudPlan):
        # A work plan never reads prices: a price knob keeps it.
        key = (jobs_key, unpriced_key(part))
        return cached(memo, "works", key, lambda: plan_work(scenario, jobs, part.unpriced(), shared=timed))

    works = [tuple(work_of(part) for part in pools(plan)) for plan in plans]  # a hybrid: base, burst
    timed.clear()  # the work plans hold copies: the phase times would only hold memory through the runs
    budget.refuse_above(budget.estimate_events(scenario, plans, len(jobs), len(jobs.length_sum), works),
                        max_events, source)
    table = RangeMax(demand) if demand is not None else None
    serving = serving_key(scenario)
    ceiling = None if max_events is None else budget.ENGINE_MARGIN * max_events
    records: list[engine.UsageRecord] = []
    work: list[WorkPlan] = []
    accesses: list = []  # per option, the node groups each job may use: the tables read them too
    for k, (plan, parts) in enumerate(zip(plans, works, strict=True)):
        if on_option is not None:
            on_option(plan.name, k, len(plans))
        # Streams keyed by the option's name: adding or reordering options never shifts its draws.
        rngs = {name: stream(seed, name, plan.name) for name in ("failures", "preemptions", "provisioning")}
        # A fleet's later pools fail as the options they are would alone (the first is the option's home).
        parts_of = pools(plan)
        later = parts_of[1:len(parts_of) - (burst_of(plan) is not None)]  # a node group's pool: every later group
        rngs.update({f"failures:{p.name}": stream(seed, "failures", p.name) for p in later})
        left = None if ceiling is None else max(ceiling - sum(r.events for r in records), 1)
        bare = plan.unpriced()  # nor does a run: prices are applied by results.build
        run_key = (jobs_key, unpriced_key(plan), serving, left)  # the work, horizon and seed are in jobs_key
        # A pool of node groups: the groups each job may use (its GPU type, its model), from the same.
        access = group_access(scenario, jobs, plan)
        accesses.append(access)

        def run_it(plan=bare, parts=parts, rngs=rngs, left=left, access=access):
            return engine.run_option(plan, parts[0], scenario.horizon_h, parts[1:] if len(parts) > 1 else None,
                                     serving=table, rngs=rngs, max_events=left, may_use=access)

        try:
            rec = cached(memo, "runs", run_key, run_it)
        except engine.EventLimitExceeded as exc:
            raise ScenarioError(source, [Problem(("options", k), (
                f"option {plan.name!r} was stopped after {exc.events:,} simulation events at hour "
                f"{exc.now_h:,.0f} of {exc.until_h:,.0f}, far above the estimate; if the run is meant, raise "
                "the limit: simulate(..., max_events=N) or costsim run --max-events N"))]) from None
        # A hybrid or fleet job's run time is the one on the part it ran on; on node groups a job
        # never started is timed on the group it would try first (the record's part).
        merged = parts[0]
        for k in range(1, len(parts)):
            merged = merged.merged(rec.part == k, parts[k])
        work.append(merged)
        records.append(rec)
    if on_option is not None:
        on_option("tables", len(plans), len(plans))
    return results.build(scenario, seed, plans, econ, records, work, demand, access=accesses)
