"""Tasks waiting for an executor's lanes (``costsim.runs.executors.open_executor``), the most
urgent first, so that work wanted now always goes before work that may be wanted later.

A search that knows what it needs next, and can guess what it may need after, puts the first with
priority 0 and its guesses with a higher number: only lanes the urgent work leaves idle take a
guess (at most ``lanes.slots`` tasks run at once, so a guess never waits in a worker's queue ahead
of wanted work), and a guess that turned out wrong is dropped: never started if it had not been,
its result ignored if it had. In this process (the local executor) a task runs only when the
queue is waited on, one at a time, so a guess runs only once it is wanted: the same results,
computed once each, whatever the executor.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from costsim.runs.executors import Lanes


@dataclass(frozen=True)
class Failed:
    """A task that raised ``error`` (what ``TaskQueue.next`` hands back for it)."""

    error: Exception


class TaskQueue:
    """``fn`` of each task put, on ``lanes``: ``put`` a task under a key with a priority (lower
    runs first, then in the order put), ``urge`` one still waiting, ``drop`` one, and ``next()``
    for the next ``(key, result)`` to finish. Not thread-safe."""

    def __init__(self, lanes: Lanes, fn: Callable[[Any], Any]) -> None:
        self.lanes, self.fn = lanes, fn
        self._waiting: dict[Hashable, tuple[int, int, Any]] = {}  # key -> (priority, order put, task)
        self._running: dict[Any, Hashable | None] = {}  # handle -> key (None: dropped, still holding a lane)
        self._order = itertools.count()
        self.started = 0  # tasks started (dropped ones too): what the lanes ran or are running

    def put(self, key: Hashable, task: Any, priority: int = 0) -> None:
        """Queue ``task`` under ``key`` (a key not waiting or running already)."""
        if key in self:
            raise ValueError(f"task {key!r} is queued already")
        self._waiting[key] = (priority, next(self._order), task)

    def urge(self, key: Hashable, priority: int) -> None:
        """``key``'s priority, if it is still waiting (a running task keeps its lane)."""
        if key in self._waiting:
            _, order, task = self._waiting[key]
            self._waiting[key] = (priority, order, task)

    def drop(self, key: Hashable) -> None:
        """Forget ``key``: never started if waiting; if running, its result ignored (a pool's worker
        finishes it first, holding its lane)."""
        if self._waiting.pop(key, None) is not None:
            return
        handle = next((h for h, k in self._running.items() if k == key), None)
        if handle is not None:
            if self.lanes.abandon([handle]):
                self._running[handle] = None
            else:
                del self._running[handle]

    def __contains__(self, key: Hashable) -> bool:
        return key in self._waiting or key in self._running.values()

    def __len__(self) -> int:
        """Tasks put and neither finished nor dropped."""
        return len(self._waiting) + sum(k is not None for k in self._running.values())

    def next(self) -> tuple[Hashable, Any]:
        """The next task to finish, as ``(key, fn(task))``, or ``(key, Failed(error))`` when it
        raised: the caller decides whether that task's error matters (a guess nobody wanted must not
        stop the search a pool happened to finish it in), once the idle lanes have been given the
        most urgent tasks waiting."""
        if not len(self):
            raise LookupError("nothing queued")
        while True:
            self._fill()
            for handle in self.lanes.wait(list(self._running)):
                key = self._running.pop(handle)
                if key is not None:
                    try:
                        return key, self.lanes.result(handle)
                    except Exception as error:  # noqa: BLE001 - handed back with its key, not lost
                        return key, Failed(error)
                # a dropped task finished: its lane is free for the next one

    def _fill(self) -> None:
        while self._waiting and len(self._running) < self.lanes.slots:
            key = min(self._waiting, key=self._waiting.__getitem__)
            _, _, task = self._waiting.pop(key)
            self._running[self.lanes.start(self.fn, task)] = key
            self.started += 1


__all__ = ["Failed", "TaskQueue"]
