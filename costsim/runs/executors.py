"""Where a sweep's tasks run: in this process, on a process pool, or on a Dask cluster.

``open_executor(name, workers, address)`` is a context manager yielding ``run(fn, tasks)``, an
iterator of ``(index, fn(tasks[index]))`` in the order the tasks finish. The caller (the main
process) writes each result as it arrives, so a worker never writes files and a worker that dies
loses only its own task. Leaving the ``with`` block early (an error, Ctrl-C) stops the workers and
drops the tasks not yet started.

A task's ``ScenarioError`` crosses the process boundary as ``TaskFailed`` (a plain exception of its
source and problems, which marks it as the task's own input problem, apart from anything the pool
or the cluster raised) and is raised again in the main process as the ScenarioError it was.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import enum
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from typing import Any

from costsim.errors import CostsimError, ExecutorError
from costsim.runs.scheduler import SchedulerProblem, parse_address, probe
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
Run = Callable[[Callable[[Any], Any], Sequence[Any]], Iterator[tuple[int, Any]]]


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


def _ignore_sigint() -> None:
    """Pool workers ignore Ctrl-C: the terminal sends it to the whole process group, and the main
    process alone decides what stops (it terminates the workers), without a traceback from each."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


WATCH_S = 1.0  # how often a pool worker checks that the process that started the sweep is alive


def _pool_worker_init(main_pid: int) -> None:
    """``_ignore_sigint``, and exit when the sweep's process is gone (killed with SIGKILL, or by
    the out-of-memory killer: nothing runs in it to stop the workers, which would otherwise stay,
    each holding its task's memory, with the forkserver and resource tracker they keep alive)."""
    _ignore_sigint()

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


@contextlib.contextmanager
def open_executor(name: str, workers: int, address: str | None = None) -> Iterator[Run]:
    """The executor ``name`` (one of ``EXECUTORS``) with ``workers`` processes (ignored by "local"
    and when ``address`` names an existing Dask scheduler)."""
    if name == "local":
        yield _in_process
    elif name == "processes":
        with _process_pool(workers) as run:
            yield run
    elif name == "dask":
        with _dask(workers, address) as run:
            yield run
    else:  # the callers check the name; this is a programming error
        raise ValueError(f"unknown executor {name!r}")


def _in_process(fn: Callable[[Any], Any], tasks: Sequence[Any]) -> Iterator[tuple[int, Any]]:
    for i, task in enumerate(tasks):
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


@contextlib.contextmanager
def _process_pool(workers: int) -> Iterator[Run]:
    ctx = multiprocessing.get_context(start_method())
    if ctx.get_start_method() == "forkserver":
        ctx.set_forkserver_preload(["costsim.runs.sweep"])  # takes effect when the server starts
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_pool_worker_init,
                               initargs=(os.getpid(),))
    try:
        yield partial(_pool_results, pool)
    except BaseException:
        _halt(pool)
        raise
    pool.shutdown(wait=True)


def _pool_results(pool: ProcessPoolExecutor, fn, tasks) -> Iterator[tuple[int, Any]]:
    futures = {pool.submit(guarded, fn, task): i for i, task in enumerate(tasks)}
    for future in as_completed(futures):
        try:
            result = future.result()
        except TaskFailed as failed:
            raise failed.error() from None
        except BrokenProcessPool:
            raise ExecutorError("processes", "a worker process died (out of memory, or killed); with an output "
                                "folder the tasks finished before it are saved, and running the same sweep "
                                "again resumes") from None
        yield futures[future], result


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


@contextlib.contextmanager
def _dask(workers: int, address: str | None) -> Iterator[Run]:
    if not dask_available():
        raise ExecutorError("dask", DASK_MISSING)
    import dask
    import distributed

    cluster = None
    try:
        if address is not None:
            client = _client(distributed, address)
            try:
                _check_workers(client, address)
            except BaseException:
                _close(client)
                raise
        else:
            # One single-threaded worker process per core, as the process pool; no dashboard port
            # (parallel runs would fight over 8787), warnings only when something is wrong.
            with dask.config.set(LOCAL_CLUSTER_CONFIG):
                cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                                   dashboard_address=None, silence_logs=logging.ERROR)
            client = distributed.Client(cluster, set_as_default=False)
            client.run(_ignore_sigint)  # its workers share our terminal: Ctrl-C is ours to handle
    except OSError as err:
        if cluster is not None:
            cluster.close()
        where = f"the Dask scheduler at {address}" if address else "a Dask LocalCluster"
        raise ExecutorError("dask", f"cannot reach {where}: {err}") from None
    where = f"the Dask scheduler at {address}" if address else "the Dask LocalCluster's scheduler"
    try:
        yield partial(_dask_results, client, where)
    except SchedulerLost:
        # Closing a client whose scheduler is gone logs its cancelled reconnect's traceback; the
        # SchedulerLost message says all there is to say.
        with _quiet("distributed"):
            _close(client)
        raise
    finally:
        _close(client)  # a second close is a no-op
        if cluster is not None:
            cluster.close()


@contextlib.contextmanager
def _quiet(prefix: str) -> Iterator[None]:
    """Only CRITICAL records from the loggers named ``prefix`` or ``prefix.*`` while the block runs
    (each one: distributed sets levels on its children, which then ignore their parent's)."""
    names = [prefix] + [n for n in list(logging.root.manager.loggerDict) if n.startswith(prefix + ".")]
    logs = [logging.getLogger(n) for n in names]
    levels = [log.level for log in logs]
    for log in logs:
        log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for log, level in zip(logs, levels, strict=True):
            log.setLevel(level)


def _client(distributed, address: str):
    """A client of the scheduler at ``address``, once ``probe`` has heard its greeting (bounded
    in time); anything the client then raises is an ExecutorError, not a traceback."""
    try:
        probe(check_address(address), CONNECT_TIMEOUT_S)
    except SchedulerProblem as err:
        raise ExecutorError("dask", str(err)) from None
    try:
        return distributed.Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except Exception as err:  # noqa: BLE001 — it greeted as Dask does, then failed: say how
        raise ExecutorError("dask", f"cannot connect to the Dask scheduler at {address} ({type(err).__name__}: "
                            f"{err}); check that it runs distributed {distributed.__version__}") from None


def _close(client) -> None:
    """Close a client within ``CONNECT_TIMEOUT_S`` even when its scheduler is gone (distributed
    would try to reconnect, logging each attempt's traceback)."""
    try:
        client.close(timeout=CONNECT_TIMEOUT_S)
    except Exception:  # noqa: BLE001 — closing a client of a dead scheduler: nothing left to save
        pass


def versions() -> dict[str, str]:
    """What must match between the machine running the sweep and every worker for the tables to be
    identical, bit for bit: costsim's and numpy's versions (numpy's generators and arithmetic) and
    Python's (pickle and float formatting)."""
    import platform

    import numpy

    from costsim._version import __version__
    return {"costsim": __version__, "numpy": numpy.__version__, "python": platform.python_version()}


def _check_workers(client, address: str) -> None:
    """Wait for a worker of the scheduler at ``address``; refuse workers whose ``versions()`` differ
    from ours (their runs would differ from a local run, or fail in the middle of the sweep)."""
    try:
        client.wait_for_workers(1, timeout=CONNECT_TIMEOUT_S)
    except TimeoutError:  # distributed's WorkerStartTimeoutError is one
        raise ExecutorError("dask", f"the Dask scheduler at {address} has no worker (waited "
                            f"{CONNECT_TIMEOUT_S} s): start some with `dask worker tcp://{address} --nthreads 1`") from None
    ours = versions()
    try:
        theirs = client.run(versions)  # this module's function, by reference: it needs costsim there
    except Exception as err:  # noqa: BLE001 — a worker without costsim fails to unpickle it
        raise ExecutorError("dask", f"the workers of {address} cannot run costsim ({type(err).__name__}: "
                            f"{err}); install costsim {ours['costsim']} on each") from None
    wrong = [f"{worker} has {', '.join(f'{k} {v}' for k, v in got.items() if ours[k] != v)}"
             for worker, got in sorted(theirs.items()) if got != ours]
    if wrong:
        want = ", ".join(f"{k} {v}" for k, v in ours.items())
        raise ExecutorError("dask", f"workers differ from this machine ({want}): {'; '.join(wrong[:3])}"
                            + (f" and {len(wrong) - 3} more" if len(wrong) > 3 else "")
                            + "; their results would not be those of a local run")


def _dask_results(client, where: str, fn, tasks) -> Iterator[tuple[int, Any]]:
    import distributed

    futures = client.map(partial(guarded, fn), list(tasks), pure=False)
    index = {f.key: i for i, f in enumerate(futures)}
    finished = 0
    try:
        for future in distributed.as_completed(futures, loop=client.loop):
            try:
                result = future.result()
            except TaskFailed as failed:
                raise failed.error() from None
            except distributed.KilledWorker as err:
                raise ExecutorError("dask", f"workers died running a task ({err}); with an output folder the tasks "
                                    "finished before are saved, and running the same sweep again resumes") from None
            yield index[future.key], result
            finished += 1
    except (concurrent.futures.CancelledError, distributed.comm.CommClosedError) as err:
        # costsim cancels nothing while it waits: the client cancels every future when it loses
        # its scheduler (distributed's FutureCancelledError).
        raise SchedulerLost(where, type(err).__name__, finished) from None
