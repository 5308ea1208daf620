"""The catalog (``costsim/data/catalog.yaml``): GPU specs, prices and economics, each sourced.

``resolve`` turns a scenario's options into concrete numbers: every ``null`` takes its catalog
value here, so the models and the engine never look anything up.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from costsim.catalog_pins import effective_catalog, warn_version
from costsim.scenario import CloudOption, HybridOption, OwnedOption, Problem, Scenario, ScenarioError
from costsim.scenario.units import HOURS_PER_DAY, HOURS_PER_YEAR

PRICINGS = ("on_demand", "reserved_1y", "reserved_3y", "spot")


@dataclass(frozen=True)
class Entry:
    """One catalog value with its provenance."""

    path: str
    value: float
    source: str
    date: str


@dataclass(frozen=True)
class GPUSpec:
    """One GPU type. Units in the names: TFLOP/s, TB/s, GB/s, kW, USD."""

    name: str
    description: str
    memory_gb: float
    bf16_dense_tflops: float
    hbm_tb_s: float
    gpus_per_node: int
    nvlink_busbw_gb_s: float
    nics_per_node: int
    nic_busbw_gb_s: float
    node_max_kw: float
    node_idle_kw: float
    server_price_usd: float
    price: dict[str, dict[str, float]]  # tier -> pricing -> USD per GPU-hour


@dataclass(frozen=True)
class InputRange:
    """An uncertain input's plausible low and high with their provenance (the sensitivity tornado,
    ``costsim.decisions.tornado``). ``scale``: low and high multiply the scenario's own value
    (``unit`` then starts with "×"); otherwise they are the value itself, in ``unit``.
    ``applies_to``: the scenario fields the input sets, in words."""

    name: str
    low: float
    high: float
    scale: bool
    unit: str
    applies_to: str
    source: str
    date: str


@dataclass(frozen=True)
class Catalog:
    version: str
    economics: dict[str, float]
    reliability: dict[str, float]
    rl: dict[str, float]
    fabrics: dict[str, dict[str, float]]
    billing: dict[str, dict[str, float]]
    gpus: dict[str, GPUSpec]
    entries: tuple[Entry, ...]  # every sourced leaf, for `costsim catalog`
    ranges: dict[str, InputRange] = field(default_factory=dict)  # name -> sensitivity range


def _ranges(raw: dict | None, source: str) -> dict[str, InputRange]:
    """The catalog's ``ranges:`` section, checked: low < high, both finite, a source and a date."""
    out = {}
    for name, r in (raw or {}).items():
        try:
            item = InputRange(name=str(name), low=float(r["low"]), high=float(r["high"]), scale=bool(r["scale"]),
                              unit=str(r.get("unit", "")), applies_to=str(r["applies_to"]), source=str(r["source"]),
                              date=str(r["date"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ScenarioError(source, [Problem(("ranges", str(name)), f"needs low, high, scale, applies_to, source "
                                                 f"and date ({exc!r})")]) from None
        if not (math.isfinite(item.low) and math.isfinite(item.high) and item.low < item.high):
            raise ScenarioError(source, [Problem(("ranges", str(name)), f"low ({item.low:g}) must be less than high "
                                                 f"({item.high:g}), both finite")])
        if not (item.source.strip() and item.date.strip()):
            raise ScenarioError(source, [Problem(("ranges", str(name)), "needs a source and a date")])
        out[item.name] = item
    return out


def _leaves(node: Any, path: str, out: list[Entry]) -> Any:
    """Replace {value, source, date} leaves by their value, collecting Entries."""
    if isinstance(node, dict) and "value" in node and "source" in node:
        out.append(Entry(path, node["value"], str(node["source"]), str(node.get("date", ""))))
        return node["value"]
    if isinstance(node, dict):
        return {k: _leaves(v, f"{path}.{k}" if path else str(k), out) for k, v in node.items()}
    return node


def load_catalog(path: Path | str | None = None) -> Catalog:
    """Read a catalog file (default: the one shipped with costsim)."""
    yaml = YAML(typ="safe")
    if path is None:
        text = resources.files("costsim").joinpath("data/catalog.yaml").read_text(encoding="utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    raw = yaml.load(text)
    entries: list[Entry] = []
    data = _leaves(raw, "", entries)
    gpus = {}
    for name, g in data["gpus"].items():
        fields = {k: v for k, v in g.items() if k != "price"}
        gpus[name] = GPUSpec(name=name, price=g["price"], **fields)
    return Catalog(
        version=str(data["catalog_version"]),
        economics=dict(data["economics"]),
        reliability=dict(data["reliability"]),
        rl=dict(data["rl"]),
        fabrics=dict(data["fabrics"]),
        billing=dict(data["billing"]),
        gpus=gpus,
        entries=tuple(entries),
        ranges=_ranges(data.get("ranges"), str(path) if path is not None else "catalog.yaml"),
    )


@functools.cache
def default_catalog() -> Catalog:
    """The shipped catalog, read once (it is immutable)."""
    return load_catalog()


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


def _owned(opt: OwnedOption, i: int, econ: EconomicsValues, cat: Catalog, source: str) -> OwnedPlan:
    gpu = cat.gpus[opt.gpu_type]
    gpn = opt.gpus_per_node or gpu.gpus_per_node
    if opt.gpus % gpn:
        raise ScenarioError(
            source,
            [Problem(("options", i, "gpus"), f"{opt.gpus} GPUs is not a whole number of {gpn}-GPU {opt.gpu_type} nodes")],
        )
    nodes = opt.gpus // gpn
    fabric = cat.fabrics[opt.network]
    if opt.capex_usd_per_gpu is not None:
        capex = opt.capex_usd_per_gpu * opt.gpus
    else:
        capex = default_capex_per_gpu(gpu, fabric["capex_frac"], econ.storage_capex_frac, econ.install_capex_frac) * opt.gpus
    lead_days = opt.lead_time_days if opt.lead_time_days is not None else cat.economics["lead_time_days"]
    return OwnedPlan(
        name=opt.name,
        gpu=gpu,
        gpus=opt.gpus,
        gpus_per_node=gpn,
        nodes=nodes,
        network=opt.network,
        fabric_efficiency=float(fabric["efficiency"]),
        lead_time_h=float(lead_days) * HOURS_PER_DAY,
        scheduler=opt.scheduler,
        placement=opt.placement,
        capex_usd=float(capex),
        rl=dict(cat.rl),
        **_failures(opt.failures, cat),
    )


def _failures(failures, cat: Catalog) -> dict[str, float]:
    """Failure rate per node-hour and repair hours: none, the catalog's, or the scenario's."""
    if failures is None:
        return {"failures_per_node_h": 0.0, "repair_h": 0.0}
    if failures == "catalog":
        rel = cat.reliability
        return {"failures_per_node_h": rel["node_failures_per_1000_node_days"] / 1000 / 24, "repair_h": rel["repair_hours"]}
    return {"failures_per_node_h": failures.node_failures_per_1000_node_days / 1000 / 24,
            "repair_h": failures.repair_hours}


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
        key = f"reserved_{term_years}y" if opt.pricing == "reserved" else opt.pricing
        price = gpu.price[opt.price_tier][key]
    return CloudPlan(
        name=opt.name,
        gpu=gpu,
        pricing=opt.pricing,
        price_per_gpu_hour=float(price),
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
        failures_per_node_h=_failures(opt.failures, cat)["failures_per_node_h"],
        preemptions_per_instance_h=(
            (opt.preemptions_per_instance_day if opt.preemptions_per_instance_day is not None
             else cat.reliability["spot_preemptions_per_instance_day"]) / 24.0 if opt.pricing == "spot" else 0.0),
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
    version warns (``costsim.catalog_pins.CatalogVersionWarning``)."""
    cat = catalog or default_catalog()
    warn_version(scenario, cat)
    cat = effective_catalog(scenario, cat)
    econ = economics_values(scenario, cat)
    plans: list[Plan] = []
    for i, opt in enumerate(scenario.options):
        if isinstance(opt, OwnedOption):
            plans.append(_owned(opt, i, econ, cat, source))
        elif isinstance(opt, CloudOption):
            plans.append(_cloud(opt, i, cat, source, scenario.horizon_h))
    rented = {p.name: p for p in plans}  # as the options name them, before any takes a rollout pool
    link = float(cat.rl["rollout_link_gb_s"])
    singles = [o for o in scenario.options if not isinstance(o, HybridOption)]
    plans = [_offloading(p, opt, rented, link) for p, opt in zip(plans, singles, strict=True)]
    by_name = {p.name: p for p in plans}
    for i, opt in enumerate(scenario.options):
        if isinstance(opt, HybridOption):
            base, burst = _offloading(by_name[opt.base], opt, rented, link), by_name[opt.burst]
            assert isinstance(burst, CloudPlan) and not isinstance(base, HybridPlan)  # checked by the schema
            plans.insert(i, HybridPlan(opt.name, base, burst, opt.max_wait_h, opt.bridge_until_ready,
                                       opt.wait_policy, opt.wait_per_hour_h or 0.0, opt.wait_per_gpu_h or 0.0,
                                       opt.wait_per_gpu_hour_h or 0.0))
    return plans
