"""The one bounded child-process runner: work run in a worker process of its own, limited in
memory and in time, cancellable, with progress messages on the way and one reply at the end.

A ``Worker`` is a fresh interpreter started as ``python -m costsim.runs.isolated_child`` (the
installed package: nothing is put on its path) that serves ``Call``s one after another until its
stdin closes. A call names its work as ``"package.module:function"``, called in the worker as
``function(payload, child)`` (``isolated_child.Child``: progress messages, and objects kept between
the calls a worker serves, such as a memo of its latest runs). ``run_calls`` runs calls side by side and waits
for their replies: a worker that sends nothing for the time limit is stopped, and whatever leaves
``run_calls`` (every reply in, or an exception from a callback, which is how Streamlit stops a
script) kills every worker still running first.

Why a fresh interpreter rather than ``multiprocessing``: fork from a server's threads can deadlock
(and crashes on macOS), and spawn or forkserver re-run the caller's ``__main__``, which under
Streamlit is the app script. The price, importing costsim again, is paid ahead of time by warm
workers (``costsim.runs.workerpool``); a worker started with a warm-up says when it is done
(``WARMED``, before any reply), so its owner knows whether a call sent now would wait behind it.

What crosses back: the function's value; a ``CostsimError`` it raised, as the error it was (its
type and problems); or a ``WorkerStopped`` saying why there is no reply: out of memory (a
``MemoryError``, or killed by a signal, the kernel's for memory most likely), a failure (another
exception: its traceback in ``detail``), a time-out, a cancel, or a reply larger than the call
allows (refused unread). Messages are pickles, each framed by its length (8 bytes, big-endian):
what a library prints in the worker goes to stderr and cannot corrupt them.
"""

from __future__ import annotations

import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, Any

from costsim.errors import CostsimError, ExecutorError

CHILD_MODULE = "costsim.runs.isolated_child"  # what a worker runs (``python -m``): its side of the protocol
PARENT_ENV = "COSTSIM_WORKER_PARENT"  # the worker's parent's pid, set by ``Worker`` for the worker
WARMED = "warmed"  # the message a worker sends once its warm-up has run, before any reply
STEP_S = 0.02  # how often ``run_calls`` looks for messages, seconds
CLOSE_WAIT_S = 5.0  # how long a worker told to finish (EOF) may take before it is killed, seconds


# ------------------------------------------------------------------ what a call is and what comes back


@dataclass(frozen=True, kw_only=True)
class Call:
    """One piece of work for a worker.

    ``target``: ``"package.module:function"``, called as ``function(payload, child)``.
    ``memory_bytes``: the worker's address-space limit, bytes, set at its first call (it cannot be
    raised again: a worker serves calls with one limit); None: no limit. ``backstop_s``: seconds
    after which the worker ends itself (SIGALRM) should its parent die without killing it; None:
    never. ``imports``: modules imported before the memory limit is set, so the limit bounds the
    work and not the imports. ``max_reply_bytes``: a larger reply is refused unread
    (``ReplyTooLarge``); None: any size."""

    target: str
    payload: Any = None
    memory_bytes: int | None = None
    backstop_s: float | None = None
    imports: tuple[str, ...] = ()
    max_reply_bytes: int | None = None


class WorkerStopped(ExecutorError):
    """A call without a reply: ``message`` says why in our own words (no user text, no traceback),
    ``detail`` holds what a log needs (a traceback)."""

    def __init__(self, message: str, detail: str = ""):
        self.detail = detail
        super().__init__("worker", message)

    def __reduce__(self) -> tuple[type[CostsimError], tuple[Any, ...]]:
        return (type(self), (self.message, self.detail))


class WorkerTimedOut(WorkerStopped):
    """The worker sent nothing (no progress, no reply) for the time limit and was killed."""


class WorkerOutOfMemory(WorkerStopped):
    """The work ran out of memory (``MemoryError`` at the limit), or the worker was killed by a signal."""


class WorkerFailed(WorkerStopped):
    """The work raised an exception that is not a CostsimError (a bug), or the worker exited
    without a reply: ``message`` names the exception's type or the exit status."""


class WorkerCancelled(WorkerStopped):
    """The call was cancelled (``Worker.cancel``) before its reply came."""


class ReplyTooLarge(WorkerStopped):
    """The reply was larger than the call allows; ``detail`` is its size in bytes."""

    @property
    def size_bytes(self) -> int:
        return int(self.detail)


@dataclass(frozen=True)
class Reply:
    """What a call gave: ``value``, or ``error`` (a CostsimError from the work, or a WorkerStopped)."""

    value: Any = None
    error: CostsimError | None = None

    def result(self) -> Any:
        """The value, or the error raised."""
        if self.error is not None:
            raise self.error
        return self.value

    @property
    def finished(self) -> bool:
        """The work ran to its end (a value, or a CostsimError it raised): its worker may serve again."""
        return not isinstance(self.error, WorkerStopped)


# ------------------------------------------------------------------ frames


def write_frame(stream: IO[bytes], message: object) -> None:
    """``message`` pickled, after its length (8 bytes, big-endian)."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(len(data).to_bytes(8, "big"))
    stream.write(data)
    stream.flush()


class FrameTooLarge(Exception):
    """A frame's header announced more bytes than the reader takes (``size``)."""

    def __init__(self, size: int):
        self.size = size
        super().__init__(f"a frame of {size:,} bytes")


def read_size(stream: IO[bytes]) -> int | None:
    """The length of the next frame, from its header; None when the stream ends first."""
    head = stream.read(8)
    return int.from_bytes(head, "big") if len(head) == 8 else None


def read_frame(stream: IO[bytes], max_bytes: int | None = None) -> bytes:
    """The body of the next frame; b"" when the stream ends before a whole one (the writer died
    mid-message, or is done). FrameTooLarge, before reading the body, past ``max_bytes``."""
    size = read_size(stream)
    if size is None:
        return b""
    if max_bytes is not None and size > max_bytes:
        raise FrameTooLarge(size)
    body = stream.read(size)
    return body if len(body) == size else b""


# ------------------------------------------------------------------ the parent's side


class Worker:
    """One worker process. ``own_group``: it leads a process group of its own, so the processes it
    starts (a process pool) are killed with it. ``warm``: a target it runs once at start, before
    waiting for work (a short run, so first-use costs are paid before the first real call), given
    ``warm_arg`` (a string; None when there is none).

    ``memory_bytes`` is the limit of its first call (None before); ``runs`` counts the calls that
    finished; ``tag`` is its owner's note of what its last call left in it (the dashboard: the seed
    whose jobs its memo holds). Calls are made by ``run_calls``."""

    def __init__(self, *, own_group: bool = False, warm: str | None = None, warm_arg: str | None = None) -> None:
        command = [sys.executable, "-m", CHILD_MODULE, *(["--warm", warm] if warm else []),
                   *([warm_arg] if warm and warm_arg is not None else [])]
        # Its parent's pid: the worker ends when that process goes (isolated_child.end_with_parent).
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         start_new_session=own_group, env={**os.environ, PARENT_ENV: str(os.getpid())})
        self.own_group = own_group
        self.memory_bytes: int | None = None
        self.runs = 0
        self.tag: object = None
        self._messages: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        self._max_reply: int | None = None
        self._reply: Reply | None = None
        self._finished = True  # its latest call ran to its end (or there was none)
        self._warming = warm is not None  # until the child says its warm-up is done
        self._busy = False
        self._stop_reason: WorkerStopped | None = None
        self._last = time.monotonic()
        self._reader = threading.Thread(target=self._read, name="costsim-worker-reader", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        """Its exit status once it has ended and been reaped (negative: killed by that signal)."""
        return self._process.returncode

    @property
    def busy(self) -> bool:
        """A call was started and its reply has not come (``poll`` takes replies in)."""
        return self._busy

    @property
    def warming(self) -> bool:
        """Started with a warm-up that has not finished yet: a call sent now waits behind it."""
        return self._warming

    @property
    def reply(self) -> Reply | None:
        """The reply to its latest call, once it came, until it is taken (``take_reply``)."""
        return self._reply

    def take_reply(self) -> Reply | None:
        """The reply, no longer kept here: a worker waiting for its next call holds no result."""
        reply, self._reply = self._reply, None
        return reply

    @property
    def reusable(self) -> bool:
        """Alive, idle, and its latest call (if any) ran to its end: it may serve another call."""
        return (not self._busy and self._process.poll() is None and self._stop_reason is None
                and self._finished)

    def start(self, call: Call) -> None:
        """Send ``call`` (from a thread of its own: a worker still warming up reads it only then)."""
        if self._busy or not self.reusable:
            raise RuntimeError("a worker serves one call at a time, and only while it is reusable")
        self._busy, self._reply, self._max_reply = True, None, call.max_reply_bytes
        if self.memory_bytes is None:
            self.memory_bytes = call.memory_bytes
        self._last = time.monotonic()
        threading.Thread(target=self._send, args=(call,), name="costsim-worker-writer", daemon=True).start()

    def silent_s(self, now: float | None = None) -> float:
        """Seconds since its call started or its latest progress message."""
        return (time.monotonic() if now is None else now) - self._last

    def poll(self, on_progress: Callable[[Any], None] | None = None) -> Reply | None:
        """Take in the messages that came: each progress message to ``on_progress`` (and the time
        limit's clock restarted); the reply, once it came, kept and returned."""
        while self._busy:
            try:
                message = self._messages.get_nowait()
            except queue.Empty:
                break
            self._take(message, on_progress)
        return self._reply

    def cancel(self, reason: WorkerStopped | None = None) -> None:
        """Kill it now, with its process group when it leads one, and reap it; a call still running
        is replied ``reason`` (default ``WorkerCancelled``). Safe from any thread."""
        self._stop_reason = reason or WorkerCancelled("the call was cancelled")
        if self._process.poll() is None:
            try:
                if self.own_group:
                    os.killpg(self._process.pid, signal.SIGKILL)
                else:
                    self._process.kill()
            except (ProcessLookupError, PermissionError):
                self._process.kill()
        self._process.wait()
        self._reader.join(timeout=1)
        if self._busy:
            self._busy, self._reply, self._finished = False, Reply(error=self._stop_reason), False
        self._close_pipes()

    def close(self) -> None:
        """End it: told to finish (EOF on its stdin) when idle, killed when it is busy or does not
        finish within ``CLOSE_WAIT_S``."""
        if self._busy:
            self.cancel()
            return
        try:
            if self._process.stdin is not None:
                self._process.stdin.close()
        except OSError:
            pass
        try:
            self._process.wait(timeout=CLOSE_WAIT_S)
        except subprocess.TimeoutExpired:
            self.cancel()
            return
        self._reader.join(timeout=1)
        self._close_pipes()

    # -- inside

    def _send(self, call: Call) -> None:
        try:
            assert self._process.stdin is not None  # Popen with stdin=PIPE
            write_frame(self._process.stdin, call)
        except (OSError, ValueError):  # it died (or was killed) first: its reader says how
            pass

    def _read(self) -> None:
        """Every message the worker sends, into the queue; None after the last (it is gone)."""
        stdout = self._process.stdout
        assert stdout is not None  # Popen with stdout=PIPE
        try:
            while True:
                size = read_size(stdout)
                if size is None:
                    break
                if self._max_reply is not None and size > self._max_reply:  # the limit of the call now running
                    self._messages.put(("too_large", size))
                    break
                body = stdout.read(size)
                if len(body) < size:
                    break
                message = pickle.loads(body)
                if message == (WARMED,):  # not a reply: the warm-up ran, no call waits behind it now
                    self._warming = False
                    continue
                self._messages.put(message)
        except (OSError, ValueError):  # its pipe closed under us: killed
            pass
        except Exception as exc:  # a reply that does not unpickle here
            self._messages.put(("failed", type(exc).__name__, traceback.format_exc()))
        self._warming = False  # gone: no warm-up will finish, and nothing waits behind one
        self._messages.put(None)

    def _take(self, message: tuple[Any, ...] | None, on_progress: Callable[[Any], None] | None) -> None:
        if message is not None and message[0] == "progress":
            self._last = time.monotonic()
            if on_progress is not None:
                on_progress(message[1])
            return
        if message is None:
            error: CostsimError | None = self._stop_reason or self._death()
        elif message[0] == "ok":
            error = None
        elif message[0] == "error":
            error = message[1]
        elif message[0] == "memory":
            error = WorkerOutOfMemory("the work ran out of memory")
        elif message[0] == "too_large":
            error = ReplyTooLarge(f"a reply of {message[1]:,} bytes, more than the call allows", str(message[1]))
            self.cancel(error)  # the rest of its reply is unread: it cannot serve again
        else:
            error = WorkerFailed(str(message[1]), str(message[2]))
        self._busy = False
        self._reply = Reply(error=error) if error is not None or message is None else Reply(value=message[1])
        self._finished = self._reply.finished
        if self._finished:
            self.runs += 1

    def _death(self) -> WorkerStopped:
        """Why a worker went away without a reply."""
        try:
            code = self._process.wait(timeout=CLOSE_WAIT_S)
        except subprocess.TimeoutExpired:  # it closed its output but lives on: end it
            self._process.kill()
            code = self._process.wait()
        if code < 0:  # a signal: the kernel's for memory, most likely, or our backstop's alarm
            return WorkerOutOfMemory(f"the worker was killed by signal {-code}")
        return WorkerFailed(f"exit status {code}", "no reply")

    def _close_pipes(self) -> None:
        """Close our ends of its pipes; its output only once the reader is done with it (closing a
        file another thread is reading waits for that read)."""
        pipes = [self._process.stdin] + ([self._process.stdout] if not self._reader.is_alive() else [])
        for pipe in pipes:
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass


def run_calls(calls: Sequence[tuple[Worker, Call]], *, limit_s: float, poll_s: float = 0.25,
              on_wait: Callable[[float], None] | None = None,
              on_progress: Callable[[int, Any], None] | None = None) -> list[Reply]:
    """Start each call on its worker, side by side, and return their replies in order.

    A worker that sends nothing (no progress message, no reply) for ``limit_s`` seconds stops
    every call still running: each is replied ``WorkerTimedOut``. ``on_wait(seconds so far)`` is
    called every ``poll_s`` seconds and ``on_progress(index of the call, message)`` on each
    progress message; either may raise (a Streamlit rerun), and whatever leaves this function
    kills every worker whose call is still running first. The replies are handed over (a worker
    keeps none); workers that replied are left to their owner (``Worker.close``, or kept for more
    calls)."""
    start = time.monotonic()
    ticks = 0
    try:
        for worker, call in calls:
            worker.start(call)
        while True:
            pending = [worker for i, (worker, _) in enumerate(calls) if worker.poll(_told(on_progress, i)) is None]
            if not pending:
                break
            now = time.monotonic()
            if any(w.silent_s(now) > limit_s for w in pending):
                for worker in pending:
                    worker.cancel(WorkerTimedOut(f"nothing came from the worker for {limit_s:g} s"))
                break
            time.sleep(STEP_S)
            elapsed = time.monotonic() - start
            if on_wait is not None and int(elapsed / poll_s) > ticks:
                ticks = int(elapsed / poll_s)
                on_wait(elapsed)
    finally:
        for worker, _ in calls:
            if worker.busy:
                worker.cancel()
    replies = [worker.take_reply() for worker, _ in calls]
    assert all(r is not None for r in replies)  # every call was replied or cancelled above
    return [r for r in replies if r is not None]


def _told(on_progress: Callable[[int, Any], None] | None, index: int) -> Callable[[Any], None] | None:
    """``on_progress`` for the call at ``index``: told its index with each message."""
    if on_progress is None:
        return None
    return lambda message: on_progress(index, message)


__all__ = ["CHILD_MODULE", "WARMED", "Call", "FrameTooLarge", "ReplyTooLarge", "Reply", "Worker", "WorkerCancelled",
           "WorkerFailed", "WorkerOutOfMemory", "WorkerStopped", "WorkerTimedOut", "read_frame", "read_size", "run_calls",
           "write_frame"]
