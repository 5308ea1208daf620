"""Running a sweep: one task per (variant, replication), on an executor, into a Parquet dataset.

Replication r of every variant simulates with the same seed, ``replication_seed(sweep.seed, r)``
(replication 0 on the sweep's seed itself: the run ``costsim run`` makes with it): common random numbers, so the variants and options of a replication see the same jobs and every
difference between them is paired. A task is a small picklable ``Task`` (the variant's scenario as
JSON data, not a live object) run by ``run_task`` in whichever process the executor chooses
(``costsim.runs.executors``); results come back to the calling process through ``task_outputs``
(the one task loop, the tornado's too), which writes each one as it arrives
(``costsim.runs.dataset``) and assembles the tables in task order, so they are the same, bit for
bit, whatever the executor and however many workers finished in whatever order.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from costsim.plan.prepare import Prepared
from costsim.results.contract import Results
from costsim.runs import api, arguments, stats
from costsim.runs.dataset import SweepFolder, fingerprint, manifest
from costsim.runs.executors import (
    DASK_MISSING,
    EXECUTORS,
    ExecutorError,
    Run,
    available_cores,
    check_address,
    dask_available,
    open_executor,
)
from costsim.runs.outfiles import scenario_inputs
from costsim.runs.sweepfile import Sweep, load_sweep, replication_seed
from costsim.runs.taskfiles import TaskId
from costsim.scenario import Problem, ScenarioError
from costsim.scenario import scenario_from_data as schema_from_data
from costsim.scenario.filekind import file_identity

# The summary columns decisions are made on: means and paired differences are computed for these
# (``runs`` keeps every summary column).
METRICS = [
    "total_cost_usd", "cash_spent_usd", "queue_delay_mean_h", "queue_delay_p95_h", "utilization", "jobs_completed",
    "iterations_per_day", "cost_per_iteration_usd",
]
LABELS = ["variant", "replication", "seed"]  # the columns ``run_task`` puts before the summary's


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
    """What ``run_task`` returns: ``summary``, the run's summary table with ``variant, replication,
    seed`` first; ``breakeven``, its ``finance.breakeven`` table with ``variant`` and
    ``replication`` added when the task asked for it (None otherwise: a sweep writes only the
    summary, and a break-even table per task would only be pickled back and dropped)."""

    summary: pd.DataFrame
    breakeven: pd.DataFrame | None = None


@dataclass(frozen=True)
class SweepResults:
    """What ``sweep`` returns.

    ``runs``: one row per (variant, replication, option) — ``variant, replication, seed`` then the
    summary columns, in variant, replication and option order. ``means``: per (variant, option),
    each metric's mean over the replications with its 95 % t-interval (``m, m_low, m_high``) and
    ``n``. ``differences``: per (variant, option, versus), the paired difference option − versus
    within each replication, its mean and 95 % t-interval. ``variants``: one row per variant,
    ``variant`` and one column per swept path. ``scenarios``: each variant's Scenario, by variant id
    (for ``costsim.decide``: option descriptions and prices)."""

    runs: pd.DataFrame
    means: pd.DataFrame
    differences: pd.DataFrame
    variants: pd.DataFrame
    scenarios: dict = field(default_factory=dict, compare=False, repr=False)


def run_task(task: Task) -> TaskOutput:
    """Simulate one (variant, replication): its summary table with ``variant, replication, seed``
    first, and its break-even table when ``task.breakeven``. Top level, so any worker process can
    run it; what it keeps between tasks is the variant prepared (``prepared_variant``).

    The scenario is rebuilt with the schema alone, to check its inputs; the run's is prepared once
    per variant in each worker (catalog, trace, fit checks), not once per replication."""
    scenario = schema_from_data(task.scenario, task.source, task.base_dir)
    _same_inputs(task, scenario)
    trace = scenario.workload.trace
    identity = file_identity(Path(task.base_dir) / trace) if trace is not None else None
    ready = prepared_variant(json.dumps(task.scenario, sort_keys=True), task.base_dir, task.source, identity)
    res = api.simulate(ready, seed=task.seed)
    _same_inputs(task, scenario)  # the trace was not edited while it ran either
    return task_output(task, res)


def task_output(task: Task, res: Results) -> TaskOutput:
    """``res``, the run of ``task`` (its variant's scenario on ``task.seed``), as ``run_task``
    returns it; ``res`` is left as it was. A caller that has that run already (the report's
    replications, the base of its tornado) gives it here rather than running the task."""
    table = res.summary.copy()
    for name, value in reversed(list(zip(LABELS, (task.variant, task.replication, task.seed), strict=True))):
        table.insert(0, name, value)
    breakeven = res.breakeven.assign(variant=task.variant, replication=task.replication) if task.breakeven else None
    return TaskOutput(table, breakeven)


# Variants kept prepared per process. A worker (of a pool, of Dask, or this process with the local
# executor) takes a sweep's tasks in order, a variant's replications one after another, so the
# latest couple are all it needs; like the trace reader's tables (``read_trace``) they are keyed by
# value, the trace file's identity included, so an edited trace is prepared again.
PREPARED_KEPT = 2


@functools.lru_cache(maxsize=PREPARED_KEPT)
def prepared_variant(data: str, base_dir: str, source: str, trace_identity: tuple[int, ...] | None) -> Prepared:
    """The variant whose scenario is ``data`` (``Task.scenario`` as sorted JSON text), its relative
    paths read from ``base_dir``, prepared (``api.prepare``) under ``source``; ``trace_identity``
    (its trace file's ``file_identity`` now) is part of the key only."""
    return api.prepare(schema_from_data(json.loads(data), source, base_dir))


def task_outputs(run: Run | None, todo: Sequence[Task],
                 progress: Callable[[int, int], None] | None = None) -> Iterator[tuple[int, TaskOutput]]:
    """The one task loop: ``(index into todo, run_task(todo[index]))`` in the order the tasks
    finish on ``run`` (an ``open_executor``; None when there is nothing to run).
    ``progress(done, total)`` is told 0 first and then after each task, once the caller has
    handled it (a sweep has written it by then)."""
    if progress is not None:
        progress(0, len(todo))
    for done, (k, out) in enumerate(run(run_task, todo) if run is not None else (), start=1):
        yield k, out
        if progress is not None:
            progress(done, len(todo))


def _same_inputs(task: Task, scenario) -> None:
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


LIBRARIES = ("numpy", "pandas", "scipy", "simpy", "pyarrow")  # their versions can change the numbers


# The parts of costsim a stored run's numbers come from: the layers a simulation runs through and
# the catalog. The wording, figures, report, CLI and dashboard do not change a stored task, so an
# edited label or chart does not make a sweep start again.
SIMULATION_SOURCES = ("units.py", "errors.py", "scenario", "catalog", "models", "plan", "workload", "engine",
                      "results", "runs")


def source_identity(root: Path) -> str:
    """SHA-256 of the ``.py`` and ``.yaml`` files under ``SIMULATION_SOURCES`` of the package at ``root``."""
    digest = hashlib.sha256()
    for part in SIMULATION_SOURCES:
        top = root / part
        paths = [top] if top.is_file() else sorted(top.rglob("*"))
        for path in paths:
            if path.suffix in (".py", ".yaml") and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


@functools.cache
def code_identity() -> str:
    """SHA-256 of the sources a run's numbers come from (``source_identity``) and of Python's and
    ``LIBRARIES``' versions: runs made by other code are never resumed as this sweep's."""
    import platform
    from importlib import metadata

    digest = hashlib.sha256(source_identity(Path(str(resources.files("costsim")))).encode())
    versions = {name: metadata.version(name) for name in LIBRARIES}
    digest.update(json.dumps({"python": platform.python_version(), **versions}, sort_keys=True).encode())
    return digest.hexdigest()


def _bytes_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def inputs_sha256(scenario, file_sha256: Callable[[Path], str] | None = None) -> str:
    """A variant's identity for resuming: its scenario, the bytes of the trace it reads and of the
    catalog its defaults come from (a path alone would let an edited trace resume as the same sweep).
    ``file_sha256``: how a file is hashed (``sweep_manifest`` passes one that hashes each file once)."""
    file_sha256 = file_sha256 or (lambda path: _bytes_sha256(path.read_bytes()))
    inputs = {"scenario": scenario.model_dump(mode="json"),
              "catalog": _bytes_sha256(resources.files("costsim.catalog").joinpath("catalog.yaml").read_bytes())}
    if scenario.workload.trace is not None:
        inputs["trace"] = file_sha256(Path(scenario.base_dir) / scenario.workload.trace)
    return fingerprint(inputs)


def sweep_manifest(spec: Sweep) -> dict:
    """The dataset's ``sweep.json``: what identifies the sweep, for resuming. ``base`` is the base
    scenario's absolute path, so that a report run from any folder finds (and protects) it."""
    from costsim._version import __version__

    # Variants usually share one trace: hash each file once, not once per variant.
    file_sha256 = functools.cache(lambda path: _bytes_sha256(path.read_bytes()))
    variants = [{"id": v.id, "params": v.params, "scenario_sha256": inputs_sha256(v.scenario, file_sha256)}
                for v in spec.variants]
    return json.loads(json.dumps(manifest(spec.source, str(Path(spec.base).absolute()), variants, spec.replications, spec.seed,
                                          __version__, code_identity()), default=str))  # as it reads back


def variants_table(spec: Sweep) -> pd.DataFrame:
    """One row per variant: ``variant`` and one column per swept path, in the order they appear."""
    paths = list(dict.fromkeys(p for v in spec.variants for p in v.params))
    rows = [{"variant": v.id, **{p: variant_cell(v.params.get(p)) for p in paths}} for v in spec.variants]
    return pd.DataFrame(rows, columns=["variant", *paths])


def variant_cell(value: Any) -> Any:
    """A swept value as a table cell: scalars as they are, anything else (a list) as JSON text."""
    return value if value is None or isinstance(value, (bool, int, float, str)) else json.dumps(value, default=str)


def _spec(spec: Any) -> Sweep:
    if isinstance(spec, Sweep):
        return spec
    if isinstance(spec, (str, os.PathLike)):
        return load_sweep(arguments.path(spec, "spec", "sweep"))
    raise arguments.error("sweep", "spec", "must be a Sweep (costsim.runs.sweepfile.load_sweep) or the path of a "
                          f"sweep file, got {type(spec).__name__}")


def _settings(executor: Any, workers: Any, address: Any) -> tuple[str, int, str | None]:
    """The executor's name, worker count (default: one per core) and scheduler address, checked."""
    if executor not in EXECUTORS:
        raise arguments.error("sweep", "executor", f"must be one of {', '.join(EXECUTORS)} (got {executor!r})")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise arguments.error("sweep", "workers", f"must be a whole number >= 1 or None (got {workers!r})")
    if address is not None:
        if executor != "dask":
            raise arguments.error("sweep", "address", f"names a Dask scheduler: use executor 'dask', not {executor!r}")
        if not isinstance(address, str) or not address.strip():
            raise arguments.error("sweep", "address", f"must be HOST:PORT of a Dask scheduler (got {address!r})")
    if executor == "dask":  # before anything is written, even when every task is saved already
        if not dask_available():
            raise ExecutorError("dask", DASK_MISSING)
        if address is not None:
            check_address(address)
    if address is not None and workers is not None:
        raise arguments.error("sweep", "workers", "has no effect with a Dask scheduler's address (its workers are "
                              "started with it: dask worker --nworkers N); leave it out")
    return executor, workers or available_cores(), address


def sweep(spec: Sweep | str | Path, out: str | Path | None = None, executor: str = "processes",
          workers: int | None = None, address: str | None = None,
          progress: Callable[[int, int], None] | None = None,
          notify: Callable[[str], None] | None = None) -> SweepResults:
    """Run every (variant, replication) of a sweep and return its tables.

    ``spec``: a ``Sweep`` or the path of a sweep file (``costsim.runs.sweepfile``). ``out``: a folder
    for the Parquet dataset (``costsim.runs.dataset``): each task is saved as it finishes, and a
    sweep into a folder holding the same sweep runs only the tasks not yet there (resume); None:
    nothing is written. ``executor``: "local" (this process), "processes" (a process pool, the
    default) or "dask" (a Dask ``LocalCluster``, or the scheduler at ``address``, HOST:PORT).
    ``workers``: processes (default one per core). ``progress(done, total)`` is called with 0 and
    after each task that runs (resumed tasks are not counted in ``total``). ``notify(text)`` is
    told of each saved task file that fails its check (damaged, edited: named, and run again);
    default: a ``UserWarning``.

    Raises ScenarioError for a bad sweep, argument or folder before anything runs or is written;
    the tables are identical, bit for bit, whatever the executor.
    """
    return run_sweep(spec, out, executor, workers, address, progress, notify=notify)


def run_sweep(spec: Sweep | str | Path, out: str | Path | None = None, executor: str = "processes",
              workers: int | None = None, address: str | None = None,
              progress: Callable[[int, int], None] | None = None, label: str = "out",
              notify: Callable[[str], None] | None = None) -> SweepResults:
    """``sweep``, naming the output folder's setting ``label`` in messages (the CLI: ``--out``)."""
    spec = _spec(spec)
    executor, workers, address = _settings(executor, workers, address)
    progress = arguments.callback(progress, "progress", "sweep")
    notify = arguments.callback(notify, "notify", "sweep") or _warn
    if out is not None:
        out = arguments.path(out, "out", "sweep")
    manifest_ = sweep_manifest(spec)
    shas = {v["id"]: v["scenario_sha256"] for v in manifest_["variants"]}
    todo = tasks(spec, shas)
    folder = SweepFolder(out, manifest_, label, sweep_inputs(spec)) if out is not None else None
    swept = {v["id"]: v["params"] or {} for v in manifest_["variants"]}  # as the manifest records them
    frames: dict[int, pd.DataFrame] = {}
    with contextlib.ExitStack() as stack:
        if folder is not None:
            folder.check()  # read only: a refused folder is left untouched
            frames = _saved(folder, todo, swept, notify)  # read only too: each saved file checked
        # Workers start before the folder is written, so an unusable executor (no Dask, a scheduler
        # that does not answer) writes nothing; not at all when every task is already saved.
        pending = [i for i in range(len(todo)) if i not in frames]
        run = stack.enter_context(open_executor(executor, min(workers, len(pending)), address)) if pending else None
        if folder is not None:
            stack.enter_context(folder)  # checks again under the lock
        params = {v.id: v.params for v in spec.variants}
        # run is None exactly when nothing is pending.
        for k, output in task_outputs(run, [todo[i] for i in pending], progress):
            if folder is not None:
                task = todo[pending[k]]
                folder.write_task(output.summary, _task_id(task, swept), _task_meta(spec.source, params, task))
            frames[pending[k]] = output.summary
        runs = pd.concat([frames[i] for i in range(len(todo))], ignore_index=True)
        results = SweepResults(runs, stats.means_table(runs, METRICS), stats.differences_table(runs, METRICS),
                               variants_table(spec), {v.id: v.scenario for v in spec.variants})
        if folder is not None:
            folder.write_tables({"means": results.means, "differences": results.differences,
                                 "variants": results.variants})
    return results


def _task_id(task: Task, swept: dict[str, dict]) -> TaskId:
    """The task's identity; ``swept``: each variant's params as the manifest records them."""
    return TaskId(task.variant, task.replication, task.seed, task.inputs_sha256, swept[task.variant])


def _saved(folder: SweepFolder, todo: list[Task], swept: dict[str, dict],
           notify: Callable[[str], None]) -> dict[int, pd.DataFrame]:
    """The tables of the tasks already in the folder that pass their checks, by task index; each
    file that fails is named to ``notify`` (its task runs again and replaces it)."""
    frames = {}
    for i, t in enumerate(todo):
        frame, why = folder.read_task(_task_id(t, swept))
        if frame is not None:
            frames[i] = frame
        elif why is not None:
            notify(f"{folder.shown}/{_task_id(t, swept).name} {why}: running that task again")
    return frames


def _warn(text: str) -> None:
    import warnings

    warnings.warn(text, UserWarning, stacklevel=5)  # the caller of sweep()


def sweep_inputs(spec: Sweep) -> list[Path]:
    """The files a sweep reads: its sweep file, the base scenario and every variant's trace and
    points files (a swept trace gives several)."""
    found = dict.fromkeys([Path(spec.source)] if Path(spec.source).is_file() else [])
    found.update(dict.fromkeys([Path(spec.base)]))
    seen = set()
    for v in spec.variants:  # variants mostly share their files: each distinct workload once
        key = (str(v.scenario.base_dir), v.scenario.workload.trace,
               tuple(c.scaling.fit if c.scaling else None for c in v.scenario.workload.classes))
        if key not in seen:
            seen.add(key)
            found.update(dict.fromkeys(scenario_inputs(v.scenario)))
    return list(found)


def _task_meta(source: str, params: dict[str, dict], task: Task) -> dict:
    """What a task's Parquet file records about itself beside its identity (key ``costsim.sweep``)."""
    return json.loads(json.dumps({"source": source, "params": params[task.variant]}, default=str))


__all__ = ["METRICS", "SweepResults", "Task", "TaskOutput", "run_task", "sweep", "task_outputs", "tasks"]
