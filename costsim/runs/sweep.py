"""Running a sweep: one task per (variant, replication), on an executor, into a Parquet dataset.

Replication r of every variant simulates with the same seed (common random numbers: every
difference between variants and options is paired). The tasks (``costsim.runs.taskrun``: a small
picklable ``Task`` each, run in groups that share a simulation in whichever process the executor
chooses) come back to the calling process through ``task_outputs``, the one task loop, which
``run_sweep`` writes each one from as it arrives (``costsim.runs.dataset``); the tables are
assembled in task order, so they are the same, bit for bit, whatever the executor and however many
workers finished in whatever order.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from costsim.runs import arguments, stats
from costsim.runs.dataset import SweepFolder, manifest
from costsim.runs.executors import executor_settings, open_executor
from costsim.runs.identity import code_identity
from costsim.runs.outfiles import scenario_inputs
from costsim.runs.sweepfile import Sweep, load_sweep
from costsim.runs.taskfiles import TaskId
from costsim.runs.taskrun import (
    LABELS,
    Task,
    TaskOutput,
    bytes_sha256,
    inputs_sha256,
    run_task,
    shared_runs,
    task_outputs,
    tasks,
)

# The summary columns decisions are made on: means and paired differences are computed for these
# (``runs`` keeps every summary column).
METRICS = [
    "total_cost_usd", "cash_spent_usd", "queue_delay_mean_h", "queue_delay_p95_h", "utilization", "jobs_completed",
    "iterations_per_day", "cost_per_iteration_usd",
]


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


def sweep_manifest(spec: Sweep) -> dict:
    """The dataset's ``sweep.json``: what identifies the sweep, for resuming. ``base`` is the base
    scenario's absolute path, so that a report run from any folder finds (and protects) it."""
    from costsim._version import __version__

    # Variants usually share one trace: hash each file once, not once per variant.
    file_sha256 = functools.cache(lambda path: bytes_sha256(path.read_bytes()))
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
    executor, workers, address = executor_settings(executor, workers, address, "sweep")
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
        groups = shared_runs([todo[i] for i in pending])  # a worker per group at most: tasks sharing a run go together
        run = stack.enter_context(open_executor(executor, min(workers, len(groups)), address)) if pending else None
        if folder is not None:
            stack.enter_context(folder)  # checks again under the lock
        params = {v.id: v.params for v in spec.variants}
        # run is None exactly when nothing is pending.
        for k, output in task_outputs(run, [todo[i] for i in pending], progress, groups=groups):
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


__all__ = ["LABELS", "METRICS", "SweepResults", "Task", "TaskOutput", "inputs_sha256", "run_sweep", "run_task", "sweep",
           "task_outputs", "tasks"]
