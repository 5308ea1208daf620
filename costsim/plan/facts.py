"""What a scenario's options are, for code that reads them before (or without) their plans: the
dashboard's knobs and editor, the tornado's inputs, the flip search, a file's diagnosis, the
figures' looks. The plans say it of resolved options (``costsim.plan.options``); this module says
it of the options as written, once, so no other layer compares an option's ``kind`` or
``pricing`` itself.

An option is owned (a cluster of one's own), cloud (rented from a provider: on demand, spot, or a
reserved commitment), a hybrid of two others (an owned or reserved base, an on-demand or spot
burst) or a fleet of several (owned or reserved pools in order of preference, an on-demand or spot
burst last). A hybrid or fleet is on the build side when any of its pools is owned (``side_of``). The predicates take an option model or its data (a mapping, as the editor holds it before
it validates: a missing field is simply not there); the selectors take a validated scenario and
return its options typed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from costsim.plan.fleet import Plan
from costsim.plan.groups import GroupedPlan
from costsim.plan.options import CloudPlan, OwnedPlan, side_of
from costsim.scenario import CloudOption, FleetOption, HybridOption, OwnedOption, Scenario

OptionLike = OwnedOption | CloudOption | HybridOption | FleetOption | Mapping[str, Any]
AnyOption = OwnedOption | CloudOption | HybridOption | FleetOption
PAY_AS_YOU_GO = ("on_demand", "spot")  # cloud pricings rented per use, billed per allocation
HYBRID_PARTS = ("base", "burst")  # a hybrid's fields naming the options it is built of


CHOICES = ("owned", "on_demand", "reserved", "spot", "hybrid", "fleet")
"""Every kind of option, a cloud option by its pricing, in one word each (the editor's "add option")."""


def shape_of(choice: str) -> dict[str, str]:
    """The ``kind`` (and a cloud option's ``pricing``) of an option of ``choice``, one of
    ``CHOICES``; ValueError for another word."""
    if choice in ("owned", "hybrid", "fleet"):
        return {"kind": choice}
    if choice in ("reserved", *PAY_AS_YOU_GO):
        return {"kind": "cloud", "pricing": choice}
    raise ValueError(f"unknown option kind {choice!r}; one of {', '.join(CHOICES)}")


def _field(opt: OptionLike, name: str) -> Any:
    return opt.get(name) if isinstance(opt, Mapping) else getattr(opt, name, None)


def is_owned(opt: OptionLike) -> bool:
    """An owned cluster."""
    return _field(opt, "kind") == "owned"


def is_cloud(opt: OptionLike) -> bool:
    """Capacity rented from a provider: on demand, spot or reserved."""
    return _field(opt, "kind") == "cloud"


def is_reserved(opt: OptionLike) -> bool:
    """A reserved commitment: cloud GPUs paid for every hour of a term, used or not."""
    return is_cloud(opt) and _field(opt, "pricing") == "reserved"


def is_spot(opt: OptionLike) -> bool:
    """Spot capacity: rented per use, preempted."""
    return is_cloud(opt) and _field(opt, "pricing") == "spot"


def pay_as_you_go(opt: OptionLike) -> bool:
    """Cloud capacity rented per use (on demand or spot): what can be a hybrid's burst or a rollout
    pool, and what prices unfinished work."""
    return is_cloud(opt) and _field(opt, "pricing") in PAY_AS_YOU_GO


def can_be_base(opt: OptionLike) -> bool:
    """Can be a hybrid's base: owned, or reserved."""
    return is_owned(opt) or is_reserved(opt)


def part_fields(opt: OptionLike) -> tuple[str, ...]:
    """The fields naming the options ``opt`` is built of: a hybrid's ``base`` and ``burst``; none
    for an owned or cloud option, which has capacity of its own, nor for a fleet, whose parts are
    a list (``parts_of``, ``rename_parts``)."""
    return HYBRID_PARTS if _field(opt, "kind") == "hybrid" else ()


def is_fleet(opt: OptionLike) -> bool:
    """A fleet: options in order of preference under one scheduler."""
    return _field(opt, "kind") == "fleet"


def _fleet_parts(opt: OptionLike) -> list[Any]:
    parts = _field(opt, "parts")
    return list(parts) if isinstance(parts, list | tuple) else []


def parts_of(opt: OptionLike) -> tuple[Any, ...]:
    """The names of the options ``opt`` is built of (a hybrid's base and burst, a fleet's parts in
    order, as written), () for an owned or cloud option."""
    if is_fleet(opt):
        return tuple(_field(p, "option") if isinstance(p, Mapping) or hasattr(p, "option") else None
                     for p in _fleet_parts(opt))
    return tuple(_field(opt, f) for f in part_fields(opt))


def rename_parts(opt: dict[str, Any], old: str, new: str) -> None:
    """In option data ``opt`` (a mapping, as the editor holds it), every reference to option
    ``old`` as a part (a hybrid's base or burst, a fleet's part) made ``new``, in place."""
    for ref in part_fields(opt):
        if opt.get(ref) == old:
            opt[ref] = new
    for part in _fleet_parts(opt) if is_fleet(opt) else ():
        if isinstance(part, dict) and part.get("option") == old:
            part["option"] = new


def committed_gpus(opt: OptionLike) -> int | None:
    """GPUs the option holds whether used or not: an owned cluster's ``gpus``, a reservation's
    ``reserved_gpus``; None for capacity rented per use and for a hybrid (its base's)."""
    if is_owned(opt):
        return _field(opt, "gpus")
    return _field(opt, "reserved_gpus") if is_reserved(opt) else None


def has_node_groups(opt: OptionLike) -> bool:
    """An owned pool of node groups (``node_groups``): sized and typed group by group, not by its
    ``gpus`` and ``gpu_type`` (the dashboard's size and price knobs leave it alone)."""
    return is_owned(opt) and _field(opt, "node_groups") is not None


def gpu_counts(opt: OptionLike) -> list[tuple[int, str]]:
    """The GPUs an owned or reserved option holds, as (count, GPU type) per type in the order
    written: a pool of node groups' per type (``[(128, "H100"), (64, "A100")]``), one pair for a
    single type; [] for capacity rented per use, a hybrid, a fleet, or a count not given."""
    if has_node_groups(opt):
        out: dict[str, int] = {}
        for g in _field(opt, "node_groups"):
            t, n, per = (_field(g, k) for k in ("gpu_type", "nodes", "gpus_per_node"))
            if isinstance(t, str) and type(n) is int and type(per) is int:
                out[t] = out.get(t, 0) + n * per
        return [(n, t) for t, n in out.items()]
    count, gpu = committed_gpus(opt), gpu_type(opt)
    return [(count, gpu)] if isinstance(count, int) and isinstance(gpu, str) else []


def gpu_type(opt: OptionLike) -> str | None:
    """The GPU type of an option with capacity of its own; None for a hybrid or fleet (its parts have theirs)."""
    return _field(opt, "gpu_type")


def unit_field(opt: OptionLike, field: str) -> str | None:
    """The field holding the GPUs a count ``field`` of ``opt`` moves in whole multiples of: an owned
    cluster's ``gpus`` in nodes (``gpus_per_node``), a cloud option's ``reserved_gpus`` and
    ``max_gpus`` in instances (``gpus_per_instance``); None for any other field."""
    if is_owned(opt):
        return "gpus_per_node" if field == "gpus" else None
    return "gpus_per_instance" if is_cloud(opt) and field in ("reserved_gpus", "max_gpus") else None


def catalog_price_key(pricing: str, term_years: int) -> str:
    """The catalog's price column for a cloud ``pricing`` (``on_demand``, ``spot``) or, reserved, for
    its term (``reserved_1y``, ``reserved_3y``)."""
    return f"reserved_{term_years}y" if pricing == "reserved" else pricing


# ------------------------------------------------------------------ of a validated scenario


def owned_options(scenario: Scenario) -> list[OwnedOption]:
    """The scenario's owned options, in order."""
    return [o for o in scenario.options if isinstance(o, OwnedOption)]


def cloud_options(scenario: Scenario) -> list[CloudOption]:
    """The scenario's cloud options (on demand, spot and reserved), in order."""
    return [o for o in scenario.options if isinstance(o, CloudOption)]


def spot_options(scenario: Scenario) -> list[CloudOption]:
    """The scenario's spot options, in order."""
    return [o for o in cloud_options(scenario) if is_spot(o)]


def pool_options(scenario: Scenario) -> list[OwnedOption | CloudOption]:
    """The scenario's options with capacity of their own (owned and cloud: not hybrids or fleets), in order."""
    return [o for o in scenario.options if isinstance(o, OwnedOption | CloudOption)]


def pay_as_you_go_names(scenario: Scenario) -> list[str]:
    """Names of the scenario's on-demand and spot options, in order."""
    return [o.name for o in scenario.options if pay_as_you_go(o)]


def rollout_pool(scenario: Scenario, opt: AnyOption) -> CloudOption | None:
    """The option ``opt`` offloads its RL classes' rollouts to (an on-demand or spot option, as the
    schema requires), None without one."""
    return next((o for o in cloud_options(scenario) if o.name == opt.rollout_pool), None) if opt.rollout_pool else None


def pricing_label(scenario: Scenario, opt: AnyOption) -> str:
    """How the option is paid for, as its plan's ``pricing`` says it: ``owned``, ``on_demand``,
    ``reserved``, ``spot``, a hybrid's ``base+burst`` (``owned+on_demand``), a fleet's parts' in
    order (``owned+reserved+on_demand``)."""
    if isinstance(opt, HybridOption | FleetOption):
        by_name = {o.name: o for o in scenario.options}
        return "+".join(pricing_label(scenario, by_name[name]) for name in parts_of(opt))
    return opt.pricing if isinstance(opt, CloudOption) else "owned"


def side(scenario: Scenario, opt: AnyOption) -> str:
    """``build`` or ``rent``, as the plan's ``side`` (``side_of`` its pricing label)."""
    return side_of(pricing_label(scenario, opt))


# ------------------------------------------------------------------ of resolved plans


def owned_plans(plans: Iterable[Plan]) -> dict[str, OwnedPlan]:
    """The plans of owned options, by option name, in order."""
    return {p.name: p for p in plans if isinstance(p, OwnedPlan)}


def bought_plans(plans: Iterable[Plan]) -> dict[str, OwnedPlan | GroupedPlan]:
    """Every owned option's plan by name, a cluster or a pool of node groups: what each buys
    (``purchases``)."""
    return {p.name: p for p in plans if isinstance(p, OwnedPlan | GroupedPlan)}


def cloud_plans(plans: Iterable[Plan]) -> dict[str, CloudPlan]:
    """The plans of cloud options (on demand, spot, reserved), by option name, in order."""
    return {p.name: p for p in plans if isinstance(p, CloudPlan)}


# ------------------------------------------------------------------ of a summary table's labels


def _label(value: object) -> str:
    """A table cell as text: "" for None or NaN."""
    return str(value) if value is not None and value == value else ""


def holding(kind: object, pricing: object) -> tuple[str, str]:
    """From a summary row's ``kind`` and ``pricing`` (None or NaN: unknown), how the option holds
    capacity, ``owned``, ``rented`` or ``hybrid`` (``other`` for anything else), and its pricing:
    an owned option's ``owned``, a rented one's ``on_demand``, ``reserved`` or ``spot`` (on demand
    when unknown), a hybrid's ``hybrid`` (a fleet, a hybrid of more parts, too), else ``other``."""
    kind, pricing = _label(kind), _label(pricing)
    if kind == "owned":
        return "owned", "owned"
    if kind == "cloud":
        return "rented", pricing if pricing in ("reserved", *PAY_AS_YOU_GO) else "on_demand"
    if kind in ("hybrid", "fleet"):
        return "hybrid", "hybrid"
    return "other", "other"


def hybrid(kinds: Any) -> np.ndarray:
    """Whether each option of a summary's ``kind`` column (or one kind) is a hybrid or a fleet (a
    hybrid of more parts): built of other options rather than capacity of its own."""
    return np.isin(np.asarray(kinds, dtype=object), ("hybrid", "fleet"))
