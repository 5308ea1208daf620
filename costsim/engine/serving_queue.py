"""What a backfill pass under serving keeps of its queue between passes, so that most passes scan
none of it.

With serving, the pool almost always has free GPUs (serving's share of them is not allocated), so
a backfill pass runs at nearly every instant and every hour, unlike without serving, where a full
pool skips it. Most such passes start nothing: serving refuses every job that fits the pool. Two
facts let a pass know that without looking at each queued job:

- serving's answer for a job depends only on the GPUs it holds and its hold (hours): it fits iff
  ``now + hold`` is at most the first moment those GPUs would be short (``ServingHeadroom``), so
  among the waiting jobs of one size the one with the shortest hold fits whenever any does
  (``ShortestWaiting``);
- a scan's refusals by serving stay refusals, the cluster otherwise unchanged, as long as the
  shortest hold refused per size is still refused and no size refused for holding more than the
  hour's room is now within it (``Refusals``).

Times in hours, sizes in GPUs.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Container, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from costsim.engine.reservation import INF

if TYPE_CHECKING:
    from .headroom import ServingHeadroom


@dataclass(slots=True)
class Refusals:
    """The jobs serving refused in the scans of the queue since the last full one, in what decides
    whether they would be refused again: per GPUs held, the shortest hold refused (hours; a longer
    one is refused whenever a shorter one is), and the fewest GPUs of a job refused only because it
    asks more than serving leaves free in its hour."""

    shortest: dict[int, float] = field(default_factory=dict)
    least_over_room: int | float = INF

    def hold(self, headroom: ServingHeadroom, now: float, too_big: int) -> bool:
        """Would serving refuse every one of them now, the planned profile unchanged? ``too_big``:
        the fewest GPUs this pass does not try."""
        if self.least_over_room < too_big:
            return False
        return all(headroom.refused_until(held, h) > now for held, h in self.shortest.items())


class ShortestWaiting:
    """Per job size (GPUs asked), the waiting jobs by hold: ``(hold, job)`` heaps. A job is pushed
    when it joins the queue; one that has started, been withdrawn or rejoined with another hold is
    dropped when it comes to the top (and every heap is rebuilt when such entries pile up)."""

    def __init__(self) -> None:
        self.heaps: dict[int, list[tuple[float, int]]] = {}
        self.entries = 0

    def push(self, gpus: int, hold_h: float, job: int) -> None:
        heapq.heappush(self.heaps.setdefault(gpus, []), (hold_h, job))
        self.entries += 1

    def shortest(self, pool_too_big: int, waiting: Collection[int], hold: Sequence[float]) -> list[tuple[int, float, int]]:
        """``(GPUs asked, hold, job)`` of the waiting job with the shortest hold of each size below
        ``pool_too_big`` (``hold``: per job, hours)."""
        if self.entries > 2 * len(waiting) + 64:
            self.compact(waiting, hold)
        tops = []
        for g, heap in self.heaps.items():
            if g >= pool_too_big:
                continue
            while heap and (heap[0][1] not in waiting or hold[heap[0][1]] != heap[0][0]):
                heapq.heappop(heap)
                self.entries -= 1
            if heap:
                tops.append((g, heap[0][0], heap[0][1]))
        return tops

    def compact(self, waiting: Container[int], hold: Sequence[float]) -> None:
        """Drop every entry of a job no longer waiting with that hold."""
        for g, heap in self.heaps.items():
            kept = [(h, j) for h, j in heap if j in waiting and hold[j] == h]
            heapq.heapify(kept)
            self.heaps[g] = kept
        self.entries = sum(len(heap) for heap in self.heaps.values())
