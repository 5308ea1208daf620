"""How many worker processes (``costsim.runs.isolated.Worker``) one server may run at once, and its
idle warm workers, owned by one ``WorkerPool`` object.

Every process counts against ``capacity``: busy ones (``acquire``/``release``, held by the work
that runs in them) and idle warm ones (``spares``) together. Work comes before a spare: a spare is
ended to make room (``trim``), and work that does not fit waits until it does. A warm spare has
imported costsim and run a short warm-up target, so the next call pays neither the import nor the
first-use costs; a worker whose call finished may go back to the spares (``keep``) for the next
call, up to ``max_runs`` calls (a long-lived process's memory only grows, by fragmentation).

The first spares may be *primed*: each warm-up given an argument of its own (``primes``), as the
dashboard has each of its first spares run one replication of the scenario a new session shows
first; such a spare is tagged ``(PRIMED, argument)`` until its owner names what it holds (``retag``).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Sequence

from costsim.runs.isolated import Worker

PRIMED = "primed"  # the tag of a spare primed with an argument, beside that argument


def _end_all(idle: list[Worker], lock: threading.RLock) -> None:
    """Kill the idle workers (when their pool is closed or collected, and at exit)."""
    with lock:
        while idle:
            idle.pop().cancel()


class WorkerPool:
    """Worker processes of one server (thread-safe): at most ``capacity`` alive at once, and up to
    ``spares`` idle warm workers (each started with the ``warm`` target) waiting for work; the
    first spares started are given the ``primes`` in turn, one each, as their warm-up's argument.
    ``close()`` ends the idle ones (also done at exit)."""

    def __init__(self, *, capacity: int, spares: int = 0, warm: str | None = None, max_runs: int = 50,
                 primes: Sequence[str] = ()) -> None:
        self.capacity = capacity
        self.spares = spares
        self.warm = warm
        self.max_runs = max_runs
        self._primes = list(primes)  # for the next spares started
        self._busy = 0
        self._idle: list[Worker] = []  # least recently used first
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._finalizer = weakref.finalize(self, _end_all, self._idle, self._lock)

    @property
    def busy(self) -> int:
        """Worker processes held by work now."""
        with self._lock:
            return self._busy

    @property
    def idle(self) -> tuple[Worker, ...]:
        """The idle warm workers, least recently used first."""
        with self._lock:
            return tuple(self._idle)

    def acquire(self, n: int, *, capacity: int, on_wait: Callable[[float], None] | None = None,
                poll_s: float = 0.25, trim: bool = True) -> None:
        """Hold ``n`` processes (``n`` <= ``capacity``, which becomes the pool's), waiting while
        other work holds them; ``on_wait(seconds waited)`` every ``poll_s`` seconds meanwhile
        (outside the lock: it may raise, as Streamlit's rerun does, and then nothing is held). Then
        ``trim`` idle workers to make room (a caller that takes idle workers for its work trims
        itself, after taking them: ``take``)."""
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
        if trim:
            self.trim()

    def release(self, n: int) -> None:
        """Give back ``n`` processes held by work."""
        with self._cond:
            self._busy = max(0, self._busy - n)
            self._cond.notify_all()

    def take(self, *, memory_bytes: int | None, tag: object = None, warm: bool = True) -> Worker:
        """A worker for work already holding its process (``acquire``). With ``warm``, an idle one
        whose memory limit is unset or ``memory_bytes`` (the one whose ``tag`` is ``tag`` first,
        then the most recently used); else a fresh one, started once idle ones beyond the capacity
        are ended. Spares are topped up after the work (``top_up``), not now: a starting worker's
        import would take CPU from the work."""
        if warm:
            with self._lock:
                for dead in [w for w in self._idle if not w.reusable]:
                    self._idle.remove(dead)
                    dead.cancel()
                usable = [w for w in reversed(self._idle) if w.memory_bytes in (None, memory_bytes)]
                usable.sort(key=lambda w: w.tag != tag)  # stable: recency kept
                if usable:
                    self._idle.remove(usable[0])
                    return usable[0]
        self.trim()
        return Worker()  # needed now: no warm-up before this call

    def keep(self, worker: Worker, *, tag: object = None) -> bool:
        """Put a worker whose call finished back among the idle ones, noting ``tag``, and give back
        its process in the same step; False (the caller ends it and gives its process back) when it
        cannot serve again, is worn (``max_runs``) or the spares are full."""
        worker.tag = tag
        with self._cond:
            if worker.reusable and worker.runs < self.max_runs and len(self._idle) < self.spares:
                self._idle.append(worker)
                self._busy = max(0, self._busy - 1)
                self._cond.notify_all()
                return True
        return False

    def trim(self) -> None:
        """End idle workers, least recently used first, while busy and idle ones together pass the capacity."""
        with self._lock:
            while self._idle and self._busy + len(self._idle) > self.capacity:
                self._idle.pop(0).cancel()

    def top_up(self) -> None:
        """Start warm workers until ``spares`` wait, as far as the capacity leaves room (fewer after
        a stopped call, or while other work holds the processes)."""
        with self._lock:
            while len(self._idle) < self.spares and self._busy + len(self._idle) < self.capacity:
                prime = self._primes.pop(0) if self._primes and self.warm else None
                worker = Worker(warm=self.warm, warm_arg=prime)
                if prime is not None:
                    worker.tag = (PRIMED, prime)
                self._idle.append(worker)

    def retag(self, old: object, new: object) -> None:
        """Idle workers tagged ``old`` are tagged ``new`` (a primed spare, once its owner knows
        what its warm-up left in it)."""
        with self._lock:
            for worker in self._idle:
                if worker.tag == old:
                    worker.tag = new

    def retire(self, worker: Worker) -> bool:
        """End an idle ``worker`` and drop it from the spares, in one step under the pool's lock
        (False, and nothing done, when work has taken it meanwhile: that work owns it now)."""
        with self._lock:
            if worker not in self._idle:
                return False
            self._idle.remove(worker)
            worker.cancel()
            return True

    def close(self) -> None:
        """End every idle worker (busy ones belong to their work, which ends them)."""
        _end_all(self._idle, self._lock)


__all__ = ["PRIMED", "WorkerPool"]
