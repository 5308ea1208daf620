"""The alternatives a scenario compares: owned clusters, rented capacity, and hybrids of the two.

A setting that does not apply to an option's pricing is an error (it would be ignored): reserved
capacity is a committed pool with no quota, provisioning or per-allocation billing; on-demand and
spot have no commitment or scheduler.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

from pydantic import Field, field_validator, model_serializer, model_validator

from costsim.scenario.base import Name, StrictModel
from costsim.scenario.bounds import (
    CV,
    MAX_BILLING_S,
    CapexPerGPU,
    Days,
    GPUCount,
    GPUType,
    Hours,
    IntervalHours,
    Network,
    NodeGPUs,
    Placement,
    PriceChangePerYear,
    PricePerGPUHour,
    PriceTier,
    Scheduler,
    TermYears,
    float_bounds,
    span,
)
from costsim.scenario.node_groups import MAX_NODE_GROUPS, NodeGroup, groups_total_problem, with_group_totals
from costsim.scenario.tranches import ResalePoint, Tranche

DEFAULT_PROVISIONING_DELAY_H = 0.25
DEFAULT_STARTUP_H = 0.1
DEFAULT_MAX_WAIT_H = 4.0

# Rates far beyond any real fleet stay valid (tests of the engine's extremes use them); the run's
# event budget, not the schema, refuses the ones that would take too long.
FailureRate: TypeAlias = Annotated[float, *float_bounds(ge=0, le=1_000_000)]  # per 1,000 node-days: up to 1,000 per node-day
PreemptionRate: TypeAlias = Annotated[float, *float_bounds(ge=0, le=10_000)]  # per instance-day: up to one every 9 s
MaxWaitHours: TypeAlias = Annotated[float, *float_bounds(ge=0, le=1e9)]  # any wait beyond the horizon means "never burst"
WaitPerHour: TypeAlias = Annotated[float, *float_bounds(ge=0, le=1e6)]  # hours waited per hour of planned run (linear_runtime)
WaitPerGPU: TypeAlias = Annotated[float, *float_bounds(ge=0, le=1e6)]  # hours waited per GPU (linear_gpus)
WaitPerGPUHour: TypeAlias = Annotated[float, *float_bounds(ge=0, le=1e6)]  # hours waited per GPU-hour of planned run (linear_cost)

# Queue orders (costsim.engine.owned) and node placements (costsim.engine.pool).
WaitPolicy = Literal["constant", "zero", "linear_runtime", "linear_gpus", "linear_cost"]
SCHEDULER_HELP = ("fifo (strict submit order), backfill (EASY), priority (then FIFO, strict), sjf (shortest "
                  "requested duration first: trace duration_h, RL planned run; strict) or lifo (latest first, strict).")
PLACEMENT_HELP = ("Node for a job within one node: best_fit (the fullest node that fits) or first_fit (the "
                  "lowest-indexed node with room). Multi-node jobs take whole free nodes either way.")
StockoutProbability: TypeAlias = Annotated[float, *float_bounds(ge=0, le=0.99)]  # 0.99: 100 tries per request on average
BillingSeconds: TypeAlias = Annotated[float, *float_bounds(ge=1, le=MAX_BILLING_S)]
MinimumBillingSeconds: TypeAlias = Annotated[float, *float_bounds(ge=0, le=MAX_BILLING_S)]
LinkGBs: TypeAlias = Annotated[float, *float_bounds(gt=0, le=100_000)]  # GB/s between sites: anything from a VPN to a fabric

# Rollout offload (docs/rollout-offload.md): an owned or reserved option (or a hybrid, for its base)
# may run the rollout GPUs of its disaggregated RL classes on a rented pool, training staying home.
RolloutPool = Annotated[Name | None, Field(
    description="Name of a cloud option, on_demand or spot, whose instances run the rollout GPUs of the "
    "disaggregated RL classes while they train here (rollout offload, after RLBoost, arXiv 2510.19225; "
    "docs/rollout-offload.md); null: rollouts run here too.")]
RolloutLink = Annotated[LinkGBs | None, Field(
    description=f"GB/s of the link between this option and its rollout_pool ({span(LinkGBs)}): the weights cross "
    "it every iteration and to each new rollout instance (rollout_pool only; null: the catalog's "
    "rl.rollout_link_gb_s, a 100 Gbps dedicated link, 12.5 GB/s).")]


def check_rollout_link(option) -> None:
    """``rollout_link_gb_s`` is the link to a rollout pool: without one it would be ignored."""
    if option.rollout_link_gb_s is not None and option.rollout_pool is None:
        raise ValueError("rollout_link_gb_s applies with a rollout_pool only (the link to that pool)")

WAIT_COEFFICIENTS = {"linear_runtime": "wait_per_hour_h", "linear_gpus": "wait_per_gpu_h",
                     "linear_cost": "wait_per_gpu_hour_h"}  # the field each linear waiting policy needs


def check_wait_fields(model) -> None:
    """A waiting policy's fields (a hybrid's, a fleet's burst part's): the coefficient its policy
    needs is given, no other policy's is, and ``max_wait_h`` is written only for ``constant``."""
    own = WAIT_COEFFICIENTS.get(model.wait_policy)
    if own is not None and getattr(model, own) is None:
        raise ValueError(f"wait_policy {model.wait_policy} needs {own}")
    for policy, field in WAIT_COEFFICIENTS.items():
        if policy != model.wait_policy and getattr(model, field) is not None:
            raise ValueError(f"{field} applies to wait_policy {policy} only")
    # Any max_wait_h written is refused, its default value too (a dump leaves it out).
    if model.wait_policy != "constant" and "max_wait_h" in model.model_fields_set:
        raise ValueError("max_wait_h applies to wait_policy constant only")


class Failures(StrictModel):
    """Node failures as a Poisson process: each node fails at this rate; a failed owned node is out
    for ``repair_hours`` (rented nodes are swapped by the provider after its provisioning delay)."""

    node_failures_per_1000_node_days: FailureRate = Field(
        description=f"Failures per 1,000 node-days ({span(FailureRate)}; Meta research clusters: 2.3-6.5)."
    )
    repair_hours: Hours = Field(24.0, description=f"Hours a failed owned node is out of service ({span(Hours)}).")


class Stockout(StrictModel):
    """Capacity that is not always there: a request of at least ``min_gpus`` fails with
    ``probability`` and is tried again ``retry_h`` later."""

    probability: StockoutProbability = Field(
        description=f"Chance a large request finds no capacity ({span(StockoutProbability)})."
    )
    min_gpus: GPUCount = Field(64, description=f"Requests of at least this many GPUs can stock out ({span(GPUCount)}).")
    retry_h: IntervalHours = Field(1.0, description=f"Hours before trying again ({span(IntervalHours)}).")


class OwnedOption(StrictModel):
    """An owned cluster: bought, delivered after its lead time, run by a scheduler. Bought at once
    (``gpus``, ordered at the start and paid then) or in ``tranches``, each delivered its lead
    time after its order and adding its nodes to the cluster then."""

    name: Name = Field(description="Unique option name.")
    kind: Literal["owned"] = "owned"
    gpu_type: GPUType = Field(description="Catalog GPU type.")
    gpus: GPUCount = Field(description=f"GPUs in the cluster, a whole number of nodes ({span(GPUCount)}); with "
                           "tranches, their total (may be left out).")
    tranches: tuple[Tranche, ...] | None = Field(
        None, min_length=1, max_length=1000,
        description="Purchases over time, order days ascending: each {gpus, order_day, payment, "
        "lease_term_months, lease_rate_per_year}; null: gpus bought at the start, paid on order.")
    resale_curve: tuple[ResalePoint, ...] | None = Field(
        None, min_length=1, max_length=1000,
        description="Value of the hardware by age, [{age_years, value_frac}], ages ascending and values not "
        "increasing; (0, 1) is implied before the first point, interpolated linearly between points and held "
        "after the last. It sets the value credited at the horizon, the residual at the end of the "
        "depreciation life and a lease's residual; null: economics.residual_value_frac, straight line.")
    gpus_per_node: NodeGPUs | None = Field(None, description=f"GPUs per node ({span(NodeGPUs)}); null: catalog.")
    node_groups: tuple[NodeGroup, ...] | None = Field(
        None, min_length=1, max_length=MAX_NODE_GROUPS,
        description="Nodes of different GPU types and sizes under one scheduler: [{gpu_type, nodes, gpus_per_node}], "
        f"at most {MAX_NODE_GROUPS}; a job runs within one group, of the gpu_type its class asks for (any if none). "
        "With node_groups, gpu_type and gpus_per_node are each group's (left out) and gpus is their total (may be "
        "left out); bought at once (no tranches), without rollout_pool, serving, or being a hybrid's base or a "
        "fleet's part; null: one group, gpu_type × gpus.")
    network: Network = Field("infiniband", description="Inter-node fabric: infiniband | roce.")
    lead_time_days: Days | None = Field(
        None, description=f"Days from the start until the cluster can run jobs ({span(Days)}); null: catalog."
    )
    scheduler: Scheduler = Field("fifo", description=SCHEDULER_HELP)
    placement: Placement = Field("best_fit", description=PLACEMENT_HELP)
    failures: Failures | Literal["catalog"] | None = Field(
        "catalog", description="Node failures; null: none; omitted or 'catalog': the catalog's rate and repair time."
    )
    capex_usd_per_gpu: CapexPerGPU | None = Field(
        None,
        description=f"All-in capex per GPU in USD ({span(CapexPerGPU)}); null: server price plus fabric, storage, "
        "install shares.",
    )
    rollout_pool: RolloutPool = None
    rollout_link_gb_s: RolloutLink = None

    @model_validator(mode="before")
    @classmethod
    def _gpus_of_tranches(cls, data):
        """With tranches and no ``gpus``, the cluster's GPUs are the tranches' total."""
        if isinstance(data, dict) and "gpus" not in data and isinstance(data.get("tranches"), list | tuple):
            sizes = [t.get("gpus") if isinstance(t, dict) else getattr(t, "gpus", None) for t in data["tranches"]]
            # A bad size is the tranche's own error: the total of the others stands in, so it is the only one.
            data = {**data, "gpus": max(1, sum(g for g in sizes if type(g) is int and g > 0))}
        return data

    @model_validator(mode="before")
    @classmethod
    def _totals_of_node_groups(cls, data):
        """With node groups, the option's gpu_type is the first group's and its gpus their total."""
        return with_group_totals(data)

    @field_validator("tranches")
    @classmethod
    def _tranches_in_order(cls, tranches: tuple[Tranche, ...] | None) -> tuple[Tranche, ...] | None:
        for k in range(1, len(tranches or ())):
            was, now = tranches[k - 1].order_day, tranches[k].order_day  # type: ignore[index]
            if now <= was:
                raise ValueError(f"tranche {k} is ordered on day {now:g}, not after tranche {k - 1} (day {was:g}): "
                                 "order days must ascend (tranches ordered the same day are one tranche)")
        return tranches

    @field_validator("resale_curve")
    @classmethod
    def _resale_curve_shape(cls, curve: tuple[ResalePoint, ...] | None) -> tuple[ResalePoint, ...] | None:
        for k in range(1, len(curve or ())):
            was, now = curve[k - 1], curve[k]  # type: ignore[index]
            if now.age_years <= was.age_years:
                raise ValueError(f"point {k} (age {now.age_years:g} years) is not older than point {k - 1} "
                                 f"({was.age_years:g}): ages must ascend")
            if now.value_frac > was.value_frac:
                raise ValueError(f"point {k} is worth more ({now.value_frac:g}) than point {k - 1} "
                                 f"({was.value_frac:g}): hardware does not gain value with age")
        return curve

    @model_validator(mode="after")
    def _whole_nodes(self) -> OwnedOption:
        if self.gpus_per_node is not None and self.gpus % self.gpus_per_node:
            raise ValueError(f"gpus ({self.gpus}) must be a whole number of nodes of {self.gpus_per_node} GPUs")
        if self.tranches is not None:
            total = sum(t.gpus for t in self.tranches)
            if total != self.gpus:
                raise ValueError(f"gpus ({self.gpus}) is not the tranches' total ({total}): leave gpus out or "
                                 "make it their sum")
        if self.node_groups is not None:
            problem = groups_total_problem(self.gpus, self.node_groups)
            if problem is not None:
                raise ValueError(problem)
            if self.rollout_pool is not None:
                raise ValueError("rollout_pool does not apply with node_groups (rollouts are not offloaded from a "
                                 "pool of node groups)")
        check_rollout_link(self)
        return self

    @model_serializer(mode="wrap")
    def _without_derived_gpus(self, handler):
        """With tranches, a dump (YAML, the editor's data) leaves ``gpus`` out: it is their total,
        filled in again when read back, so editing the tranches alone stays valid. With node groups,
        ``gpu_type`` too (the first group's)."""
        data = handler(self)
        if (self.tranches is not None or self.node_groups is not None) and isinstance(data, dict):
            data.pop("gpus", None)
        if self.node_groups is not None and isinstance(data, dict):
            data.pop("gpu_type", None)
        return data


class CloudOption(StrictModel):
    """Rented GPUs: on demand (billed per allocation), reserved (a committed pool queueing like an
    owned cluster, paid every hour of its whole term used or not: what the term runs beyond the
    horizon is owed as ``commitment_owed``; a horizon longer than the term needs ``renew``) or
    spot (on-demand mechanics at the spot price, preempted at ``preemptions_per_instance_day``: a
    preempted job loses its work since the last checkpoint and asks for capacity again after
    ``reacquire_delay_h``, provisioning, startup and restart included)."""

    name: Name = Field(description="Unique option name.")
    kind: Literal["cloud"] = "cloud"
    gpu_type: GPUType = Field(description="Catalog GPU type.")
    pricing: Literal["on_demand", "reserved", "spot"] = Field("on_demand", description="on_demand | reserved | spot.")
    price_tier: PriceTier = Field("neocloud", description="Catalog price tier for defaults: hyperscaler | neocloud.")
    price_per_gpu_hour: PricePerGPUHour | None = Field(
        None, description=f"USD per GPU-hour ({span(PricePerGPUHour)}); null: catalog price for the tier, pricing and term."
    )
    price_change_per_year: PriceChangePerYear | None = Field(
        None, description=f"Compound change of price_per_gpu_hour, a fraction per year ({span(PriceChangePerYear)}; "
        "−0.2: −20 %/yr): on_demand and spot GPU-hours cost price × (1 + change)^t, t years after the horizon's "
        "start, as they are used (a billing rounding at its release); reserved pays each term at the price of "
        "the term's start, a renewal re-pricing; null: 0."
    )
    gpus_per_instance: NodeGPUs | None = Field(
        None,
        description=f"GPUs per instance ({span(NodeGPUs)}); jobs are billed in whole instances. null: catalog node size.",
    )
    network: Network = Field(
        "infiniband", description="The provider's inter-node fabric for multi-instance jobs: infiniband | roce."
    )
    reserved_gpus: GPUCount | None = Field(
        None,
        description=f"reserved only: committed GPUs, whole instances ({span(GPUCount)}), paid every hour of the term, "
        "used or not.",
    )
    term_years: TermYears | None = Field(
        None, description="reserved only: commitment term that sets the catalog price (1 or 3 years; null: 1)."
    )
    renew: bool = Field(
        False, description="reserved only: when the horizon is longer than the term, renew the commitment for "
        "further whole terms (the last one owed in full); false: such a horizon is an error."
    )
    scheduler: Scheduler | None = Field(
        None, description="reserved only: how jobs queue on the committed pool (null: fifo). " + SCHEDULER_HELP
    )
    placement: Placement | None = Field(None, description="reserved only (null: best_fit). " + PLACEMENT_HELP)
    billing_granularity_s: BillingSeconds | None = Field(
        None, description=f"on_demand/spot: billing increment in seconds ({span(BillingSeconds)}); null: catalog for the tier."
    )
    minimum_billing_s: MinimumBillingSeconds | None = Field(
        None,
        description=f"on_demand/spot: minimum billed seconds per allocation ({span(MinimumBillingSeconds)}); "
        "null: catalog for the tier.",
    )
    max_gpus: GPUCount | None = Field(
        None, description=f"on_demand/spot: quota or market capacity in GPUs ({span(GPUCount)}); null: unlimited."
    )
    provisioning_delay_h: Hours | None = Field(
        None,
        description=f"on_demand/spot: hours waiting for instances after a request, not billed ({span(Hours)}; null: 0.25).",
    )
    startup_h: Hours | None = Field(
        None,
        description=f"on_demand/spot: hours of boot, image pull and staging, billed before work ({span(Hours)}; null: 0.1).",
    )
    provisioning_delay_cv: CV | None = Field(
        None,
        description=f"on_demand/spot: spread of the provisioning delay, lognormal with this cv ({span(CV)}; null: constant).",
    )
    stockout: Stockout | None = Field(None, description="on_demand/spot: large requests that find no capacity.")
    preemptions_per_instance_day: PreemptionRate | None = Field(
        None,
        description=f"spot only: preemptions per instance per day ({span(PreemptionRate)}; a job on k instances: "
        "k times); null: catalog.",
    )
    reacquire_delay_h: Hours | None = Field(
        None,
        description=f"spot only: hours before capacity is found again after a preemption ({span(Hours)}); null: catalog.",
    )
    failures: Failures | None = Field(
        None, description="Node failures on rented nodes (the provider swaps a failed node); null: none."
    )
    rollout_pool: RolloutPool = None
    rollout_link_gb_s: RolloutLink = None

    @model_validator(mode="after")
    def _consistent(self) -> CloudOption:
        check_rollout_link(self)
        reserved_only = ("reserved_gpus", "term_years", "scheduler", "placement", "rollout_pool")
        rented_only = ("billing_granularity_s", "minimum_billing_s", "max_gpus", "provisioning_delay_h", "startup_h",
                       "provisioning_delay_cv", "stockout")
        wrong = rented_only if self.pricing == "reserved" else reserved_only
        given = [f for f in wrong if getattr(self, f) is not None]
        if given:
            applies = "on_demand and spot" if self.pricing == "reserved" else "reserved"
            raise ValueError(f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to pricing {applies} only")
        spot_only = [f for f in ("preemptions_per_instance_day", "reacquire_delay_h") if getattr(self, f) is not None]
        if spot_only and self.pricing != "spot":
            raise ValueError(f"{', '.join(spot_only)} appl{'ies' if len(spot_only) == 1 else 'y'} to pricing spot only")
        if self.renew and self.pricing != "reserved":
            raise ValueError("renew applies to pricing reserved only")
        if self.pricing == "reserved" and self.reserved_gpus is None:
            raise ValueError("pricing: reserved needs reserved_gpus (the committed GPUs)")
        if self.max_gpus is not None and self.gpus_per_instance is not None and self.max_gpus < self.gpus_per_instance:
            raise ValueError(f"max_gpus ({self.max_gpus}) is smaller than one instance ({self.gpus_per_instance} GPUs)")
        return self

    @property
    def provisioning_h(self) -> float:
        return DEFAULT_PROVISIONING_DELAY_H if self.provisioning_delay_h is None else self.provisioning_delay_h

    @property
    def startup(self) -> float:
        return DEFAULT_STARTUP_H if self.startup_h is None else self.startup_h


class HybridOption(StrictModel):
    """An owned (or reserved) base that bursts to rented capacity: a job waits for the base at
    most its wait (``wait_policy``), then runs on the burst option; before the base is delivered,
    every job bursts when ``bridge_until_ready``.

    Waiting policies, after Starburst (Luo et al., "Starburst: A Cost-aware Scheduler for Hybrid
    Cloud", USENIX ATC'24; artifact github.com/michaelzhiluo/starburst, waiting policies ``zero``,
    ``constant``, ``linear_runtime``, ``linear_capacity``), which builds on the waiting policies of
    Ambati et al., "Waiting Game", SC'20:
    - ``constant``: every job waits ``max_wait_h`` (Starburst's constant; costsim's only policy before).
    - ``zero``: no wait: a job the base cannot start the instant it arrives bursts at once (No-Wait).
    - ``linear_runtime``: wait = ``wait_per_hour_h`` × the job's planned run on the base.
    - ``linear_gpus``: wait = ``wait_per_gpu_h`` × its GPUs (Starburst's ``linear_capacity``).
    - ``linear_cost``: wait = ``wait_per_gpu_hour_h`` × its GPUs × its planned run on the base: the
      wait grows with what the job would cost to rent (Starburst's ``linear_cost``, the policy the
      paper recommends)."""

    name: Name = Field(description="Unique option name.")
    kind: Literal["hybrid"] = "hybrid"
    base: str = Field(description="Name of an owned option, or a cloud option with pricing: reserved.")
    burst: str = Field(description="Name of a cloud option with pricing on_demand or spot.")
    max_wait_h: MaxWaitHours = Field(
        DEFAULT_MAX_WAIT_H,
        description=f"Hours a job waits for the base before it bursts ({span(MaxWaitHours)}; "
        "longer than the horizon: never bursts).",
    )
    bridge_until_ready: bool = Field(
        True, description="Before the base's lead time ends, every job bursts (renting while the cluster is built)."
    )
    wait_policy: WaitPolicy = Field(
        "constant",
        description="How long a job waits for the base before it bursts: constant (max_wait_h), zero (bursts at "
        "once unless the base starts it on arrival), linear_runtime (wait_per_hour_h × planned run hours on the "
        "base), linear_gpus (wait_per_gpu_h × GPUs) or linear_cost (wait_per_gpu_hour_h × GPUs × planned run "
        "hours). After Starburst (USENIX ATC'24).",
    )
    wait_per_hour_h: WaitPerHour | None = Field(
        None,
        description=f"linear_runtime only: hours waited per hour of the job's planned run on the base "
        f"(h/h, {span(WaitPerHour)}; Starburst's runtime coefficient).",
    )
    wait_per_gpu_h: WaitPerGPU | None = Field(
        None, description=f"linear_gpus only: hours waited per GPU the job asks for (h/GPU, {span(WaitPerGPU)}).",
    )
    wait_per_gpu_hour_h: WaitPerGPUHour | None = Field(
        None, description=f"linear_cost only: hours waited per GPU-hour of the job's planned run on the base "
        f"(h per GPU-hour, {span(WaitPerGPUHour)}).",
    )
    rollout_pool: RolloutPool = Field(
        None, description="Name of a cloud option, on_demand or spot, whose instances run the rollout GPUs of the "
        "disaggregated RL classes while they train on the base (rollout offload; docs/rollout-offload.md); null: "
        "the base option's own rollout_pool, if any.")
    rollout_link_gb_s: RolloutLink = None

    @model_validator(mode="after")
    def _wait_fields(self) -> HybridOption:
        check_rollout_link(self)
        check_wait_fields(self)
        return self

    @model_serializer(mode="wrap")
    def _without_unused_wait(self, handler):
        """A dump (YAML, a variant's data) leaves out max_wait_h where the policy ignores it, so it
        reads back without it."""
        data = handler(self)
        if self.wait_policy != "constant" and isinstance(data, dict):
            data.pop("max_wait_h", None)
        return data

