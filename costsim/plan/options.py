"""An option resolved against the catalog: its plan in numbers (GPUs, node size, prices, billing
rules, failure rates, lead time), built once by ``costsim.plan.resolve``, and the facts every layer
reads from it rather than derives again: whether a part is a pool, the most GPUs it can give one
job (``job_limit``), the GPUs a job holds there (``held_gpus``), when its capacity is there
(``delivery_h``), how it is paid for (``pricing``) and which side of build-or-rent it is (``side``);
and, for a layer whose pricing or estimate differs by how a pool is paid, the pool itself as what
it is (``owned``, ``reservation``, ``rental``: exactly one of them on a pool) and how it interrupts
jobs (``interruptions``).

Pools: an owned cluster and a reserved commitment are pools of nodes run by a scheduler and paid
whether used or not; on-demand and spot capacity is rented per use, in whole instances."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import NamedTuple, overload

import numpy as np

from costsim.catalog.load import GPUSpec
from costsim.plan.tranches import InService, ResaleCurve, TranchePlan
from costsim.units import HOURS_PER_YEAR

# The pricing labels (``Plan.pricing``; a hybrid's base's) whose capacity is built rather than rented.
# Reserved capacity is rented here: a commitment to a provider's GPUs, not a cluster of one's own
# (docs/decisions.md, "The verdict").
BUILD_PRICINGS = frozenset({"owned"})


def side_of(pricing: str) -> str:
    """``build`` or ``rent`` for a pricing label (``Plan.pricing``: ``owned``, ``on_demand``,
    ``reserved``, ``spot``, a hybrid's ``base+burst``, a fleet's parts ``+``-joined): ``build`` when
    any of its capacity is owned — the capacity itself, a hybrid's base, any of a fleet's pools, in
    any place (a fleet that owns a cluster is a decision to buy hardware); ``rent`` for on-demand,
    spot and reserved capacity, a hybrid on a reserved base and a fleet of rented parts only.
    The one rule: ``Plan.side`` is this of its label, and tables that carry only the label (a
    summary's ``pricing`` column) read their side through it."""
    return "build" if any(part in BUILD_PRICINGS for part in pricing.split("+")) else "rent"


@overload
def nodes_needed(gpus: int, gpus_per_node: int) -> int: ...
@overload
def nodes_needed(gpus: np.ndarray, gpus_per_node: int) -> np.ndarray: ...
def nodes_needed(gpus, gpus_per_node):
    """Whole nodes (or cloud instances) a job of ``gpus`` GPUs needs: ⌈gpus / per node⌉; numpy
    arrays too."""
    return -(-gpus // gpus_per_node)


def held_gpus(gpus: int, gpus_per_node: int) -> int:
    """GPUs a job of ``gpus`` holds in a pool of ``gpus_per_node``-GPU nodes: itself within one node,
    whole nodes beyond. The scalar twin of ``OwnedPlan.held_gpus`` for the engine's event loop
    (plain ints: no array per call)."""
    return gpus if gpus <= gpus_per_node else nodes_needed(gpus, gpus_per_node) * gpus_per_node


def _held_in_pool(gpus: np.ndarray, gpus_per_node: int) -> np.ndarray:
    """``held_gpus`` over an array of job sizes (GPUs): a trace may hold a million jobs."""
    g = np.asarray(gpus)
    return np.where(g <= gpus_per_node, g, nodes_needed(g, gpus_per_node) * gpus_per_node).astype(np.int64)


def _held_in_instances(gpus: np.ndarray, gpus_per_instance: int) -> np.ndarray:
    """GPUs jobs of ``gpus`` rent in whole instances of ``gpus_per_instance`` GPUs."""
    g = np.asarray(gpus)
    return (nodes_needed(g, gpus_per_instance) * gpus_per_instance).astype(np.int64)


class JobLimit(NamedTuple):
    """The most GPUs a pool can ever give one job and the option field that sets it."""

    gpus: int
    field: str  # gpus (owned) | reserved_gpus (reserved) | max_gpus (an on-demand or spot quota)


class Interruption(NamedTuple):
    """One way a pool interrupts a job: per node (or instance) the job holds, ``per_node_h``
    interruptions per hour, each costing ``resume_h`` hours until its work resumes."""

    per_node_h: float
    resume_h: float


class OwnedFacts:
    """What an owned pool says of itself whatever it is made of (an ``OwnedPlan``, a pool of node
    groups: ``costsim.plan.groups.GroupedPlan``): a pool of nodes run by a scheduler, bought and
    paid for whether used or not, on the build side."""

    @property
    def is_pool(self) -> bool:
        """Always: owned capacity is a pool of nodes run by a scheduler, paid whether used or not."""
        return True

    @property
    def pay_as_you_go(self) -> bool:
        """Never: owned capacity is paid for whether used or not."""
        return False

    @property
    def reservation(self) -> None:
        """No reserved commitment."""
        return None

    @property
    def rental(self) -> None:
        """Not capacity rented per use."""
        return None

    @property
    def bridged_h(self) -> float:
        """Hours from the start during which another pool stands in for the option's own: none."""
        return 0.0

    @property
    def pricing(self) -> str:
        """How the capacity is paid for: ``owned``."""
        return "owned"

    @property
    def side(self) -> str:
        """``build`` (``side_of``)."""
        return side_of(self.pricing)


@dataclass(frozen=True)
class OwnedPlan(OwnedFacts):
    """An owned option in numbers."""

    name: str
    gpu: GPUSpec
    gpus: int
    gpus_per_node: int
    nodes: int
    network: str
    fabric_efficiency: float
    lead_time_h: float
    scheduler: str
    capex_usd: float
    failures_per_node_h: float = 0.0  # node failure rate per hour
    repair_h: float = 0.0
    placement: str = "best_fit"  # where a job within a node goes: best_fit | first_fit (engine.pool)
    kind: str = "owned"
    rollout: CloudPlan | None = None  # the rented pool its disaggregated RL classes sample on (rollout_pool)
    rollout_link_gb_s: float = 0.0  # GB/s of the link to it
    rl: dict[str, float] | None = None  # the RL model's constants (catalog rl.*); None: the shipped catalog's
    tranches: tuple[TranchePlan, ...] = ()  # purchases over time (lead_time_h: the first's delivery); (): one
    resale_curve: ResaleCurve | None = None  # (age years, value fraction); None: straight line to the residual

    @property
    def purchases(self) -> tuple[TranchePlan, ...]:
        """The cluster's tranches, delivery ascending; bought at once: one, every GPU ordered at hour
        0, delivered at ``lead_time_h`` and paid on order."""
        return self.tranches or (TranchePlan(gpus=self.gpus, nodes=self.nodes, order_h=0.0,
                                             delivery_h=self.lead_time_h, capex_usd=self.capex_usd),)

    @property
    def node_returns(self) -> tuple[tuple[float, int, int], ...]:
        """(hour, first node, nodes) of each tranche whose nodes go back to the lessor within the
        horizon (``TranchePlan.returned_h``), the nodes numbered as the engine lays the tranches
        out: the first tranche's first, each later one's after them."""
        out, first = [], 0
        for t in self.purchases:
            if math.isfinite(t.returned_h):
                out.append((t.returned_h, first, t.nodes))
            first += t.nodes
        return tuple(out)

    @property
    def owned(self) -> OwnedPlan:
        """The owned cluster the option runs on first: itself."""
        return self

    @property
    def node_idle_kw(self) -> float:
        """kW one of its nodes draws idle: the catalog's server's (``gpu.gpus_per_node`` GPUs) scaled
        to this node's GPUs, since a server's draw is mostly its GPUs' (2 GPUs: a quarter of 8's)."""
        return self.gpu.node_idle_kw * (self.gpus_per_node / self.gpu.gpus_per_node)  # 1.0 at the catalog's size: exact

    @property
    def node_max_kw(self) -> float:
        """kW one of its nodes draws at full load: the catalog server's scaled as ``node_idle_kw``."""
        return self.gpu.node_max_kw * (self.gpus_per_node / self.gpu.gpus_per_node)

    def interruptions(self, restart_h: float) -> list[Interruption]:
        """Node failures, each costing ``restart_h`` hours before the job's work resumes (from its
        last checkpoint)."""
        return [Interruption(self.failures_per_node_h, restart_h)]

    @property
    def home(self) -> OwnedPlan:
        """The pool the option's jobs run on first: the cluster itself."""
        return self

    @property
    def node_gpus(self) -> int:
        """GPUs of one node: the unit whole nodes are taken in and a failure takes out (its NVLink
        domain may span more: ``plan.hardware.nvlink_domain_gpus``)."""
        return self.gpus_per_node

    @property
    def delivery_h(self) -> float:
        """Hours from the start until the cluster is there: its lead time."""
        return self.lead_time_h

    @property
    def job_limit(self) -> JobLimit:
        """The most GPUs one job can ever get: the whole cluster (field ``gpus``), if every tranche
        is in service together (``most_gpus_from`` says when they are not)."""
        return JobLimit(self.gpus, "gpus")

    @property
    def in_service(self) -> InService:
        """GPUs in service over time: each tranche from its delivery until its nodes go back to the
        lessor (``TranchePlan.returned_h``)."""
        return InService.of([t.span for t in self.purchases])

    def most_gpus_from(self, h: np.ndarray) -> np.ndarray:
        """The most GPUs in service together at any hour from each of ``h`` (hours) on: the largest
        job that can still fit once submitted then (a lease returned before a later tranche arrives
        leaves less than ``gpus`` ever in service)."""
        return self.in_service.most_from_each(h)

    def held_gpus(self, gpus: np.ndarray) -> np.ndarray:
        """GPUs each job of ``gpus`` GPUs holds here: itself within one node, whole nodes beyond
        (a 5-GPU job on 8-GPU nodes holds 5, a 12-GPU job 16)."""
        return _held_in_pool(gpus, self.gpus_per_node)

    def unpriced(self) -> OwnedPlan:
        """The plan with its price (capex, USD) NaN, and its rollout pool's: what work plans and
        runs are given, so a price read there by mistake turns the tables to NaN."""
        rollout = self.rollout.unpriced() if self.rollout is not None else None
        return replace(self, capex_usd=math.nan, rollout=rollout, tranches=tuple(t.unpriced() for t in self.tranches),
                       resale_curve=None)


@dataclass(frozen=True)
class CloudPlan:
    """A cloud option in numbers. Reserved: a committed pool of ``reserved_gpus`` run by
    ``scheduler`` (no quota, provisioning or per-allocation billing), owed for whole terms of
    ``term_h`` hours (renewed for as many terms as the horizon needs only when ``renew``)."""

    name: str
    gpu: GPUSpec
    pricing: str
    price_per_gpu_hour: float
    gpus_per_instance: int
    billing_granularity_s: float
    minimum_billing_s: float
    max_gpus: int | None
    provisioning_delay_h: float
    startup_h: float
    network: str
    fabric_efficiency: float
    reserved_gpus: int | None = None
    scheduler: str = "fifo"
    failures_per_node_h: float = 0.0  # rented node failures per hour (the provider swaps the node)
    preemptions_per_instance_h: float = 0.0  # spot
    reacquire_delay_h: float = 0.0  # spot
    provisioning_cv: float = 0.0
    stockout_probability: float = 0.0
    stockout_min_gpus: int = 0
    stockout_retry_h: float = 0.0
    term_h: float = HOURS_PER_YEAR  # reserved: the commitment's term
    renew: bool = False  # reserved: the commitment renews when the horizon is longer than its term
    placement: str = "best_fit"  # reserved: where a job within an instance goes (engine.pool)
    kind: str = "cloud"
    rollout: CloudPlan | None = None  # reserved: the rented pool its disaggregated RL classes sample on
    rollout_link_gb_s: float = 0.0  # GB/s of the link to it
    rl: dict[str, float] | None = None  # the RL model's constants (catalog rl.*); None: the shipped catalog's
    price_change_per_year: float = 0.0  # compound change of the price per year (costsim.models.trend)

    @property
    def reserved(self) -> bool:
        """A committed pool (``pricing: reserved``), rather than capacity rented per use."""
        return self.pricing == "reserved"

    @property
    def is_pool(self) -> bool:
        """Reserved: a pool of whole instances run by ``scheduler``, paid whether used or not (as an
        owned cluster); on-demand and spot capacity is rented per use."""
        return self.reserved

    @property
    def pay_as_you_go(self) -> bool:
        """On-demand and spot: rented per use, billed for the instances allocated."""
        return not self.reserved

    @property
    def owned(self) -> None:
        """No owned cluster: rented capacity."""
        return None

    @property
    def reservation(self) -> CloudPlan | None:
        """The reserved commitment the option runs on first: itself when reserved, else None."""
        return self if self.reserved else None

    @property
    def rental(self) -> CloudPlan | None:
        """The capacity rented per use that the option is: itself when on-demand or spot, else None."""
        return None if self.reserved else self

    @property
    def bridged_h(self) -> float:
        """Hours from the start during which another pool stands in for the option's own: none."""
        return 0.0

    def interruptions(self, restart_h: float) -> list[Interruption]:
        """Reserved: none (the provider handles a committed pool's failures). On-demand and spot:
        node failures, the node swapped in the mean provisioning delay, then ``restart_h``; and
        preemptions (spot), the instance reacquired after ``reacquire_delay_h``, provisioning and
        startup, then ``restart_h``."""
        if self.reserved:
            return []
        swap_h = self.provisioning_delay_h + restart_h
        reacquire_h = self.reacquire_delay_h + self.provisioning_delay_h + self.startup_h + restart_h
        return [Interruption(self.failures_per_node_h, swap_h), Interruption(self.preemptions_per_instance_h, reacquire_h)]

    @property
    def home(self) -> CloudPlan:
        """The pool the option's jobs run on first: this capacity itself."""
        return self

    @property
    def node_gpus(self) -> int:
        """GPUs of one instance: the unit capacity is rented in (its NVLink domain:
        ``plan.hardware.nvlink_domain_gpus``)."""
        return self.gpus_per_instance

    @property
    def delivery_h(self) -> float:
        """Hours from the start until the capacity is there: 0 (rented capacity is there at once;
        provisioning delays are per allocation)."""
        return 0.0

    @property
    def job_limit(self) -> JobLimit | None:
        """The most GPUs one job can ever get: the reserved GPUs (``reserved_gpus``), an on-demand or
        spot quota (``max_gpus``); None for unlimited on-demand or spot capacity."""
        if self.reserved:
            assert self.reserved_gpus is not None  # the schema requires it with pricing: reserved
            return JobLimit(self.reserved_gpus, "reserved_gpus")
        if self.max_gpus is not None:
            return JobLimit(self.max_gpus, "max_gpus")
        return None

    def most_gpus_from(self, h: np.ndarray) -> np.ndarray:
        """The most GPUs one job can get from each of ``h`` (hours) on: always ``job_limit``'s
        (a reservation or quota does not shrink); only for a limited pool."""
        limit = self.job_limit
        assert limit is not None, "unlimited rented capacity has no most"
        return np.full(np.shape(h), limit.gpus, dtype=np.int64)

    @property
    def side(self) -> str:
        """``rent`` (``side_of``): on-demand, spot and reserved capacity are rented."""
        return side_of(self.pricing)

    def held_gpus(self, gpus: np.ndarray) -> np.ndarray:
        """GPUs each job of ``gpus`` GPUs holds here. Reserved: as an owned cluster of instances,
        itself within one instance, whole instances beyond (the engine runs it so); on-demand and
        spot: whole instances (a 5-GPU job on 8-GPU instances rents 8, a 12-GPU job 16)."""
        if self.reserved:
            return _held_in_pool(gpus, self.gpus_per_instance)
        return _held_in_instances(gpus, self.gpus_per_instance)

    def unpriced(self) -> CloudPlan:
        """The plan with its prices (USD per GPU-hour, billing granularity and minimum) NaN, and its
        rollout pool's: what work plans and runs are given (see ``OwnedPlan.unpriced``)."""
        rollout = self.rollout.unpriced() if self.rollout is not None else None
        return replace(self, price_per_gpu_hour=math.nan, billing_granularity_s=math.nan, minimum_billing_s=math.nan,
                       price_change_per_year=math.nan, rollout=rollout)
