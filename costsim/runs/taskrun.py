"""A sweep's tasks and how they run: one task per (variant, replication), in groups that share one
simulation, each group run by a ``TaskRunner`` in whichever process the executor chooses.

Replication r of every variant simulates with the same seed, ``replication_seed(sweep.seed, r)``
(replication 0 on the sweep's seed itself: the run ``costsim run`` makes with it): common random
numbers, so the variants and options of a replication see the same jobs and every difference
between them is paired. A task is a small picklable ``Task`` (the variant's scenario as JSON data,
not a live object, so a Dask worker on another machine checks it and reads its own trace).

Variants that differ only in prices (``costsim.runs.memo.usage_key``: electricity, a rent, capex —
whatever no run reads) use the same GPU-hours on the same seed. ``shared_runs`` groups their tasks
of one replication; a runner simulates the group's first task and re-costs its runs for the others
(``simulate`` through one ``RunMemo``), so a tornado's price inputs or a grid over a price cost a
table build each rather than a simulation. The tables are the same as from each task alone.

``task_outputs`` is the one task loop (sweeps, the tornado and the optimiser's grid): the groups on
an executor (``costsim.runs.executors``), each task's output handed back as its group finishes.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from costsim.plan.prepare import Prepared
from costsim.plan.resolve import resolve
from costsim.results.contract import Results
from costsim.runs import api
from costsim.runs.budget import expected_workload
from costsim.runs.dataset import fingerprint
from costsim.runs.executors import Run
from costsim.runs.memo import RunMemo, usage_key
from costsim.runs.sweepfile import Sweep, replication_seed
from costsim.scenario import Problem, ScenarioError
from costsim.scenario import scenario_from_data as schema_from_data
from costsim.scenario.filekind import file_identity

LABELS = ["variant", "replication", "seed"]  # the columns a task's summary starts with
# Variants a runner keeps prepared at least. A worker takes a group's variants one after another and
# the local executor a sweep's groups in order, a variant's replications together, so the latest
# couple (or a group's variants) are all it needs.
PREPARED_KEPT = 2


@dataclass(frozen=True)
class Task:
    """One simulation of a sweep: variant ``variant``'s scenario, replication ``replication``.

    ``scenario``: the variant's ``Scenario.model_dump(mode="json")``; ``base_dir``: the folder its
    relative paths (a trace) are read from — a worker on another machine needs the same path;
    ``seed``: ``replication_seed(sweep seed, replication)``, the same for every variant;
    ``inputs_sha256``: the variant's ``inputs_sha256`` when the sweep started ("" : unchecked);
    ``breakeven``: keep the run's break-even table beside its summary (the tornado's tasks)."""

    variant: str
    replication: int
    seed: int
    scenario: dict
    base_dir: str
    source: str
    inputs_sha256: str = ""
    breakeven: bool = False


@dataclass(frozen=True)
class TaskOutput:
    """What a task gives back: ``summary``, the run's summary table with ``variant, replication,
    seed`` first; ``breakeven``, its ``finance.breakeven`` table with ``variant`` and
    ``replication`` added when the task asked for it (None otherwise: a sweep writes only the
    summary, and a break-even table per task would only be pickled back and dropped)."""

    summary: pd.DataFrame
    breakeven: pd.DataFrame | None = None


def tasks(spec: Sweep, shas: dict[str, str] | None = None, *, breakeven: bool = False) -> list[Task]:
    """Every task of the sweep, variant by variant, replications in order (``shas``: each variant's
    ``inputs_sha256`` by id; ``breakeven``: as ``Task``'s)."""
    seeds = [replication_seed(spec.seed, r) for r in range(spec.replications)]
    out = []
    for v in spec.variants:
        data = v.scenario.model_dump(mode="json")
        base_dir, source = str(v.scenario.base_dir), f"{spec.source} variant {v.id}"
        sha = (shas or {}).get(v.id, "")
        out += [Task(v.id, r, seeds[r], data, base_dir, source, sha, breakeven) for r in range(spec.replications)]
    return out


class TaskRunner:
    """Runs groups of tasks (``shared_runs``), keeping the latest ``kept`` variants it prepared
    (``api.prepare``: catalog, trace, checks) for the tasks that follow.

    The runner owns what it keeps, keyed by value: the variant's data, folder and source and its
    trace file's identity now, so an edited trace is prepared again. The local executor runs every
    group of a sweep through the one runner its loop made, so a variant is prepared once however
    many replications it has. A pool or Dask worker gets a copy of the runner with each group, and
    a copy starts with nothing kept (a prepared trace may be large: it is never pickled), so there
    each variant of a group is prepared once. Not thread-safe."""

    def __init__(self, *, kept: int = PREPARED_KEPT) -> None:
        self.kept = kept
        self.prepares = 0  # variants prepared so far (tests and benchmarks count them)
        self._prepared: OrderedDict[tuple, Prepared] = OrderedDict()

    def __getstate__(self) -> dict[str, Any]:
        return {"kept": self.kept}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.kept, self.prepares, self._prepared = state["kept"], 0, OrderedDict()

    def prepared(self, task: Task) -> Prepared:
        """The task's variant prepared, once while it is among the latest ``kept``."""
        trace = task.scenario.get("workload", {}).get("trace")
        identity = file_identity(Path(task.base_dir) / trace) if trace is not None else None
        key = (json.dumps(task.scenario, sort_keys=True), task.base_dir, task.source, identity)
        if key in self._prepared:
            self._prepared.move_to_end(key)
            return self._prepared[key]
        ready = api.prepare(schema_from_data(task.scenario, task.source, task.base_dir))
        self.prepares += 1
        self._prepared[key] = ready
        while len(self._prepared) > self.kept:
            self._prepared.popitem(last=False)
        return ready

    def run(self, task: Task, memo: RunMemo | None = None) -> TaskOutput:
        """Simulate one (variant, replication) (through ``memo`` when given): its summary table
        with ``variant, replication, seed`` first, and its break-even table when ``task.breakeven``.

        The scenario is rebuilt with the schema alone to check its inputs against the sweep's
        record (``same_inputs``), before and after the run."""
        scenario = schema_from_data(task.scenario, task.source, task.base_dir)
        same_inputs(task, scenario)
        res = api.simulate(self.prepared(task), seed=task.seed, memo=memo)
        same_inputs(task, scenario)  # the trace was not edited while it ran either
        return task_output(task, res)

    def __call__(self, group: Sequence[Task]) -> tuple[TaskOutput, ...]:
        """Each task of ``group`` (tasks of one seed whose variants differ only in prices), through
        one ``RunMemo`` owned by the group: the first simulates, the others re-cost its runs."""
        if len(group) == 1:
            return (self.run(group[0]),)
        options = len(self.prepared(group[0]).plans)  # the same options in every variant of a group
        # Room for every option's runs and pools' work plans: an entry evicted would be simulated again.
        memo = RunMemo(jobs=1, works=max(16, 2 * options), runs=max(16, options))
        return tuple(self.run(t, memo) for t in group)


def task_output(task: Task, res: Results) -> TaskOutput:
    """``res``, the run of ``task`` (its variant's scenario on ``task.seed``), as a runner returns
    it; ``res`` is left as it was. A caller that has that run already (the report's replications,
    the base of its tornado) gives it here rather than running the task."""
    table = res.summary.copy()
    for name, value in reversed(list(zip(LABELS, (task.variant, task.replication, task.seed), strict=True))):
        table.insert(0, name, value)
    breakeven = res.breakeven.assign(variant=task.variant, replication=task.replication) if task.breakeven else None
    return TaskOutput(table, breakeven)


def run_task(task: Task) -> TaskOutput:
    """Simulate one task alone (a runner of its own: nothing kept for another task)."""
    return TaskRunner().run(task)


def shared_runs(todo: Sequence[Task]) -> list[list[int]]:
    """The indices of ``todo`` in groups of tasks that share one simulation: the same seed and the
    same ``memo.usage_key`` (their variants differ only in prices), each group in task order. The
    groups come heaviest first, so that no long one starts last while the other workers idle: a
    group weighs its simulation's expected RL iterations and jobs (``budget.expected_workload``;
    the run time follows them) and a tenth of that for each task it re-costs; ties keep the order
    of their first task. A variant this process cannot resolve is left in groups of its own: its
    worker reports why."""
    facts: dict[str, tuple[Any, float]] = {}
    groups: dict[Any, list[int]] = {}
    for i, t in enumerate(todo):
        if t.variant not in facts:
            facts[t.variant] = _facts(t)
        groups.setdefault((t.seed, facts[t.variant][0]), []).append(i)
    # Measured on the baseline: a re-cost takes about a tenth of the simulation it re-costs.
    weight = {k: facts[todo[g[0]].variant][1] * (1 + RECOST_SHARE * (len(g) - 1)) for k, g in groups.items()}
    return [groups[k] for k in sorted(groups, key=lambda k: -weight[k])]  # stable: ties in task order


RECOST_SHARE = 0.1


def _facts(task: Task) -> tuple[Any, float]:
    """The task's variant's ``usage_key`` and weight (expected RL iterations and jobs), or the
    variant itself and no weight when it cannot be resolved."""
    try:
        scenario = schema_from_data(task.scenario, task.source, task.base_dir)
        with warnings.catch_warnings():  # a catalog-version warning was given when the variant was built
            warnings.simplefilter("ignore")
            plans = resolve(scenario, source=task.source)
    except ScenarioError:
        return ("unresolved", task.variant), 0.0
    trace = scenario.workload.trace
    jobs, iterations = expected_workload(scenario, 0)  # a trace's rows are the same in every variant
    key = usage_key(scenario, plans, file_identity(scenario.base_dir / trace) if trace is not None else None)
    return key, (iterations + jobs) * len(plans)


def task_outputs(run: Run | None, todo: Sequence[Task], progress: Callable[[int, int], None] | None = None,
                 runner: TaskRunner | None = None, groups: list[list[int]] | None = None
                 ) -> Iterator[tuple[int, TaskOutput]]:
    """The one task loop: ``(index into todo, its output)`` as each group (``groups``, default
    ``shared_runs(todo)``) finishes on ``run`` (an ``open_executor``; None when there is nothing to
    run), a group's tasks in order. ``runner``: the ``TaskRunner`` the groups run through (default:
    one made for this loop, keeping as many variants as the largest group has). ``progress(done,
    total)`` is told 0 first and then after each task, once the caller has handled it (a sweep has
    written it by then)."""
    if progress is not None:
        progress(0, len(todo))
    if run is None or not todo:
        return
    groups = groups if groups is not None else shared_runs(todo)
    runner = runner or TaskRunner(kept=max(PREPARED_KEPT, max(map(len, groups))))
    done = 0
    for k, outs in run(runner, [tuple(todo[i] for i in g) for g in groups]):
        for i, out in zip(groups[k], outs, strict=True):
            yield i, out
            done += 1
            if progress is not None:
                progress(done, len(todo))


def same_inputs(task: Task, scenario) -> None:
    """Refuse to run (or to report) a task whose trace or catalog bytes differ from those the sweep
    recorded when it started (an edit during the sweep, another file at the same path on a Dask
    worker): its runs would be saved as the recorded inputs' and a resume would trust them."""
    if task.inputs_sha256 and inputs_sha256(scenario) != task.inputs_sha256:
        trace = scenario.workload.trace
        which = f"the trace {Path(scenario.base_dir) / trace} or the catalog" if trace else "the catalog"
        raise ScenarioError(task.source, [Problem(("workload", "trace"), (
            f"{which} changed while the sweep ran (the bytes differ from those recorded when it started); "
            "the tasks finished before the change are saved: put the previous file back and run the same "
            "command to resume them, or run the sweep into a new --out folder to use the new file"))])


def bytes_sha256(data: bytes) -> str:
    """SHA-256 of ``data``, as hex."""
    return hashlib.sha256(data).hexdigest()


def inputs_sha256(scenario, file_sha256: Callable[[Path], str] | None = None) -> str:
    """A variant's identity for resuming: its scenario, the bytes of the trace it reads and of the
    catalog its defaults come from (a path alone would let an edited trace resume as the same sweep).
    ``file_sha256``: how a file is hashed (``sweep_manifest`` passes one that hashes each file once)."""
    file_sha256 = file_sha256 or (lambda path: bytes_sha256(path.read_bytes()))
    inputs = {"scenario": scenario.model_dump(mode="json"),
              "catalog": bytes_sha256(resources.files("costsim.catalog").joinpath("catalog.yaml").read_bytes())}
    if scenario.workload.trace is not None:
        inputs["trace"] = file_sha256(Path(scenario.base_dir) / scenario.workload.trace)
    return fingerprint(inputs)


__all__ = ["LABELS", "PREPARED_KEPT", "Task", "TaskOutput", "TaskRunner", "inputs_sha256", "run_task",
           "same_inputs", "shared_runs", "task_outputs", "tasks"]
