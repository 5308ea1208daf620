"""One rule for the name of a resized option, used by every surface that resizes one (a sweep's
``options.X.gpus`` values, the optimiser's candidates, the dashboard's GPU knob).

An option whose name ends in its GPU count follows its size: ``own-256`` set to 320 GPUs is
``own-320``, ``reserved-256`` committed to 384 GPUs is ``reserved-384``. A name that does not end
in the option's size (``own-256`` holding 128 GPUs, ``reserved-256-3y``, ``lab``) is kept, and so
is one whose new name another option already has: names stay unique. Every reference to a renamed
option follows it (a hybrid's ``base``/``burst``, a ``rollout_pool``, a class's
``scaling.reference_option``), so the renamed scenario validates as the edited one would.

An option's size is its GPUs: ``gpus`` of an owned option, ``reserved_gpus`` of a reserved cloud
option, ``max_gpus`` (its quota) of an on-demand or spot one; a hybrid has none of its own.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from costsim.scenario.errors import ScenarioError

T = TypeVar("T")

MAX_NAME_CHARS = 80  # the schema's limit on an option name (base.Name)
_SIZE_FIELD = {"owned": "gpus", "reserved": "reserved_gpus", "on_demand": "max_gpus", "spot": "max_gpus"}


def sized_name(name: str, old_gpus: int, new_gpus: int) -> str:
    """``name`` with a trailing GPU count equal to ``old_gpus`` replaced by ``new_gpus``
    (``own-256``, 256 -> 320: ``own-320``; ``h100x256`` -> ``h100x512``); any other name, or a
    new name longer than the schema allows, unchanged."""
    m = re.fullmatch(r"(.*\D)?(\d+)", name)
    if m is None or int(m.group(2)) != old_gpus or new_gpus == old_gpus:
        return name
    new = f"{m.group(1) or ''}{new_gpus}"
    return new if len(new) <= MAX_NAME_CHARS else name


def size_field(option: Mapping[str, Any]) -> str | None:
    """The field holding an option's size (a scenario file's option mapping), None for a hybrid."""
    if option.get("kind") == "owned":
        return "gpus"
    if option.get("kind") == "cloud":
        return _SIZE_FIELD.get(option.get("pricing") or "on_demand")
    return None


def option_size(option: Mapping[str, Any]) -> int | None:
    """An option's size in GPUs (see the module), None when it has none (a hybrid, an unlimited
    on-demand option) or the value is no GPU count (not a whole number >= 1: the schema refuses
    it, and its message names the option as written)."""
    field = size_field(option)
    value = option.get(field) if field is not None else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def resize_renames(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, str]:
    """Old name -> new name for the options of ``after`` (scenario data after an edit) whose size
    differs from the same option in ``before`` (matched by position, with the same name) and whose
    name follows the rule; a new name already taken (by any option, or by an earlier rename) is
    left out, so the result keeps names unique."""
    old_options = list(before.get("options") or ())
    new_options = list(after.get("options") or ())
    taken = {o.get("name") for o in new_options if isinstance(o, Mapping)}
    done: dict[str, str] = {}
    for was, now in zip(old_options, new_options, strict=False):
        if not (isinstance(was, Mapping) and isinstance(now, Mapping)) or was.get("name") != now.get("name"):
            continue  # an option the edit renamed (or replaced) itself keeps what the edit gave it
        name, old, new = now.get("name"), option_size(was), option_size(now)
        if not isinstance(name, str) or old is None or new is None:
            continue
        renamed = sized_name(name, old, new)
        if renamed != name and renamed not in taken:
            taken.discard(name)
            taken.add(renamed)
            done[name] = renamed
    return done


def rename_options(data: Mapping[str, Any], renames: Mapping[str, str]) -> dict[str, Any]:
    """A copy of scenario ``data`` with options renamed by ``renames`` (old -> new) and every
    reference to them following: hybrids' ``base`` and ``burst``, fleets' ``parts``, options' ``rollout_pool`` and
    RL classes' ``scaling.reference_option``."""
    out = copy.deepcopy(dict(data))
    if not renames:
        return out
    for opt in out.get("options") or ():
        if not isinstance(opt, dict):
            continue
        for ref in ("name", "base", "burst", "rollout_pool"):
            if isinstance(opt.get(ref), str) and opt[ref] in renames:
                opt[ref] = renames[opt[ref]]
        fleet_parts = opt.get("parts")
        for part in fleet_parts if isinstance(fleet_parts, list) else ():  # a fleet's parts
            if isinstance(part, dict) and isinstance(part.get("option"), str) and part["option"] in renames:
                part["option"] = renames[part["option"]]
    workload = out.get("workload")
    for cls in (workload.get("classes") or ()) if isinstance(workload, dict) else ():
        scaling = cls.get("scaling") if isinstance(cls, dict) else None
        if isinstance(scaling, dict) and scaling.get("reference_option") in renames:
            scaling["reference_option"] = renames[scaling["reference_option"]]
    return out


def apply_resize(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """``after`` (scenario data edited from ``before``) with every resized option renamed by the
    rule and its references following, and the renames done (old name -> new name)."""
    renames = resize_renames(before, after)
    return rename_options(after, renames), renames


def build_resized(before: Mapping[str, Any], after: Mapping[str, Any],
                  build: Callable[[dict[str, Any]], T]) -> tuple[T, dict[str, Any]]:
    """``build`` (a validating constructor, raising ScenarioError) of ``after`` renamed by
    ``apply_resize``, and the renamed data. A refused variant is reported as the user wrote it:
    ``build`` of ``after`` itself is raised (own-16 at 12 GPUs refused as ``own-16``, not as an
    ``own-12`` nobody wrote); its problems' locations index the same options, so the caller names
    them from ``after``. Only when ``after`` as written builds (the rename alone is refused, not
    expected) is the renamed one's error raised."""
    renamed, renames = apply_resize(before, after)
    try:
        return build(renamed), renamed
    except ScenarioError as err:
        if not renames:
            raise
        build(copy.deepcopy(dict(after)))  # raises the problems as written
        raise err from None


__all__ = ["apply_resize", "build_resized", "option_size", "rename_options", "resize_renames", "size_field", "sized_name"]
