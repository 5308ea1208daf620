"""Resolve a scenario against the catalog: every ``null`` takes its catalog value here, so the
models and the engine never look anything up."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from costsim.catalog.load import Catalog, GPUSpec, default_catalog
from costsim.catalog.pins import effective_catalog, warn_version
from costsim.plan.economics import EconomicsValues
from costsim.plan.facts import catalog_price_key
from costsim.plan.fleet import FleetPlan, HybridPlan, Plan
from costsim.plan.groups import GroupedPlan, NodeGroup, group_label
from costsim.plan.options import CloudPlan, OwnedPlan
from costsim.plan.tranches import ResaleCurve, TranchePlan, lease_usd_per_month
from costsim.scenario import CloudOption, FleetOption, HybridOption, OwnedOption, Problem, Scenario, ScenarioError
from costsim.units import HOURS_PER_DAY, HOURS_PER_MONTH, HOURS_PER_YEAR


def _offloading(plan, option, rented: dict, link_gb_s: float):
    """``plan`` (an owned or reserved option, or a hybrid's base) with the rented pool its option names
    as ``rollout_pool`` and the link to it (``rollout_link_gb_s``, else the catalog's ``link_gb_s``);
    ``plan`` itself when the option names none. A hybrid naming none keeps its base's."""
    if option.rollout_pool is None:
        return plan
    link = option.rollout_link_gb_s if option.rollout_link_gb_s is not None else link_gb_s
    return replace(plan, rollout=rented[option.rollout_pool], rollout_link_gb_s=link)


def economics_values(scenario: Scenario, catalog: Catalog | None = None) -> EconomicsValues:
    cat = catalog or default_catalog()
    given = scenario.economics.model_dump()
    return EconomicsValues(**{k: float(given[k] if given[k] is not None else cat.economics[k]) for k in given})


def default_capex_per_gpu(gpu: GPUSpec, fabric_capex_frac: float, storage_capex_frac: float,
                          install_capex_frac: float) -> float:
    """Capex per owned GPU when the scenario gives none, USD: the catalog server's price per GPU
    (per GPU, so custom node sizes price the same) plus the fabric, storage and installation
    shares of it."""
    return gpu.server_price_usd / gpu.gpus_per_node * (1 + fabric_capex_frac + storage_capex_frac + install_capex_frac)


def _owned(opt: OwnedOption, i: int, econ: EconomicsValues, cat: Catalog, source: str, horizon_h: float) -> OwnedPlan:
    gpu = cat.gpus[opt.gpu_type]
    gpn = opt.gpus_per_node or gpu.gpus_per_node
    if opt.gpus % gpn and opt.tranches is None:  # with tranches, the tranche that is not whole nodes is named
        raise ScenarioError(
            source,
            [Problem(("options", i, "gpus"), f"{opt.gpus} GPUs is not a whole number of {gpn}-GPU {opt.gpu_type} nodes")],
        )
    nodes = opt.gpus // gpn
    fabric = cat.fabrics[opt.network]
    if opt.capex_usd_per_gpu is not None:
        per_gpu = opt.capex_usd_per_gpu
    else:
        per_gpu = default_capex_per_gpu(gpu, fabric["capex_frac"], econ.storage_capex_frac, econ.install_capex_frac)
    capex = per_gpu * opt.gpus
    lead_days = opt.lead_time_days if opt.lead_time_days is not None else cat.economics["lead_time_days"]
    lead_h = float(lead_days) * HOURS_PER_DAY
    curve = tuple((p.age_years, p.value_frac) for p in opt.resale_curve) if opt.resale_curve is not None else None
    tranches = _tranches(opt, i, source, horizon_h, TrancheTerms(gpn=gpn, per_gpu=per_gpu, lead_h=lead_h,
                                                                  curve=curve, econ=econ))
    rate, repair = _failures(opt.failures, cat)
    return OwnedPlan(
        name=opt.name,
        gpu=gpu,
        gpus=opt.gpus,
        gpus_per_node=gpn,
        nodes=nodes,
        network=opt.network,
        fabric_efficiency=float(fabric["efficiency"]),
        lead_time_h=tranches[0].delivery_h if tranches else lead_h,
        scheduler=opt.scheduler,
        placement=opt.placement,
        capex_usd=float(capex),
        rl=dict(cat.rl),
        failures_per_node_h=rate,
        repair_h=repair,
        tranches=tranches,
        resale_curve=curve,
    )


def node_groups(opt: OwnedOption, groups: tuple[NodeGroup, ...], scenario: Scenario, catalog: Catalog | None = None,
                i: int = 0, source: str = "<scenario>") -> GroupedPlan:
    """An owned option (its lead time, network, scheduler, placement, failures, capex per GPU if
    given) as a pool of node ``groups``: each group resolved as the option would be with that GPU
    type and node size alone (``_owned``), so its capex, power and catalog values are its type's.
    Bought at once: tranches and a rollout pool are not combined with groups."""
    cat = effective_catalog(scenario, catalog or default_catalog())
    return _grouped(opt, groups, i, economics_values(scenario, cat), cat, source, scenario.horizon_h)


def _grouped(opt: OwnedOption, groups: tuple[NodeGroup, ...], i: int, econ: EconomicsValues, cat: Catalog,
             source: str, horizon_h: float) -> GroupedPlan:
    if opt.tranches is not None or opt.rollout_pool is not None:
        raise ValueError("node groups are bought at once, without tranches or a rollout pool")
    unknown = [g.gpu_type for g in groups if g.gpu_type not in cat.gpus]
    if unknown:
        raise ValueError(f"unknown GPU type {unknown[0]!r} in node groups (catalog: {', '.join(sorted(cat.gpus))})")
    plans = []
    for k, g in enumerate(groups):
        one = opt.model_copy(update={"name": group_label(opt.name, groups, k), "gpu_type": g.gpu_type,
                                     "gpus": g.gpus, "gpus_per_node": g.gpus_per_node})
        plans.append(_owned(one, i, econ, cat, source, horizon_h))
    return GroupedPlan(name=opt.name, groups=tuple(plans))


@dataclass(frozen=True, kw_only=True)
class TrancheTerms:
    """What an owned option's tranches share: node size, capex per GPU (USD), lead time (hours),
    resale curve and the economics a lease is priced with."""

    gpn: int
    per_gpu: float
    lead_h: float
    curve: ResaleCurve | None
    econ: EconomicsValues


def _tranches(opt: OwnedOption, i: int, source: str, horizon_h: float, terms: TrancheTerms) -> tuple[TranchePlan, ...]:
    """The option's tranches in numbers, () when it has none (bought at once). Every tranche that
    is not whole nodes, ordered at or after the horizon's end or leased for longer than the
    depreciation life is a problem, all reported together."""
    if opt.tranches is None:
        return ()
    econ, life = terms.econ, terms.econ.depreciation_years
    problems, out = [], []
    for j, t in enumerate(opt.tranches):
        at = ("options", i, "tranches", j)
        if t.gpus % terms.gpn:
            problems.append(Problem((*at, "gpus"), f"{t.gpus} GPUs is not a whole number of {terms.gpn}-GPU "
                                    f"{opt.gpu_type} nodes"))
        order_h = t.order_day * HOURS_PER_DAY
        if order_h >= horizon_h:
            problems.append(Problem((*at, "order_day"), f"ordered on day {t.order_day:g}, not before the horizon's "
                                    f"end (day {horizon_h / HOURS_PER_DAY:g})"))
        months = t.lease_term_months or 0
        if months / 12 > life + 1e-9:
            problems.append(Problem((*at, "lease_term_months"), f"a {months}-month lease is longer than the "
                                    f"{life:g}-year depreciation life ({life * 12:g} months)"))
        ends_h = order_h + terms.lead_h + months * HOURS_PER_MONTH
        # A lease ending within the horizon: its nodes go back to the lessor at the term's end.
        returned_h = ends_h if t.payment == "lease" and ends_h < horizon_h - 1e-9 else math.inf
        capex = terms.per_gpu * t.gpus
        rate = t.lease_rate_per_year if t.lease_rate_per_year is not None else econ.cost_of_capital
        out.append(TranchePlan(
            gpus=t.gpus, nodes=t.gpus // terms.gpn, order_h=order_h, delivery_h=order_h + terms.lead_h,
            capex_usd=float(capex), payment=t.payment, lease_term_h=months * HOURS_PER_MONTH,
            lease_usd_per_month=lease_usd_per_month(capex, terms.curve, econ, months, rate) if months else 0.0,
            returned_h=returned_h))
    if problems:
        raise ScenarioError(source, problems)
    return tuple(out)


def _failures(failures, cat: Catalog) -> tuple[float, float]:
    """(node failures per node-hour, repair hours): none, the catalog's, or the scenario's."""
    if failures is None:
        return 0.0, 0.0
    if failures == "catalog":
        rel = cat.reliability
        return rel["node_failures_per_1000_node_days"] / 1000 / HOURS_PER_DAY, rel["repair_hours"]
    return failures.node_failures_per_1000_node_days / 1000 / HOURS_PER_DAY, failures.repair_hours


def _cloud(opt: CloudOption, i: int, cat: Catalog, source: str, horizon_h: float) -> CloudPlan:
    gpu = cat.gpus[opt.gpu_type]
    term_years = opt.term_years or 1
    if opt.pricing == "reserved" and horizon_h > term_years * HOURS_PER_YEAR + 1e-6 and not opt.renew:
        # A commitment does not silently renew: the scenario must say so (and pays whole terms).
        raise ScenarioError(source, [Problem(("options", i, "renew"), (
            f"the horizon ({horizon_h / HOURS_PER_DAY:g} days) is longer than the {term_years}-year term: set "
            "renew: true to renew the commitment for further whole terms, or choose a longer term_years"))])
    gpi = opt.gpus_per_instance or gpu.gpus_per_node
    if opt.max_gpus is not None and opt.max_gpus < gpi:
        raise ScenarioError(
            source,
            [Problem(("options", i, "max_gpus"), f"{opt.max_gpus} is smaller than one {gpi}-GPU instance")],
        )
    if opt.reserved_gpus is not None and opt.reserved_gpus % gpi:
        raise ScenarioError(source, [Problem(("options", i, "reserved_gpus"),
                                             f"{opt.reserved_gpus} GPUs is not a whole number of {gpi}-GPU instances")])
    billing = cat.billing[opt.price_tier]
    price = opt.price_per_gpu_hour
    if price is None:
        key = catalog_price_key(opt.pricing, term_years)
        price = gpu.price[opt.price_tier][key]
    return CloudPlan(
        name=opt.name,
        gpu=gpu,
        pricing=opt.pricing,
        price_per_gpu_hour=float(price),
        price_change_per_year=float(opt.price_change_per_year or 0.0),
        gpus_per_instance=gpi,
        billing_granularity_s=float(opt.billing_granularity_s or billing["granularity_s"]),
        minimum_billing_s=float(
            opt.minimum_billing_s if opt.minimum_billing_s is not None else billing["minimum_s"]
        ),
        max_gpus=opt.max_gpus,
        provisioning_delay_h=0.0 if opt.pricing == "reserved" else opt.provisioning_h,
        startup_h=0.0 if opt.pricing == "reserved" else opt.startup,
        network=opt.network,
        fabric_efficiency=float(cat.fabrics[opt.network]["efficiency"]),
        reserved_gpus=opt.reserved_gpus,
        scheduler=opt.scheduler or "fifo",
        failures_per_node_h=_failures(opt.failures, cat)[0],
        preemptions_per_instance_h=(
            (opt.preemptions_per_instance_day if opt.preemptions_per_instance_day is not None
             else cat.reliability["spot_preemptions_per_instance_day"]) / HOURS_PER_DAY if opt.pricing == "spot" else 0.0),
        reacquire_delay_h=(
            (opt.reacquire_delay_h if opt.reacquire_delay_h is not None else cat.reliability["spot_reacquire_delay_h"])
            if opt.pricing == "spot" else 0.0),
        provisioning_cv=opt.provisioning_delay_cv or 0.0,
        stockout_probability=opt.stockout.probability if opt.stockout else 0.0,
        stockout_min_gpus=opt.stockout.min_gpus if opt.stockout else 0,
        stockout_retry_h=opt.stockout.retry_h if opt.stockout else 0.0,
        term_h=term_years * HOURS_PER_YEAR,
        renew=bool(opt.renew),
        placement=opt.placement or "best_fit",
        rl=dict(cat.rl),
    )


def resolve(scenario: Scenario, catalog: Catalog | None = None, source: str = "<scenario>") -> list[Plan]:
    """Every option of the scenario in concrete numbers (catalog defaults applied, the values the
    scenario's ``catalog:`` section pins in their place). A scenario filled in from another catalog
    version warns (``costsim.catalog.pins.CatalogVersionWarning``)."""
    cat = catalog or default_catalog()
    warn_version(scenario, cat)
    cat = effective_catalog(scenario, cat)
    econ = economics_values(scenario, cat)
    plans: list[Plan] = []
    for i, opt in enumerate(scenario.options):
        if isinstance(opt, OwnedOption) and opt.node_groups is not None:
            plans.append(_grouped(opt, opt.node_groups, i, econ, cat, source, scenario.horizon_h))
        elif isinstance(opt, OwnedOption):
            plans.append(_owned(opt, i, econ, cat, source, scenario.horizon_h))
        elif isinstance(opt, CloudOption):
            plans.append(_cloud(opt, i, cat, source, scenario.horizon_h))
    rented = {p.name: p for p in plans}  # as the options name them, before any takes a rollout pool
    link = float(cat.rl["rollout_link_gb_s"])
    singles = [o for o in scenario.options if isinstance(o, OwnedOption | CloudOption)]
    plans = [_offloading(p, opt, rented, link) for p, opt in zip(plans, singles, strict=True)]
    by_name = {p.name: p for p in plans}
    for i, opt in enumerate(scenario.options):
        if isinstance(opt, HybridOption):
            base, burst = _offloading(by_name[opt.base], opt, rented, link), by_name[opt.burst]
            assert isinstance(burst, CloudPlan) and not isinstance(base, HybridPlan)  # checked by the schema
            plans.insert(i, HybridPlan(opt.name, base, burst, opt.max_wait_h, opt.bridge_until_ready,
                                       opt.wait_policy, opt.wait_per_hour_h or 0.0, opt.wait_per_gpu_h or 0.0,
                                       opt.wait_per_gpu_hour_h or 0.0))
        elif isinstance(opt, FleetOption):
            plans.insert(i, _fleet(opt, by_name, rented, link))
    return plans


def _fleet(opt: FleetOption, by_name: dict, rented: dict, link_gb_s: float) -> FleetPlan:
    """A fleet's plan from its parts' (checked by the schema: pools, then an on-demand or spot
    burst); the fleet's ``rollout_pool``, if any, is its first part's."""
    *pool_parts, burst = (by_name[name] for name in opt.part_names())
    pool_parts[0] = _offloading(pool_parts[0], opt, rented, link_gb_s)
    wait = opt.burst
    return FleetPlan(opt.name, tuple(pool_parts), burst, wait.max_wait_h, opt.bridge_until_ready, wait.wait_policy,
                     wait.wait_per_hour_h or 0.0, wait.wait_per_gpu_h or 0.0, wait.wait_per_gpu_hour_h or 0.0)
