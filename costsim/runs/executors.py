"""Where a sweep's tasks run: in this process, on a process pool, or on a Dask cluster.

``open_executor(name, workers, address)`` is a context manager yielding ``Lanes``: ``slots`` tasks
can run at once, ``start(fn, task)`` starts one and returns its handle, ``wait(handles)`` blocks
until some of them have finished and returns those, ``result(handle)`` is its value (or raises its
error) and ``abandon(handles)`` gives up on tasks whose results nobody wants (a task not yet started
never starts). Calling the lanes, ``run(fn, tasks)``, is an iterator of ``(index, fn(tasks[index]))``
in the order the tasks finish. The caller (the main process) writes each result as it arrives, so a
worker never writes files and a worker that dies loses only its own task. Leaving the ``with``
block early (an error, Ctrl-C), or with abandoned tasks still running, stops the workers and drops
the tasks not yet started.

In this process a task runs when it is waited for, so one started and abandoned before then never
runs; a pool or Dask starts it at once. A task's ``ScenarioError`` crosses the process boundary as
``TaskFailed`` (a plain exception of its source and problems, which marks it as the task's own input
problem, apart from anything the pool or the cluster raised) and is raised again in the main process
as the ScenarioError it was. Dask's lanes live in ``costsim.runs.dasklanes``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import enum
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from costsim.errors import CostsimError, ExecutorError
from costsim.runs import arguments
from costsim.runs.scheduler import SchedulerProblem, parse_address
from costsim.scenario.errors import Problem, ScenarioError


class Executor(str, enum.Enum):  # noqa: UP042 -- typer shows str-and-Enum choices by value; a StrEnum would change str(member)
    """Where a sweep's tasks run: this process, a process pool, or Dask (the CLI's choices)."""

    local = "local"
    processes = "processes"
    dask = "dask"


EXECUTORS = tuple(e.value for e in Executor)  # the names every public function and the CLI accept
DASK_MISSING = "needs Dask, which is not installed: pip install 'costsim[dask]'"
CONNECT_TIMEOUT_S = 10  # how long to wait for a Dask scheduler named by --address, and for a worker
# Dask starts its workers with MALLOC_TRIM_THRESHOLD_=65536 (to give memory back to the system
# sooner). Setting it also switches off glibc's adaptive mmap threshold, so every numpy array over
# 128 KiB is mapped and unmapped afresh: a 60-day baseline task took 0.30 CPU-s instead of 0.19.
# The LocalCluster we start leaves glibc's defaults; for a cluster of your own see the README.
LOCAL_CLUSTER_CONFIG = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}
Run = Callable[[Callable[[Any], Any], Sequence[Any]], Iterator[tuple[int, Any]]]  # calling ``Lanes``


class SchedulerLost(ExecutorError):
    """The Dask scheduler went away mid-sweep after ``finished`` tasks had come back (each one
    written by the caller before it asked for the next)."""

    def __init__(self, where: str, reason: str, finished: int):
        self.where, self.reason, self.finished = where, reason, finished
        super().__init__("dask", f"lost {where} ({reason}) after {finished} task(s) finished: with an output "
                         "folder they are saved, and running the same sweep again resumes")

    def __reduce__(self) -> tuple[type[CostsimError], tuple[Any, ...]]:  # rebuilt from its own fields, not ExecutorError's
        return (SchedulerLost, (self.where, self.reason, self.finished))


class TaskFailed(Exception):
    """A task's ScenarioError as it leaves a worker: marked as the task's own input problem."""

    def __init__(self, source: str, problems: tuple[Problem, ...]):
        super().__init__(source, problems)

    def error(self) -> ScenarioError:
        return ScenarioError(self.args[0], self.args[1])


def guarded(fn: Callable[[Any], Any], task: Any) -> Any:
    """``fn(task)`` in a worker, its ScenarioError turned into a picklable ``TaskFailed``."""
    try:
        return fn(task)
    except ScenarioError as err:
        raise TaskFailed(err.source, tuple(err.problems)) from None


def ignore_sigint() -> None:
    """Pool workers ignore Ctrl-C: the terminal sends it to the whole process group, and the main
    process alone decides what stops (it terminates the workers), without a traceback from each."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


WATCH_S = 1.0  # how often a pool worker checks that the process that started the sweep is alive


def _pool_worker_init(main_pid: int) -> None:
    """``ignore_sigint``, and exit when the sweep's process is gone (killed with SIGKILL, or by
    the out-of-memory killer: nothing runs in it to stop the workers, which would otherwise stay,
    each holding its task's memory, with the forkserver and resource tracker they keep alive)."""
    ignore_sigint()

    def watch() -> None:
        while True:
            time.sleep(WATCH_S)
            try:
                os.kill(main_pid, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:  # alive, under another user (pid reused): keep going
                pass

    threading.Thread(target=watch, name="costsim-watch-parent", daemon=True).start()


class Lanes:
    """Where tasks run (see the module): ``slots`` at once; ``start``, ``wait``, ``result`` and
    ``abandon`` are each executor's, calling them runs a list of tasks to the end."""

    slots = 1

    def start(self, fn: Callable[[Any], Any], task: Any) -> Any:
        raise NotImplementedError

    def wait(self, handles: Collection[Any]) -> list[Any]:
        raise NotImplementedError

    def result(self, handle: Any) -> Any:
        raise NotImplementedError

    def abandon(self, handles: Collection[Any]) -> list[Any]:
        """Give up on ``handles``: those not started never start; returned, those that were
        running and still are (they hold a lane until ``wait`` returns them)."""
        raise NotImplementedError

    def __call__(self, fn: Callable[[Any], Any], tasks: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        """``(index, fn(tasks[index]))`` in the order the tasks finish, every task started at once
        (a pool and Dask queue them for their workers)."""
        raise NotImplementedError


@contextlib.contextmanager
def open_executor(name: str, workers: int, address: str | None = None) -> Iterator[Lanes]:
    """The executor ``name`` (one of ``EXECUTORS``) with ``workers`` processes (ignored by "local"
    and when ``address`` names an existing Dask scheduler)."""
    if name == "local":
        yield InProcess()
    elif name == "processes":
        with _process_pool(workers) as lanes:
            yield lanes
    elif name == "dask":
        from costsim.runs.dasklanes import dask_lanes

        with dask_lanes(workers, address) as lanes:
            yield lanes
    else:  # the callers check the name; this is a programming error
        raise ValueError(f"unknown executor {name!r}")


class _Deferred:
    """A task of ``InProcess``: run when first waited for."""

    def __init__(self, fn: Callable[[Any], Any], task: Any) -> None:
        self.fn, self.task = fn, task
        self.ran = False
        self.value: Any = None
        self.error: BaseException | None = None


class InProcess(Lanes):
    """This process, one task at a time: a task runs when it is waited for (the first of those
    waited for that has not run), so one abandoned before then never runs."""

    slots = 1

    def start(self, fn: Callable[[Any], Any], task: Any) -> _Deferred:
        return _Deferred(fn, task)

    def wait(self, handles: Collection[Any]) -> list[Any]:
        ran = [h for h in handles if h.ran]
        if ran:
            return ran
        first: _Deferred = next(iter(handles))
        first.ran = True
        try:
            first.value = first.fn(first.task)
        except Exception as exc:  # raised by result(), where a pool or Dask would raise it
            first.error = exc
        return [first]

    def result(self, handle: Any) -> Any:
        if handle.error is not None:
            raise handle.error
        return handle.value

    def abandon(self, handles: Collection[Any]) -> list[Any]:
        return []  # nothing runs until waited for

    def __call__(self, fn: Callable[[Any], Any], tasks: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        for i, task in enumerate(tasks):  # an error leaves as itself, with its traceback
            yield i, fn(task)


# -- process pool -----------------------------------------------------------------------------------

def start_method() -> str:
    """``forkserver`` where the system has it (Linux, macOS), else ``spawn``; never ``fork``.

    fork copies the calling process with every lock its other threads hold at that instant, and
    the sweep's caller has threads: the CLI's progress bar (rich refreshes from a thread), pyarrow's
    pools, a Dask client. A child born holding such a lock can deadlock. forkserver forks workers
    from a small server process started clean, with costsim imported once there (preloaded), so a
    worker starts in milliseconds instead of paying numpy/pandas/simpy imports as spawn does."""
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


class PoolLanes(Lanes):
    """A process pool's ``workers`` processes; its abandoned tasks that were already running are
    kept (``abandoned``) so that closing the pool stops them instead of waiting for them."""

    def __init__(self, pool: ProcessPoolExecutor, workers: int) -> None:
        self.pool, self.slots = pool, workers
        self.abandoned: list[Future] = []

    def start(self, fn: Callable[[Any], Any], task: Any) -> Future:
        return self.pool.submit(guarded, fn, task)

    def wait(self, handles: Collection[Any]) -> list[Any]:
        done, _ = concurrent.futures.wait(handles, return_when=concurrent.futures.FIRST_COMPLETED)
        return [h for h in handles if h in done]  # in the order given: the same order each time

    def result(self, handle: Any) -> Any:
        try:
            return handle.result()
        except TaskFailed as failed:
            raise failed.error() from None
        except BrokenProcessPool:
            raise ExecutorError("processes", "a worker process died (out of memory, or killed); with an output "
                                "folder the tasks finished before it are saved, and running the same sweep "
                                "again resumes") from None

    def abandon(self, handles: Collection[Any]) -> list[Any]:
        running = [h for h in handles if not h.cancel()]
        self.abandoned += running
        return running

    def busy(self) -> bool:
        """Whether an abandoned task is still running."""
        return any(not h.done() for h in self.abandoned)

    def __call__(self, fn: Callable[[Any], Any], tasks: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        futures = {self.start(fn, task): i for i, task in enumerate(tasks)}
        for future in concurrent.futures.as_completed(futures):
            yield futures[future], self.result(future)


@contextlib.contextmanager
def _process_pool(workers: int) -> Iterator[PoolLanes]:
    ctx = multiprocessing.get_context(start_method())
    if ctx.get_start_method() == "forkserver":
        ctx.set_forkserver_preload(["costsim.runs.taskrun"])  # what a worker runs; takes effect when the server starts
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_pool_worker_init,
                               initargs=(os.getpid(),))
    lanes = PoolLanes(pool, workers)
    try:
        yield lanes
    except BaseException:
        _halt(pool)
        raise
    if lanes.busy():  # nobody wants what they are computing: stop them rather than wait
        _halt(pool)
    else:
        pool.shutdown(wait=True)


def _halt(pool: ProcessPoolExecutor) -> None:
    """Drop the queued tasks and stop the running ones now (a task may run for minutes)."""
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14+
    if terminate is not None:
        terminate()
        return
    # Before 3.14 there is no public way; shutdown() forgets the processes, so take them first.
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        p.terminate()
    for p in processes:
        p.join(timeout=5)


# -- Dask -------------------------------------------------------------------------------------------

def dask_available() -> bool:
    """Whether ``dask.distributed`` imports (the optional extra ``costsim[dask]``)."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


def check_address(address: str) -> str:
    """A scheduler address costsim can use: ``HOST:PORT`` or ``tcp://HOST:PORT``; ExecutorError
    for another scheme (``ucx://``, ``http://``) or form (``costsim.runs.scheduler``)."""
    try:
        parse_address(address)
    except SchedulerProblem as err:
        raise ExecutorError("dask", str(err)) from None
    return address


def executor_settings(executor: Any, workers: Any, address: Any, function: str) -> tuple[str, int, str | None]:
    """The executor's name, worker count (default: one per core) and scheduler address, checked
    (a bad one named as ``function``'s argument); Dask's presence and the address's form too,
    before anything runs or is written."""
    if executor not in EXECUTORS:
        raise arguments.error(function, "executor", f"must be one of {', '.join(EXECUTORS)} (got {executor!r})")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise arguments.error(function, "workers", f"must be a whole number >= 1 or None (got {workers!r})")
    if address is not None:
        if executor != "dask":
            raise arguments.error(function, "address", f"names a Dask scheduler: use executor 'dask', not {executor!r}")
        if not isinstance(address, str) or not address.strip():
            raise arguments.error(function, "address", f"must be HOST:PORT of a Dask scheduler (got {address!r})")
    if executor == "dask":  # before anything is written, even when every task is saved already
        if not dask_available():
            raise ExecutorError("dask", DASK_MISSING)
        if address is not None:
            check_address(address)
    if address is not None and workers is not None:
        raise arguments.error(function, "workers", "has no effect with a Dask scheduler's address (its workers are "
                              "started with it: dask worker --nworkers N); leave it out")
    return executor, workers or available_cores(), address


def available_cores() -> int:
    """The cores this process may run on (a CPU limit or affinity mask counts), at least 1."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def worker_cap(workers: int, cores: int, force: bool = False) -> tuple[int, str | None]:
    """The worker processes to start for ``workers`` asked on ``cores`` cores, and a warning when
    fewer: each worker is a process simulating on a core of its own (with its own memory), so
    more than the cores only adds processes and memory; ``force`` starts them anyway."""
    if force or workers <= cores:
        return workers, None
    return cores, (f"--workers {workers} is more than the {cores} core(s) this process may use: starting {cores} "
                   "(more would only add processes and memory; --force-workers starts them anyway)")
