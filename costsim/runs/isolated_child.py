"""The worker's side of the bounded child-process runner (``costsim.runs.isolated``): what a
worker process runs, as ``python -m costsim.runs.isolated_child [--warm TARGET [ARG]]``.

It serves ``Call``s read from stdin, one after another, until stdin closes (the parent is done
with it, or gone): the call's target imported, then its ``imports``, then the memory limit set (at
the first call that has one: an address-space limit cannot be raised again) and the backstop
alarm, then ``target(payload, child)``; each reply written to the original stdout, which from the
start goes to stderr so that what a library prints cannot corrupt a reply.
"""

from __future__ import annotations

import importlib
import os
import pickle
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import IO, Any, TypeVar

from costsim.errors import CostsimError
from costsim.runs.isolated import CHILD_MODULE, PARENT_ENV, WARMED, Call, read_frame, write_frame

T = TypeVar("T")


class Child:
    """What a target function may use in its worker: ``progress(message)`` sends ``message`` (any
    picklable value) to the parent, which restarts the time limit's clock; ``kept(name, make)``
    is an object kept between the calls this worker serves, made by ``make()`` at first use;
    ``forget(name)`` drops it."""

    def __init__(self, out: IO[bytes]) -> None:
        self._out = out
        self._kept: dict[str, Any] = {}

    def progress(self, message: object) -> None:
        write_frame(self._out, ("progress", message))

    def kept(self, name: str, make: Callable[[], T]) -> T:
        if name not in self._kept:
            self._kept[name] = make()
        value: T = self._kept[name]
        return value

    def forget(self, name: str) -> None:
        self._kept.pop(name, None)


def target(name: str) -> Callable[[Any, Child], Any]:
    """The function a ``"package.module:function"`` name gives, its module imported."""
    module, _, function = name.partition(":")
    fn: Callable[[Any, Child], Any] = getattr(importlib.import_module(module), function)
    return fn


def _limit(call: Call, limited: list[int]) -> None:
    """The address-space limit at the first call that has one (``limited`` remembers it), and the
    backstop alarm; silently not where the platform has neither (the parent's time limit holds)."""
    try:
        import resource

        if call.memory_bytes is not None and not limited:
            resource.setrlimit(resource.RLIMIT_AS, (call.memory_bytes, call.memory_bytes))
            limited.append(call.memory_bytes)
        if call.backstop_s is not None:
            signal.alarm(max(1, int(call.backstop_s)))
    except (ImportError, AttributeError, ValueError, OSError):
        pass


def _answer(call: Call, child: Child, limited: list[int]) -> tuple[Any, ...]:
    """The reply message for one call (see the module)."""
    try:
        fn = target(call.target)
        for module in call.imports:
            importlib.import_module(module)
        _limit(call, limited)
        return ("ok", fn(call.payload, child))
    except CostsimError as err:
        return ("error", err)
    except MemoryError:
        return ("memory",)
    except Exception as exc:  # a bug: the parent logs the traceback and words a plain message
        return ("failed", type(exc).__name__, traceback.format_exc())
    finally:
        if call.backstop_s is not None and hasattr(signal, "alarm"):
            signal.alarm(0)


def _send_reply(out: IO[bytes], reply: tuple[Any, ...]) -> None:
    try:
        write_frame(out, reply)
    except MemoryError:  # pickling a large value past the limit
        write_frame(out, ("memory",))
    except (pickle.PicklingError, TypeError, AttributeError) as exc:  # a value or an error that does not pickle
        if reply[0] == "error":
            write_frame(out, ("error", CostsimError(reply[1].source, reply[1].problems)))
        else:
            write_frame(out, ("failed", type(exc).__name__, traceback.format_exc()))


PARENT_CHECK_S = 0.25  # how often a worker looks whether its parent is still there, seconds


def end_with_parent(parent: int) -> None:
    """End this worker at once when process ``parent`` is no longer its parent (the server or
    command that started it has gone, however: a SIGTERM or SIGKILL runs none of its clean-up),
    looked at every ``PARENT_CHECK_S`` on a daemon thread. A closed stdin alone would end the
    worker only after the call or warm-up it is in: a replication of seconds nobody will read.
    (Not ``PR_SET_PDEATHSIG``: Linux sends it when the *thread* that started the worker ends, and
    a server starts workers from threads that end long before it does.)"""

    def watch() -> None:
        while True:
            time.sleep(PARENT_CHECK_S)
            if os.getppid() != parent:
                os._exit(0)

    threading.Thread(target=watch, name="costsim-parent-watch", daemon=True).start()


def serve(argv: Sequence[str] = ()) -> None:
    """The body of a worker (``python -m costsim.runs.isolated [--warm TARGET [ARG]]``): run the
    warm-up target if one is named, given ARG (None without; its errors ignored: only a warm-up),
    then serve calls read from stdin
    until it closes (the parent is done with this worker, or gone), each reply written to the
    original stdout; stdout itself goes to stderr from here on."""
    end_with_parent(int(os.environ.get(PARENT_ENV) or os.getppid()))
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything a library prints goes to stderr, not into the replies
    child = Child(out)
    if len(argv) in (2, 3) and argv[0] == "--warm":
        try:
            target(argv[1])(argv[2] if len(argv) == 3 else None, child)
        except Exception:  # the first real call reports its own problems
            pass
        try:  # the parent may now hand other work to a worker whose warm-up is done
            write_frame(out, (WARMED,))
        except (BrokenPipeError, OSError):  # the parent is gone
            return
    limited: list[int] = []
    while True:
        try:
            body = read_frame(sys.stdin.buffer)
            if not body:
                return
            call = pickle.loads(body)
            reply = _answer(call, child, limited)
        except MemoryError:  # a request that does not fit under the limit set by an earlier one
            reply = ("memory",)
        try:
            _send_reply(out, reply)
        except (BrokenPipeError, OSError):  # the parent is gone
            return


__all__ = ["Child", "serve", "target"]


if __name__ == "__main__":
    # Served by the module under its own name, so what it unpickles (a Call) and what it
    # defines are one module, not two (this file also runs as __main__).
    importlib.import_module(CHILD_MODULE).serve(sys.argv[1:])
