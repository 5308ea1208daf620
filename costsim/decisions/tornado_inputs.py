"""The uncertain inputs of the sensitivity tornado and where each one goes in a scenario: for
each input name of the catalog's ``ranges``, its label, the edits (dotted paths into the scenario,
options by name) that set it to a value, and its value in the scenario itself."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from costsim.catalog.load import Catalog, InputRange
from costsim.plan import facts
from costsim.plan.resolve import economics_values
from costsim.runs import arguments
from costsim.scenario import Scenario

# ------------------------------------------------------------------ inputs: where each one goes

Edits = dict[str, object]  # dotted path (options by name) -> value


def _price_edits(sc: Scenario, plans: dict, cat: Catalog, f: float) -> Edits | str:
    rented = [o.name for o in facts.cloud_options(sc)]
    if not rented:
        return "no rented option"
    return {f"options.{n}.price_per_gpu_hour": plans[n].price_per_gpu_hour * f for n in rented}


def _on_demand(o, cat: Catalog) -> float:
    return cat.gpus[o.gpu_type].price[o.price_tier]["on_demand"]


def _spot_edits(sc: Scenario, plans: dict, cat: Catalog, d: float) -> Edits | str:
    spot = facts.spot_options(sc)
    if not spot:
        return "no spot option"
    return {f"options.{o.name}.price_per_gpu_hour": _on_demand(o, cat) * (1 - d) for o in spot}


def _spot_base(sc: Scenario, plans: dict, cat: Catalog) -> float:
    spot = facts.spot_options(sc)
    return float(np.mean([1 - plans[o.name].price_per_gpu_hour / _on_demand(o, cat) for o in spot])) if spot else math.nan


def _owned(sc: Scenario) -> list:
    return facts.owned_options(sc)


def _capex_edits(sc: Scenario, plans: dict, cat: Catalog, f: float) -> Edits | str:
    # Resolved capex includes the fabric, storage and install shares: capex_usd_per_gpu = all-in ÷ GPUs.
    return {f"options.{o.name}.capex_usd_per_gpu": plans[o.name].capex_usd / o.gpus * f for o in _owned(sc)} \
        or "no owned option"


def _economics(field: str) -> Callable:
    def edits(sc: Scenario, plans: dict, cat: Catalog, v: float) -> Edits | str:
        return {f"economics.{field}": v} if _owned(sc) else "no owned option"
    return edits


def _arrival_edits(sc: Scenario, plans: dict, cat: Catalog, f: float) -> Edits | str:
    return {"workload.arrival_scale": sc.workload.arrival_scale * f}


def _failing(sc: Scenario) -> list:
    return [o for o in facts.pool_options(sc) if o.failures is not None]


def _failure_edits(sc: Scenario, plans: dict, cat: Catalog, v: float) -> Edits | str:
    def repair(o) -> float:
        return cat.reliability["repair_hours"] if o.failures == "catalog" else o.failures.repair_hours
    # The whole mapping: "catalog" is a string, not a mapping a deeper path could go into.
    return {f"options.{o.name}.failures": {"node_failures_per_1000_node_days": v, "repair_hours": repair(o)}
            for o in _failing(sc)} or "no option models node failures"


def _failure_base(sc: Scenario, plans: dict, cat: Catalog) -> float:
    o = next(iter(_failing(sc)), None)
    return plans[o.name].failures_per_node_h * 24 * 1000 if o is not None else math.nan


def _lead_edits(sc: Scenario, plans: dict, cat: Catalog, v: float) -> Edits | str:
    return {f"options.{o.name}.lead_time_days": v for o in _owned(sc)} or "no owned option"


def _iterations_edits(sc: Scenario, plans: dict, cat: Catalog, f: float) -> Edits | str:
    if not sc.workload.classes:
        return "trace workload: no RL classes to lengthen"
    out: Edits = {}
    for c in sc.workload.classes:
        it = c.iterations
        if isinstance(it, int):
            out[f"workload.classes.{c.name}.iterations"] = max(1, round(it * f))
        else:
            out[f"workload.classes.{c.name}.iterations"] = {"mean": max(1.0, it.mean * f), "cv": it.cv}
    return out


# name -> (label, edits(scenario, plans by name, catalog, value), base value (None: 1 for a scale))
INPUTS: dict[str, tuple[str, Callable, Callable | None]] = {
    "cloud_price": ("cloud price", _price_edits, None),
    "spot_discount": ("spot discount", _spot_edits, _spot_base),
    "capex_per_gpu": ("capex per GPU", _capex_edits, None),
    "electricity_usd_per_kwh": ("electricity", _economics("electricity_usd_per_kwh"),
                                lambda sc, p, c: economics_values(sc, c).electricity_usd_per_kwh),
    "pue": ("PUE", _economics("pue"), lambda sc, p, c: economics_values(sc, c).pue),
    "depreciation_years": ("depreciation years", _economics("depreciation_years"),
                           lambda sc, p, c: economics_values(sc, c).depreciation_years),
    "cost_of_capital": ("cost of capital", _economics("cost_of_capital"),
                        lambda sc, p, c: economics_values(sc, c).cost_of_capital),
    "arrival_scale": ("arrival scale", _arrival_edits, None),
    "node_failures_per_1000_node_days": ("failure rate", _failure_edits, _failure_base),
    "lead_time_days": ("lead time", _lead_edits,
                       lambda sc, p, c: next((p[o.name].purchases[0].lead_h / 24 for o in _owned(sc)), math.nan)),
    "iterations_per_job": ("iterations per job", _iterations_edits, None),
}


def chosen_inputs(inputs, cat: Catalog) -> dict[str, InputRange]:
    """The inputs to vary with their ranges: all the catalog's (None), a list of names, or a
    mapping name -> (low, high) replacing the catalog's values (source "given")."""
    if inputs is None:
        names: Sequence[str] = [n for n in INPUTS if n in cat.ranges]
    elif isinstance(inputs, (str, bytes)) or not isinstance(inputs, (Sequence, Mapping)):
        raise arguments.error("tornado", "inputs", f"must be None, a list of input names or a mapping name -> "
                              f"(low, high) (got {type(inputs).__name__})")
    else:
        names = list(inputs)
    unknown = [n for n in names if n not in INPUTS or n not in cat.ranges]
    if unknown:
        raise arguments.error("tornado", "inputs", f"unknown input(s) {', '.join(map(repr, unknown))} "
                              f"(inputs: {', '.join(INPUTS)})")
    out = {}
    for n in names:
        r = cat.ranges[n]
        if isinstance(inputs, Mapping):
            lo, hi = _pair(inputs[n], n)
            r = InputRange(n, lo, hi, r.scale, r.unit, r.applies_to, "given", "")
        out[n] = r
    return out


def _pair(value, name: str) -> tuple[float, float]:
    try:
        lo, hi = (float(x) for x in value)
    except (TypeError, ValueError):
        raise arguments.error("tornado", "inputs", f"{name}: must be (low, high), got {value!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise arguments.error("tornado", "inputs", f"{name}: low ({lo:g}) must be less than high ({hi:g})")
    return lo, hi


__all__ = ["INPUTS", "Edits", "chosen_inputs"]
