"""An owned cluster of node groups (``OwnedOption.node_groups``): nodes of different sizes and GPU
types under one scheduler, as real clusters are (docs/scenarios.md, "Node groups").

With ``node_groups`` the option's own ``gpu_type`` and ``gpus_per_node`` are each group's, so they
are not written; ``gpus`` is the groups' total (it may be left out, as with tranches). The option
keeps ``gpu_type`` (its first group's) and ``gpus`` (the total) filled in, so code that reads an
owned option's single type sees a valid one; what the pool is made of is read from its groups
(``costsim.plan.facts.capacity_label``, ``costsim.plan.groups``).
"""

from __future__ import annotations

from typing import Annotated, Any, TypeAlias, get_args

import numpy as np
from pydantic import Field

from costsim.scenario.base import StrictModel
from costsim.scenario.bounds import MAX_GPUS, GPUType, NodeGPUs, int_bounds, span
from costsim.scenario.errors import Problem
from costsim.scenario.trace import ANY_GPU, GPU_TYPES, TraceTable

# A job's group is recorded as its part in the engine (int8; parts from 100 on are rollout pools).
MAX_NODE_GROUPS = 100
NodeCount: TypeAlias = Annotated[int, *int_bounds(ge=1, le=MAX_GPUS)]
# Option fields each group sets for itself: written beside node_groups they would be ambiguous.
PER_GROUP_FIELDS = ("gpu_type", "gpus_per_node")


class NodeGroup(StrictModel):
    """``nodes`` nodes of ``gpus_per_node`` GPUs of catalog type ``gpu_type``: one part of an owned
    pool, priced and timed as that type."""

    gpu_type: GPUType = Field(description="Catalog GPU type of the group's nodes.")
    nodes: NodeCount = Field(description=f"Nodes in the group ({span(NodeCount)}).")
    gpus_per_node: NodeGPUs = Field(description=f"GPUs per node ({span(NodeGPUs)}).")

    @property
    def gpus(self) -> int:
        """GPUs of the group: nodes × GPUs per node."""
        return self.nodes * self.gpus_per_node


def with_group_totals(data: Any) -> Any:
    """An owned option's data with ``gpu_type`` (the first group's) and ``gpus`` (the groups' total,
    unless written) filled in from its ``node_groups``; ValueError when a field each group sets for
    itself is written too, or tranches are (a pool of groups is bought at once). Data without
    groups is returned as it is."""
    if not isinstance(data, dict) or data.get("node_groups") is None:
        return data
    if data.get("tranches") is not None:
        raise ValueError("node_groups are bought at once: tranches do not apply with node_groups")
    written = [f for f in PER_GROUP_FIELDS if data.get(f) is not None]
    if written:
        raise ValueError(f"{' and '.join(written)} {'is' if len(written) == 1 else 'are'} each node group's: leave "
                         f"{'it' if len(written) == 1 else 'them'} out of an option with node_groups")
    given = data["node_groups"] if isinstance(data["node_groups"], list | tuple) else []
    groups = [g if isinstance(g, dict) else getattr(g, "__dict__", {}) for g in given]
    sizes = [g.get("nodes", 0) * g.get("gpus_per_node", 0) for g in groups
             if type(g.get("nodes")) is int and type(g.get("gpus_per_node")) is int]
    # Malformed groups are their own errors: the first valid type and the others' total stand in,
    # so no error about the option's own gpu_type or gpus comes with them.
    known = get_args(GPUType)
    filled = {**data, "gpu_type": next((g.get("gpu_type") for g in groups if g.get("gpu_type") in known), known[0])}
    filled.setdefault("gpus", max(1, sum(s for s in sizes if s > 0)))
    return filled


def groups_total_problem(gpus: int, groups: tuple[NodeGroup, ...]) -> str | None:
    """Why ``gpus`` written beside ``groups`` is wrong (it is not their total), None when it is."""
    total = sum(g.gpus for g in groups)
    if gpus != total:
        return f"gpus ({gpus}) is not the node groups' total ({total}): leave gpus out or make it their sum"
    return None


def option_gpu_types(opt: Any, by_name: dict[str, Any]) -> tuple[str, ...]:
    """Every GPU type a job of ``opt`` may be given: an owned option's groups' (its one type
    without), a cloud option's, each part's of a hybrid or fleet (their routers do not choose
    parts by GPU type, so a job there may run on any part)."""
    groups = getattr(opt, "node_groups", None)
    if groups is not None:
        return tuple(dict.fromkeys(g.gpu_type for g in groups))
    if opt.kind in ("owned", "cloud"):
        return (opt.gpu_type,)
    names = (opt.base, opt.burst) if opt.kind == "hybrid" else opt.part_names()
    return tuple(dict.fromkeys(t for n in names if n in by_name for t in option_gpu_types(by_name[n], by_name)))


def refused_gpu_type(gpu_type: str, options: tuple[Any, ...]) -> tuple[str, str] | None:
    """(option name, what it has, in words) of the first option that cannot always give a job
    asking for ``gpu_type`` that type: an option of node groups with no group of it, any other
    option with GPUs of another type (a single-type option, or a part of a hybrid or fleet); None
    when every option can."""
    by_name = {o.name: o for o in options}
    grouped = {o.name for o in options if getattr(o, "node_groups", None) is not None}
    # A hybrid or fleet built on a pool of node groups is refused as such (``grouped_use_problems``).
    built_on_groups = {o.name for o in options if o.kind in ("hybrid", "fleet")
                       and grouped & set((o.base, o.burst) if o.kind == "hybrid" else o.part_names())}
    for opt in options:
        types = option_gpu_types(opt, by_name)
        if opt.name in built_on_groups or ((gpu_type in types) if opt.name in grouped else set(types) <= {gpu_type}):
            continue
        return opt.name, (f"node groups of {', '.join(types)} only" if opt.name in grouped else
                          f"{' and '.join(types)} GPUs" + ("" if opt.kind in ("owned", "cloud") else " (in its parts)"))
    return None


def gpu_type_problems(classes: dict[str, tuple[Any, ...]], options: tuple[Any, ...]) -> list[tuple[tuple, str]]:
    """(location, why) of each class asking for a GPU type (``gpu_type``) that an option cannot
    always give it (``refused_gpu_type``), one option named per class: the fix is the class's type
    or that option. ``classes``: the workload's field name (``classes``, ``job_classes``) to its
    classes."""
    out = []
    for field, group in classes.items():
        for k, cls in enumerate(group):
            refused = refused_gpu_type(cls.gpu_type, options) if cls.gpu_type is not None else None
            if refused is not None:
                out.append((("workload", field, k, "gpu_type"), (
                    f"class {cls.name!r} asks for {cls.gpu_type} GPUs but option {refused[0]!r} has {refused[1]}: its "
                    "jobs run only on the GPU type they ask for (leave gpu_type out for any)")))
    return out


def trace_gpu_type_problems(trace: TraceTable, options: tuple[Any, ...]) -> list[Problem]:
    """Trace rows asking for a GPU type (their ``gpu_type`` cell) that an option cannot always give
    them (``refused_gpu_type``, the rule for classes): one problem per such type, at the CSV line
    (header = line 1) of its first job, counting the others."""
    out = []
    codes = trace.gpu_type
    for code in np.unique(codes[codes != ANY_GPU]) if len(codes) else ():
        gpu_type = GPU_TYPES[int(code)]
        refused = refused_gpu_type(gpu_type, options)
        if refused is None:
            continue
        rows = np.flatnonzero(codes == code)
        others = f" ({len(rows) - 1} more such jobs)" if len(rows) > 1 else ""
        out.append(Problem(("gpu_type",), (
            f"job {trace.job_id[rows[0]]!r} asks for {gpu_type} GPUs but option {refused[0]!r} has {refused[1]}: "
            f"trace jobs run only on the GPU type they ask for (leave the cell empty for any){others}"),
            int(rows[0]) + 2))
    return out


def grouped_use_problems(options: tuple[Any, ...], serving: object) -> list[tuple[tuple, str]]:
    """(location, why) of each use of an option of node groups the engine does not run: serving
    beside it, as a hybrid's base (a fleet's part: ``fleet.part_problems``)."""
    grouped = {o.name for o in options if getattr(o, "node_groups", None) is not None}
    out = []
    for i, opt in enumerate(options):
        if opt.name in grouped and serving is not None:
            out.append((("options", i, "owned", "node_groups"), (
                "serving does not run on a pool of node groups: leave serving out of this scenario or give "
                f"option {opt.name!r} one gpu_type and gpus")))
        if opt.kind == "hybrid" and opt.base in grouped:
            out.append((("options", i, "hybrid", "base"), (
                f"option {opt.base!r} has node_groups; a hybrid's base is one gpu_type and gpus (a pool of node "
                "groups is not burst from)")))
    return out
