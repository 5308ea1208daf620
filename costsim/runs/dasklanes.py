"""Dask's lanes (``costsim.runs.executors``): a ``LocalCluster`` of single-threaded worker
processes started for the run, or the scheduler at an address, HOST:PORT, whose workers must run
the same costsim, numpy and Python as this machine (``versions``).

Imported only when Dask is asked for: ``dask.distributed`` is an optional extra and a heavy import.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
from collections.abc import Callable, Collection, Iterator, Sequence
from functools import partial
from typing import Any

from costsim.runs import executors
from costsim.runs.executors import (
    DASK_MISSING,
    LOCAL_CLUSTER_CONFIG,
    ExecutorError,
    Lanes,
    SchedulerLost,
    TaskFailed,
    check_address,
    dask_available,
    guarded,
    ignore_sigint,
)
from costsim.runs.scheduler import SchedulerProblem, probe


class DaskLanes(Lanes):
    """A Dask client's workers: ``slots`` worker threads when the run started. An abandoned task
    is cancelled (a worker already running it finishes it and drops the result)."""

    def __init__(self, client, where: str) -> None:
        self.client, self.where = client, where
        self.slots = max(sum(client.nthreads().values()), 1)
        self.finished = 0  # results handed back, for the message when the scheduler is lost

    def start(self, fn: Callable[[Any], Any], task: Any) -> Any:
        return self.client.submit(partial(guarded, fn), task, pure=False)

    def wait(self, handles: Collection[Any]) -> list[Any]:
        import distributed

        try:  # the first to finish (distributed.wait would look for a default client: ours is not)
            next(iter(distributed.as_completed(list(handles), loop=self.client.loop)))
        except (concurrent.futures.CancelledError, distributed.comm.CommClosedError) as err:
            raise SchedulerLost(self.where, type(err).__name__, self.finished) from None
        return [h for h in handles if h.done()]  # in the order given: the same order each time

    def result(self, handle: Any) -> Any:
        value = self._value(handle)
        self.finished += 1
        return value

    def _value(self, handle: Any) -> Any:
        """The task's value, its errors as costsim's (``result`` without counting it)."""
        import distributed

        try:
            return handle.result()
        except TaskFailed as failed:
            raise failed.error() from None
        except distributed.KilledWorker as err:
            raise ExecutorError("dask", f"workers died running a task ({err}); with an output folder the tasks "
                                "finished before are saved, and running the same sweep again resumes") from None
        except (concurrent.futures.CancelledError, distributed.comm.CommClosedError) as err:
            # costsim cancels only what it abandoned, and never asks for its result: the client
            # cancels every future when it loses its scheduler (distributed's FutureCancelledError).
            raise SchedulerLost(self.where, type(err).__name__, self.finished) from None

    def abandon(self, handles: Collection[Any]) -> list[Any]:
        if handles:
            self.client.cancel(list(handles))
        return []

    def __call__(self, fn: Callable[[Any], Any], tasks: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        import distributed

        futures = self.client.map(partial(guarded, fn), list(tasks), pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        try:
            for future in distributed.as_completed(futures, loop=self.client.loop):
                yield index[future.key], self._value(future)
                self.finished += 1  # once the caller has it (a sweep has written it)
        except (concurrent.futures.CancelledError, distributed.comm.CommClosedError) as err:
            raise SchedulerLost(self.where, type(err).__name__, self.finished) from None


@contextlib.contextmanager
def dask_lanes(workers: int, address: str | None) -> Iterator[DaskLanes]:
    """A LocalCluster of ``workers`` single-threaded processes, or the scheduler at ``address``."""
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
            client.run(ignore_sigint)  # its workers share our terminal: Ctrl-C is ours to handle
    except OSError as err:
        if cluster is not None:
            cluster.close()
        where = f"the Dask scheduler at {address}" if address else "a Dask LocalCluster"
        raise ExecutorError("dask", f"cannot reach {where}: {err}") from None
    where = f"the Dask scheduler at {address}" if address else "the Dask LocalCluster's scheduler"
    try:
        yield DaskLanes(client, where)
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
    timeout = executors.CONNECT_TIMEOUT_S  # read when connecting: a test shortens it
    try:
        probe(check_address(address), timeout)
    except SchedulerProblem as err:
        raise ExecutorError("dask", str(err)) from None
    try:
        return distributed.Client(address, timeout=timeout, set_as_default=False)
    except Exception as err:  # noqa: BLE001 — it greeted as Dask does, then failed: say how
        raise ExecutorError("dask", f"cannot connect to the Dask scheduler at {address} ({type(err).__name__}: "
                            f"{err}); check that it runs distributed {distributed.__version__}") from None


def _close(client) -> None:
    """Close a client within ``CONNECT_TIMEOUT_S`` even when its scheduler is gone (distributed
    would try to reconnect, logging each attempt's traceback)."""
    try:
        client.close(timeout=executors.CONNECT_TIMEOUT_S)
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
    timeout = executors.CONNECT_TIMEOUT_S
    try:
        client.wait_for_workers(1, timeout=timeout)
    except TimeoutError:  # distributed's WorkerStartTimeoutError is one
        raise ExecutorError("dask", f"the Dask scheduler at {address} has no worker (waited "
                            f"{timeout} s): start some with `dask worker tcp://{address} --nthreads 1`") from None
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


__all__ = ["DaskLanes", "dask_lanes", "versions"]
