"""The dashboard's worker processes, shared by every session of one server: how many may live at
once (``Slots``, ``Limits.worker_slots``), and a one-shot child process for reading untrusted
files (``run_child``) limited in memory, time and the size of what it sends back.

Why one count for the whole server: each session's runs, warm spares, Sensitivity and Sweep tabs
and upload readers start processes of their own; without a shared bound eight sessions started
25 processes (9.5 GB). Every process counts, waiting spares included; a spare is ended to make
room for work (``Slots.trim``), and a session whose work does not fit waits until it does.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from costsim.errors import CostsimError
from costsim.dashboard.uploads import Limits
from costsim.scenario import ScenarioError


class WorkStopped(RuntimeError):
    """Work in a worker process that did not finish (time, memory, reply too large, failed).
    ``str()`` holds our own words only: safe to show as Markdown. ``bounded.RunStopped`` is this."""


class Slots:
    """Worker processes busy with work, across every session (thread-safe). ``acquire(n)`` waits
    until ``n`` more fit in the capacity; idle warm workers are not counted here but by their
    owner, which ends them when busy plus idle would pass the capacity (``trim``, run after each
    acquire)."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.trim: Callable[[], None] | None = None  # ends idle workers until busy + idle <= capacity
        self._busy = 0
        self._cond = threading.Condition()

    @property
    def busy(self) -> int:
        with self._cond:
            return self._busy

    def acquire(self, n: int, capacity: int, on_wait: Callable[[float], None] | None = None,
                poll_s: float = 0.25, trim: bool = True) -> None:
        """Take ``n`` slots (``n`` <= ``capacity``), waiting while other work holds them;
        ``on_wait(seconds waited)`` every ``poll_s`` meanwhile (outside the lock: it may raise, as
        Streamlit's rerun does, and then nothing is held). Then ``trim`` idle workers to make room
        (a caller that takes idle workers for its work trims itself, after taking them)."""
        if not 1 <= n <= capacity:
            raise ValueError(f"{n} worker processes asked for, capacity {capacity}")
        start = time.monotonic()
        while True:
            with self._cond:
                self.capacity = capacity
                if self._busy + n <= capacity:
                    self._busy += n
                    break
                self._cond.wait(timeout=poll_s)
            if on_wait is not None:
                on_wait(time.monotonic() - start)
        if trim and self.trim is not None:
            self.trim()

    def release(self, n: int) -> None:
        with self._cond:
            self._busy = max(0, self._busy - n)
            self._cond.notify_all()


SLOTS = Slots(Limits().worker_slots)


def waiting_note(limits: Limits) -> str:
    """What a session shows while its work waits for a worker."""
    return (f"Waiting for a free worker: the dashboard runs at most {limits.worker_slots} worker process(es) for all "
            f"its users together ({Limits.ENV['workers']}, {Limits.ENV['workers_memory_gb']}).")


# ------------------------------------------------------------------ a one-shot bounded child


def serve_child(fn: Callable[[Any], Any]) -> None:
    """Body of a ``run_child`` process: reads (payload, memory bytes, seconds) pickled from stdin,
    limits its address space (and sets an alarm past the time limit), and writes one reply, pickled and prefixed by its
    length (8 bytes, big-endian), to the original stdout (what a library prints goes to stderr):
    ("ok", fn(payload)), ("scenario_error", source, problems), ("memory",) or ("failed", name)."""
    reply_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    payload, memory_bytes, seconds = pickle.load(sys.stdin.buffer)
    try:
        import resource
        import signal

        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        signal.alarm(int(seconds) + 30)  # a backstop should the dashboard die without killing us
    except (ImportError, AttributeError, ValueError, OSError):
        pass  # not on this platform: the parent's time limit still holds
    try:
        reply: tuple = ("ok", fn(payload))
    except CostsimError as err:
        reply = ("scenario_error", err.source, err.problems)
    except MemoryError:
        reply = ("memory",)
    except Exception as exc:  # a bug: the traceback goes to the server's log (our stderr)
        import traceback

        traceback.print_exc()
        reply = ("failed", type(exc).__name__)
    try:
        data = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
    except MemoryError:
        data = pickle.dumps(("memory",))
    reply_out.write(len(data).to_bytes(8, "big") + data)
    reply_out.close()


def _read_reply(child: subprocess.Popen, max_bytes: int, out: list) -> None:
    """The framed reply, or ("too_large", size) past ``max_bytes``, or b"" if the child died first."""
    try:
        head = child.stdout.read(8)  # type: ignore[union-attr]
        size = int.from_bytes(head, "big") if len(head) == 8 else -1
        if size > max_bytes:
            out.append(("too_large", size))
            return
        body = child.stdout.read(size) if size >= 0 else b""  # type: ignore[union-attr]
        out.append(body if len(body) == size else b"")
    except (OSError, ValueError):
        out.append(b"")


def run_child(module: str, function: str, payload: Any, limits: Limits, what: str, max_reply_bytes: int,
              on_wait: Callable[[float], None] | None = None, poll_s: float = 0.25) -> Any:
    """``module.function(payload)`` (a function calling ``serve_child``) in a fresh interpreter that
    holds one of the ``SLOTS``, limited to ``limits.process_memory_gb`` of address space and
    ``limits.run_seconds``, whose reply is read only when it is at most ``max_reply_bytes``. Its
    value, or the ScenarioError it raised, or WorkStopped naming ``what`` and the limit at fault.
    ``on_wait(seconds)`` every ``poll_s`` while waiting for a slot or the child; whatever leaves
    this function kills the child first."""
    SLOTS.acquire(1, limits.worker_slots, on_wait, poll_s)
    try:
        package_root = str(Path(__file__).resolve().parent.parent.parent)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
        memory_bytes = int(limits.process_memory_gb * 2**30)
        child = subprocess.Popen([sys.executable, "-c", f"from {module} import {function}; {function}()"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        out: list = []
        try:
            child.stdin.write(pickle.dumps((payload, memory_bytes, limits.run_seconds),  # type: ignore[union-attr]
                                           protocol=pickle.HIGHEST_PROTOCOL))
            child.stdin.close()  # type: ignore[union-attr]
            reader = threading.Thread(target=_read_reply, args=(child, max_reply_bytes, out), daemon=True)
            reader.start()
            start = time.monotonic()
            while reader.is_alive():
                reader.join(timeout=poll_s)
                if time.monotonic() - start > limits.run_seconds:
                    raise WorkStopped(f"Reading {what} did not finish within the dashboard's limit of "
                                      f"{limits.run_seconds:g} s and was stopped ({Limits.ENV['run_seconds']}).")
                if on_wait is not None:
                    on_wait(time.monotonic() - start)
        except BrokenPipeError:  # the child died before reading its request
            out.append(b"")
        finally:
            if child.poll() is None:
                child.kill()
            child.wait()
            child.stdout.close()  # type: ignore[union-attr]
    finally:
        SLOTS.release(1)
    return _unpack(out[0] if out else b"", child.returncode, limits, what)


def _unpack(body: Any, returncode: int, limits: Limits, what: str) -> Any:
    if isinstance(body, tuple):  # ("too_large", bytes)
        raise WorkStopped(f"Reading {what} gave {body[1] / 2**20:,.0f} MiB of tables, more than the dashboard keeps "
                          "for an upload; upload fewer or smaller files.")
    try:
        reply = pickle.loads(body)
    except Exception:  # died without a reply: killed for memory or CPU time, or broken
        reply = ("memory",) if returncode != 0 else ("failed", "no reply")
    if reply[0] == "ok":
        return reply[1]
    if reply[0] == "scenario_error":
        raise ScenarioError(reply[1], reply[2])
    if reply[0] == "memory":
        raise WorkStopped(f"Reading {what} needed more than the dashboard's {limits.process_memory_gb:g} GiB of memory "
                          f"and was stopped ({Limits.ENV['run_memory_gb']}).")
    raise WorkStopped(f"Reading {what} failed ({reply[1]}). This is a bug in costsim: please report it with the "
                      "file. The details are in the server's log.")


__all__ = ["SLOTS", "Slots", "WorkStopped", "run_child", "serve_child", "waiting_note"]
