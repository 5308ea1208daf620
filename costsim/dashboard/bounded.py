"""Runs for the dashboard: cached on every exact value (within a byte budget), bounded in time and
memory, cancellable, and the replications of one scenario run side by side in worker processes
that count against the server's one cap on workers (``workers.SLOTS``).
"""

from __future__ import annotations

import atexit
import gc
import json
import logging
import os
import pickle
import subprocess
import sys
import threading
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from costsim.errors import CostsimError
from costsim.dashboard.uploads import Limits
from costsim.dashboard.workers import SLOTS, WorkStopped
from costsim.runs import api
from costsim.runs.memo import RunMemo
from costsim.results.tables import Results
from costsim.scenario import Scenario, ScenarioError


def run_key(scenario: Scenario, seed: int | None = None) -> str:
    """The cache key of a run with ``seed`` (None: the scenario's own): every field at its exact value (floats by ``repr``, so ``.inf``
    and 0.30000000000000004 are kept, unlike JSON from pydantic), the folder relative paths are
    read from, and the trace file's size and modification time."""
    stamp = None
    if scenario.workload.trace is not None:
        try:
            info = (scenario.base_dir / scenario.workload.trace).stat()
            stamp = [info.st_size, info.st_mtime_ns]
        except OSError:
            stamp = None
    body = {"scenario": scenario.model_dump(mode="python"), "base_dir": str(scenario.base_dir), "trace": stamp}
    if seed is not None:
        body["seed_override"] = seed
    return json.dumps(body, sort_keys=True, default=repr, allow_nan=True)


class ResultCache:
    """The latest runs by ``run_key``, kept pickled so each reader gets its own copy of the tables
    (as ``st.cache_data`` does): at most ``max_entries`` and ``max_bytes`` of pickles together
    (``Limits.cache_mb``), the least recently used dropped first; a run bigger than ``max_bytes``
    alone is not kept. Shared by sessions: thread-safe."""

    def __init__(self, max_entries: int = 32, max_bytes: int = int(Limits().cache_mb * 2**20)):
        self.max_entries = max_entries
        self.max_bytes = max_bytes
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
        return None if blob is None else pickle.loads(blob)

    def put(self, key: str, blob: bytes) -> None:
        """Keep a pickled ``Results`` (as ``simulate_bounded`` returns it)."""
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


def _warm(scenario_dir: Path) -> None:
    """Run a short simulation of the shipped baseline once, so the first real run does not pay
    for what costsim and its libraries set up on first use (about 0.3 s of CPU on the baseline)."""
    try:
        from costsim.scenario import load_scenario, scenario_from_data

        base = load_scenario(scenario_dir / "baseline.yaml")
        short = scenario_from_data({**base.model_dump(mode="json"), "horizon_days": 20, "warmup_days": 0},
                                   "warm-up", scenario_dir)
        api.simulate(short)
    except Exception:  # only a warm-up: the real run reports its own problems
        pass


# A worker's jobs, work plans and option runs of its latest runs (``costsim.runs.memo``): after a
# price knob only the priced option is simulated again. The parent sends a seed back to the worker
# that last ran it (``_take_child``), where that seed's jobs are kept.
_MEMO = RunMemo()


def _simulate(scenario: Scenario, seed: int | None) -> Results:
    """``api.simulate`` through the worker's memo. Out of memory with a memo holding earlier runs,
    it is emptied and the run tried once more without it, so what the memo held (a big trace's
    runs) never makes a run that fits the limit fail."""
    held = len(_MEMO)  # entries of earlier runs
    try:
        return api.simulate(scenario, seed=seed, memo=_MEMO)
    except MemoryError:
        if not held:
            raise
    _MEMO.clear()
    gc.collect()
    return api.simulate(scenario, seed=seed, memo=_MEMO)


def _answer(request: tuple, limited: list[int]) -> tuple[Any, ...]:
    """One request (scenario, seed, memory bytes, seconds): the reply tuple for ``_reply``.
    The address-space limit is set at the first request (``limited`` remembers it: it cannot be
    raised again), the alarm is a backstop should the dashboard die without killing us."""
    scenario, seed, memory_bytes, seconds = request
    try:
        import resource
        import signal

        if not limited:
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
            limited.append(memory_bytes)
        signal.alarm(int(seconds) + 30)
    except (ImportError, AttributeError, ValueError, OSError):
        pass  # not on this platform: the parent's time limit still holds
    try:
        return ("ok", pickle.dumps(_simulate(scenario, seed), protocol=pickle.HIGHEST_PROTOCOL))
    except CostsimError as err:  # rebuilt in the parent (the exception's args alone cannot)
        return ("scenario_error", err.source, err.problems)
    except MemoryError:
        return ("memory",)
    except Exception as exc:  # a bug: the parent logs it and shows a plain message
        return ("failed", type(exc).__name__, traceback.format_exc())
    finally:
        try:
            signal.alarm(0)
        except (NameError, AttributeError, ValueError):
            pass


def child_main(warm: bool = False) -> None:
    """Body of the worker process (``python -c``, see ``simulate_many``): a loop that reads pickled
    requests (scenario, seed, memory bytes, seconds) from stdin and writes each reply, pickled
    and prefixed by its length (8 bytes, big-endian), to the original stdout; anything a library
    prints goes to stderr instead, so it cannot corrupt a reply. ``warm``: first run a short
    simulation (``_warm``) while waiting for work. EOF (the dashboard went away, or is done with
    this worker) ends it quietly.

    A worker lives on after a run that finished: the next run then pays neither the import nor
    the first-use costs. A run that was stopped (time, memory, rerun) kills its worker instead."""
    reply_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    if warm:
        from costsim.dashboard.uploads import SCENARIO_DIR

        _warm(SCENARIO_DIR)
    limited: list[int] = []
    while True:
        try:
            request = pickle.load(sys.stdin.buffer)
        except EOFError:
            return
        data = pickle.dumps(_answer(request, limited), protocol=pickle.HIGHEST_PROTOCOL)
        reply_out.write(len(data).to_bytes(8, "big") + data)
        reply_out.flush()


_CHILD = "import costsim.runs.api; from costsim.dashboard.bounded import child_main; child_main({warm})"
_SPARES: list[subprocess.Popen] = []  # warm workers (costsim imported and used once), waiting for a request
_SPARES_LOCK = threading.Lock()
SPARE_COUNT = 3  # the default replications run at once without waiting for an import
RUNS_PER_WORKER = 50  # then a fresh one: a long-lived process's memory only grows (fragmentation)


def _start_child(warm: bool = False) -> subprocess.Popen:
    package_root = str(Path(__file__).resolve().parent.parent.parent)  # the very costsim this process runs
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
    child = subprocess.Popen([sys.executable, "-c", _CHILD.format(warm=warm)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, env=env)
    child.costsim_memory = None  # type: ignore[attr-defined]  # the address-space limit it was given
    child.costsim_runs = 0  # type: ignore[attr-defined]
    child.costsim_seed = None  # type: ignore[attr-defined]  # the seed of its latest run (its memo holds its jobs)
    return child


def _take_child(warm: bool, memory_bytes: int, seed: int | None = None) -> subprocess.Popen:
    """A worker to simulate in, for a slot already taken (``SLOTS``): with ``warm``, a waiting one
    whose memory limit is unset or this one (the one that last ran ``seed`` first, whose memo
    holds that seed's jobs; then the most recently used), else a fresh one, started only once
    spares beyond the cap are ended (``_trim_spares``). Spares are topped up after the run
    (``_top_up``), not now: a starting worker's import would take CPU from the run."""
    if warm:
        with _SPARES_LOCK:
            for child in [c for c in _SPARES if c.poll() is not None]:
                _SPARES.remove(child)
                child.wait()
            usable = [c for c in reversed(_SPARES) if c.costsim_memory in (None, memory_bytes)]  # type: ignore[attr-defined]
            usable.sort(key=lambda c: c.costsim_seed != seed)  # type: ignore[attr-defined]  # stable: recency kept
            if usable:
                _SPARES.remove(usable[0])
                return usable[0]
    _trim_spares()
    return _start_child()  # needed now: no warm-up run before this one


def _trim_spares() -> None:
    """End waiting workers, least recently used first, while busy and waiting ones together pass
    the cap on worker processes (``SLOTS.trim``: work of any session comes before a spare)."""
    with _SPARES_LOCK:
        while _SPARES and SLOTS.busy + len(_SPARES) > SLOTS.capacity:
            _retire(_SPARES.pop(0), kill=True)


SLOTS.trim = _trim_spares


def _top_up() -> None:
    """Start warm workers until ``SPARE_COUNT`` wait, as far as the cap on worker processes leaves
    room (fewer after a stopped run, or while other sessions' work holds the slots)."""
    with _SPARES_LOCK:
        while len(_SPARES) < SPARE_COUNT and SLOTS.busy + len(_SPARES) < SLOTS.capacity:
            _SPARES.append(_start_child(warm=True))


def _keep(child: subprocess.Popen, memory_bytes: int, seed: int | None) -> bool:
    """Return a worker whose run of ``seed`` finished to the spares, its slot given back in the
    same step (False: there is no room, or it is worn; its slot is the caller's to give back)."""
    child.costsim_memory = memory_bytes  # type: ignore[attr-defined]
    child.costsim_seed = seed  # type: ignore[attr-defined]
    child.costsim_runs += 1  # type: ignore[attr-defined]
    with _SPARES_LOCK:
        if child.poll() is None and child.costsim_runs < RUNS_PER_WORKER and len(_SPARES) < SPARE_COUNT:  # type: ignore[attr-defined]
            _SPARES.append(child)
            SLOTS.release(1)
            return True
    return False


def warm_up(limits: Limits | None = None) -> None:
    """Start the warm spares now (the dashboard calls it at start), so the first run is quick too;
    as many as ``limits.worker_slots`` allows (default: the environment's limits)."""
    if limits is None:
        try:
            limits = Limits.from_env(os.environ)
        except CostsimError:  # the dashboard says so itself; no spares meanwhile
            return
    SLOTS.capacity = limits.worker_slots
    _top_up()


@atexit.register
def _drop_spares() -> None:
    with _SPARES_LOCK:
        for child in _SPARES:
            child.kill()
            child.wait()
        _SPARES.clear()


def _reply(out: bytes, returncode: int, limits: Limits) -> bytes:
    try:
        reply = pickle.loads(out)
    except Exception:  # died without a reply: killed by a signal (the kernel's, for memory), or broken
        reply = ("memory",) if returncode < 0 else ("failed", f"exit status {returncode}", "no reply")
    kind = reply[0]
    if kind == "ok":
        return reply[1]
    if kind == "scenario_error":
        raise ScenarioError(reply[1], reply[2])
    if kind == "memory":
        raise RunStopped(f"The simulation needed more than the dashboard's {limits.process_memory_gb:g} GiB of memory "
                         "and was stopped. Shorten the horizon or lower the arrival scale, run it with the "
                         f"command line (`costsim run`), or raise the limit ({Limits.ENV['run_memory_gb']}).")
    _log.error("simulation failed:\n%s", reply[2])
    raise RunStopped(f"The simulation failed ({reply[1]}). This is a bug in costsim: please report it with "
                     "the scenario. The details are in the server's log.")


def simulate_many(scenario: Scenario, seeds: list[int | None], limits: Limits = Limits(),
                  on_wait: Callable[[float], None] | None = None, poll_s: float = 0.25,
                  warm: bool = False, on_queue: Callable[[float], None] | None = None) -> list[bytes]:
    """``api.simulate(scenario, seed=s)`` for each seed, each in its own child process, returned
    pickled (``pickle.loads`` each), in the order of ``seeds``: side by side, ``limits.worker_slots``
    at a time at most, each batch waiting until that many worker processes are free across every
    session (``SLOTS``; ``on_queue(seconds waited)`` meanwhile, else ``on_wait``).

    Each batch is stopped after ``limits.run_seconds`` (RunStopped) and each child limited to
    ``limits.process_memory_gb`` of address space. ``on_wait(seconds so far)`` is called every
    ``poll_s`` while they run: the app draws progress there, which is also where Streamlit
    interrupts a script for a rerun or Stop; whatever leaves this function (result, error or
    interruption) kills every child still running first. ``warm``: use warm workers
    (``_take_child``); one whose run finished waits for the next run (``_keep``).

    A fresh interpreter, not ``multiprocessing``: fork from Streamlit's threads can deadlock (and
    crashes on macOS), and spawn or forkserver would re-run the app script, which Streamlit
    installs as ``__main__``. The price is importing costsim again, about a second of CPU, paid
    ahead of time by the warm workers, and only again after a run was stopped."""
    batch = limits.worker_slots
    blobs: list[bytes] = []
    for i in range(0, len(seeds), batch):
        blobs += _simulate_batch(scenario, seeds[i:i + batch], limits, on_wait, poll_s, warm, on_queue)
    return blobs


def _simulate_batch(scenario: Scenario, seeds: list[int | None], limits: Limits,
                    on_wait: Callable[[float], None] | None, poll_s: float, warm: bool,
                    on_queue: Callable[[float], None] | None) -> list[bytes]:
    """``simulate_many`` of at most ``limits.worker_slots`` seeds, all at once, holding that many slots."""
    SLOTS.acquire(len(seeds), limits.worker_slots, on_queue or on_wait, poll_s, trim=False)  # spares first
    held = len(seeds)
    start = time.monotonic()
    memory_bytes = int(limits.process_memory_gb * 2**30)
    children: list[subprocess.Popen] = []
    outs: list[bytes | None] = [None] * len(seeds)
    try:
        for seed in seeds:
            child = _take_child(warm, memory_bytes, seed)
            children.append(child)
            request = pickle.dumps((scenario, seed, memory_bytes, limits.run_seconds), protocol=pickle.HIGHEST_PROTOCOL)
            threading.Thread(target=_collect, args=(child, request, outs, len(children) - 1), daemon=True).start()
        while any(o is None for o in outs):
            time.sleep(min(poll_s, 0.02))
            elapsed = time.monotonic() - start
            if elapsed > limits.run_seconds:
                raise RunTimedOut(
                    f"The simulation did not finish within the dashboard's limit of {limits.run_seconds:g} s "
                    "and was stopped. Shorten the horizon or lower the arrival scale, run it with the command "
                    f"line (`costsim run`), or raise the limit ({Limits.ENV['run_seconds']}).")
            if on_wait is not None and int(elapsed / poll_s) != int((elapsed - 0.02) / poll_s):
                on_wait(elapsed)
    finally:
        for child, out, seed in zip(children, outs, seeds, strict=False):
            if warm and out and _finished(out) and _keep(child, memory_bytes, seed):
                held -= 1  # its slot went back with it to the spares
            else:
                _retire(child, kill=not out)
        SLOTS.release(held)
        if warm:
            _top_up()
    return [_reply(_unframe(out or b""), child.returncode if child.returncode is not None else 0, limits)
            for out, child in zip(outs, children, strict=True)]


def _unframe(out: bytes) -> bytes:
    """The reply pickle of a length-prefixed frame (b"" when the worker died before a whole one)."""
    size = int.from_bytes(out[:8], "big") if len(out) >= 8 else -1
    return out[8:] if size == len(out) - 8 else b""


def _finished(out: bytes) -> bool:
    """A whole reply of a run that finished normally (its worker can be used again)."""
    try:
        return pickle.loads(_unframe(out))[0] in ("ok", "scenario_error")
    except Exception:
        return False


def _retire(child: subprocess.Popen, kill: bool) -> None:
    """End a worker: killed when its run was stopped, else told to finish (EOF on its stdin)."""
    if kill and child.poll() is None:
        child.kill()
    try:
        child.stdin.close()  # type: ignore[union-attr]
    except OSError:
        pass
    try:
        child.wait(timeout=None if kill else 5)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def _collect(child: subprocess.Popen, request: bytes, outs: list, i: int) -> None:
    """Send the request and keep the framed reply (a thread per worker: pipes never fill up);
    b"" when the worker dies first (killed for a rerun, the time or the memory limit)."""
    out = b""
    try:
        child.stdin.write(request)  # type: ignore[union-attr]
        child.stdin.flush()  # type: ignore[union-attr]
        head = child.stdout.read(8)  # type: ignore[union-attr]
        if len(head) == 8:
            out = head + child.stdout.read(int.from_bytes(head, "big"))  # type: ignore[union-attr]
    except (OSError, ValueError):  # killed while talking to it
        out = b""
    outs[i] = out


def simulate_bounded(scenario: Scenario, limits: Limits = Limits(),
                     on_wait: Callable[[float], None] | None = None, poll_s: float = 0.25,
                     seed: int | None = None, warm: bool = False) -> bytes:
    """One run of ``simulate_many``: ``api.simulate(scenario, seed=seed)``, pickled."""
    (blob,) = simulate_many(scenario, [seed], limits, on_wait, poll_s, warm)
    return blob
