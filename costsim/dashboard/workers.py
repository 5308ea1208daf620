"""The dashboard's worker processes, shared by every session of one server: how many may live at
once (``Limits.worker_slots``, kept by the server's ``WorkerPool``: ``pool.new_pool``), what a
session says while its work waits for one, and a one-shot call in a worker for reading untrusted
files (``read_in_worker``) limited in memory, time and the size of what it sends back.

Why one count for the whole server: each session's runs, warm spares, Sensitivity and Sweep tabs
and upload readers start processes of their own; without a shared bound eight sessions started
25 processes (9.5 GB). Every process counts, waiting spares included; a spare is ended to make
room for work, and a session whose work does not fit waits until it does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from costsim.dashboard.uploads import Limits
from costsim.runs.isolated import (
    Call,
    ReplyTooLarge,
    Worker,
    WorkerOutOfMemory,
    WorkerStopped,
    WorkerTimedOut,
    run_calls,
)
from costsim.runs.workerpool import WorkerPool

_log = logging.getLogger(__name__)


class WorkStopped(RuntimeError):
    """Work in a worker process that did not finish (time, memory, reply too large, failed).
    ``str()`` holds our own words only: safe to show as Markdown. ``bounded.RunStopped`` is this."""


def waiting_note(limits: Limits) -> str:
    """What a session shows while its work waits for a worker."""
    return (f"Waiting for a free worker: the dashboard runs at most {limits.worker_slots} worker process(es) for all "
            f"its users together ({Limits.ENV['workers']}, {Limits.ENV['workers_memory_gb']}).")


def read_in_worker(call: Call, *, limits: Limits, what: str, pool: WorkerPool | None = None,
                   on_wait: Callable[[float], None] | None = None, poll_s: float = 0.25) -> Any:
    """``call`` in a fresh worker that holds one of ``pool``'s processes (None: a pool of this call's
    own), stopped after ``limits.run_seconds``. Its value, or the CostsimError it raised, or
    WorkStopped naming ``what`` and the limit at fault. ``on_wait(seconds)`` every ``poll_s``
    while waiting for a process or the worker; whatever leaves this function ends the worker first."""
    pool = WorkerPool(capacity=limits.worker_slots) if pool is None else pool
    pool.acquire(1, capacity=limits.worker_slots, on_wait=on_wait, poll_s=poll_s)
    try:
        worker = Worker()
        try:
            (reply,) = run_calls([(worker, call)], limit_s=limits.run_seconds, poll_s=poll_s, on_wait=on_wait)
        finally:
            worker.close()
    finally:
        pool.release(1)
    err = reply.error
    if err is None:
        return reply.value
    if isinstance(err, WorkerTimedOut):
        raise WorkStopped(f"Reading {what} did not finish within the dashboard's limit of "
                          f"{limits.run_seconds:g} s and was stopped ({Limits.ENV['run_seconds']}).")
    if isinstance(err, ReplyTooLarge):
        raise WorkStopped(f"Reading {what} gave {err.size_bytes / 2**20:,.0f} MiB of tables, more than the dashboard "
                          "keeps for an upload; upload fewer or smaller files.")
    if isinstance(err, WorkerOutOfMemory):
        raise WorkStopped(f"Reading {what} needed more than the dashboard's {limits.process_memory_gb:g} GiB of memory "
                          f"and was stopped ({Limits.ENV['run_memory_gb']}).")
    if isinstance(err, WorkerStopped):
        _log.error("reading %s failed:\n%s", what, err.detail)
        raise WorkStopped(f"Reading {what} failed ({err.message}). This is a bug in costsim: please report it with "
                          "the file. The details are in the server's log.")
    raise err


__all__ = ["WorkStopped", "read_in_worker", "waiting_note"]
