"""The dashboard's logic, without Streamlit (tested like any other module; ``app.py`` only lays
out widgets): knobs -> a new validated scenario; uploads that read no server file except a
shipped trace; runs bounded in time and memory, cancellable, and cached on every exact value.

What an upload may read: its own YAML, a trace CSV uploaded beside it (kept in a private
temporary folder) and the shipped traces by name (``traces/<file>.csv``); any other ``trace``
path is refused before anything is opened, so no error can show a server file's contents.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import math
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from costsim.runs import api
from costsim.results import Results
from costsim.scenario import Problem, Scenario, ScenarioError, scenario_from_data, scenario_from_yaml

SCENARIO_DIR = Path(__file__).resolve().parents[2] / "scenarios"


def shipped_scenarios(folder: Path = SCENARIO_DIR) -> dict[str, Path]:
    """Shipped scenario files by name, baseline first."""
    files = sorted(folder.glob("*.yaml"), key=lambda p: (p.stem != "baseline", p.stem))
    return {p.stem: p for p in files}


SETUPS = ("colocated sync", "disaggregated sync", "disaggregated async")
"""Placement and mode as one choice: async needs disaggregated placement."""


@dataclass(frozen=True)
class ClassKnobs:
    """What the sidebar changes for an RL class."""

    model_params_b: float
    response_mean: float
    response_cv: float
    setup: str  # one of SETUPS


@dataclass(frozen=True)
class Knobs:
    """What the sidebar changes: owned GPUs and cloud prices per option, the arrival scale, and
    the RL classes' model size, response length and its tail, placement and mode."""

    owned_gpus: dict[str, int]
    cloud_price: dict[str, float | None]
    arrival_scale: float
    classes: dict[str, ClassKnobs] = field(default_factory=dict)


def current_knobs(scenario: Scenario) -> Knobs:
    return Knobs(
        owned_gpus={o.name: o.gpus for o in scenario.options if o.kind == "owned"},
        cloud_price={o.name: o.price_per_gpu_hour for o in scenario.options if o.kind == "cloud"},
        arrival_scale=scenario.workload.arrival_scale,
        classes={
            c.name: ClassKnobs(c.model_params_b, c.rollout.lengths.mean, c.rollout.lengths.cv,
                               f"{c.placement} {c.mode}")
            for c in scenario.workload.classes
        },
    )


def _edit_class(cls: dict[str, Any], k: ClassKnobs) -> None:
    cls["model_params_b"] = float(k.model_params_b)
    lengths = cls["rollout"]["response_tokens"]
    cap = lengths["max"] if isinstance(lengths, dict) else max(float(lengths), 1.0)
    cls["rollout"]["response_tokens"] = {"mean": float(k.response_mean), "cv": float(k.response_cv), "max": cap}
    placement, mode = k.setup.split()
    cls["placement"], cls["mode"] = placement, mode
    if placement == "colocated":
        cls["rollout_gpu_fraction"] = None
    if mode == "sync":
        cls["max_staleness"] = None


def apply_knobs(scenario: Scenario, knobs: Knobs, source: str = "dashboard") -> Scenario:
    """The scenario with the knobs applied, validated and checked like a file (ScenarioError)."""
    data: dict[str, Any] = scenario.model_dump(mode="json", exclude_defaults=False)
    for opt in data["options"]:
        if opt["kind"] == "owned" and opt["name"] in knobs.owned_gpus:
            opt["gpus"] = int(knobs.owned_gpus[opt["name"]])
        if opt["kind"] == "cloud" and opt["name"] in knobs.cloud_price:
            opt["price_per_gpu_hour"] = knobs.cloud_price[opt["name"]]
    data["workload"]["arrival_scale"] = float(knobs.arrival_scale)
    for cls in data["workload"]["classes"]:
        if cls["name"] in knobs.classes:
            _edit_class(cls, knobs.classes[cls["name"]])
    edited = scenario_from_data(data, source, scenario.base_dir)
    return api.check(edited, source)


# --- Limits ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    """What one dashboard session may ask of the server. Sizes in MiB, time in seconds, memory in
    GiB; each can be raised with the environment variable named in ``ENV`` (``make app`` passes
    the environment through)."""

    upload_mb: float = 5.0  # a scenario YAML
    trace_upload_mb: float = 50.0  # a trace CSV (a million jobs is about 40 MiB)
    run_seconds: float = 120.0  # one simulation of every option
    run_memory_gb: float = 8.0  # address space of the process that simulates

    ENV = {"upload_mb": "COSTSIM_UPLOAD_MB", "trace_upload_mb": "COSTSIM_TRACE_UPLOAD_MB",
           "run_seconds": "COSTSIM_RUN_SECONDS", "run_memory_gb": "COSTSIM_RUN_MEMORY_GB"}

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Limits:
        """Defaults overridden by the environment; a value that is not a positive finite number is
        a ScenarioError naming the variable (an operator's typo must not lift a limit silently)."""
        values, problems = {}, []
        for name, var in cls.ENV.items():
            raw = environ.get(var)
            if raw is None or raw.strip() == "":
                continue
            try:
                value = float(raw)
            except ValueError:
                value = math.nan
            if not (math.isfinite(value) and value > 0):
                problems.append(Problem((var,), f"must be a positive number (got {raw!r})"))
            values[name] = value
        if problems:
            raise ScenarioError("environment", problems)
        return cls(**values)


# --- Uploads --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Upload:
    """A file a user uploaded: its name as the browser sent it, and its bytes."""

    name: str
    data: bytes


def shipped_traces(folder: Path = SCENARIO_DIR) -> dict[str, Path]:
    """Shipped traces by the name a scenario gives them (``traces/<file>.csv``): regular files
    directly in ``folder/traces``, so a link cannot lead an upload elsewhere."""
    traces = (folder / "traces").resolve()
    return {f"traces/{p.name}": p for p in sorted(traces.glob("*.csv"))
            if p.is_file() and p.resolve().parent == traces}


def make_upload_root() -> Path:
    """A private folder (mode 0700) for this server's uploaded traces, removed at exit."""
    root = Path(tempfile.mkdtemp(prefix="costsim-uploads-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return root


def _too_big(upload: Upload, limit_mb: float, what: str) -> ScenarioError | None:
    if len(upload.data) <= limit_mb * 2**20:
        return None
    return ScenarioError(upload.name, [Problem((), f"{what} is {len(upload.data) / 2**20:.1f} MiB; the dashboard "
                                                   f"accepts at most {limit_mb:g} MiB")])


def _store_trace(trace: Upload, root: Path) -> Path:
    """The uploaded trace saved under its own name in a folder named by its content's hash: the
    same upload reuses the folder (and the cached run), a different one never shares it."""
    folder = root / hashlib.sha256(trace.data).hexdigest()[:32]
    path = folder / trace.name
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        if not path.is_file():
            part = folder / f".{os.getpid()}.{threading.get_ident()}.part"
            part.write_bytes(trace.data)
            os.replace(part, path)  # concurrent sessions never see half a file
    except OSError as exc:  # a name the file system refuses, a full disk: no path or traceback shown
        raise ScenarioError(trace.name, [Problem((), f"the uploaded trace could not be stored ({exc.strerror})")]) from None
    return folder


def _nonfinite(value: Any, loc: tuple[str | int, ...]) -> Iterator[Problem]:
    """Every infinite or NaN number in validated scenario data, by field path. The schema may
    accept them (``.inf``, ``1e400``); a run with them hangs or prices nonsense."""
    if isinstance(value, float) and not math.isfinite(value):
        yield Problem(loc, f"must be a finite number (got {value})")
    elif isinstance(value, dict):
        for key, sub in value.items():
            yield from _nonfinite(sub, (*loc, key))
    elif isinstance(value, list | tuple):
        for i, sub in enumerate(value):
            yield from _nonfinite(sub, (*loc, i))


def load_upload(upload: Upload, trace: Upload | None, root: Path, limits: Limits = Limits()) -> Scenario:
    """An uploaded scenario, validated and checked like a file (ScenarioError), reading only the
    uploaded ``trace`` (saved under ``root``) or a shipped trace named ``traces/<file>.csv``.

    Any other ``workload.trace`` (absolute, ``../``, a folder of the server) is refused before
    anything is opened, so no message can carry a server file's contents."""
    for up, limit, what in ((upload, limits.upload_mb, "the scenario"), (trace, limits.trace_upload_mb, "the trace")):
        err = _too_big(up, limit, what) if up is not None else None
        if err is not None:
            raise err
    text = upload.data.decode("utf-8", errors="replace")
    source = upload.name
    scenario, lines = scenario_from_yaml(text, source, SCENARIO_DIR)  # schema only: reads no file
    problems = list(_nonfinite(scenario.model_dump(mode="python"), ()))
    if problems:
        raise ScenarioError(source, problems).with_lines(lines)
    wanted, shipped = scenario.workload.trace, shipped_traces()
    trace_name = Path(trace.name).name if trace is not None else None  # a browser sends no folders; be sure
    if trace_name is not None and (trace_name in ("", ".", "..") or "\x00" in trace_name):
        raise ScenarioError("trace upload", [Problem((), f"{trace.name!r} is not a usable file name")])  # type: ignore[union-attr]
    where = ("workload", "trace")
    if trace is not None and wanted != trace_name:
        raise ScenarioError(source, [Problem(where, f"the uploaded trace {trace_name!r} is not used: set "
                                                    f"`workload.trace: {trace_name}` to use it, or remove it")]).with_lines(lines)
    if wanted is None or wanted in shipped:
        base = SCENARIO_DIR
    elif wanted == trace_name:
        base = _store_trace(trace, root)  # type: ignore[arg-type]
    else:
        allowed = ", ".join(shipped) or "none"
        raise ScenarioError(source, [Problem(where, f"{wanted!r}: an uploaded scenario reads only a trace uploaded "
                                                    "beside it (set `trace:` to that file's name) or a shipped trace "
                                                    f"({allowed})")]).with_lines(lines)
    scenario = scenario.with_base_dir(base)
    try:
        return api.check(scenario, source, lines)
    except ScenarioError as err:  # name the trace as the user knows it, not by its temporary path
        if trace is not None and err.source == str(base / trace_name):  # type: ignore[operator]
            raise ScenarioError(trace_name, err.problems) from None  # type: ignore[arg-type]
        raise


# --- Text a user wrote, shown in Markdown ---------------------------------------------------------

_ASCII_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")


def literal_markdown(text: str) -> str:
    """``text`` for a Streamlit Markdown string that shows it as typed: every ASCII punctuation
    character backslash-escaped (CommonMark: it is then a literal, so no emphasis, link, image,
    HTML tag, entity, ``$`` math or ``:color[...]`` directive can start), and line breaks made
    spaces so no line can become a heading, list or code block."""
    return _ASCII_PUNCTUATION.sub(r"\\\1", " ".join(str(text).split()))


# --- Runs: cached on exact values, bounded in time and memory, cancellable -------------------------


def run_key(scenario: Scenario) -> str:
    """The cache key of a run: every field at its exact value (floats by ``repr``, so ``.inf``
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
    """Body of the process that simulates (``python -c``, see ``simulate_bounded``): reads the
    pickled (scenario, memory bytes, seconds) from stdin and writes the pickled reply to the
    original stdout; anything a library prints goes to stderr instead, so it cannot corrupt it."""
    reply_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    scenario, memory_bytes, seconds = pickle.load(sys.stdin.buffer)
    try:
        import resource
        import signal

        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        signal.alarm(int(seconds) + 30)  # a backstop should the dashboard die without killing us
    except (ImportError, AttributeError, ValueError, OSError):
        pass  # not on this platform: the parent's time limit still holds
    try:
        reply: tuple[Any, ...] = ("ok", pickle.dumps(api.simulate(scenario), protocol=pickle.HIGHEST_PROTOCOL))
    except ScenarioError as err:  # rebuilt in the parent (the exception's args alone cannot)
        reply = ("scenario_error", err.source, err.problems)
    except MemoryError:
        reply = ("memory",)
    except Exception as exc:  # a bug: the parent logs it and shows a plain message
        reply = ("failed", type(exc).__name__, traceback.format_exc())
    pickle.dump(reply, reply_out, protocol=pickle.HIGHEST_PROTOCOL)
    reply_out.close()


_CHILD = "from costsim.frontends.dashboard import _child_main; _child_main()"


def simulate_bounded(scenario: Scenario, limits: Limits = Limits(),
                     on_wait: Callable[[float], None] | None = None, poll_s: float = 0.25) -> bytes:
    """``api.simulate(scenario)`` in a child process, returned pickled (``pickle.loads`` it).

    Stopped after ``limits.run_seconds`` (RunStopped) and limited to ``limits.run_memory_gb`` of
    address space. ``on_wait(seconds so far)`` is called every ``poll_s`` while it runs: the app
    draws progress there, which is also where Streamlit interrupts a script for a rerun or Stop;
    whatever leaves this function (result, error or interruption) kills the child first.

    A fresh interpreter, not ``multiprocessing``: fork from Streamlit's threads can deadlock (and
    crashes on macOS), and spawn or forkserver would re-run the app script, which Streamlit
    installs as ``__main__``. The price is importing costsim again, about a second of CPU."""
    package_root = str(Path(__file__).resolve().parent.parent)  # the very costsim this process runs
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
    payload = pickle.dumps((scenario, int(limits.run_memory_gb * 2**30), limits.run_seconds),
                           protocol=pickle.HIGHEST_PROTOCOL)
    start = time.monotonic()
    child = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    sent: bytes | None = payload
    try:
        while True:
            try:
                out, _ = child.communicate(sent, timeout=poll_s)
                break
            except subprocess.TimeoutExpired:
                sent = None  # communicate() keeps sending the rest itself; it refuses new input
            elapsed = time.monotonic() - start
            if elapsed > limits.run_seconds:
                raise RunStopped(
                    f"The simulation did not finish within the dashboard's limit of {limits.run_seconds:g} s "
                    "and was stopped. Shorten the horizon or lower the arrival scale, run it with the command "
                    f"line (`costsim run`), or raise the limit ({Limits.ENV['run_seconds']}).")
            if on_wait is not None:
                on_wait(elapsed)
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
        for pipe in (child.stdin, child.stdout):
            if pipe is not None:
                pipe.close()
    try:
        reply = pickle.loads(out)
    except Exception:  # died without a reply: killed by a signal (the kernel's, for memory), or broken
        reply = ("memory",) if child.returncode < 0 else ("failed", f"exit status {child.returncode}", "no reply")
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
