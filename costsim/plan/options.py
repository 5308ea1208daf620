"""An option resolved against the catalog: its plan in numbers (GPUs, node size, prices, billing
rules, failure rates, lead time), built once by ``costsim.plan.resolve``."""

from __future__ import annotations

from dataclasses import dataclass

from costsim.catalog.load import GPUSpec
from costsim.units import HOURS_PER_YEAR

@dataclass(frozen=True)
class EconomicsValues:
    """Scenario economics with the catalog filled in."""

    electricity_usd_per_kwh: float
    pue: float
    colo_usd_per_kw_month: float
    depreciation_years: float
    residual_value_frac: float
    maintenance_frac_per_year: float
    staff_usd_per_fte_year: float
    gpus_per_fte: float
    staff_min_fte: float  # whole engineers per owned cluster at least (costsim.models.economics.staff_fte)
    storage_capex_frac: float
    install_capex_frac: float
    cost_of_capital: float
    setup_usd: float
    discount_rate: float


@dataclass(frozen=True)
class OwnedPlan:
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

    @property
    def reserved(self) -> bool:
        return self.pricing == "reserved"


@dataclass(frozen=True)
class HybridPlan:
    """A hybrid option: its base (owned or reserved) and burst (on-demand or spot) in numbers."""

    name: str
    base: OwnedPlan | CloudPlan
    burst: CloudPlan
    max_wait_h: float
    bridge_until_ready: bool
    wait_policy: str = "constant"  # how long each job waits for the base: engine.hybrid_waits
    wait_per_hour_h: float = 0.0  # linear_runtime: hours of waiting per hour of planned run
    wait_per_gpu_h: float = 0.0  # linear_gpus: hours of waiting per GPU
    wait_per_gpu_hour_h: float = 0.0  # linear_cost: hours of waiting per GPU-hour of planned run
    kind: str = "hybrid"

    @property
    def gpu(self) -> GPUSpec:
        return self.base.gpu

    @property
    def network(self) -> str:
        return self.base.network


Plan = OwnedPlan | CloudPlan | HybridPlan


def pools(plan: Plan) -> list[OwnedPlan | CloudPlan]:
    """The option's pools: itself, or a hybrid's base and burst."""
    return [plan.base, plan.burst] if isinstance(plan, HybridPlan) else [plan]


def is_pool(part: OwnedPlan | CloudPlan) -> bool:
    """A pool of nodes run by a scheduler and paid whether used or not (owned, reserved), as
    opposed to capacity rented per use (on-demand, spot)."""
    return isinstance(part, OwnedPlan) or part.reserved
