"""An owned pool of node groups in numbers: nodes of different sizes and GPU types under one
scheduler, as real clusters are (one public Kubernetes GPU trace has 617 × 8, 54 × 4, 518 × 2 and
24 × 1-GPU nodes across 7 GPU models).

Each group is an ``OwnedPlan`` of its own (one GPU type, one node size: its capex, power and RL
timing are that type's, from the catalog), so everything a single-type cluster knows holds per
group; the pool is their sum. A job runs within one group — all its nodes of one GPU type — and may
ask for a GPU type (``None``: any). How the engine places jobs across the groups:
``costsim.engine.groups``.

A scenario's owned option with ``node_groups`` resolves to this plan (``resolve.node_groups``). To
the layers that read any option's plan it is an owned pool whose parts (``plan.fleet.pools``) are
its groups, with no burst: its home (``home``, ``gpu``, ``network``) is its first group, as a
fleet's is its first part; its capacity, usage and costs are its groups' (``costsim.results``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from costsim.catalog.load import GPUSpec
from costsim.plan.options import JobLimit, OwnedFacts, OwnedPlan
from costsim.plan.tranches import InService, TranchePlan
from costsim.scenario.node_groups import MAX_NODE_GROUPS, NodeGroup
from costsim.scenario.trace import ANY_GPU, gpu_type_code

MAX_GROUPS = MAX_NODE_GROUPS  # the schema's limit: a job's group is recorded as its part (int8)


@dataclass(frozen=True, kw_only=True)
class GroupedPlan(OwnedFacts):
    """An owned option of node groups: ``groups`` in the order written (the order a job tries them
    in when several could start it at one instant), each an ``OwnedPlan`` named for its group
    (``group_label``)."""

    name: str
    groups: tuple[OwnedPlan, ...]
    kind: str = "owned"

    def __post_init__(self) -> None:
        if not self.groups:
            raise ValueError("a pool of node groups needs at least one group")
        if len(self.groups) > MAX_GROUPS:
            raise ValueError(f"{len(self.groups)} node groups: at most {MAX_GROUPS}")
        # One option, one order: every group is delivered after the same lead time (costs rely on it).
        if len({g.lead_time_h for g in self.groups}) != 1 or any(g.tranches for g in self.groups):
            raise ValueError("node groups are bought at once and delivered together")

    @property
    def home(self) -> OwnedPlan:
        """The pool's first group: what reads one pool of an option (its GPU, network, rollout pool:
        none) reads this."""
        return self.groups[0]

    @property
    def gpu(self) -> GPUSpec:
        return self.home.gpu

    @property
    def network(self) -> str:
        return self.home.network

    @property
    def owned(self) -> OwnedPlan:
        """The owned cluster the option runs on first: its first group (every group: ``groups``)."""
        return self.home

    @property
    def delivery_h(self) -> float:
        """Hours until the pool is there: its lead time (every group's)."""
        return self.home.lead_time_h

    @property
    def purchases(self) -> tuple[TranchePlan, ...]:
        """One purchase: every group's GPUs ordered at hour 0, delivered after the lead time, paid on
        order (``OwnedPlan.purchases`` of a cluster bought at once)."""
        return (TranchePlan(gpus=self.gpus, nodes=self.nodes, order_h=0.0, delivery_h=self.delivery_h,
                            capex_usd=self.capex_usd),)

    @property
    def in_service(self) -> InService:
        """GPUs in service over time: every group's from the one delivery on (``purchases``)."""
        return InService.of([t.span for t in self.purchases])

    def unpriced(self) -> GroupedPlan:
        """Every group unpriced (``OwnedPlan.unpriced``)."""
        return replace(self, groups=tuple(g.unpriced() for g in self.groups))

    @property
    def gpus(self) -> int:
        """GPUs of the whole pool: the groups' sum."""
        return sum(g.gpus for g in self.groups)

    def gpu_share(self, group: str) -> float:
        """The share of the pool's GPUs in the group named ``group`` (0 for a name of none)."""
        return sum(g.gpus for g in self.groups if g.name == group) / self.gpus

    @property
    def nodes(self) -> int:
        return sum(g.nodes for g in self.groups)

    @property
    def capex_usd(self) -> float:
        """USD: each group's GPUs at its own type's price (``OwnedPlan.capex_usd``), summed."""
        return sum(g.capex_usd for g in self.groups)

    @property
    def gpu_types(self) -> tuple[str, ...]:
        """The catalog GPU types of the groups, each once, in group order."""
        return tuple(dict.fromkeys(g.gpu.name for g in self.groups))

    @property
    def job_limit(self) -> JobLimit:
        """The most GPUs one job can ever get: the largest group (a job never spans groups)."""
        return JobLimit(max(g.gpus for g in self.groups), "node_groups")

    def may_use(self, wanted: np.ndarray) -> list[np.ndarray]:
        """Per group, per job: whether a job asking for GPU type code ``wanted[i]`` (``JobTable.gpu_type``:
        an index into ``trace.GPU_TYPES``; ``ANY_GPU``: any) may run on it (its type is the one asked)
        — not whether it fits (``fits``). Codes are compared as they are stored, one byte a job."""
        codes = np.asarray(wanted)
        return [(codes == ANY_GPU) | (codes == gpu_type_code(g.gpu.name)) for g in self.groups]

    def can_hold(self, gpus: np.ndarray) -> list[np.ndarray]:
        """Per group, per job of ``gpus`` GPUs: whether the group could ever hold it (whole nodes
        beyond one: ``OwnedPlan.held_gpus``), whatever type it asks for."""
        asked = np.asarray(gpus, dtype=np.int64)
        return [g.held_gpus(asked) <= g.gpus for g in self.groups]

    def placeable(self, gpus: np.ndarray, wanted: np.ndarray) -> list[np.ndarray]:
        """Per group, per job of ``gpus`` GPUs asking for GPU type code ``wanted``: whether the job may
        run on the group (``may_use``) and the group could ever hold it (``can_hold``)."""
        return [allowed & holds for allowed, holds in zip(self.may_use(wanted), self.can_hold(gpus), strict=True)]

    def fits(self, gpus: np.ndarray, wanted: np.ndarray) -> np.ndarray:
        """Per job of ``gpus`` GPUs asking for GPU type code ``wanted``: whether some group it may use
        could ever hold it. A job for which this is false would never start: the plan's checks
        refuse it before any run."""
        ok = np.zeros(len(gpus), dtype=bool)
        for placed in self.placeable(gpus, wanted):
            ok |= placed
        return ok

    @staticmethod
    def first_group(placeable: Sequence[np.ndarray]) -> np.ndarray:
        """Per job, the first group (index) that it may use and that could ever hold it
        (``placeable``: per group, per job, as ``placeable`` or ``workload.plan.group_access`` give):
        where a job that never starts is timed, the group it would try first. 0 for a job no group
        takes (the plan's checks refuse it before any run)."""
        ok = np.array(placeable, dtype=bool)
        return np.where(ok.any(axis=0), ok.argmax(axis=0), 0) if ok.shape[1] else np.zeros(0, dtype=np.int64)


def group_label(option: str, groups: Sequence[NodeGroup], k: int) -> str:
    """The name of group ``k`` of ``option``: ``own:H100x8`` (type and node size), with ``#k`` added
    when another group has the same type and node size (so each label names one group)."""
    g = groups[k]
    label = f"{option}:{g.gpu_type}x{g.gpus_per_node}"
    same = [j for j, h in enumerate(groups) if (h.gpu_type, h.gpus_per_node) == (g.gpu_type, g.gpus_per_node)]
    return label if len(same) == 1 else f"{label}#{k}"
