"""The catalog (``costsim/catalog/catalog.yaml``): GPU specs, prices and economics, each sourced.

Plans (a scenario's options in numbers) are built from it by ``costsim.plan.resolve``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from costsim.scenario import Problem, ScenarioError

PRICINGS = ("on_demand", "reserved_1y", "reserved_3y", "spot")


@dataclass(frozen=True)
class Entry:
    """One catalog value with its provenance."""

    path: str
    value: float
    source: str
    date: str


@dataclass(frozen=True)
class GPUSpec:
    """One GPU type. Units in the names: TFLOP/s, TB/s, GB/s, kW, USD."""

    name: str
    description: str
    memory_gb: float
    bf16_dense_tflops: float
    hbm_tb_s: float
    gpus_per_node: int  # the node: the unit a scheduler allocates and a failure takes out
    nvlink_domain_gpus: int  # GPUs one NVLink domain joins: the node, or an NVL72 rack of 18 nodes
    nvlink_busbw_gb_s: float
    nics_per_node: int
    nic_busbw_gb_s: float
    nic_gb_s_per_gpu: float  # bus bandwidth one GPU reaches across nodes over its own NIC (its share of one)
    node_max_kw: float
    node_idle_kw: float
    server_price_usd: float
    price: dict[str, dict[str, float]]  # tier -> pricing -> USD per GPU-hour
    fp8_dense_tflops: float = 0.0  # dense FP8 TFLOP/s; 0: no FP8 tensor cores (FP8 computes at the BF16 rate)


@dataclass(frozen=True)
class InputRange:
    """An uncertain input's plausible low and high with their provenance (the sensitivity tornado,
    ``costsim.decisions.tornado``). ``scale``: low and high multiply the scenario's own value
    (``unit`` then starts with "×"); otherwise they are the value itself, in ``unit``.
    ``applies_to``: the scenario fields the input sets, in words."""

    name: str
    low: float
    high: float
    scale: bool
    unit: str
    applies_to: str
    source: str
    date: str


@dataclass(frozen=True)
class Catalog:
    version: str
    economics: dict[str, float]
    reliability: dict[str, float]
    rl: dict[str, float]
    fabrics: dict[str, dict[str, float]]
    billing: dict[str, dict[str, float]]
    gpus: dict[str, GPUSpec]
    entries: tuple[Entry, ...]  # every sourced leaf, for `costsim catalog`
    ranges: dict[str, InputRange] = field(default_factory=dict)  # name -> sensitivity range


def _ranges(raw: dict | None, source: str) -> dict[str, InputRange]:
    """The catalog's ``ranges:`` section, checked: low < high, both finite, a source and a date."""
    out = {}
    for name, r in (raw or {}).items():
        try:
            item = InputRange(name=str(name), low=float(r["low"]), high=float(r["high"]), scale=bool(r["scale"]),
                              unit=str(r.get("unit", "")), applies_to=str(r["applies_to"]), source=str(r["source"]),
                              date=str(r["date"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ScenarioError(source, [Problem(("ranges", str(name)), f"needs low, high, scale, applies_to, source "
                                                 f"and date ({exc!r})")]) from None
        if not (math.isfinite(item.low) and math.isfinite(item.high) and item.low < item.high):
            raise ScenarioError(source, [Problem(("ranges", str(name)), f"low ({item.low:g}) must be less than high "
                                                 f"({item.high:g}), both finite")])
        if not (item.source.strip() and item.date.strip()):
            raise ScenarioError(source, [Problem(("ranges", str(name)), "needs a source and a date")])
        out[item.name] = item
    return out


def _leaves(node: Any, path: str, out: list[Entry]) -> Any:
    """Replace {value, source, date} leaves by their value, collecting Entries."""
    if isinstance(node, dict) and "value" in node and "source" in node:
        out.append(Entry(path, node["value"], str(node["source"]), str(node.get("date", ""))))
        return node["value"]
    if isinstance(node, dict):
        return {k: _leaves(v, f"{path}.{k}" if path else str(k), out) for k, v in node.items()}
    return node


def load_catalog(path: Path | str | None = None) -> Catalog:
    """Read a catalog file (default: the one shipped with costsim)."""
    # ruamel.yaml's C parser (ruamel.yaml.clib) when installed: ten times the pure parser's speed,
    # and the same values (tests/catalog/test_catalog_parser.py); text a user types stays pure.
    yaml = YAML(typ="safe")
    if path is None:
        raw = yaml.load(resources.files("costsim.catalog").joinpath("catalog.yaml").read_text(encoding="utf-8"))
    else:
        raw = yaml.load(Path(path))  # read from the path, so a syntax error names the file and line
    entries: list[Entry] = []
    data = _leaves(raw, "", entries)
    gpus = {}
    for name, g in data["gpus"].items():
        fields = {k: v for k, v in g.items() if k != "price"}
        gpus[name] = GPUSpec(name=name, price=g["price"], **fields)
    return Catalog(
        version=str(data["catalog_version"]),
        economics=dict(data["economics"]),
        reliability=dict(data["reliability"]),
        rl=dict(data["rl"]),
        fabrics=dict(data["fabrics"]),
        billing=dict(data["billing"]),
        gpus=gpus,
        entries=tuple(entries),
        ranges=_ranges(data.get("ranges"), str(path) if path is not None else "catalog.yaml"),
    )


@functools.cache
def default_catalog() -> Catalog:
    """The shipped catalog, read once (it is immutable)."""
    return load_catalog()
