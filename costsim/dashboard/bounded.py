"""Runs for the dashboard: cached on every exact value (within a byte budget), bounded in time and
memory, cancellable, and the replications of one scenario run side by side in worker processes
(``costsim.runs.isolated``) that count against the server's one cap on workers (a
``costsim.runs.workerpool.WorkerPool``, ``new_pool``); a worker whose run finished lives on with a
memo of its latest runs, so the next run pays neither the import nor the first-use costs.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable

from costsim.dashboard.disk_runs import DiskRuns, server_disk
from costsim.dashboard.limits import DEFAULT_LIMITS, Limits
from costsim.dashboard.pool import SPARE_COUNT, first_screen_key
from costsim.dashboard.shipped import SCENARIO_DIR, shipped_scenarios
from costsim.dashboard.uploads import file_fields
from costsim.dashboard.workers import WorkStopped
from costsim.errors import CostsimError
from costsim.plan.prepare import Prepared, detached
from costsim.results.tables import Results
from costsim.runs import api
from costsim.runs.isolated import Call, Reply, Worker, WorkerOutOfMemory, WorkerStopped, WorkerTimedOut, run_calls
from costsim.runs.isolated_child import Child
from costsim.runs.memo import RunMemo
from costsim.runs.sweepfile import replication_seed
from costsim.runs.workerpool import PRIMED, WorkerPool
from costsim.scenario import Scenario
from costsim.scenario.filekind import file_identity


def run_key(scenario: Scenario, seed: int | None = None) -> str:
    """The cache key of a run with ``seed`` (None: the scenario's own): every field at its exact
    value (floats by ``repr``, so ``.inf`` and 0.30000000000000004 are kept, unlike JSON from
    pydantic), the folder relative paths are read from, and each file the scenario names
    (``uploads.file_fields``: the trace, a class's scaling fit) by its ``filekind.file_identity``
    (device, inode, size, modification and change times: an edit changes the change time, which
    no tool sets back; None when it cannot be read, and the run then fails and is not kept)."""
    body: dict[str, object] = {"scenario": scenario.model_dump(mode="python"), "base_dir": str(scenario.base_dir),
                               "files": [[".".join(map(str, loc)), file_identity(scenario.base_dir / name)]
                                         for loc, name in file_fields(scenario)]}
    if seed is not None:
        body["seed_override"] = seed
    return json.dumps(body, sort_keys=True, default=repr, allow_nan=True)


class ResultCache:
    """The latest runs by ``run_key``, kept pickled so each reader gets its own copy of the tables
    (as ``st.cache_data`` does): at most ``max_entries`` and ``max_bytes`` of pickles together
    (``Limits.cache_mb``), the least recently used dropped first; a run bigger than ``max_bytes``
    alone is not kept. Shared by sessions: thread-safe. With ``disk`` (``DiskRuns``), every run
    kept is written there too, and a run not in memory is looked for there: a server started
    again finds what an earlier one ran with the same code."""

    def __init__(self, max_entries: int = 32, max_bytes: int = int(DEFAULT_LIMITS.cache_mb * 2**20),
                 disk: DiskRuns | None = None):
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.disk = disk
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        """Bytes of the pickles kept."""
        with self._lock:
            return self._bytes

    def get(self, key: str) -> Results | None:
        with self._lock:
            blob = self._items.get(key)
            if blob is not None:
                self._items.move_to_end(key)
        if blob is not None:
            return pickle.loads(blob)
        disk = self.disk
        blob = disk.get(key) if disk is not None else None
        if disk is None or blob is None or len(blob) > self.max_bytes:
            return None  # one memory would not keep is not read: a session's byte limit counts it
        try:
            results = pickle.loads(blob)
        except Exception:  # a file damaged on disk: a miss, and it is not read again
            disk.forget(key)
            return None
        self._keep(key, blob)
        return results

    def size(self, key: str) -> int | None:
        """Bytes of the pickle kept under ``key``; None when it is not kept."""
        with self._lock:
            blob = self._items.get(key)
        return None if blob is None else len(blob)

    def put(self, key: str, blob: bytes, *, on_disk: bool = True) -> None:
        """Keep a pickled ``Results`` (as ``simulate_bounded`` returns it); on disk too unless
        ``on_disk`` is False (a run of an upload, whose folder no later server has) or memory
        would not keep it either."""
        self._keep(key, blob)
        if self.disk is not None and on_disk and len(blob) <= self.max_bytes:
            self.disk.put(key, blob)

    def _keep(self, key: str, blob: bytes) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            self._bytes -= len(old) if old is not None else 0
            if len(blob) > self.max_bytes:
                return
            self._items[key] = blob
            self._bytes += len(blob)
            while len(self._items) > self.max_entries or self._bytes > self.max_bytes:
                _, dropped = self._items.popitem(last=False)
                self._bytes -= len(dropped)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0


class RunStopped(WorkStopped):
    """A run that did not finish: over the time or memory limit, or failed. ``str()`` holds no
    user text and no traceback: it is safe to show as Markdown."""


class RunTimedOut(RunStopped):
    """A run stopped at the dashboard's time limit (``Limits.run_seconds``): the app then says
    what to lower and offers a quicker retry."""


_log = logging.getLogger(__name__)
SIMULATE = "costsim.dashboard.bounded:simulate_in_worker"  # what a worker runs for a simulation


def first_scenario() -> Scenario | None:
    """The scenario a new session shows first: the first shipped one (the baseline), as loaded;
    None when there is none or it cannot be used (the session says why)."""
    shipped = shipped_scenarios()
    if not shipped:
        return None
    try:
        return api.load_scenario(next(iter(shipped.values())))
    except CostsimError:
        return None


def note_first_screen(disk: DiskRuns | None, scenario: Scenario) -> None:
    """After runs of ``scenario`` were kept: when it is the scenario a new session shows first and
    ``disk`` now holds every replication the spares prime, say so on disk
    (``pool.first_screen_key``, holding those runs' file names: ``pool.first_screen_kept`` checks
    they are still there), so a server started again shows it without starting them first."""
    if disk is None or scenario.base_dir != SCENARIO_DIR:
        return
    first, key = first_scenario(), first_screen_key()
    if first is None or key is None or scenario != first:
        return
    runs = [run_key(first, replication_seed(first.seed, r)) for r in range(SPARE_COUNT)]
    note = "\n".join(disk.file_for(k).name for k in runs).encode()
    if all(disk.has(k) for k in runs) and disk.get(key) != note:
        disk.put(key, note)


def warm_worker(replication: str | None, child: Child) -> None:
    """A spare's warm-up. ``replication`` (a primed spare, ``pool.new_pool``): replication r of the
    scenario a new session shows first, run as a session's would be (its seed
    ``replication_seed(seed, r)``, through this worker's memo), so that session's run finds it all
    in the memo; the server then tags the worker with that seed (``name_primed``). Else a short
    simulation of the shipped baseline, so the first real run does not pay for what costsim and its
    libraries set up on first use (about 0.3 s of CPU on the baseline)."""
    first = first_scenario() if replication is not None else None
    if first is not None and replication is not None:
        seed = replication_seed(first.seed, int(replication))
        disk = server_disk(os.environ)
        if disk is None or not disk.has(run_key(first, seed)):
            ready = detached(api.prepare(first))
            simulate_with_memo(ready, seed, child.kept("memo", RunMemo))
            return
        # An earlier server ran it with this code: the session reads it from disk, and this spare
        # warms up as a plain one.
    base = api.load_scenario(SCENARIO_DIR / "baseline.yaml")
    short = api.scenario_from_data({**base.model_dump(mode="json"), "horizon_days": 20, "warmup_days": 0},
                                   "warm-up", SCENARIO_DIR)
    api.simulate(short)


def name_primed(pool: WorkerPool, scenario: Scenario | None = None) -> None:
    """Tag each idle spare primed with replication r (``warm_worker``) with that replication's
    seed, so a run of that seed takes it (``WorkerPool.take``) and finds its jobs and runs in its
    memo. Loads the first scenario only while such a spare waits (a cold server's first run).

    When the run about to start is of another scenario (``scenario``: a shared link, an upload, a
    knob moved), a primed spare still running its replication helps no one now: a call sent to it
    would wait behind a replication nobody asked for, so it is ended (if no other session has
    taken it meanwhile) and the run starts a fresh worker. One that has finished keeps its seed's
    tag: its memo may still serve that seed."""
    primed = [(w, w.tag) for w in pool.idle if isinstance(w.tag, tuple) and w.tag[:1] == (PRIMED,)]
    if not primed:
        return
    first = first_scenario()
    other = first is not None and scenario is not None and scenario != first
    for worker, tag in primed:
        if first is None:
            pool.retag(tag, None)
        elif other and worker.warming and pool.retire(worker):
            continue
        else:
            pool.retag(tag, replication_seed(first.seed, int(tag[1])))


def simulate_with_memo(scenario: Scenario | Prepared, seed: int | None, memo: RunMemo) -> Results:
    """``api.simulate`` through a worker's memo (``costsim.runs.memo``: the jobs, work plans and
    option runs of its latest runs, so after a price knob only the priced option is simulated
    again). Out of memory with a memo holding earlier runs, it is emptied and the run tried once
    more without it, so what the memo held (a big trace's runs) never makes a run that fits the
    limit fail."""
    held = len(memo)  # entries of earlier runs
    try:
        return api.simulate(scenario, seed=seed, memo=memo)
    except MemoryError:
        if not held:
            raise
    memo.clear()
    gc.collect()
    return api.simulate(scenario, seed=seed, memo=memo)


def simulate_in_worker(request: tuple[Prepared, int | None], child: Child) -> bytes:
    """A worker's run of (the scenario as the parent prepared it, its trace ``detached``, seed),
    pickled, through the memo the worker keeps between runs (the parent sends a seed back to the
    worker that last ran it, whose memo holds its jobs)."""
    ready, seed = request
    results = simulate_with_memo(ready, seed, child.kept("memo", RunMemo))
    return pickle.dumps(results, protocol=pickle.HIGHEST_PROTOCOL)


def simulate_many(scenario: Scenario, seeds: list[int | None], limits: Limits = DEFAULT_LIMITS,
                  on_wait: Callable[[float], None] | None = None, poll_s: float = 0.25,
                  warm: bool = False, on_queue: Callable[[float], None] | None = None,
                  *, pool: WorkerPool | None = None) -> list[bytes]:
    """``api.simulate(scenario, seed=s)`` for each seed, each in a worker process of ``pool`` (the
    server's; None: a pool of this call's own), returned pickled (``pickle.loads`` each), in the
    order of ``seeds``: side by side, ``limits.worker_slots`` at a time at most, each batch waiting
    until that many worker processes are free across every session (``on_queue(seconds waited)``
    meanwhile, else ``on_wait``).

    Each batch is stopped after ``limits.run_seconds`` (RunTimedOut) and each worker limited to
    ``limits.process_memory_gb`` of address space. ``on_wait(seconds so far)`` is called every
    ``poll_s`` while they run: the app draws progress there, which is also where Streamlit
    interrupts a script for a rerun or Stop; whatever leaves this function (result, error or
    interruption) kills every worker still running first. ``warm``: use the pool's warm workers;
    one whose run finished waits for the next run (``WorkerPool.keep``). A CostsimError from the
    run is raised as it was; other stops are RunStopped in the dashboard's words. The scenario is
    prepared once, here (``api.prepare``: a problem with it is raised before any worker is taken),
    and sent to each worker prepared, without its trace (``detached``: each reads the file)."""
    ready = detached(api.prepare(scenario))
    own = pool is None
    pool = WorkerPool(capacity=limits.worker_slots) if pool is None else pool
    name_primed(pool, scenario)
    batch = limits.worker_slots
    blobs: list[bytes] = []
    try:
        for i in range(0, len(seeds), batch):
            blobs += _simulate_batch(ready, seeds[i:i + batch], limits, on_wait, poll_s, warm, on_queue, pool)
    finally:
        if own:
            pool.close()
    return blobs


def _simulate_batch(ready: Prepared, seeds: list[int | None], limits: Limits,
                    on_wait: Callable[[float], None] | None, poll_s: float, warm: bool,
                    on_queue: Callable[[float], None] | None, pool: WorkerPool) -> list[bytes]:
    """``simulate_many`` of at most ``limits.worker_slots`` seeds, all at once, holding that many processes."""
    pool.acquire(len(seeds), capacity=limits.worker_slots, on_wait=on_queue or on_wait, poll_s=poll_s,
                 trim=False)  # spares first
    held = len(seeds)
    memory_bytes = int(limits.process_memory_gb * 2**30)
    workers: list[Worker] = []
    try:
        for seed in seeds:
            workers.append(pool.take(memory_bytes=memory_bytes, tag=seed, warm=warm))
        calls = [(w, Call(target=SIMULATE, payload=(ready, seed), memory_bytes=memory_bytes,
                          backstop_s=int(limits.run_seconds) + 30))  # should the dashboard die without killing it
                 for w, seed in zip(workers, seeds, strict=True)]
        replies = run_calls(calls, limit_s=limits.run_seconds, poll_s=poll_s, on_wait=on_wait)
    finally:
        for worker, seed in zip(workers, seeds, strict=False):
            if warm and worker.reusable and pool.keep(worker, tag=seed):
                held -= 1  # its process went back with it to the spares
            else:
                worker.close()
        pool.release(held)
        if warm:
            pool.top_up()
    if any(isinstance(r.error, WorkerTimedOut) for r in replies):
        raise RunTimedOut(
            f"The simulation did not finish within the dashboard's limit of {limits.run_seconds:g} s "
            "and was stopped. Shorten the horizon or lower the arrival scale, run it with the command "
            f"line (`costsim run`), or raise the limit ({Limits.ENV['run_seconds']}).")
    return [_blob(reply, limits) for reply in replies]


def _blob(reply: Reply, limits: Limits) -> bytes:
    """A run's pickled Results, or its error: a CostsimError as it was, other stops in our words."""
    err = reply.error
    if err is None:
        blob: bytes = reply.value
        return blob
    if isinstance(err, WorkerOutOfMemory):
        raise RunStopped(f"The simulation needed more than the dashboard's {limits.process_memory_gb:g} GiB of memory "
                         "and was stopped. Shorten the horizon or lower the arrival scale, run it with the "
                         f"command line (`costsim run`), or raise the limit ({Limits.ENV['run_memory_gb']}).")
    if isinstance(err, WorkerStopped):
        _log.error("simulation failed:\n%s", err.detail)
        raise RunStopped(f"The simulation failed ({err.message}). This is a bug in costsim: please report it with "
                         "the scenario. The details are in the server's log.")
    raise err


def simulate_bounded(scenario: Scenario, limits: Limits = DEFAULT_LIMITS,
                     on_wait: Callable[[float], None] | None = None, poll_s: float = 0.25,
                     seed: int | None = None, warm: bool = False, *, pool: WorkerPool | None = None) -> bytes:
    """One run of ``simulate_many``: ``api.simulate(scenario, seed=seed)``, pickled."""
    (blob,) = simulate_many(scenario, [seed], limits, on_wait, poll_s, warm, pool=pool)
    return blob
