"""An owned cluster's scheduling pass: the strict part every scheduler shares (the queue's head
starts while it fits, in the scheduler's order: a heap for priority and sjf, the deque for fifo,
lifo and backfill), then, under backfill, the EASY pass (``costsim.engine.backfill``)."""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from costsim.engine.reservation import INF

if TYPE_CHECKING:
    from costsim.engine.owned import OwnedCluster


def strict_pass(cluster: OwnedCluster) -> float:
    """One scheduling pass. Returns a time (hours) before which another pass would start nothing,
    the cluster and its queue unchanged (serving's demand moving with the hours): at most now if
    none is known."""
    if not cluster.ready:
        return INF  # the delivery asks for a pass
    waiting = cluster.waiting
    pool, gpus = cluster.pool, cluster.gpus
    if cluster.key is not None:
        heap = cluster.heap
        while heap:
            j = heap[0][1]
            i = j if j >= 0 else -1 - j
            if i not in waiting:
                heapq.heappop(heap)
                continue
            refused = cluster.refused_until(i)
            if refused != -INF:
                return refused
            alloc = pool.allocate(gpus[i])
            if alloc is None:
                return INF
            heapq.heappop(heap)
            cluster.start(i, alloc)
        return INF
    queue = cluster.fifo
    quiet = INF
    while queue:
        if queue[0] not in waiting:
            queue.popleft()
            continue
        refused = cluster.refused_until(queue[0])
        if refused != -INF:
            quiet = refused
            break
        alloc = pool.allocate(gpus[queue[0]])
        if alloc is None:
            break
        cluster.start(queue.popleft(), alloc)
    if cluster.backfill is not None and len(queue) > 1 and pool.free_gpus > 0:
        quiet = min(quiet, cluster.backfill.run())
    return quiet
