"""A scenario prepared to run: resolved against the catalog once, its trace read, every check that
needs the plans passed (``costsim.plan.checks``). ``simulate`` runs a ``Prepared``; the front door
(``costsim.runs.api.prepare``) builds it, once per scenario however many seeds it then runs: the
report's replications, a sweep worker's replications of a variant, the dashboard's workers (sent
them ``detached`` from the trace, which each reads again from its file)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from costsim.catalog.load import Catalog
from costsim.plan.checks import plan_problems, serving_demand
from costsim.plan.economics import EconomicsValues
from costsim.plan.fleet import Plan
from costsim.plan.resolve import economics_values, resolve
from costsim.scenario import Problem, Scenario, ScenarioError, TraceTable, read_trace
from costsim.scenario.errors import Loc
from costsim.scenario.filekind import file_identity, input_file_problem
from costsim.scenario.node_groups import trace_gpu_type_problems

# Problems of a trace's rows that only the layer drawing the workload can see (its job ids against
# the ids it makes itself): given the scenario and the trace's job ids.
TraceCheck = Callable[[Scenario, np.ndarray], list[Problem]]


@dataclass(frozen=True)
class Prepared:
    """A checked scenario with what its runs read: ``plans`` (one per option, in order),
    ``economics`` (the catalog filled in), ``trace`` (the scenario's trace file read once, None
    without one), ``serving_demand`` (serving GPUs per hour over the horizon and a year more,
    None without serving; read-only, as every run shares it) and ``trace_identity`` (the trace
    file's ``file_identity`` taken before it was read, None without a trace: what a run memo keys
    the jobs drawn from it by)."""

    scenario: Scenario
    plans: tuple[Plan, ...]
    economics: EconomicsValues
    trace: TraceTable | None
    serving_demand: np.ndarray | None
    trace_identity: tuple[int, ...] | None = None


def prepare(scenario: Scenario, *, source: str = "<scenario>", lines: dict[Loc, tuple[int, int]] | None = None,
            catalog: Catalog | None = None, trace_check: TraceCheck | None = None) -> Prepared:
    """``scenario`` (validated by the schema) resolved against ``catalog`` (None: the shipped one),
    its trace read and every cross-field check passed; raises ``ScenarioError`` naming ``source``
    and, where ``lines`` knows them, the lines of the fields at fault. ``trace_check``: problems of
    the trace's rows, reported at the trace file, before the plan checks."""
    # Before the file is read: an edit during the read can only cause a memo miss later, never a stale hit.
    named = scenario.workload.trace
    identity = file_identity(scenario.base_dir / named) if named is not None else None
    try:
        plans = resolve(scenario, catalog, source=source)
        trace = _trace(scenario, source, trace_check)
        demand = serving_demand(scenario)
        if demand is not None:
            demand.setflags(write=False)
        problems = plan_problems(scenario, plans, trace, demand)
        if problems:
            raise ScenarioError(source, problems)
    except ScenarioError as err:
        raise err.with_lines(lines or {}) from None
    # Economics from the catalog as given: a scenario's catalog: section pins no economics.
    return Prepared(scenario, tuple(plans), economics_values(scenario, catalog), trace, demand, identity)


def _trace(scenario: Scenario, source: str, trace_check: TraceCheck | None) -> TraceTable | None:
    """The scenario's trace table, None without one; ScenarioError when the file is missing, not a
    regular file or has rows ``trace_check`` refuses or asking for a GPU type an option cannot give
    them (``node_groups.trace_gpu_type_problems``)."""
    if scenario.workload.trace is None:
        return None
    trace_path = scenario.base_dir / scenario.workload.trace
    problem = input_file_problem(trace_path)  # a stat only: a FIFO is never opened
    if problem is not None:
        shown = (f"trace file not found: {trace_path}" if problem == "file not found"
                 else f"the trace file {trace_path} {problem}")
        raise ScenarioError(source, [Problem(("workload", "trace"), shown)])
    trace = read_trace(trace_path)
    clashes = trace_check(scenario, trace.job_id) if trace_check is not None else []
    clashes += trace_gpu_type_problems(trace, scenario.options)
    if clashes:
        raise ScenarioError(str(trace_path), clashes)
    return trace


def detached(ready: Prepared) -> Prepared:
    """``ready`` without its trace table, to send to another process on this machine, which reads
    the file again (``attached``): a pickled million-row trace costs seconds each way, a file read
    by a worker that read it before (``read_trace`` keeps its latest tables) costs nothing."""
    return replace(ready, trace=None)


def attached(ready: Prepared) -> Prepared:
    """``ready`` with its trace table: itself when it has it or needs none, else (``detached``) the
    file read again; ScenarioError when the file is no longer the one it was prepared from."""
    named = ready.scenario.workload.trace
    if ready.trace is not None or named is None:
        return ready
    path = ready.scenario.base_dir / named
    # Its identity before and after the read: an edit meanwhile is refused, never read as the checked file.
    trace = read_trace(path) if file_identity(path) == ready.trace_identity else None
    if trace is None or file_identity(path) != ready.trace_identity:
        raise ScenarioError(f"scenario {ready.scenario.name!r}", [Problem(("workload", "trace"), (
            f"the trace file {path} changed after the scenario was checked; run it again to check the new file"))])
    return replace(ready, trace=trace)
