"""Resizing an owned option bought in tranches: a new ``gpus`` (a sweep's ``options.X.gpus``, the
optimiser's candidates, the dashboard's GPU knob) scales every tranche in proportion, in whole
nodes, so the plan keeps its shape (when each purchase is ordered and how it is paid) at the new
size.

The rule (``scaled_nodes``): tranche k of nₖ nodes out of N gets nₖ × N′ / N of the N′ new nodes,
rounded down, at least one node; the nodes left over go one each to the tranches with the largest
remainders (the earlier first on a tie), and nodes over (where the one-node floor took more) come
off the largest tranches. So the tranches always add up to the new size. A new size that is not a
whole number of nodes, or fewer nodes than there are tranches, is left as written: the scenario's
own check then names it (its ``gpus`` is not the tranches' total).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from typing import Any

from costsim.catalog.load import default_catalog
from costsim.plan import facts


def scaled_nodes(nodes: Sequence[int], new_total: int) -> list[int]:
    """Tranche sizes in nodes (``nodes``, each ≥ 1) scaled to add up to ``new_total`` nodes (≥ the
    number of tranches), by the module's rule."""
    old_total = sum(nodes)
    shares = [n * new_total / old_total for n in nodes]
    out = [max(1, math.floor(s)) for s in shares]
    by_remainder = sorted(range(len(nodes)), key=lambda k: (-(shares[k] - math.floor(shares[k])), k))
    k = 0
    while sum(out) < new_total:
        out[by_remainder[k % len(out)]] += 1
        k += 1
    while sum(out) > new_total:  # a one-node floor took more than its share: the largest give it back
        largest = max(range(len(out)), key=lambda j: (out[j], -j))
        out[largest] -= 1
    return out


def node_gpus(option: Mapping[str, Any]) -> int:
    """GPUs per node of an owned option as scenario data: its ``gpus_per_node``, else its catalog GPU's."""
    given = option.get("gpus_per_node")
    if isinstance(given, int) and given >= 1:
        return given
    gpu = default_catalog().gpus.get(option.get("gpu_type"))  # type: ignore[arg-type]
    return gpu.gpus_per_node if gpu is not None else 1


def _total(option: Mapping[str, Any]) -> int | None:
    """An owned option's GPUs as data: ``gpus``, or its tranches' total when left out (a dump)."""
    gpus = option.get("gpus")
    if isinstance(gpus, int) and not isinstance(gpus, bool):
        return gpus
    sizes = [t.get("gpus") for t in option.get("tranches") or () if isinstance(t, Mapping)]
    whole = [g for g in sizes if isinstance(g, int) and not isinstance(g, bool) and g >= 1]
    return sum(whole) if whole and len(whole) == len(sizes) else None


def _sizes(tranches: Any) -> list[Any] | None:
    """Each tranche's ``gpus`` as written (None where a tranche is not a mapping): the part of the
    tranches a resize may change."""
    if not isinstance(tranches, list | tuple):
        return None
    return [t.get("gpus") if isinstance(t, Mapping) else None for t in tranches]


def scale_tranches(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """``after`` (scenario data edited from ``before``) with the tranches of each owned option whose
    ``gpus`` the edit changed, and whose tranches' sizes it left as they were, scaled to the new size
    (``scaled_nodes``), keeping whatever else it set on them (order days, payments, lease terms: what
    ``costsim plan`` varies beside the size). An edit that sets a tranche's ``gpus`` keeps the
    tranches as written. A node size changed in the same edit: each tranche's nodes are counted in
    the old node's GPUs, then scaled to the new total in the new node's."""
    out = copy.deepcopy(dict(after))
    old_options = list(before.get("options") or ())
    for was, now in zip(old_options, out.get("options") or (), strict=False):
        if not (isinstance(was, Mapping) and isinstance(now, dict) and facts.is_owned(now)):
            continue
        tranches = now.get("tranches")
        if not tranches or _sizes(tranches) != _sizes(was.get("tranches")) or was.get("name") != now.get("name"):
            continue
        old, new = _total(was), now.get("gpus")
        if old is None or not isinstance(new, int) or isinstance(new, bool) or new == old:
            continue
        gpn, old_gpn = node_gpus(now), node_gpus(was)
        old_nodes = [t.get("gpus", 0) // old_gpn if isinstance(t, Mapping) else 0 for t in tranches]
        if new % gpn or new // gpn < len(tranches) or min(old_nodes) < 1:
            continue  # left as written: the scenario's check names the size
        sizes = scaled_nodes(old_nodes, new // gpn)
        now["tranches"] = [{**t, "gpus": n * gpn} for t, n in zip(tranches, sizes, strict=True)]
    return out


__all__ = ["node_gpus", "scale_tranches", "scaled_nodes"]
