"""A capacity plan in words (``costsim plan``, ``costsim.capacity_plan``): what to buy, reserve and
rent ("buy 384 H100; reserve 64 H100 for 1 year; burst to cloud-od after 4 h"), the answer's fair
total with its 95 % interval, and the runner-up plans, from ``costsim.decisions.capacity_plan``'s
``CapacityPlan`` (money in USD, delays in hours)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from costsim.decisions.capacity_plan import CapacityPlan
from costsim.decisions.capacity_plan import capacity_plan as search
from costsim.plan import facts
from costsim.present.formats import money, plain
from costsim.present.optimize import notes
from costsim.present.optimize import sentence as optimum_sentence
from costsim.runs import api
from costsim.scenario import Scenario


@dataclass(frozen=True, kw_only=True)
class WordedPlan(CapacityPlan):
    """A ``CapacityPlan`` with its words: ``steps`` (the plan, a clause per varied field of the
    answer's option), ``sentence`` (the answer and its confidence), ``runner_up_steps`` (each
    runner-up's plan and fair total), ``growth_lines`` (how the answer moves if demand grows slower or
faster than the scenario says: a line per growth factor) and ``notes`` (what limits the answer)."""

    steps: str
    sentence: str
    runner_up_steps: tuple[str, ...]
    growth_lines: tuple[str, ...]
    notes: tuple[str, ...]


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    return plain(v) if isinstance(v, float) else str(v)


def _as_set(path: str, v: Any) -> str:
    """A field without words of its own as ``--vary`` and ``optimize``'s sentence write it: PATH=VALUE."""
    return f"{path}={_value(v)}"


def _fleet_step(base: Scenario, parts: list[str], v: Any) -> str | None:
    """A fleet part's field (``options.F.parts.K.FIELD``) as a step: its burst's wait as a hybrid's
    is ("burst to cloud-od after 4 h (F)"), the option a part runs on ("run F's part 2 on res-64");
    None for any other field."""
    o = next((x for x in base.options if x.name == parts[1]), None)
    if o is None or len(parts) != 5 or parts[2] != "parts" or not parts[3].isdigit():
        return None
    k, field, names = int(parts[3]), parts[4], facts.parts_of(o)  # only a fleet has a parts list
    if k >= len(names):
        return None
    worded = {"max_wait_h": f"burst to {names[k]} after {_value(v)} h ({o.name})",
              "wait_policy": f"burst to {names[k]} by the {_value(v)} waiting policy ({o.name})",
              "option": f"run {o.name}'s part {k + 1} on {_value(v)}"}
    return worded.get(field)


def step(base: Scenario, path: str, v: Any) -> str:
    """One varied field's value as a step of a plan: ``options.own.gpus=384`` on an owned H100
    option is "buy 384 H100", a fleet's burst wait ``options.f.parts.2.max_wait_h=4`` "burst to
    cloud-od after 4 h (f)"; a field without words of its own is PATH=VALUE, as ``--vary`` and
    ``optimize``'s sentence write it."""
    parts = path.split(".")
    options = {o.name: o for o in base.options}
    if len(parts) == 5 and parts[0] == "options" and (fleet := _fleet_step(base, parts, v)) is not None:
        return fleet
    if len(parts) != 3 or parts[0] != "options" or parts[1] not in options:
        return _as_set(path, v)
    o, field = options[parts[1]], parts[2]
    gpu, built_of = facts.gpu_type(o) or "", facts.parts_of(o)
    kind = "hybrid" if built_of else facts.pricing_label(base, o)  # owned, on_demand, reserved or spot
    worded = {
        ("owned", "gpus"): lambda: f"buy {_value(v)} {gpu} ({o.name})",
        ("reserved", "reserved_gpus"): lambda: f"reserve {_value(v)} {gpu} ({o.name})",
        ("reserved", "term_years"): lambda: f"reserve {o.name} for {_value(v)} year{'s' if v != 1 else ''}",
        ("on_demand", "max_gpus"): lambda: f"rent up to {_value(v)} {gpu} on demand ({o.name})",
        ("spot", "max_gpus"): lambda: f"rent up to {_value(v)} {gpu} on spot ({o.name})",
        ("hybrid", "max_wait_h"): lambda: f"burst to {built_of[-1]} after {_value(v)} h ({o.name})",
        ("hybrid", "wait_policy"): lambda: f"burst by the {_value(v)} waiting policy ({o.name})",
    }.get((kind, field))
    return worded() if worded is not None else _as_set(path, v)


def _tranche(path: str) -> tuple[str, int, str] | None:
    """``(option, index, field)`` of a tranche's field (``options.own.tranches.1.gpus``), else None."""
    parts = path.split(".")
    if len(parts) == 5 and parts[0] == "options" and parts[2] == "tranches" and parts[3].isdigit():
        return parts[1], int(parts[3]), parts[4]
    return None


def tranche_step(base: Scenario, option: str, k: int, varied: dict[str, Any]) -> str:
    """A tranche as a step, its varied fields (``gpus``, ``order_day``, ``payment``, a lease's
    ``lease_term_months``) over the scenario's: "order 128 H100 on day 180, leased for 36 months
    (own, tranche 2)"."""
    o = {x.name: x for x in base.options}[option]
    listed = tuple(getattr(o, "tranches", None) or ())
    written = listed[k].model_dump() if k < len(listed) else {}
    t = {**written, **varied}
    pay = {"order": "", "delivery": ", paid on delivery", "lease": ", leased"}.get(str(t.get("payment", "order")), "")
    if pay == ", leased" and t.get("lease_term_months") is not None:
        pay += f" for {_value(t['lease_term_months'])} months"
    return (f"order {_value(t.get('gpus'))} {facts.gpu_type(o) or ''} on day {_value(t.get('order_day'))}{pay} "
            f"({option}, tranche {k + 1})")


def steps(base: Scenario, values: dict[str, Any], option: str | None) -> str:
    """The plan: a step per varied field the option uses (a tranche's fields together), or the
    option as the scenario has it."""
    if not values:
        return f"{option} as the scenario has it"
    out: list[str] = []
    tranches: dict[tuple[str, int], dict[str, Any]] = {}
    for p, v in values.items():
        where = _tranche(p)
        if where is None:
            out.append(step(base, p, v))
        else:
            if (where[0], where[1]) not in tranches:
                out.append("")  # its place in the plan, filled below
            tranches.setdefault((where[0], where[1]), {"_at": len(out) - 1})[where[2]] = v
    for (option_name, k), fields in tranches.items():
        at = fields.pop("_at")
        out[at] = tranche_step(base, option_name, k, fields)
    return "; ".join(out)


def growth_lines(plan: CapacityPlan) -> tuple[str, ...]:
    """A line per growth factor: does the answer still meet the targets, at what fair total, and
    if not, the first runner-up that does ("If demand grows 40 %/yr (0.5× the scenario's): …")."""
    g = plan.growth
    if g.empty:
        return ()
    out = []
    for factor, rows in g.groupby("growth_factor", sort=True):
        rows = rows.sort_values("plan")
        rate = rows["growth_per_year"].iloc[0]
        moves = f"grows {rate * 100:.0f} %/yr" if rate >= 0 else f"falls {-rate * 100:.0f} %/yr"
        head = f"If demand {moves} ({factor:g}× the scenario's growth): "
        first = rows.iloc[0]
        if first["meets"]:
            out.append(f"{head}the plan still meets the targets, at {money(first['fair_total_usd'])} fair total.")
            continue
        other = rows[rows["meets"]]
        if other.empty:
            out.append(f"{head}the plan misses the targets, and so does every runner-up: plan again with "
                       "larger ranges.")
        else:
            r = other.iloc[0]
            out.append(f"{head}the plan misses the targets; runner-up {int(r['plan'])} meets them at "
                       f"{money(r['fair_total_usd'])} fair total.")
    return tuple(out)


def worded(plan: CapacityPlan, base: Scenario) -> WordedPlan:
    """``plan`` with its words."""
    o = plan.optimum
    plan_steps = steps(base, {p: o.values[p] for p in o.used}, o.option)
    ups = tuple(f"{steps(base, {p: r[p] for p in plan.uses[r['base_option']]}, str(r['option']))}: "
                f"{money(r['fair_total_usd'])} fair total" for _, r in plan.runner_ups.iterrows())
    head = optimum_sentence(o).replace("Cheapest meeting", "Cheapest plan meeting", 1)
    text = f"{head} Plan: {plan_steps}." if o.meets else head
    return WordedPlan(optimum=o, runner_ups=plan.runner_ups, trials=plan.trials, uses=plan.uses, growth=plan.growth, seed=plan.seed,
                      batch=plan.batch, steps=plan_steps, sentence=text, runner_up_steps=ups,
                      growth_lines=growth_lines(plan), notes=notes(o))


def capacity_plan(scenario_path: str | Path, targets, vary: list[str], **options: Any) -> WordedPlan:
    """``costsim.decisions.capacity_plan.capacity_plan`` (the same arguments), with its words."""
    plan = search(scenario_path, targets, vary, **options)
    return worded(plan, api.load_scenario(scenario_path))


__all__ = ["WordedPlan", "capacity_plan", "growth_lines", "step", "steps", "tranche_step", "worded"]
