"""The Sensitivity and Sweep tabs' runs, without Streamlit (``decision_tabs.py`` lays them out):
the dashboard's small grid over a scenario's numeric fields, and tornadoes and sweeps run in a
worker process (``costsim.runs.isolated``) with the dashboard's limits (uploaded sweep output:
``sweep_upload.py``).

Why a worker process: the dashboard's script is Streamlit's ``__main__``, so a process pool
(forkserver or spawn) started from it would re-run the app in every worker; a worker is a fresh
interpreter with a harmless ``__main__``, gets a memory limit, and is killed (with its pool: it
leads its own process group) when the page moves on.
"""

from __future__ import annotations

import itertools
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel

from costsim.dashboard import Limits, RunStopped
from costsim.dashboard.uploads import DEFAULT_LIMITS
from costsim.errors import CostsimError
from costsim.runs.isolated import Call, Worker, WorkerOutOfMemory, WorkerStopped, WorkerTimedOut, run_calls
from costsim.runs.isolated_child import Child
from costsim.runs.paths import PathError, named, resolve, scalar_kinds
from costsim.runs.sweepfile import Sweep, parse_set
from costsim.runs.variants import VariantBuilder
from costsim.runs.workerpool import WorkerPool
from costsim.scenario import Problem, Scenario, ScenarioError

MAX_VARIANTS = 24  # a grid the dashboard runs: more belongs to `costsim sweep`
MAX_REPLICATIONS = 5
MAX_AXES = 2
_WHOLE_SCENARIO = ("economics", "workload")  # sections whose numeric fields a grid may vary


# ------------------------------------------------------------------ a small grid on a Scenario


def _numeric(annotation: Any) -> bool:
    kinds = scalar_kinds(annotation)
    return bool(kinds & {int, float}) and bool not in kinds


def _model_of(annotation: Any) -> type[BaseModel]:
    """The schema model inside an annotation (``Economics | None`` -> Economics)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next(m for m in map(_model_of_or_none, get_args(annotation)) if m is not None)


def _model_of_or_none(annotation: Any) -> type[BaseModel] | None:
    try:
        return _model_of(annotation)
    except StopIteration:
        return None


def numeric_paths(scenario: Scenario) -> list[str]:
    """The dotted paths of the scenario's numeric fields a grid may vary: every option's
    (``options.<name>.gpus``, ``.price_per_gpu_hour``, ...), then ``workload.*``, ``economics.*``
    (null fields included: they take the catalog's value until set) and ``horizon_days``."""
    data = scenario.model_dump(mode="json")
    candidates = [f"options.{o.name}.{f}" for o in scenario.options for f in type(o).model_fields]
    for section in _WHOLE_SCENARIO:
        candidates += [f"{section}.{f}" for f in _model_of(Scenario.model_fields[section].annotation).model_fields]
    candidates.append("horizon_days")
    out = []
    for path in candidates:
        try:
            _, annotation = resolve(data, path)
        except PathError:  # an option name with dots that another name shadows: not offered
            continue
        if _numeric(annotation):
            out.append(path)
    return out


def grid_sweep(scenario: Scenario, axes: dict[str, str], replications: int = 1, seed: int | None = None) -> Sweep:
    """A sweep over the product of ``axes`` (dotted path -> comma-separated values, "256, 384"),
    at most ``MAX_AXES`` paths from ``numeric_paths`` and ``MAX_VARIANTS`` variants, each variant
    built and checked as a sweep file's are; ``replications`` 1 … ``MAX_REPLICATIONS`` seeded from
    ``seed`` (None: the scenario's). ScenarioError (source "sweep grid") naming the path otherwise."""
    source = "sweep grid"
    if not 1 <= len(axes) <= MAX_AXES:
        raise ScenarioError(source, [Problem((), f"choose one or two fields to vary (got {len(axes)})")])
    if isinstance(replications, bool) or not isinstance(replications, int) or not 1 <= replications <= MAX_REPLICATIONS:
        raise ScenarioError(source, [Problem(("replications",), f"must be 1 … {MAX_REPLICATIONS} (got {replications!r})")])
    allowed = set(numeric_paths(scenario))
    builder = VariantBuilder(scenario, source=source)
    grid, locs, problems = {}, {}, []
    for path, text in axes.items():
        if path not in allowed:
            problems.append(Problem((path,), "is not a numeric field of this scenario"))
            continue
        try:
            _, values = parse_set(f"{path}={text}")
        except CostsimError as err:
            problems.append(Problem((path,), err.problems[0].message))
            continue
        bad = [v for v in values if isinstance(v, bool) or not isinstance(v, (int, float))]
        if bad:
            problems.append(Problem((path,), f"{bad[0]!r} is not a number: give numbers separated by commas"))
            continue
        grid[path] = tuple(dict.fromkeys(values))  # a value given twice is one variant
        locs[path] = builder.locate(path)
    if problems:
        raise ScenarioError(source, problems)
    count = math.prod(len(v) for v in grid.values())
    if count > MAX_VARIANTS:
        raise ScenarioError(source, [Problem((next(iter(grid)),), f"{count} variants: the dashboard runs at most "
                                             f"{MAX_VARIANTS}; use costsim sweep for more")])
    variants = []
    for k, point in enumerate(itertools.product(*grid.values())):
        params = dict(zip(grid, point, strict=True))
        vid = f"v{k:03d}"
        shown = ", ".join(f"{p}={v}" for p, v in params.items())
        try:  # the sweep files' and the knobs' naming rule; a refused variant as written
            variants.append(builder.build(vid=vid, params=params, locs=locs, note=shown))
        except CostsimError as err:  # options.0.gpus -> options.own-256.gpus: the name the user chose
            written = builder.edited(params=params, locs=locs)
            raise ScenarioError(err.source, [Problem((named(written, p.loc),) if p.loc else (), p.message)
                                             for p in err.problems]) from None
    return Sweep(source, Path(scenario.base_dir), tuple(variants), replications,
                 scenario.seed if seed is None else seed)


# ------------------------------------------------------------------ running, bounded, with progress


@dataclass(frozen=True)
class Job:
    """What the child runs: ``kind`` "tornado" (of ``scenario``, ``replications``), "sweep"
    (``spec``) or "plan" (``costsim plan`` of ``scenario`` over ``vary``, ``trials`` in batches of
    ``batch``, at most ``max_runs`` simulations: ``plan_tab.py``)."""

    kind: str
    executor: str = "local"
    scenario: Scenario | None = None
    replications: int = 1
    spec: Sweep | None = None
    vary: tuple[str, ...] = ()
    trials: int = 12
    batch: int = 4
    max_runs: int = 120


def _execute(job: Job, progress: Callable[[int, int], None]) -> Any:
    if job.kind == "plan":
        from costsim.dashboard.plan_runs import plan_of

        assert job.scenario is not None  # a plan's Job names its scenario
        return plan_of(job.scenario, list(job.vary), replications=job.replications, trials=job.trials,
                       batch=job.batch, max_runs=job.max_runs, executor=job.executor, workers=POOL_WORKERS,
                       progress=progress)
    if job.kind == "tornado":
        from costsim.decisions.sensitivity import tornado

        assert job.scenario is not None  # a tornado's Job names its scenario
        return tornado(job.scenario, replications=job.replications, executor=job.executor, progress=progress)
    from costsim.runs.sweep import sweep

    assert job.spec is not None  # a sweep's Job names its sweep
    return sweep(job.spec, executor=job.executor, workers=POOL_WORKERS, progress=progress)


POOL_WORKERS = min(2, os.cpu_count() or 1)  # a grid's pool on "processes"
RUN_JOB = "costsim.dashboard.decision_runs:run_job_in_worker"  # what the worker runs


def _pool(job: Job) -> int:
    """Pool workers the child starts for ``job`` (0: it runs in the child)."""
    return POOL_WORKERS if job.kind in ("sweep", "plan") and job.executor == "processes" else 0


def run_job_in_worker(job: Job, child: Child) -> Any:
    """``job``'s result in the worker, each run's progress sent to the parent as (done, total)."""
    return _execute(job, lambda done, total: child.progress((done, total)))


def run_bounded(job: Job, limits: Limits = DEFAULT_LIMITS, on_progress: Callable[[int, int, float], None] | None = None,
                poll_s: float = 0.25, *, pool: WorkerPool | None = None) -> Any:
    """``job``'s result (a Tornado, SweepResults or WordedPlan), run in a worker process limited to
    ``limits.run_memory_gb`` per process and stopped when no run finishes within
    ``limits.run_seconds`` (each run is one simulation of every option, what that limit bounds).
    ``on_progress(done, total, seconds)`` every ``poll_s`` and after each run: where Streamlit stops
    the script on a rerun; whatever leaves this function kills the worker and its pool first.
    The worker and its pool hold that many of ``pool``'s processes (the server's; None: a pool of
    this call's own) while they live: the work waits for them."""
    needed = 1 + _pool(job)
    if needed > limits.worker_slots:
        raise RunStopped(f"This needs {needed} worker processes at once; the dashboard runs at most "
                         f"{limits.worker_slots} ({Limits.ENV['workers']}). Choose Run on: local.")
    pool = WorkerPool(capacity=limits.worker_slots) if pool is None else pool
    pool.acquire(needed, capacity=limits.worker_slots,
                 on_wait=None if on_progress is None else lambda s: on_progress(0, 0, s), poll_s=poll_s)
    try:
        return _run_worker(job, limits, on_progress, poll_s)
    finally:
        pool.release(needed)


def _run_worker(job: Job, limits: Limits, on_progress: Callable[[int, int, float], None] | None,
                poll_s: float) -> Any:
    counts = [0, 0]  # runs done, runs in all: the latest progress message
    start = time.monotonic()

    def told(_index: int, message: tuple[int, int]) -> None:
        counts[:] = message
        if on_progress is not None:
            on_progress(counts[0], counts[1], time.monotonic() - start)

    def waited(seconds: float) -> None:
        if on_progress is not None:
            on_progress(counts[0], counts[1], seconds)

    worker = Worker(own_group=True)  # its own group: its pool's workers are killed with it
    try:
        (reply,) = run_calls([(worker, Call(target=RUN_JOB, payload=job,
                                            memory_bytes=int(limits.process_memory_gb * 2**30)))],
                             limit_s=limits.run_seconds, poll_s=poll_s, on_wait=waited, on_progress=told)
    finally:
        worker.cancel()  # done with it: its pool too, whatever state it is in
    err = reply.error
    if err is None:
        return reply.value
    if isinstance(err, WorkerTimedOut):
        raise RunStopped(f"No run finished within the dashboard's limit of {limits.run_seconds:g} s and the "
                         "work was stopped. Shorten the horizon or lower the arrival scale, use the command "
                         f"line (`costsim sweep`), or raise the limit ({Limits.ENV['run_seconds']}).")
    if isinstance(err, WorkerOutOfMemory):
        raise RunStopped(f"The work needed more than the dashboard's {limits.process_memory_gb:g} GiB of memory and was "
                         f"stopped. Use fewer variants or a shorter horizon, or raise the limit "
                         f"({Limits.ENV['run_memory_gb']}).")
    if isinstance(err, WorkerStopped):
        raise RunStopped(f"The work failed ({err.message}). This is a bug in costsim: please report it with the "
                         "scenario.")
    raise err


__all__ = ["MAX_AXES", "MAX_REPLICATIONS", "MAX_VARIANTS", "Job", "grid_sweep", "numeric_paths", "run_bounded"]
