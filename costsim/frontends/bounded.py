"""Runs for the dashboard: cached on every exact value, bounded in time and memory, cancellable,
and the replications of one scenario run side by side.
"""

from __future__ import annotations

import atexit
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

from costsim.frontends.uploads import Limits
from costsim.runs import api
from costsim.results import Results
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
    """The last ``max_entries`` runs by ``run_key``, kept pickled so each reader gets its own
    copy of the tables (as ``st.cache_data`` does). Shared by sessions: thread-safe."""

    def __init__(self, max_entries: int = 32):
        self.max_entries = max_entries
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Results | None:
        with self._lock:
            blob = self._items.get(key)
            if blob is not None:
                self._items.move_to_end(key)
        return None if blob is None else pickle.loads(blob)

    def put(self, key: str, blob: bytes) -> None:
        """Keep a pickled ``Results`` (as ``simulate_bounded`` returns it)."""
        with self._lock:
            self._items[key] = blob
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


class RunStopped(RuntimeError):
    """A run that did not finish: over the time or memory limit, or failed. ``str()`` holds no
    user text and no traceback: it is safe to show as Markdown."""


_log = logging.getLogger(__name__)


def _child_main() -> None:
    """Body of the process that simulates (``python -c``, see ``simulate_many``): reads the pickled
    (scenario, seed, memory bytes, seconds) from stdin and writes the pickled reply to the original
    stdout; anything a library prints goes to stderr instead, so it cannot corrupt it. A warm
    spare (imports done) waits here for its request; EOF (the dashboard went away) ends it quietly."""
    reply_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    try:
        scenario, seed, memory_bytes, seconds = pickle.load(sys.stdin.buffer)
    except EOFError:
        return
    try:
        import resource
        import signal

        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        signal.alarm(int(seconds) + 30)  # a backstop should the dashboard die without killing us
    except (ImportError, AttributeError, ValueError, OSError):
        pass  # not on this platform: the parent's time limit still holds
    try:
        reply: tuple[Any, ...] = ("ok", pickle.dumps(api.simulate(scenario, seed=seed), protocol=pickle.HIGHEST_PROTOCOL))
    except ScenarioError as err:  # rebuilt in the parent (the exception's args alone cannot)
        reply = ("scenario_error", err.source, err.problems)
    except MemoryError:
        reply = ("memory",)
    except Exception as exc:  # a bug: the parent logs it and shows a plain message
        reply = ("failed", type(exc).__name__, traceback.format_exc())
    pickle.dump(reply, reply_out, protocol=pickle.HIGHEST_PROTOCOL)
    reply_out.close()


_CHILD = "import costsim.runs.api; from costsim.frontends.bounded import _child_main; _child_main()"
_SPARES: list[subprocess.Popen] = []  # warm children (costsim imported), waiting for a request
_SPARES_LOCK = threading.Lock()
SPARE_COUNT = 3  # the default replications run at once without waiting for an import


def _start_child() -> subprocess.Popen:
    package_root = str(Path(__file__).resolve().parent.parent.parent)  # the very costsim this process runs
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
    return subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)


def _take_child(warm: bool) -> subprocess.Popen:
    """A child to simulate in: a warm spare when ``warm`` and one is alive (its ~1 s of imports
    already paid), else a fresh one. Taking a spare starts another in its place."""
    if not warm:
        return _start_child()
    with _SPARES_LOCK:
        while _SPARES and _SPARES[0].poll() is not None:
            _SPARES.pop(0).wait()
        child = _SPARES.pop(0) if _SPARES else _start_child()
        while len(_SPARES) < SPARE_COUNT:
            _SPARES.append(_start_child())
    return child


def warm_up() -> None:
    """Start the warm spares now (the dashboard calls it at start), so the first run is quick too."""
    with _SPARES_LOCK:
        while len(_SPARES) < SPARE_COUNT:
            _SPARES.append(_start_child())


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
        raise RunStopped(f"The simulation needed more than the dashboard's {limits.run_memory_gb:g} GiB of memory "
                         "and was stopped. Shorten the horizon or lower the arrival scale, run it with the "
                         f"command line (`costsim run`), or raise the limit ({Limits.ENV['run_memory_gb']}).")
    _log.error("simulation failed:\n%s", reply[2])
    raise RunStopped(f"The simulation failed ({reply[1]}). This is a bug in costsim: please report it with "
                     "the scenario. The details are in the server's log.")


def simulate_many(scenario: Scenario, seeds: list[int | None], limits: Limits = Limits(),
                  on_wait: Callable[[float], None] | None = None, poll_s: float = 0.25,
                  warm: bool = False) -> list[bytes]:
    """``api.simulate(scenario, seed=s)`` for each seed, each in its own child process at once,
    returned pickled (``pickle.loads`` each), in the order of ``seeds``.

    Stopped after ``limits.run_seconds`` (RunStopped) and each child limited to
    ``limits.run_memory_gb`` of address space. ``on_wait(seconds so far)`` is called every
    ``poll_s`` while they run: the app draws progress there, which is also where Streamlit
    interrupts a script for a rerun or Stop; whatever leaves this function (result, error or
    interruption) kills every child first. ``warm``: use warm spares (``_take_child``).

    A fresh interpreter, not ``multiprocessing``: fork from Streamlit's threads can deadlock (and
    crashes on macOS), and spawn or forkserver would re-run the app script, which Streamlit
    installs as ``__main__``. The price is importing costsim again, about a second of CPU, paid
    ahead of time by the warm spares."""
    start = time.monotonic()
    children = []
    outs: list[bytes | None] = [None] * len(seeds)
    try:
        for seed in seeds:
            child = _take_child(warm)
            payload = pickle.dumps((scenario, seed, int(limits.run_memory_gb * 2**30), limits.run_seconds),
                                   protocol=pickle.HIGHEST_PROTOCOL)
            children.append(child)
            threading.Thread(target=_collect, args=(child, payload, outs, len(children) - 1), daemon=True).start()
        while any(c.poll() is None for c in children) or any(o is None for o in outs):
            time.sleep(min(poll_s, 0.05))
            elapsed = time.monotonic() - start
            if elapsed > limits.run_seconds:
                raise RunStopped(
                    f"The simulation did not finish within the dashboard's limit of {limits.run_seconds:g} s "
                    "and was stopped. Shorten the horizon or lower the arrival scale, run it with the command "
                    f"line (`costsim run`), or raise the limit ({Limits.ENV['run_seconds']}).")
            if on_wait is not None and int(elapsed / poll_s) != int((elapsed - 0.05) / poll_s):
                on_wait(elapsed)
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
            child.wait()
    return [_reply(out or b"", child.returncode, limits) for out, child in zip(outs, children, strict=True)]


def _collect(child: subprocess.Popen, payload: bytes, outs: list, i: int) -> None:
    """Send the request and keep the reply (a thread per child: pipes never fill up)."""
    try:
        out, _ = child.communicate(payload)
    except (OSError, ValueError):  # killed while talking to it
        out = b""
    outs[i] = out


def simulate_bounded(scenario: Scenario, limits: Limits = Limits(),
                     on_wait: Callable[[float], None] | None = None, poll_s: float = 0.25,
                     seed: int | None = None, warm: bool = False) -> bytes:
    """One run of ``simulate_many``: ``api.simulate(scenario, seed=seed)``, pickled."""
    (blob,) = simulate_many(scenario, [seed], limits, on_wait, poll_s, warm)
    return blob
