"""The Sensitivity and Sweep tabs' runs, without Streamlit (``decision_tabs.py`` lays them out):
the dashboard's small grid over a scenario's numeric fields, and tornadoes and sweeps run in a
child process with the dashboard's limits (uploaded sweep output: ``sweep_upload.py``).

Why a child process: the dashboard's script is Streamlit's ``__main__``, so a process pool
(forkserver or spawn) started from it would re-run the app in every worker; a fresh interpreter
(``python -c``, as ``dashboard.simulate_bounded``) has a harmless ``__main__``, gets a memory limit,
and is killed (with its workers: it leads its own process group) when the page moves on.
"""

from __future__ import annotations

import itertools
import math
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel

from costsim.errors import CostsimError
from costsim.dashboard import Limits, RunStopped
from costsim.dashboard.workers import SLOTS
from costsim.runs.paths import PathError, named, resolve, scalar_kinds
from costsim.runs.sweepfile import Sweep, parse_set
from costsim.runs.variants import VariantBuilder
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
    for k, values in enumerate(itertools.product(*grid.values())):
        params = dict(zip(grid, values, strict=True))
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
    """What the child runs: ``kind`` "tornado" (of ``scenario``, ``replications``) or "sweep" (``spec``)."""

    kind: str
    executor: str = "local"
    scenario: Scenario | None = None
    replications: int = 1
    spec: Sweep | None = None


def _execute(job: Job, progress: Callable[[int, int], None]) -> Any:
    if job.kind == "tornado":
        from costsim.decisions.sensitivity import tornado

        return tornado(job.scenario, replications=job.replications, executor=job.executor, progress=progress)
    from costsim.runs.sweep import sweep

    return sweep(job.spec, executor=job.executor, workers=POOL_WORKERS, progress=progress)


POOL_WORKERS = min(2, os.cpu_count() or 1)  # a grid's pool on "processes"


def _pool(job: Job) -> int:
    """Pool workers the child starts for ``job`` (0: it runs in the child)."""
    return POOL_WORKERS if job.kind == "sweep" and job.executor == "processes" else 0


def child_main() -> None:
    """Body of the child (``python -c``): reads (Job, memory bytes), writes pickled messages
    ("progress", done, total) as it goes, then the reply (as ``dashboard.child_main``)."""
    reply_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything a library prints goes to stderr, not into the replies
    job, memory_bytes = pickle.load(sys.stdin.buffer)
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    except (ImportError, AttributeError, ValueError, OSError):
        pass

    def send(message: tuple) -> None:
        pickle.dump(message, reply_out, protocol=pickle.HIGHEST_PROTOCOL)
        reply_out.flush()

    try:
        reply: tuple = ("ok", _execute(job, lambda done, total: send(("progress", done, total))))
    except CostsimError as err:
        reply = ("scenario_error", err.source, err.problems)
    except MemoryError:
        reply = ("memory",)
    except Exception as exc:  # a bug: the parent shows a plain message
        import traceback

        reply = ("failed", type(exc).__name__, traceback.format_exc())
    send(reply)
    reply_out.close()


_CHILD = "from costsim.dashboard.decision_runs import child_main; child_main()"


def run_bounded(job: Job, limits: Limits = Limits(), on_progress: Callable[[int, int, float], None] | None = None,
                poll_s: float = 0.25) -> Any:
    """``job``'s result (a Tornado or SweepResults), run in a child process limited to
    ``limits.run_memory_gb`` per process and stopped when no run finishes within
    ``limits.run_seconds`` (each run is one simulation of every option, what that limit bounds).
    ``on_progress(done, total, seconds)`` every ``poll_s`` and after each run: where Streamlit stops
    the script on a rerun; whatever leaves this function kills the child and its workers first.
    The child and its pool hold that many of the server's worker slots (``workers.SLOTS``) while
    they live: the work waits for them."""
    needed = 1 + _pool(job)
    if needed > limits.worker_slots:
        raise RunStopped(f"This needs {needed} worker processes at once; the dashboard runs at most "
                         f"{limits.worker_slots} ({Limits.ENV['workers']}). Choose Run on: local.")
    SLOTS.acquire(needed, limits.worker_slots, None if on_progress is None else lambda s: on_progress(0, 0, s), poll_s)
    try:
        return _run_child(job, limits, on_progress, poll_s)
    finally:
        SLOTS.release(needed)


def _run_child(job: Job, limits: Limits, on_progress: Callable[[int, int, float], None] | None,
               poll_s: float) -> Any:
    package_root = str(Path(__file__).resolve().parent.parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
    payload = pickle.dumps((job, int(limits.process_memory_gb * 2**30)), protocol=pickle.HIGHEST_PROTOCOL)
    child = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                             start_new_session=True)  # its own group: its pool workers are killed with it
    messages: queue.Queue = queue.Queue()

    def read() -> None:
        try:
            while True:
                messages.put(pickle.load(child.stdout))
        except Exception:  # EOF or a broken pipe: the child is gone
            messages.put(None)

    reader = threading.Thread(target=read, name="costsim-child-reader", daemon=True)
    reader.start()
    start = last = time.monotonic()
    done = total = 0
    try:
        child.stdin.write(payload)
        child.stdin.close()
        while True:
            try:
                message = messages.get(timeout=poll_s)
            except queue.Empty:
                message = ()
            now = time.monotonic()
            if message and message[0] == "progress":
                done, total, last = message[1], message[2], now
            elif message is None or message:
                break
            elif now - last > limits.run_seconds:
                raise RunStopped(f"No run finished within the dashboard's limit of {limits.run_seconds:g} s and the "
                                 "work was stopped. Shorten the horizon or lower the arrival scale, use the command "
                                 f"line (`costsim sweep`), or raise the limit ({Limits.ENV['run_seconds']}).")
            if on_progress is not None:
                on_progress(done, total, now - start)
    finally:
        if child.poll() is None:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                child.kill()
        child.wait()
        for pipe in (child.stdin, child.stdout):
            if pipe is not None and not pipe.closed:
                pipe.close()
        reader.join(timeout=1)
    reply = message if message else ("memory",) if child.returncode < 0 else ("failed", f"exit {child.returncode}", "")
    if reply[0] == "ok":
        return reply[1]
    if reply[0] == "scenario_error":
        raise ScenarioError(reply[1], reply[2])
    if reply[0] == "memory":
        raise RunStopped(f"The work needed more than the dashboard's {limits.process_memory_gb:g} GiB of memory and was "
                         f"stopped. Use fewer variants or a shorter horizon, or raise the limit "
                         f"({Limits.ENV['run_memory_gb']}).")
    raise RunStopped(f"The work failed ({reply[1]}). This is a bug in costsim: please report it with the scenario.")


__all__ = ["MAX_AXES", "MAX_REPLICATIONS", "MAX_VARIANTS", "Job", "grid_sweep", "numeric_paths", "run_bounded"]
