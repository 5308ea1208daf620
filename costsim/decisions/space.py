"""What the optimiser may vary: ``--vary`` items parsed into ordered dimensions.

- ``options.own.gpus=256..1024``: a whole-number range; GPU counts step by whole nodes (an owned
  option's ``gpus_per_node``, for its ``gpus`` and each tranche's, ``options.own.tranches.1.gpus``;
  a cloud option's ``gpus_per_instance`` for ``reserved_gpus`` and ``max_gpus``; the catalog's when
  the option leaves it null), the ends rounded inwards to them.
- ``options.hybrid.max_wait_h=0..8``: a real range, resolved to 1/``FLOAT_STEPS`` of its span.
- ``options.own.scheduler=fifo,backfill`` or ``…gpus=256,512,768``: the values listed (numbers
  sorted ascending).

A dimension is an ordered list of *levels* (index 0 … n−1), so the grid and the bisection work on
indices whatever the values are. Every problem is a ScenarioError naming ``--vary`` and the path.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from costsim.catalog.load import default_catalog
from costsim.plan import facts
from costsim.runs.paths import PathError, resolve, scalar_kinds
from costsim.runs.sweepfile import parse_set
from costsim.scenario import Problem, ScenarioError

FLOAT_STEPS = 64  # a real range's resolution: 1/64 of its span (the 5-point grid falls on levels 0, 16, 32, 48, 64)
_RANGE = re.compile(r"^\s*([^.\s][^\s]*?)\s*\.\.\s*(\S+)\s*$")


def vary_error(path: str | None, message: str) -> ScenarioError:
    return ScenarioError("--vary", [Problem((path,) if path else (), message)])


@dataclass(frozen=True)
class Dimension:
    """One varied field: ``path`` as written, ``option`` the option it belongs to (None for a
    field outside ``options``), and its ``count`` levels: ``start + k·step`` (ranges; a real one
    ends exactly at ``end``) or ``items`` (a list). ``kind``: "int", "float" or "list"."""

    path: str
    option: str | None
    kind: str
    count: int
    start: float = 0.0
    step: float = 1.0
    end: float = 0.0
    items: tuple = ()

    def value(self, k: int) -> Any:
        """The value at level ``k``."""
        if self.kind == "list":
            return self.items[k]
        if self.kind == "int":
            return int(self.start + k * self.step)
        t = k / (self.count - 1) if self.count > 1 else 0.0
        return float(self.start * (1 - t) + self.end * t)  # both ends exact

    def text(self, k: int) -> str:
        """The value at level ``k`` as a ``--set`` value (YAML flow: JSON is a subset)."""
        v = self.value(k)
        return repr(v) if isinstance(v, float) else json.dumps(v)

    def grid(self, points: int) -> list[int]:
        """About ``points`` evenly spaced levels, both ends included."""
        n = min(points, self.count)
        if n <= 1:
            return [0]
        return sorted({round(i * (self.count - 1) / (n - 1)) for i in range(n)})


def _number(text: str, path: str, whole: bool) -> float:
    try:
        x = float(text)
    except ValueError:
        raise vary_error(path, f"{text!r} is not a number") from None
    if not math.isfinite(x):
        raise vary_error(path, f"{text!r} is not a finite number")
    if whole and not x.is_integer():
        raise vary_error(path, f"{text!r} is not a whole number ({path.rsplit('.', 1)[-1]} is a whole-number field)")
    return x


def _unit(data: dict, loc: tuple) -> tuple[int, str]:
    """The step a whole-number field moves by (GPUs per node or instance) and what it is: an
    option's own count, or a tranche's (``options.own.tranches.1.gpus``, whole nodes too)."""
    tranche = len(loc) == 5 and loc[2] == "tranches" and loc[4] == "gpus"
    if not (len(loc) == 3 or tranche) or loc[0] != "options" or not isinstance(loc[1], int):
        return 1, ""
    option = data["options"][loc[1]]
    per = facts.unit_field(option, "gpus" if tranche else str(loc[2]))
    if per is None:
        return 1, ""
    n = option.get(per)
    if n is None:
        gpu = default_catalog().gpus.get(option.get("gpu_type"))
        n = gpu.gpus_per_node if gpu is not None else 1
    what = "node" if per == "gpus_per_node" else "instance"
    return int(n), f"{n}-GPU {what}s of {option['name']}"


def _range(path: str, lo_text: str, hi_text: str, kinds: set, data: dict, loc: tuple, option: str | None) -> Dimension:
    whole = int in kinds and float not in kinds
    if not kinds:  # a field the schema does not describe: whole numbers if both ends are
        whole = all(re.fullmatch(r"[-+]?\d+", t) for t in (lo_text, hi_text))
    lo, hi = _number(lo_text, path, whole), _number(hi_text, path, whole)
    if lo > hi:
        raise vary_error(path, f"the range {lo_text}..{hi_text} runs backwards: give LOW..HIGH")
    if not whole:
        if lo == hi:
            return Dimension(path, option, "float", 1, lo, 0.0, hi)
        return Dimension(path, option, "float", FLOAT_STEPS + 1, lo, (hi - lo) / FLOAT_STEPS, hi)
    unit, what = _unit(data, loc)
    first, last = math.ceil(lo / unit) * unit, math.floor(hi / unit) * unit
    if first > last:
        raise vary_error(path, f"no whole number of {what} between {lo_text} and {hi_text}: "
                               f"give a range that holds a multiple of {unit}")
    return Dimension(path, option, "int", int((last - first) // unit) + 1, first, unit)


def _list(path: str, text: str, option: str | None) -> Dimension:
    try:
        _, values = parse_set(f"{path}={text}")
    except ScenarioError as err:
        raise vary_error(path, err.problems[0].message) from None
    unique = list({json.dumps(v, sort_keys=True): v for v in values}.values())
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in unique):
        unique.sort()
    return Dimension(path, option, "list", len(unique), items=tuple(unique))


def parse_vary(text: str, data: dict) -> Dimension:
    """One ``--vary PATH=LOW..HIGH`` or ``PATH=V1,V2,…`` against the base scenario's ``data``
    (``Scenario.model_dump(mode="json")``)."""
    if not isinstance(text, str) or "=" not in text:
        raise vary_error(None, f"{text!r}: expected PATH=LOW..HIGH or PATH=V1,V2,… "
                               "(e.g. options.own.gpus=256..1024)")
    path, _, spec = text.partition("=")
    path = path.strip()
    if path == "seed":
        raise vary_error(path, "the seed is not a design choice: set --seed and --replications instead")
    try:
        loc, annotation = resolve(data, path)
    except PathError as exc:
        raise vary_error(path, str(exc)) from None
    option = data["options"][loc[1]]["name"] if loc[0] == "options" and len(loc) > 1 else None
    kinds = scalar_kinds(annotation) if annotation is not None else set()
    m = _RANGE.match(spec)
    if m is None:
        return _list(path, spec, option)
    if annotation is not None and not kinds & {int, float}:
        raise vary_error(path, f"is not a number field: list its values instead (e.g. {path}=a,b)")
    return _range(path, m.group(1), m.group(2), kinds, data, loc, option)


def parse_space(vary: list[str], data: dict) -> list[Dimension]:
    """Every ``--vary``, checked: at least one, each path once."""
    if isinstance(vary, str) or not isinstance(vary, (list, tuple)) or not vary:
        raise vary_error(None, "give at least one PATH=LOW..HIGH or PATH=V1,V2,… (a list of strings)")
    dims: list[Dimension] = []
    for text in vary:
        d = parse_vary(text, data)
        if any(resolve(data, d.path)[0] == resolve(data, e.path)[0] for e in dims):
            raise vary_error(d.path, "given twice: vary each field once")
        dims.append(d)
    return dims


__all__ = ["FLOAT_STEPS", "Dimension", "parse_space", "parse_vary", "vary_error"]
