"""Options built of others, in numbers: a fleet's pools in order of preference and its burst, and a
hybrid, the fleet of one pool (``HybridPlan``: its ``base`` and ``burst``). Both run through one
router (``costsim.engine.run``) and are priced part by part (``pools``), so a hybrid and the fleet
``[base, burst]`` give the same numbers by construction.

Also ``Plan``, any option's plan, ``pools``, the parts an option runs on (``pools_for``: those a
job asking for a GPU type may use), and ``burst_of``."""

from __future__ import annotations

from dataclasses import dataclass, replace

from costsim.catalog.load import GPUSpec
from costsim.plan.groups import GroupedPlan
from costsim.plan.options import CloudPlan, OwnedPlan, side_of


@dataclass(frozen=True)
class FleetPlan:
    """A fleet in numbers: ``pool_parts`` (owned or reserved, in order of preference) and the
    ``burst`` (on-demand or spot) a job runs on once it has waited its wait (``wait_policy`` and
    its coefficients, hours: ``costsim.engine.run.hybrid_waits``) for the pools."""

    name: str
    pool_parts: tuple[OwnedPlan | CloudPlan, ...]
    burst: CloudPlan
    max_wait_h: float
    bridge_until_ready: bool
    wait_policy: str = "constant"  # how long each job waits for the pools: engine.hybrid_waits
    wait_per_hour_h: float = 0.0  # linear_runtime: hours of waiting per hour of planned run (on the first part)
    wait_per_gpu_h: float = 0.0  # linear_gpus: hours of waiting per GPU
    wait_per_gpu_hour_h: float = 0.0  # linear_cost: hours of waiting per GPU-hour of planned run
    kind: str = "fleet"

    @property
    def base(self) -> OwnedPlan | CloudPlan:
        """The first pool part: the option's home (its GPU, its serving, its rollout pool)."""
        return self.pool_parts[0]

    @property
    def gpu(self) -> GPUSpec:
        return self.base.gpu

    @property
    def network(self) -> str:
        return self.base.network

    @property
    def pay_as_you_go(self) -> bool:
        """Never: a fleet's first part is owned or reserved capacity."""
        return False

    @property
    def owned(self) -> OwnedPlan | None:
        """The owned cluster the option runs on first: its first part when owned, else None (every
        owned part: ``owned_parts``)."""
        return self.base.owned

    @property
    def reservation(self) -> CloudPlan | None:
        """The reserved commitment the option runs on first: its first part when reserved, else None."""
        return self.base.reservation

    @property
    def owned_parts(self) -> list[OwnedPlan]:
        """Every owned cluster among the pool parts, in order."""
        return [o for p in self.pool_parts if (o := p.owned) is not None]

    @property
    def reservations(self) -> list[CloudPlan]:
        """Every reserved commitment among the pool parts, in order."""
        return [r for p in self.pool_parts if (r := p.reservation) is not None]

    @property
    def rental(self) -> None:
        """Not capacity rented per use (its burst is: ``pools(plan)[-1]``)."""
        return None

    @property
    def bridged_h(self) -> float:
        """Hours from the start during which the burst stands in for the first part (its jobs and the
        serving it cannot do): the first part's delivery when the option bridges it, else none."""
        return self.base.delivery_h if self.bridge_until_ready else 0.0

    @property
    def home(self) -> OwnedPlan | CloudPlan:
        """The pool the option's jobs run on first: the first part (its rollout pool is the option's)."""
        return self.base

    @property
    def delivery_h(self) -> float:
        """Hours from the start until the option's own capacity is there: the first part's."""
        return self.base.delivery_h

    @property
    def pricing(self) -> str:
        """How the capacity is paid for: the parts' in order, ``+``-joined (``owned+reserved+on_demand``)."""
        return "+".join(p.pricing for p in (*self.pool_parts, self.burst))

    @property
    def side(self) -> str:
        """``build`` when any pool part is owned, else ``rent`` (``side_of``)."""
        return side_of(self.pricing)

    def unpriced(self) -> FleetPlan:
        """The plan with every part's prices NaN (see ``OwnedPlan.unpriced``)."""
        return replace(self, pool_parts=tuple(p.unpriced() for p in self.pool_parts), burst=self.burst.unpriced())


class HybridPlan(FleetPlan):
    """A hybrid option: its base (owned or reserved) and burst (on-demand or spot) in numbers — the
    fleet of one pool part, run and priced as that fleet."""

    def __init__(self, name: str, base: OwnedPlan | CloudPlan | None = None, burst: CloudPlan | None = None,
                 max_wait_h: float = 0.0, bridge_until_ready: bool = True, wait_policy: str = "constant",
                 wait_per_hour_h: float = 0.0, wait_per_gpu_h: float = 0.0, wait_per_gpu_hour_h: float = 0.0,
                 kind: str = "hybrid", pool_parts: tuple[OwnedPlan | CloudPlan, ...] | None = None):
        """As ``FleetPlan`` with ``base`` for ``pool_parts`` (``pool_parts`` itself: for ``replace``)."""
        parts = pool_parts if pool_parts is not None else (base,)
        assert burst is not None and len(parts) == 1 and parts[0] is not None, "a hybrid has one base and a burst"
        super().__init__(name, parts, burst, max_wait_h, bridge_until_ready, wait_policy, wait_per_hour_h,  # type: ignore[arg-type]
                         wait_per_gpu_h, wait_per_gpu_hour_h, kind)


Plan = OwnedPlan | CloudPlan | FleetPlan | GroupedPlan


def itemised_by_part(plan: Plan) -> bool:
    """Whether the option's cost table names each line item's part (``capital:own-256``): a fleet's
    does, so its parts can be told apart; a hybrid's keeps the plain items it always had (its base
    and burst are told apart by their items already)."""
    return isinstance(plan, FleetPlan) and not isinstance(plan, HybridPlan)


def pools(plan: Plan) -> list[OwnedPlan | CloudPlan]:
    """The option's pools: itself, a fleet's (a hybrid's) pool parts in order, then its burst, or a
    pool of node groups' groups in order (the record's part of a job is its index here)."""
    if isinstance(plan, GroupedPlan):
        return list(plan.groups)
    return [*plan.pool_parts, plan.burst] if isinstance(plan, FleetPlan) else [plan]


def pools_for(plan: Plan, gpu_type: str | None) -> list[OwnedPlan | CloudPlan]:
    """The pools a job asking for ``gpu_type`` (None: any) may run on: a pool of node groups' groups
    of that type; every pool of any other option (the schema refuses a type an option lacks)."""
    if isinstance(plan, GroupedPlan) and gpu_type is not None:
        return [g for g in plan.groups if g.gpu.name == gpu_type]
    return pools(plan)


def node_group_pool(plan: Plan) -> GroupedPlan | None:
    """The option as a pool of node groups (what its groups share: staff, setup), None for any other
    option."""
    return plan if isinstance(plan, GroupedPlan) else None


def burst_of(plan: Plan) -> CloudPlan | None:
    """The rented part a hybrid's or fleet's jobs burst to (its last in ``pools``); None for an
    option without one, a pool of node groups included."""
    return plan.burst if isinstance(plan, FleetPlan) else None
