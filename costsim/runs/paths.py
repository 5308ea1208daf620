"""Dotted paths into a scenario's plain data, as sweeps name the fields they vary.

``economics.electricity_usd_per_kwh``, ``options.own-256.gpus``, ``workload.classes.mid-32b.iterations.mean``:
each part is a field name, and in a list (``options``, ``workload.classes``) an item's ``name``
(names may contain dots: the longest name that matches wins) or, failing that, its index. A path
is resolved against the data AND the schema (``costsim.scenario.Scenario``), so a field the data
leaves null (``serving``, ``economics.pue``) can be set, and a misspelt one is refused with the
fields that exist. Resolution gives a concrete location (indices, not names) so that a sweep
setting an option's name and its size at once cannot lose track of the option.
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from costsim.scenario import Problem, Scenario, ScenarioError
from costsim.scenario.errors import Loc

_LIST_ITEMS = {("options",): "option", ("workload", "classes"): "class"}
"""What a list's items are called in messages; other lists (none today) say ``item``."""


class PathError(ValueError):
    """A dotted path that does not name a field of the scenario (message only: callers locate it)."""


def _unwrap(annotation: Any) -> list[Any]:
    """The alternatives of an annotation: Annotated and Optional/Union taken apart."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _unwrap(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return [alt for arg in get_args(annotation) for alt in _unwrap(arg)]
    return [annotation]


def _models(annotation: Any, node: Any) -> list[type[BaseModel]]:
    """The schema models ``node`` may be; of a discriminated union, the one its ``kind`` names."""
    found = [a for a in _unwrap(annotation) if isinstance(a, type) and issubclass(a, BaseModel)]
    if isinstance(node, dict) and "kind" in node and len(found) > 1:
        kinded = [m for m in found if "kind" in m.model_fields and m.model_fields["kind"].default == node["kind"]]
        return kinded or found
    return found


def _element(annotation: Any) -> Any:
    """The item type of a ``tuple[X, ...]`` field (None when the annotation is not a sequence)."""
    for alt in _unwrap(annotation):
        if get_origin(alt) in (tuple, list):
            return get_args(alt)[0]
    return None


def scalar_kinds(annotation: Any) -> set[type]:
    """The scalar types a field accepts (``float``, ``int``, ``str``, ``bool``; Literal values by type)."""
    kinds: set[type] = set()
    for alt in _unwrap(annotation):
        if get_origin(alt) is Literal:
            kinds |= {type(v) for v in get_args(alt)}
        elif isinstance(alt, type) and not issubclass(alt, BaseModel) and alt is not type(None):
            kinds.add(alt)
    return kinds


def _shown(names: list[str], most: int = 8) -> str:
    return ", ".join(names[:most]) + (", ..." if len(names) > most else "")


def _item(items: list, parts: list[str], i: int, loc: Loc) -> tuple[int, int]:
    """The index of the list item ``parts[i:]`` starts with, and how many parts its name used."""
    names = [it.get("name") if isinstance(it, dict) else None for it in items]
    for j in range(len(parts), i, -1):  # longest first: a name may contain dots
        name = ".".join(parts[i:j])
        if name in names:
            return names.index(name), j - i
    part = parts[i]
    if part.isascii() and part.isdigit() and int(part) < len(items):
        return int(part), 1
    what = _LIST_ITEMS.get(tuple(p for p in loc if isinstance(p, str)), "item")
    plural = "classes" if what == "class" else f"{what}s"
    known = [n for n in names if isinstance(n, str)]
    listed = f" ({plural}: {_shown(known)})" if known else f" (the list has {len(items)} {plural})"
    raise PathError(f"no {what} named {part!r}{listed}")


def resolve(data: dict, path: str) -> tuple[Loc, Any]:
    """The concrete location (indices for list items) ``path`` names in scenario ``data``, and
    the schema annotation of its last field (None where the schema does not say).

    Raises PathError: a path that is not dotted names, an unknown field, list item or index, or a
    path that goes through a value that is neither a mapping nor a list (``iterations: 300``).
    """
    if not isinstance(path, str) or not path or any(not p.strip() or p != p.strip() for p in path.split(".")):
        raise PathError(f"{path!r} is not a dotted path such as options.own-256.gpus")
    parts = path.split(".")
    node: Any = data
    annotation: Any = Scenario
    loc: list[str | int] = []
    i = 0
    while i < len(parts):
        here = ".".join(parts[:i]) or "the scenario"
        if isinstance(node, list):
            index, used = _item(node, parts, i, tuple(loc))
            loc.append(index)
            node, annotation = node[index], _element(annotation)
            i += used
            continue
        models = _models(annotation, node)
        if not (isinstance(node, dict) or (node is None and models)):
            raise PathError(f"{here} is {node!r}, not a mapping: set it whole (e.g. grid: {{{here}: [...]}})")
        part = parts[i]
        owner = next((m for m in models if part in m.model_fields), None)
        if owner is not None:
            annotation = owner.model_fields[part].annotation
        elif isinstance(node, dict) and part in node and not models:
            annotation = None  # plain data the schema does not describe
        else:
            fields = sorted({f for m in models for f in m.model_fields}) or sorted(node or {})
            raise PathError(f"no field {part!r} in {here} (fields: {_shown(fields, 12)})")
        loc.append(part)
        node = node.get(part) if isinstance(node, dict) else None
        i += 1
    return tuple(loc), annotation


def set_loc(data: dict, loc: Loc, value: Any) -> None:
    """Set ``value`` at a location ``resolve`` gave, creating the mappings a null field stands for."""
    node: Any = data
    for key in loc[:-1]:
        if isinstance(node, dict) and node.get(key) is None:
            node[key] = {}
        node = node[key]
    node[loc[-1]] = value


def named(data: Any, loc: Loc) -> str:
    """A location as a user writes it: list items by their name (``options.own-384.gpus``)."""
    parts, node = [], data
    for key in loc:
        item = None
        if isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
            item = node[key]
            parts.append(item["name"] if isinstance(item, dict) and isinstance(item.get("name"), str) else str(key))
            node = item
            continue
        parts.append(str(key))
        node = node.get(key) if isinstance(node, dict) else None
    return ".".join(parts)


def set_path(data: dict, path: str, value: Any) -> None:
    """Set the field ``path`` names in scenario ``data`` (a ``Scenario.model_dump(mode="json")``),
    in place. Raises ScenarioError (never KeyError) naming the path and what is wrong."""
    try:
        loc, _ = resolve(data, path)
    except PathError as exc:
        raise ScenarioError("set_path()", [Problem((str(path),), str(exc))]) from None
    set_loc(data, loc, value)


__all__ = ["PathError", "named", "resolve", "scalar_kinds", "set_loc", "set_path"]
