"""The dashboard's knobs, without Streamlit: what the sidebar can change, read from a scenario
(``current_knobs``), applied to it (``apply_knobs``: a new validated scenario), and the knob a
validation problem belongs to (``knob_problems``), so an error is shown next to that knob under
its label, not under a field path.

A knob left at the scenario's effective value changes nothing: a field the scenario leaves to the
catalog (null) stays null, so an untouched scenario downloads exactly as it was loaded. Owned
options named after their size follow it by the rule sweeps and the optimiser use
(``costsim.scenario.naming``): ``own-256`` resized to 320 GPUs becomes ``own-320`` everywhere
(cards, charts, hybrids that use it, the downloaded YAML), unless that name is taken.
"""

from __future__ import annotations

import copy
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, TypeGuard, TypeVar

from costsim.plan import facts
from costsim.plan.resize import scale_tranches
from costsim.plan.resolve import economics_values, resolve
from costsim.runs import api
from costsim.scenario import Scenario, ScenarioError, scenario_from_data
from costsim.scenario.naming import apply_resize
from costsim.scenario.targets import parse_target

SETUPS = ("colocated sync", "disaggregated sync", "disaggregated async")
"""Placement and mode as one choice: async needs disaggregated placement."""

ECONOMY = ("depreciation_years", "electricity_usd_per_kwh", "cost_of_capital")
"""The economics fields the sidebar sets (the rest stay as the scenario or catalog has them)."""

SERVICE = {"p95_delay_h": "<=", "completion": ">="}
"""The service-level targets the first screen sets (metric -> comparison); a scenario's other
targets stay as it states them."""
TARGET_IDS = {"p95_delay_h": "p95", "completion": "completion"}  # metric -> its knob id, target:<id>


@dataclass(frozen=True)
class ClassKnobs:
    """What the sidebar changes for an RL class (model size in billions of parameters, response
    length in tokens, its coefficient of variation, one of ``SETUPS``)."""

    model_params_b: float
    response_mean: float
    response_cv: float
    setup: str


@dataclass(frozen=True)
class Knobs:
    """What the sidebar changes. Per owned option: GPUs, capex per GPU (USD), lead time (days);
    per cloud option: price (USD per GPU-hour); the arrival scale; per RL class ``ClassKnobs``;
    economics (``ECONOMY``: years, USD per kWh, annual rate); horizon (days) and root seed.
    An empty mapping or None leaves that part of the scenario alone."""

    owned_gpus: dict[str, int]
    cloud_price: dict[str, float | None]
    arrival_scale: float
    classes: dict[str, ClassKnobs] = field(default_factory=dict)
    capex_per_gpu: dict[str, float] = field(default_factory=dict)
    lead_time_days: dict[str, float] = field(default_factory=dict)
    economy: dict[str, float] = field(default_factory=dict)
    horizon_days: float | None = None
    seed: int | str | None = None  # str: what was typed in the seed box when it is not a number
    service: dict[str, float | None] = field(default_factory=dict)  # SERVICE metric -> its target (None: none)
    waiting_usd_per_gpu_hour: float | None = None


def service_targets(scenario: Scenario) -> dict[str, float | None]:
    """The value of each ``SERVICE`` target in force (the scenario's or the defaults), None where
    there is none."""
    out: dict[str, float | None] = dict.fromkeys(SERVICE)
    for text in scenario.decision.stated_targets:
        t = parse_target(text, "decision.targets")
        if SERVICE.get(t.metric) == t.op:
            out[t.metric] = t.value
    return out


def _edit_targets(data: dict[str, Any], scenario: Scenario, service: dict[str, float | None]) -> None:
    """The scenario's targets with the ``SERVICE`` ones set to ``service`` (None: dropped), the
    others kept in order."""
    kept = [text for text in scenario.decision.stated_targets
            if SERVICE.get(parse_target(text, "decision.targets").metric) != parse_target(text, "decision.targets").op]
    data["decision"]["targets"] = [*kept, *(f"{m}{SERVICE[m]}{v:g}" for m, v in service.items()
                                            if m in SERVICE and v is not None)]


def has_size_knobs(opt: facts.OptionLike) -> bool:
    """Whether the option has the owned knobs (GPUs, capex per GPU, lead time): an owned option
    sized by its ``gpus``, not a pool of node groups (sized and priced group by group)."""
    return facts.is_owned(opt) and not facts.has_node_groups(opt)


def current_knobs(scenario: Scenario) -> Knobs:
    """The knobs at the scenario's effective values (the catalog's where it leaves a field null)."""
    plans = resolve(scenario)
    owned_plans = facts.owned_plans(plans)
    econ = economics_values(scenario)
    owned = [o for o in facts.owned_options(scenario) if has_size_knobs(o)]
    return Knobs(
        owned_gpus={o.name: o.gpus for o in owned},
        cloud_price={name: float(plan.price_per_gpu_hour) for name, plan in facts.cloud_plans(plans).items()},
        arrival_scale=scenario.workload.arrival_scale,
        classes={
            c.name: ClassKnobs(c.model_params_b, c.rollout.lengths.mean, c.rollout.lengths.cv,
                               f"{c.placement} {c.mode}")
            for c in scenario.workload.classes
        },
        capex_per_gpu={o.name: owned_plans[o.name].capex_usd / o.gpus for o in owned},
        lead_time_days={o.name: owned_plans[o.name].purchases[0].lead_h / 24 for o in owned},
        economy={k: getattr(econ, k) for k in ECONOMY},
        horizon_days=scenario.horizon_days,
        seed=scenario.seed,
        service=service_targets(scenario),
        waiting_usd_per_gpu_hour=scenario.decision.waiting_usd_per_gpu_hour,
    )


_T = TypeVar("_T")


def _changed(new: _T | None, old: object) -> TypeGuard[_T]:
    """Whether a knob is set (not None) and differs from ``old``; when it is, ``new`` is no
    longer None to the type checker."""
    return new is not None and new != old


def _edit_class(cls: dict[str, Any], k: ClassKnobs, was: ClassKnobs) -> None:
    if _changed(k.model_params_b, was.model_params_b):
        cls["model_params_b"] = float(k.model_params_b)
    if (k.response_mean, k.response_cv) != (was.response_mean, was.response_cv):
        lengths = cls["rollout"]["response_tokens"]
        cap = lengths["max"] if isinstance(lengths, dict) else max(float(lengths), 1.0)
        cls["rollout"]["response_tokens"] = {"mean": float(k.response_mean), "cv": float(k.response_cv), "max": cap}
    if k.setup != was.setup:
        placement, mode = k.setup.split()
        cls["placement"], cls["mode"] = placement, mode
        if placement == "colocated":
            cls["rollout_gpu_fraction"] = None
        if mode == "sync":
            cls["max_staleness"] = None


def apply_knobs(scenario: Scenario, knobs: Knobs, source: str = "dashboard") -> Scenario:
    """The scenario with the knobs applied, validated and checked like a file (ScenarioError).
    Only knobs that differ from ``current_knobs(scenario)`` write a field; with none, ``scenario``
    itself is returned (it is a checked scenario: loaded, uploaded or the editor's)."""
    was = current_knobs(scenario)
    before: dict[str, Any] = scenario.model_dump(mode="json", exclude_defaults=False)
    data = copy.deepcopy(before)
    for opt in data["options"]:
        name = opt["name"]
        if has_size_knobs(opt):
            gpus = knobs.owned_gpus.get(name)
            if _changed(gpus, was.owned_gpus[name]):
                opt["gpus"] = int(gpus)
            if _changed(knobs.capex_per_gpu.get(name), was.capex_per_gpu[name]):
                opt["capex_usd_per_gpu"] = float(knobs.capex_per_gpu[name])
            if _changed(knobs.lead_time_days.get(name), was.lead_time_days[name]):
                opt["lead_time_days"] = float(knobs.lead_time_days[name])
        if facts.is_cloud(opt):
            price = knobs.cloud_price.get(name)
            if _changed(price, was.cloud_price[name]):
                opt["price_per_gpu_hour"] = float(price)
    if _changed(knobs.arrival_scale, was.arrival_scale):
        data["workload"]["arrival_scale"] = float(knobs.arrival_scale)
    for cls in data["workload"]["classes"]:
        if cls["name"] in knobs.classes:
            _edit_class(cls, knobs.classes[cls["name"]], was.classes[cls["name"]])
    for key, value in knobs.economy.items():
        if _changed(value, was.economy[key]):
            data["economics"][key] = float(value)
    if _changed(knobs.horizon_days, was.horizon_days):
        data["horizon_days"] = float(knobs.horizon_days)
    if _changed(knobs.seed, was.seed):
        data["seed"] = knobs.seed  # a whole number, or text the schema check refuses by name
    service = {**was.service, **knobs.service}
    if service != was.service:
        _edit_targets(data, scenario, service)
    if _changed(knobs.waiting_usd_per_gpu_hour, was.waiting_usd_per_gpu_hour):
        data["decision"]["waiting_usd_per_gpu_hour"] = float(knobs.waiting_usd_per_gpu_hour)
    data = scale_tranches(before, data)  # a tranched option's GPUs: every tranche in proportion
    data, _ = apply_resize(before, data)  # own-256 at 320 GPUs: own-320, as sweeps and optimize name it
    if data == before:  # no knob turned: the scenario given, already checked (a check per rerun is slow)
        return scenario
    edited = scenario_from_data(data, source, scenario.base_dir)
    return api.check(edited, source)


# --- Which knob a problem belongs to --------------------------------------------------------------


def knob_paths(scenario: Scenario) -> dict[tuple, str]:
    """Field path prefix -> the knob's id (also its widget key suffix) for every knob."""
    paths: dict[tuple, str] = {("horizon_days",): "horizon", ("seed",): "seed",
                               ("workload", "arrival_scale"): "scale"}
    for i, opt in enumerate(scenario.options):
        if has_size_knobs(opt):
            paths[("options", i, "gpus")] = f"gpus:{opt.name}"
            paths[("options", i, "capex_usd_per_gpu")] = f"capex:{opt.name}"
            paths[("options", i, "lead_time_days")] = f"lead:{opt.name}"
        elif facts.is_cloud(opt):
            paths[("options", i, "price_per_gpu_hour")] = f"price:{opt.name}"
    for j, cls in enumerate(scenario.workload.classes):
        where = ("workload", "classes", j)
        paths[(*where, "model_params_b")] = f"{cls.name}:params"
        paths[(*where, "rollout", "response_tokens")] = f"{cls.name}:len"
        paths[(*where, "rollout", "response_tokens", "cv")] = f"{cls.name}:cv"
        for part in ("placement", "mode", "rollout_gpu_fraction", "max_staleness"):
            paths[(*where, part)] = f"{cls.name}:setup"
    for key in ECONOMY:
        paths[("economics", key)] = f"econ:{key}"
    # A problem with the targets shows under the p95 knob; the completion knob's entry names it
    # only (no field has that path), so the knob list holds both.
    paths[("decision", "targets")] = "target:p95"
    paths[("decision", "targets", "completion")] = "target:completion"
    paths[("decision", "waiting_usd_per_gpu_hour")] = "waiting"
    return paths


def changed_knobs(scenario: Scenario, knobs: Knobs) -> set[str]:
    """Ids (as ``knob_paths`` names them) of the knobs whose value differs from the scenario's."""
    was = current_knobs(scenario)
    out = set()
    for prefix, new, old in (("gpus", knobs.owned_gpus, was.owned_gpus), ("capex", knobs.capex_per_gpu, was.capex_per_gpu),
                             ("lead", knobs.lead_time_days, was.lead_time_days), ("price", knobs.cloud_price, was.cloud_price),
                             ("econ", knobs.economy, was.economy)):
        out |= {f"{prefix}:{name}" for name, v in new.items() if name in old and _changed(v, old[name])}
    for name, k in knobs.classes.items():
        w = was.classes.get(name)
        if w is not None:
            out |= {f"{name}:{part}" for part, a, b in (("params", k.model_params_b, w.model_params_b),
                    ("len", k.response_mean, w.response_mean), ("cv", k.response_cv, w.response_cv),
                    ("setup", k.setup, w.setup)) if _changed(a, b)}
    out |= {knob for knob, a, b in (("scale", knobs.arrival_scale, was.arrival_scale),
                                    ("horizon", knobs.horizon_days, was.horizon_days), ("seed", knobs.seed, was.seed),
                                    ("waiting", knobs.waiting_usd_per_gpu_hour, was.waiting_usd_per_gpu_hour))
            if _changed(a, b)}
    out |= {f"target:{TARGET_IDS[m]}" for m, v in knobs.service.items()
            if m in was.service and v != was.service[m]}
    return out


def knob_problems(err: ScenarioError, paths: dict[tuple, str],
                  changed: Collection[str] = frozenset()) -> tuple[dict[str, list[str]], list[str]]:
    """The problems of ``err`` by knob id (the longest path prefix that matches; a problem of a
    whole option or class goes to the knobs within it that ``changed``), and those that belong to
    no knob (as ``path: message``)."""
    by_knob: dict[str, list[str]] = {}
    other = []
    for p in err.problems:
        loc = tuple(p.loc)
        match = max((k for k in paths if loc[:len(k)] == k), key=len, default=None)
        inside = list(dict.fromkeys(v for k, v in paths.items() if loc and k[:len(loc)] == loc and v in changed))
        if match is None and inside:
            for knob in inside:
                by_knob.setdefault(knob, []).append(p.message)
        elif match is None:
            other.append(f"{'.'.join(map(str, loc))}: {p.message}" if loc else p.message)
        else:
            by_knob.setdefault(paths[match], []).append(p.message)
    return by_knob, other
