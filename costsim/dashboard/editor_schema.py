"""What the scenario editor knows about each field, read from the scenario's JSON schema
(``costsim schema``): its type, bounds, choices and help text, the catalog value a ``null`` stands
for, and whether the field applies to the object's current settings. No Streamlit here.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

from costsim.catalog.load import default_catalog
from costsim.plan import facts
from costsim.plan.resolve import default_capex_per_gpu
from costsim.scenario import json_schema
from costsim.scenario.classes import DEFAULT_MAX_STALENESS, DEFAULT_ROLLOUT_GPU_FRACTION, DEFAULT_VERIFIER_SECONDS
from costsim.scenario.options import DEFAULT_PROVISIONING_DELAY_H, DEFAULT_STARTUP_H
from costsim.scenario.targets import DEFAULT_TARGETS

Loc = tuple[str | int, ...]

# Fields that apply only to some settings of their object (the models' validators refuse them
# elsewhere). The editor hides such a field while it is at its default and does not apply, so the
# form shows what matters; a field set where it does not apply stays visible with its error.
_RESERVED = ("reserved_gpus", "term_years", "renew", "scheduler")
_RENTED = ("billing_granularity_s", "minimum_billing_s", "max_gpus", "provisioning_delay_h", "startup_h",
           "provisioning_delay_cv", "stockout")
APPLIES: dict[tuple[str, str], Any] = {
    **{("CloudOption", f): facts.is_reserved for f in _RESERVED},
    **{("CloudOption", f): facts.pay_as_you_go for f in _RENTED},
    ("CloudOption", "preemptions_per_instance_day"): facts.is_spot,
    ("CloudOption", "reacquire_delay_h"): facts.is_spot,
    ("RLClass", "rollout_gpu_fraction"): lambda c: c.get("placement") == "disaggregated",
    ("CloudOption", "rollout_pool"): facts.is_reserved,
    ("OwnedOption", "gpus"): lambda o: not o.get("tranches"),  # with tranches: their total, left out
    **{(m, "rollout_link_gb_s"): (lambda o: o.get("rollout_pool") is not None)
       for m in ("OwnedOption", "CloudOption", "HybridOption")},
    ("RLClass", "max_staleness"): lambda c: c.get("mode") == "async",
    ("Scoring", "reward_model_params_b"): lambda s: s.get("reward") == "model",
    ("Scoring", "verifier_seconds_per_sample"): lambda s: s.get("reward") == "verifier",
}

MAX_SAFE_INT = 2**53 - 1  # the browser holds numbers as doubles: larger integers are not exact


@functools.cache
def schema() -> dict:
    """The scenario JSON schema (cached: it never changes while the server runs)."""
    return json_schema()


def model(name: str) -> dict:
    """A model's schema by name (``Scenario`` or a ``$defs`` entry)."""
    return schema() if name == "Scenario" else schema()["$defs"][name]


def ref_name(spec: dict) -> str | None:
    ref = spec.get("$ref")
    return ref.rsplit("/", 1)[-1] if ref else None


@dataclass(frozen=True)
class Field:
    """One property of a model: its schema ``spec`` with the null branch split off.

    ``variants``: the non-null branches (a scalar spec, ``{"$ref": ...}`` or ``{"const": ...}``);
    ``nullable``: null is allowed; ``help``: the schema's description (units and range)."""

    name: str
    model: str
    spec: dict
    variants: tuple[dict, ...]
    nullable: bool
    required: bool
    help: str

    @property
    def default(self) -> Any:
        return self.spec.get("default")

    @property
    def null_means(self) -> str:
        """What null stands for, from the description ("null: catalog." -> "catalog"); "none"
        where the description does not say (an absent trace or checkpoint)."""
        m = re.search(r"null: ([^;)]+?)\.?(?:\)|;|$)", self.help)
        return m.group(1).strip() if m else "none"


def fields(model_name: str) -> list[Field]:
    """The model's fields in schema order."""
    m = model(model_name)
    required = set(m.get("required", ()))
    out = []
    for name, spec in m["properties"].items():
        branches = spec.get("anyOf") or spec.get("oneOf") or [spec]
        variants = tuple(b for b in branches if b.get("type") != "null")
        nullable = len(variants) < len(branches)
        out.append(Field(name, model_name, spec, variants, nullable, name in required, spec.get("description", "")))
    return out


def applies(f: Field, obj: dict) -> bool:
    """Whether the field applies to the object's current settings (see ``APPLIES``)."""
    rule = APPLIES.get((f.model, f.name))
    return True if rule is None else bool(rule(obj))


def bounds(spec: dict) -> tuple[float | None, float | None]:
    """A number's inclusive widget bounds (an exclusive bound is shown as inclusive: the schema's
    check then says what is wrong with the edge value)."""
    if spec.get("type") == "integer":
        return whole_bounds(spec)
    return _edges(spec)


def whole_bounds(spec: dict) -> tuple[int | None, int | None]:
    """An integer's widget bounds as ``bounds`` gives them: whole numbers, within what the browser
    holds exactly (±``MAX_SAFE_INT``)."""
    lo, hi = _edges(spec)
    return (None if lo is None else max(int(lo), -MAX_SAFE_INT), None if hi is None else min(int(hi), MAX_SAFE_INT))


def _edges(spec: dict) -> tuple[Any, Any]:
    """The schema's minimum and maximum as written (the exclusive one where there is no other)."""
    return spec.get("minimum", spec.get("exclusiveMinimum")), spec.get("maximum", spec.get("exclusiveMaximum"))


def choices(spec: dict) -> list | None:
    """The allowed values of an enum (a Literal), else None."""
    if "enum" in spec:
        return list(spec["enum"])
    return None


def _econ(data: dict) -> dict[str, float]:
    cat = default_catalog()
    given = data.get("economics") or {}
    return {k: (given[k] if given.get(k) is not None else v) for k, v in cat.economics.items()}


def catalog_default(data: dict, loc: Loc) -> Any:
    """The value a ``null`` at ``loc`` stands for, where the catalog (or a fixed default) gives
    one number or word; None where it is computed from the model or means "none".

    ``data``: the whole scenario (an option's default depends on its GPU type, tier and pricing).
    """
    cat = default_catalog()
    if tuple(loc) == ("decision", "targets"):
        return " and ".join(DEFAULT_TARGETS)
    try:
        if loc[:1] == ("economics",) and len(loc) == 2:
            return cat.economics.get(str(loc[1]))
        if loc[:1] == ("options",) and len(loc) == 3:
            return _option_default(data, data["options"][loc[1]], str(loc[2]))
        if loc[:2] == ("workload", "classes") and len(loc) >= 4:
            return {"rollout_gpu_fraction": DEFAULT_ROLLOUT_GPU_FRACTION, "max_staleness": DEFAULT_MAX_STALENESS,
                    "verifier_seconds_per_sample": DEFAULT_VERIFIER_SECONDS}.get(str(loc[-1]))
    except (KeyError, IndexError, TypeError):
        return None
    return None


def _option_default(data: dict, opt: dict, field: str) -> Any:
    cat = default_catalog()
    gpu_type = opt.get("gpu_type")
    gpu = cat.gpus.get(gpu_type) if gpu_type is not None else None  # catalog names are words, never None
    if gpu is None:
        return None
    if facts.is_owned(opt):
        gpn = opt.get("gpus_per_node") or gpu.gpus_per_node
        if field == "gpus_per_node":
            return gpu.gpus_per_node
        if field == "lead_time_days":
            return cat.economics["lead_time_days"]
        if field == "capex_usd_per_gpu":  # as costsim.plan.resolve._owned
            econ = _econ(data)
            network = opt.get("network")
            fabric = (cat.fabrics.get(network, {}) if network is not None else {}).get("capex_frac", 0.0)
            per_gpu = default_capex_per_gpu(gpu, fabric, econ["storage_capex_frac"], econ["install_capex_frac"])
            return round(per_gpu, 2) if gpn else None
        return None
    tier = opt.get("price_tier", "neocloud")
    pricing = opt.get("pricing", "on_demand")
    term = opt.get("term_years") or 1
    table = {
        "price_per_gpu_hour": gpu.price.get(tier, {}).get(facts.catalog_price_key(pricing, term)),
        "price_change_per_year": 0.0,
        "gpus_per_instance": gpu.gpus_per_node,
        "term_years": 1,
        "scheduler": "fifo",
        "billing_granularity_s": cat.billing.get(tier, {}).get("granularity_s"),
        "minimum_billing_s": cat.billing.get(tier, {}).get("minimum_s"),
        "provisioning_delay_h": DEFAULT_PROVISIONING_DELAY_H,
        "startup_h": DEFAULT_STARTUP_H,
        "provisioning_delay_cv": 0.0,
        "preemptions_per_instance_day": cat.reliability["spot_preemptions_per_instance_day"],
        "reacquire_delay_h": cat.reliability["spot_reacquire_delay_h"],
    }
    return table.get(field)


def failures_default() -> dict:
    """The catalog's node failure rate and repair time, as a ``failures`` mapping to start from."""
    rel = default_catalog().reliability
    return {"node_failures_per_1000_node_days": rel["node_failures_per_1000_node_days"],
            "repair_hours": rel["repair_hours"]}

