"""The dashboard server's worker processes: how many, how many wait warm, and starting them.

Imports nothing heavy (``costsim.runs.workerpool``, the dashboard's ``limits``, ``shipped`` and
``disk_runs``), so ``app.py``
starts the warm spares before it imports costsim's tables, models and figures itself: each spare
spends about a second of CPU importing costsim, and they do it beside the script's own imports
rather than after them. The first ``SPARE_COUNT`` spares are primed: each runs one replication of
the scenario a new session shows first (``bounded.warm_worker``), so on a cold server the first
screen's runs are under way before the script asks for them. When an earlier server kept those
runs on disk (``first_screen_kept``), the spares start after the first screen instead: it needs
no simulation then, and their imports would only compete with it for the CPU.
"""

from __future__ import annotations

import hashlib
import os

from costsim.dashboard.disk_runs import DiskRuns, server_disk
from costsim.dashboard.limits import DEFAULT_LIMITS, Limits
from costsim.dashboard.shipped import shipped_scenarios
from costsim.errors import CostsimError
from costsim.runs.workerpool import WorkerPool

WARM = "costsim.dashboard.bounded:warm_worker"  # what a spare runs once, while it waits for work
SPARE_COUNT = 3  # the default replications run at once without waiting for an import
RUNS_PER_WORKER = 50  # then a fresh one: a long-lived process's memory only grows (fragmentation)


def new_pool(limits: Limits | None = None, *, primed: bool = True) -> WorkerPool:
    """The dashboard's worker processes: ``limits.worker_slots`` alive at once across every session
    (simulations, spares, the Sensitivity and Sweep tabs, upload readers; default ``DEFAULT_LIMITS``: each
    call's limits set it again), ``SPARE_COUNT`` warm spares waiting, each worker used for
    ``RUNS_PER_WORKER`` runs at most. The server keeps one (``costsim.dashboard.server.server_pool``).
    ``primed``: the first spares started run the first screen's replications (``primed=False``: plain
    warm spares only, as a server's pool is once those have been used)."""
    capacity = (limits or DEFAULT_LIMITS).worker_slots
    return WorkerPool(capacity=capacity, spares=SPARE_COUNT, warm=WARM, max_runs=RUNS_PER_WORKER,
                      primes=[str(r) for r in range(SPARE_COUNT)] if primed else [])


def warm_up(limits: Limits | None = None, *, pool: WorkerPool) -> None:
    """Start the warm spares now (the dashboard calls it at start), so the first run is quick too;
    as many as ``limits.worker_slots`` allows (default: the environment's limits)."""
    if limits is None:
        try:
            limits = Limits.from_env(os.environ)
        except CostsimError:  # the dashboard says so itself; no spares meanwhile
            return
    pool.capacity = limits.worker_slots
    pool.top_up()


def first_screen_key() -> str | None:
    """The disk's key for "the first screen's replications are kept" (``DiskRuns``): the path and
    bytes of the scenario a new session shows first (the first shipped file) and how many
    replications the spares prime; None when nothing is shipped. Reads one file: no schema, no
    models."""
    shipped = shipped_scenarios()
    if not shipped:
        return None
    first = next(iter(shipped.values()))
    try:
        data = first.read_bytes()
    except OSError:
        return None
    return f"first screen: {first} {hashlib.sha256(data).hexdigest()} × {SPARE_COUNT}"


def first_screen_kept(disk: DiskRuns | None = None) -> bool:
    """Whether an earlier server kept the first screen's replications on disk (``disk``; None: the
    server's, ``disk_runs.server_disk``), with this code: then a server started again shows them
    from disk, and its spares start after that first screen rather than beside it."""
    disk = server_disk(os.environ) if disk is None else disk
    key = first_screen_key()
    note = disk.get(key) if disk is not None and key is not None else None
    if disk is None or not note:
        return False
    # The note names the runs' files: runs dropped since (the folder's byte limit) are not kept.
    return all((disk.folder / name).is_file() for name in note.decode().split("\n"))


__all__ = ["RUNS_PER_WORKER", "SPARE_COUNT", "WARM", "first_screen_key", "first_screen_kept", "new_pool", "warm_up"]
