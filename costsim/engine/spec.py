"""What the engine is told of an owned or reserved pool (``PoolSpec``: its nodes, scheduler,
deliveries, returns, failures) and of the jobs it queues (``QueuedJobs``), as ``costsim.engine.run``
builds them from a plan for ``costsim.engine.owned.OwnedCluster``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from costsim.engine.reservation import INF
from costsim.plan.tranches import InService


@dataclass(frozen=True, kw_only=True)
class PoolSpec:
    """An owned or reserved pool as the engine runs it: ``nodes`` × ``gpus_per_node`` GPUs from
    ``lead_time_h`` on, scheduled by ``scheduler`` (fifo | backfill | priority | sjf | lifo), placed
    ``placement`` (``NodePool``'s best_fit | first_fit), nodes failing at ``failures_per_node_h`` per
    node-hour and back after ``repair_h``; serving's demand is read up to ``horizon_h``."""

    nodes: int
    gpus_per_node: int
    scheduler: str
    lead_time_h: float = 0.0
    placement: str = "best_fit"
    failures_per_node_h: float = 0.0
    repair_h: float = 0.0
    horizon_h: float = INF
    # (delivery hour, nodes) of the tranches bought after the first (costsim.plan.tranches), delivery
    # ascending: their nodes, the pool's last, are out of service until then, as if under repair.
    later: tuple[tuple[float, int], ...] = ()
    # (hour, first node, nodes) of the leased tranches whose nodes go back to the lessor within the
    # horizon (``OwnedPlan.node_returns``): out of service for good from then.
    returns: tuple[tuple[float, int, int], ...] = ()
    # GPUs in service over time with every node up (``OwnedPlan.in_service``): what ``fits_ever``
    # reads; None: the whole cluster from ``lead_time_h`` on.
    in_service: InService | None = None


@dataclass(frozen=True, kw_only=True)
class QueuedJobs:
    """What the scheduler reads of each job, by job index: GPUs asked, priority, and (``sjf`` only)
    the requested hours it orders by."""

    gpus: Sequence[int]
    priority: Sequence[int]
    duration_h: Sequence[float] | None = None
