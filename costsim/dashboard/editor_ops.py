"""The scenario editor's operations on plain scenario data (``scenario.model_dump(mode="json")``):
add, remove, duplicate and rename options and workload classes, and validation with each problem
placed on the field that caused it. Pure functions on dicts (each returns a new dict); no Streamlit.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path

import costsim
from costsim.dashboard.editor_schema import Loc, fields, model
from costsim.errors import CostsimError
from costsim.plan import facts
from costsim.scenario import CloudOption, FleetOption, HybridOption, OwnedOption
from costsim.scenario.classes import RLClass

KINDS = facts.CHOICES
"""What "add option" offers: an owned cluster, cloud capacity by pricing, or a hybrid."""

NEW_OPTION_GPUS = 256  # a new owned cluster or reservation: the shipped baseline's size
NEW_QUEUE = {"scheduler": "backfill", "placement": "best_fit"}
"""How a new owned cluster or reservation queues when the scenario has no owned or reserved option
to match: EASY backfill (every shipped reservation and the shipped baseline's clusters use it, as
SLURM schedules by default), best-fit placement (the schema's default, which every shipped option
keeps). The schema's own default scheduler stays fifo: scenarios that leave it out keep their
results."""


def unique_name(wanted: str, taken: set[str]) -> str:
    """``wanted``, or ``wanted-2``, ``wanted-3``, ... : the first not in ``taken``."""
    if wanted not in taken:
        return wanted
    n = 2
    while f"{wanted}-{n}" in taken:
        n += 1
    return f"{wanted}-{n}"


def _names(items: list[dict]) -> set[str]:
    return {str(x.get("name")) for x in items}


def _gpu_type(data: dict) -> str:
    """The GPU type of the scenario's first option with one (new options match it), else H100."""
    return next((o["gpu_type"] for o in data.get("options", []) if o.get("gpu_type")), "H100")


def queue_settings(data: dict) -> dict[str, str]:
    """``scheduler`` and ``placement`` for a new owned or reserved option of ``data``: those its
    owned and reserved options all share (a new option is compared like with like: one added to
    a FIFO replay queues FIFO), else ``NEW_QUEUE``. A reservation's null means fifo and best_fit."""
    queued = [o for o in data.get("options", []) if facts.can_be_base(o)]
    out = {}
    for field, null in (("scheduler", "fifo"), ("placement", "best_fit")):
        seen = {o.get(field) or null for o in queued}
        out[field] = seen.pop() if len(seen) == 1 else NEW_QUEUE[field]
    return out


def _dump(cls, raw: dict) -> dict:
    """``raw`` with every default written out, as ``model_dump(mode="json")`` gives it."""
    return cls.model_validate(raw).model_dump(mode="json")


def new_option(data: dict, kind: str) -> tuple[dict, list[dict]]:
    """A valid new option of ``kind`` (one of ``KINDS``) for ``data``, and any options a hybrid
    or fleet needs that ``data`` lacks (an owned base, an on-demand burst), added before it. Every field
    not named here takes the schema's default; an owned or reserved one queues as
    ``queue_settings`` says."""
    options = data.get("options", [])
    taken = _names(options)
    gpu = _gpu_type(data)
    shape = facts.shape_of(kind)  # ValueError for a word that is no kind
    if facts.is_owned(shape):
        return _dump(OwnedOption, {"name": unique_name("owned", taken), "gpu_type": gpu, "gpus": NEW_OPTION_GPUS,
                                   **queue_settings(data)}), []
    if facts.pay_as_you_go(shape):
        name = unique_name(kind.replace("_", "-"), taken)
        return _dump(CloudOption, {"name": name, "gpu_type": gpu, **shape}), []
    if facts.is_reserved(shape):
        # A horizon beyond the one-year term needs renew (a commitment never renews silently).
        renew = float(data.get("horizon_days", 0)) > 365
        return _dump(CloudOption, {"name": unique_name("reserved", taken), "gpu_type": gpu, **shape,
                                   "reserved_gpus": NEW_OPTION_GPUS, "renew": renew, **queue_settings(data)}), []
    extra: list[dict] = []  # a hybrid, on the scenario's first possible base and burst
    base = next((o["name"] for o in options if facts.can_be_base(o)), None)
    if base is None:
        opt, _ = new_option({**data, "options": options + extra}, "owned")
        extra.append(opt)
        base = opt["name"]
    burst = next((o["name"] for o in options if facts.pay_as_you_go(o)), None)
    if burst is None:
        opt, _ = new_option({**data, "options": options + extra}, "on_demand")
        extra.append(opt)
        burst = opt["name"]
    name = unique_name(kind, taken | _names(extra))
    if facts.is_fleet(shape):  # a fleet of the same two: more pools are added to its parts by hand
        return _dump(FleetOption, {"name": name, "parts": [{"option": base}, {"option": burst}]}), extra
    return _dump(HybridOption, {"name": name, "base": base, "burst": burst}), extra


def add_option(data: dict, kind: str) -> tuple[dict, int]:
    """``data`` with a new option of ``kind`` appended; and the new option's index."""
    out = copy.deepcopy(data)
    opt, extra = new_option(out, kind)
    out["options"] = [*out.get("options", []), *extra, opt]
    return out, len(out["options"]) - 1


def duplicate_option(data: dict, i: int) -> tuple[dict, int]:
    """``data`` with a copy of option ``i`` (named ``<name>-copy``) right after it; the copy's index."""
    out = copy.deepcopy(data)
    opts = out["options"]
    dup = copy.deepcopy(opts[i])
    dup["name"] = unique_name(f"{opts[i]['name']}-copy", _names(opts))
    opts.insert(i + 1, dup)
    return out, i + 1


def dependents(data: dict, i: int) -> list[str]:
    """Names of the hybrids built on option ``i`` (as base or burst)."""
    name = data["options"][i].get("name")
    return [o["name"] for o in data["options"] if name in facts.parts_of(o)]


def remove_option(data: dict, i: int) -> dict:
    """``data`` without option ``i`` and without the hybrids built on it (a hybrid cannot run
    without its base or burst; ``dependents`` names them so the editor can say so first)."""
    out = copy.deepcopy(data)
    gone = {out["options"][i]["name"], *dependents(out, i)}
    out["options"] = [o for j, o in enumerate(out["options"]) if j != i and o.get("name") not in gone]
    return out


def rename_option(data: dict, i: int, new: str) -> dict:
    """``data`` with option ``i`` called ``new``, every hybrid's base or burst that named it following."""
    out = copy.deepcopy(data)
    old = out["options"][i]["name"]
    out["options"][i]["name"] = new
    for o in out["options"]:
        facts.rename_parts(o, old, new)
    return out


def new_class(data: dict) -> dict:
    """A valid new RL class: one 8-GPU job of a 7B policy a day, 100 iterations."""
    workload = data.get("workload", {})
    taken = _names(workload.get("classes", [])) | _names(workload.get("job_classes", []))  # one namespace
    return _dump(RLClass, {"name": unique_name("class", taken), "arrivals_per_day": 1.0, "gpus": 8,
                           "iterations": 100, "model_params_b": 7.0})


def add_class(data: dict) -> tuple[dict, int]:
    out = copy.deepcopy(data)
    classes = out.setdefault("workload", {}).setdefault("classes", [])
    classes.append(new_class(out))
    return out, len(classes) - 1


def duplicate_class(data: dict, k: int) -> tuple[dict, int]:
    out = copy.deepcopy(data)
    classes = out["workload"]["classes"]
    dup = copy.deepcopy(classes[k])
    dup["name"] = unique_name(f"{classes[k]['name']}-copy", _names(classes))
    classes.insert(k + 1, dup)
    return out, k + 1


def remove_class(data: dict, k: int) -> dict:
    out = copy.deepcopy(data)
    del out["workload"]["classes"][k]
    return out


def rename_class(data: dict, k: int, new: str) -> dict:
    out = copy.deepcopy(data)
    out["workload"]["classes"][k]["name"] = new
    return out


def validate(data: dict, base_dir: Path | str,
             load: Callable[[dict], costsim.Scenario] | None = None) -> tuple[costsim.Scenario | None, dict[Loc, str]]:
    """The checked Scenario (schema, catalog, trace, fit: ``costsim.scenario_from_data``) or None,
    and every problem as field path -> message (several at one path joined by "; "). ``load``:
    checks the data in place of ``costsim.scenario_from_data`` (the dashboard's limits which
    files may be read: ``uploads.dashboard_scenario``)."""
    try:
        if load is not None:
            return load(copy.deepcopy(data)), {}
        return costsim.scenario_from_data(copy.deepcopy(data), "scenario", base_dir), {}
    except CostsimError as err:
        errors: dict[Loc, str] = {}
        for p in err.problems:
            errors[p.loc] = f"{errors[p.loc]}; {p.message}" if p.loc in errors else p.message
        return None, errors


def model_at(data: dict, loc: Loc) -> str | None:
    """The schema model of the object at ``loc`` (``Scenario``, ``OwnedOption``, ``Rollout``...),
    None where ``loc`` is not an object of ``data``."""
    name: str | None = "Scenario"
    node: object = data
    i = 0
    while i < len(loc):
        part = loc[i]
        if name is None or not isinstance(node, dict) or not isinstance(part, str):
            return None
        spec = model(name)["properties"].get(part)
        if spec is None:
            return None
        node = node.get(part)
        if (name, part) in (("Scenario", "options"), ("Workload", "classes")):
            j = loc[i + 1] if i + 1 < len(loc) else None
            if not isinstance(j, int) or not isinstance(node, list) or not 0 <= j < len(node):
                return None  # the list itself
            node = node[j]
            kind = node.get("kind") if isinstance(node, dict) else None
            if part == "classes":
                name = "RLClass"
            else:  # an option without a kind has no model
                name = _OPTION_MODELS.get(kind) if kind is not None else None
            i += 2
            continue
        refs = [b["$ref"].rsplit("/", 1)[-1] for b in (spec.get("anyOf") or [spec]) if "$ref" in b]
        name = refs[0] if refs and isinstance(node, dict) else None
        i += 1
    return name


_OPTION_MODELS = {"owned": "OwnedOption", "cloud": "CloudOption", "hybrid": "HybridOption", "fleet": "FleetOption"}


def field_mentioned(data: dict, loc: Loc, message: str) -> str | None:
    """For a problem located at an object (a model validator's complaint), the first of the
    object's fields its message names: "gpus (250) must be a whole number..." -> ``gpus``."""
    name = model_at(data, loc)
    if name is None:
        return None
    found = [(m.start(), f.name) for f in fields(name)
             for m in [re.search(rf"(?<![\w.]){re.escape(f.name)}(?![\w])", message)] if m]
    return min(found)[1] if found else None


def place(problem_loc: Loc, message: str, data: dict, shown: set[Loc]) -> Loc:
    """The field (or object) the editor shows a problem under: the problem's own field if it has a
    widget; for a problem located at an object, the object's field its message names; else the
    nearest enclosing shown object; else ()."""
    dup = re.match(r"option name '(.+)' is used twice", message)
    if dup and problem_loc == ():
        same = [i for i, o in enumerate(data.get("options", [])) if o.get("name") == dup.group(1)]
        shown_same = [i for i in same if ("options", i, "name") in shown]
        if shown_same:
            return ("options", shown_same[-1], "name")
        if ("options",) in shown:
            return ("options",)
    for n in range(len(problem_loc), -1, -1):
        prefix = problem_loc[:n]
        named = field_mentioned(data, prefix, message)
        if named is not None and (*prefix, named) in shown:
            return (*prefix, named)
        if prefix in shown:
            return prefix
    return ()
