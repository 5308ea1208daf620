"""Sweep files (DESIGN.md section 14): a base scenario, a grid and/or a Latin-hypercube sample
over dotted paths into it, and replications with common random numbers.

```yaml
base: ../baseline.yaml          # required; relative to the sweep file
seed: 0                         # optional; default the base scenario's seed
replications: 5                 # default 1; 1 … 1,000
grid:                           # dotted path -> non-empty list of values: the cartesian product
  options.own-256.gpus: [256, 384, 512]
sample:                         # dotted path -> {low, high, n}: one Latin-hypercube design of n points
  economics.electricity_usd_per_kwh: {low: 0.06, high: 0.12, n: 8}
```

Every variant is built by the one variant builder (``costsim.runs.variants``), as the tornado's and
the dashboard's are: one that resizes an option named after its size renames it
(``options.own-384.gpus: 320`` runs as ``own-320``, hybrids using it follow), and every variant is
built and checked before anything runs: a path that does not exist or a value that does not
validate is a ScenarioError naming the sweep file, the line of the key and the path.
``costsim.runs.sweep`` runs the variants.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from costsim.runs import api, arguments
from costsim.runs.outfiles import input_file_problem
from costsim.runs.paths import PathError, named, resolve, scalar_kinds, set_path
from costsim.runs.sweepspec import MAX_REPLICATIONS, MAX_TASKS, TOP, Range, SweepSpec, check_seed, spec_problems
from costsim.runs.variants import Variant, VariantBuilder
from costsim.scenario import Problem, Scenario, ScenarioError
from costsim.scenario.bounds import MAX_SEED
from costsim.scenario.errors import Loc
from costsim.scenario.io import parse_yaml, read_text_bounded
from costsim.scenario.limits import MAX_SCENARIO_BYTES_ENV, max_scenario_bytes
from costsim.workload.rng import name_key

MAX_PROBLEMS = 20
"""Distinct problems reported at once; the rest are counted."""
SHOWN_CHARS = 60  # characters of a value (or a path) a message quotes; the rest are counted
PROGRESS_STEPS = 200  # how often building the variants reports progress (every 0.5 %)
_LHS_KEY = name_key("latin-hypercube")  # the sample's stream: apart from every replication's seed


@dataclass(frozen=True)
class Sweep:
    """Variants to run ``replications`` times each; replication r simulates with
    ``replication_seed(seed, r)`` in every variant (replication 0: ``seed`` itself)."""

    source: str
    base: Path
    variants: tuple[Variant, ...]
    replications: int
    seed: int


def replication_seed(root: int, r: int) -> int:
    """The seed replication ``r`` passes to ``simulate()``.

    Replication 0 runs on ``root`` itself, so replication 0 of a sweep, of the dashboard and of
    ``costsim report`` is exactly the run ``costsim run`` makes with that seed (one seed scheme
    on every surface). Replication r >= 1 runs on the first 64-bit word of
    ``SeedSequence([root, r])``, shifted right one bit so it fits ``MAX_SEED`` (2^63 - 1, a signed
    64-bit integer, as scenario files allow): statistically independent of ``root``'s streams
    (``simulate`` hashes its seed through ``SeedSequence`` again) and of each other. The same r
    gives the same seed in every variant (common random numbers: differences between variants
    are paired). Pure integers: the same on every machine and process."""
    if isinstance(root, bool) or not isinstance(root, (int, np.integer)) or not 0 <= root <= MAX_SEED:
        raise arguments.error("replication_seed", "root", f"must be a whole number from 0 to 2^63 - 1 (got {root!r})")
    if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or r < 0:
        raise arguments.error("replication_seed", "r", f"must be a whole number >= 0 (got {r!r})")
    if r == 0:
        return int(root)
    return int(np.random.SeedSequence([int(root), int(r)]).generate_state(1, np.uint64)[0] >> np.uint64(1))


# ------------------------------------------------------------------ expansion


@dataclass(frozen=True)
class _Axes:
    """What a sweep varies, keyed by dotted path in the order written; ``where(section, path)``
    gives the location problems are reported at, ``lines`` their positions."""

    source: str
    grid: dict[str, tuple[Any, ...]]
    sample: dict[str, Range]
    where: Callable[[str, str], Loc]
    lines: Mapping[Loc, tuple[int, int]]

    def error(self, problems: list[Problem]) -> ScenarioError:
        return ScenarioError(self.source, problems).with_lines(self.lines)


def _resolved(axes: _Axes, data: dict) -> dict[str, Loc]:
    """Every path's concrete location in the base data; all problems at once."""
    locs: dict[str, Loc] = {}
    problems = []
    for section, paths in (("grid", axes.grid), ("sample", axes.sample)):
        for path in paths:
            if path == "seed":  # replications set the seed of every run: a swept one would be ignored
                problems.append(Problem(axes.where(section, path), "the seed is the sweep's: set seed: and "
                                        "replications: at the top of the sweep file instead"))
                continue
            try:
                loc, annotation = resolve(data, path)
            except PathError as exc:
                problems.append(Problem(axes.where(section, path), str(exc)))
                continue
            if path in locs:
                problems.append(Problem(axes.where(section, path), "is in both grid and sample: vary it in one"))
                continue
            kinds = scalar_kinds(annotation)
            if section == "sample" and annotation is not None and float not in kinds:
                why = ("is a whole-number field: a Latin-hypercube sample draws real numbers; list the values "
                       "under grid instead" if int in kinds else "is not a number field: sample varies real-valued fields only")
                problems.append(Problem(axes.where(section, path), why))
            locs[path] = loc
    for (a, la), (b, lb) in itertools.combinations(locs.items(), 2):
        if la[: len(lb)] == lb or lb[: len(la)] == la:
            section = "grid" if b in axes.grid else "sample"
            problems.append(Problem(axes.where(section, b), f"sets the same field as {a} (or a part of it): vary it once"))
    if problems:
        raise axes.error(problems)
    return locs


def _count(axes: _Axes, replications: int) -> int:
    """Variants the sweep expands to; refused above ``MAX_TASKS`` tasks before any is built."""
    sizes = [len(v) for v in axes.grid.values()]
    ns = {r.n for r in axes.sample.values()}
    if len(ns) > 1:
        first = next(iter(axes.sample.items()))
        raise axes.error([Problem(axes.where("sample", p), f"n = {r.n} but {first[0]} has n = {first[1].n}: every "
                                  "entry has the same n (one Latin-hypercube design of n points)")
                          for p, r in axes.sample.items() if r.n != first[1].n])
    variants = math.prod(sizes) * (ns.pop() if ns else 1)
    if variants * replications > MAX_TASKS:
        first_key = next(iter(axes.grid), None)
        loc = axes.where("grid", first_key) if first_key is not None else axes.where("sample", next(iter(axes.sample)))
        raise axes.error([Problem(loc, f"{variants:,} variants × {replications:,} replications = "
                                       f"{variants * replications:,} runs, more than the limit of {MAX_TASKS:,}")])
    return variants


def latin_hypercube(ranges: list[Range], seed: int) -> np.ndarray:
    """An (n, len(ranges)) design: column j has one point in each of n equal strata of
    [low_j, high_j), in an order that is random and independent between columns. Drawn from its
    own stream of the sweep's seed (``SeedSequence(seed, spawn_key=(name_key('latin-hypercube'),))``)."""
    # scipy.stats (half a second to import) only for a sweep that samples: replication_seed, which
    # every report and dashboard run reads from here, needs none of it.
    from scipy.stats import qmc

    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(_LHS_KEY,)))
    try:  # scipy >= 1.15 takes rng=; older versions seed= (same draws from the same Generator)
        engine = qmc.LatinHypercube(d=len(ranges), rng=rng)
    except TypeError:
        engine = qmc.LatinHypercube(d=len(ranges), seed=rng)
    unit = engine.random(ranges[0].n)
    return qmc.scale(unit, [r.low for r in ranges], [r.high for r in ranges])


def _points(axes: _Axes, seed: int) -> list[dict[str, Any]]:
    """Every variant's params: the grid's product (last key fastest) × the sample's points."""
    combos = [dict(zip(axes.grid, values, strict=True)) for values in itertools.product(*axes.grid.values())]
    if not axes.sample:
        return combos
    design = latin_hypercube(list(axes.sample.values()), seed)
    draws = [dict(zip(axes.sample, map(float, row), strict=True)) for row in design]
    return [{**g, **s} for g in combos for s in draws]


def clipped(text: str, most: int = SHOWN_CHARS) -> str:
    """``text`` as a message quotes it: whole when short, else its start and its length."""
    return text if len(text) <= most else f"{text[:most]}… ({len(text):,} characters)"


def _shown(params: dict[str, Any]) -> str:
    return ", ".join(f"{clipped(k)}={clipped(json.dumps(v, default=str))}" for k, v in params.items())


def _variants(axes: _Axes, base: Scenario, locs: dict[str, Loc], points: list[dict[str, Any]],
              progress: Callable[[int, int], None] | None = None) -> tuple[Variant, ...]:
    """Build and check every variant; every distinct problem reported at once, at its path's key.
    ``progress(built, total)`` is told every ``PROGRESS_EVERY``-th of the way (and at the end)."""
    builder = VariantBuilder(base, source=axes.source)
    width = max(3, len(str(len(points) - 1)))

    def build(vid: str, params: dict[str, Any]) -> tuple[Variant | None, ScenarioError | None]:
        try:  # own-256 at 320 GPUs: own-320, as the dashboard names it; refused: as written
            return builder.build(vid=vid, params=params, locs=locs), None
        except ScenarioError as err:
            return None, err

    variants: list[Variant] = []
    found: dict[tuple[str, str], list[Any]] = {}  # (path, text) -> [first variant's id, its params, count]
    step = max(1, len(points) // PROGRESS_STEPS)
    for k, params in enumerate(points):
        if progress is not None and k % step == 0:
            progress(k, len(points))
        vid = f"v{k:0{width}d}"
        variant, err = build(vid, params)
        if err is None:
            assert variant is not None  # built without an error
            variants.append(variant)
            continue
        if not params:
            raise err  # the base itself (already checked when loaded: not expected)
        data = builder.edited(params=params, locs=locs)  # the variant as written: its problems' locations
        def alone(one: dict[str, Any], vid: str = vid) -> ScenarioError | None:
            return build(vid, one)[1]  # this variant's id with one param alone on the base

        for p in err.problems:
            path = _culprit(p, params, locs, alone)
            other = "" if err.source.startswith(axes.source) else f"{err.source}: "
            text = clipped(f"{other}{named(data, p.loc) or 'the scenario'}: {p.message}", 4 * SHOWN_CHARS)
            found.setdefault((path, text), [vid, params, 0])[2] += 1
    if found:
        order = [*axes.grid, *axes.sample]  # problems in the order the paths are written
        ranked = sorted(found.items(), key=lambda item: order.index(item[0][0]))
        problems = [Problem(axes.where("grid" if path in axes.grid else "sample", path),
                            f"variant {vid} ({_shown(params)}){f' and {n - 1} more' if n > 1 else ''}: {text}")
                    for (path, text), (vid, params, n) in ranked[:MAX_PROBLEMS]]
        if len(found) > MAX_PROBLEMS:
            problems.append(Problem((), f"... and {len(found) - MAX_PROBLEMS} more problems"))
        raise axes.error(problems)
    if progress is not None:
        progress(len(points), len(points))
    return tuple(variants)


def _culprit(problem: Problem, params: dict[str, Any], locs: dict[str, Loc],
             alone: Callable[[dict[str, Any]], ScenarioError | None]) -> str:
    """The param a variant's problem is about: one whose field holds or is held by the problem's
    (the deepest); otherwise (a rule across fields, a job that no longer fits) the first whose
    value alone on the base gives the same message; else the one sharing most of the location."""
    def shared(path: str) -> int:
        loc = locs[path]
        return next((i for i, (a, b) in enumerate(zip(problem.loc, loc, strict=False)) if a != b),
                    min(len(problem.loc), len(loc)))

    nested = [p for p in params if shared(p) == min(len(problem.loc), len(locs[p]))]
    if nested or len(params) == 1:
        return max(nested or params, key=shared)
    for path, value in params.items():  # only on the error path: a few more checks
        err = alone({path: value})
        if err is not None and any(p.message == problem.message for p in err.problems):
            return path
    return max(params, key=shared)  # ties: the first written


def _expand(axes: _Axes, base: Scenario, base_path: Path, replications: int, seed: int,
            progress: Callable[[int, int], None] | None = None) -> Sweep:
    data = base.model_dump(mode="json")
    locs = _resolved(axes, data)
    _count(axes, replications)
    variants = _variants(axes, base, locs, _points(axes, seed), progress)
    return Sweep(axes.source, base_path, variants, replications, seed)


# ------------------------------------------------------------------ entry points


def load_sweep(path: str | Path, progress: Callable[[int, int], None] | None = None) -> Sweep:
    """Read a sweep file, build and check every variant; raises ScenarioError (file:line: path: what).
    ``progress(built, total)``: told how many variants are built, as they are (a large sweep takes
    minutes)."""
    path = arguments.path(path, "path", "load_sweep")
    progress = arguments.callback(progress, "progress", "load_sweep")
    source = str(path)
    text = read_text_bounded(path, max_scenario_bytes(), MAX_SCENARIO_BYTES_ENV, "the sweep file")
    data, lines = parse_yaml(text, source)
    if not isinstance(data, dict):
        raise ScenarioError(source, [Problem((), f"a sweep file is a YAML mapping of fields ({TOP})")])
    if "base" not in data and {"options", "workload"} & set(data):
        raise ScenarioError(source, [Problem((), "this is a scenario, not a sweep file: vary it with --set "
                                                 "path=v1,v2 (costsim sweep SCENARIO --set ...), or write a sweep file "
                                                 "with base: naming it")])
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as err:
        raise ScenarioError(source, spec_problems(err)).with_lines(lines) from None
    base_path = Path(spec.base) if Path(spec.base).is_absolute() else path.parent / spec.base
    problem = input_file_problem(base_path)
    if problem is not None:
        what = f"scenario file not found: {base_path}" if problem == "file not found" else f"{base_path} {problem}"
        raise ScenarioError(source, [Problem(("base",), what)]).with_lines(lines)
    try:
        base = api.load_scenario(base_path)  # its own errors name the base file and its lines
    except ScenarioError:
        if _is_sweep_file(base_path):
            raise ScenarioError(source, [Problem(("base",), (
                f"{base_path} is a sweep file, not a scenario: base: names the scenario file the sweep varies "
                "(to vary more fields, add them to this file's grid: or sample:)"))]).with_lines(lines) from None
        raise
    axes = _Axes(source, dict(spec.grid), dict(spec.sample), lambda section, p: (section, p), lines)
    seed = base.seed if spec.seed is None else spec.seed
    return _expand(axes, base, base_path, spec.replications, seed, progress)


def _is_sweep_file(path: Path) -> bool:
    """Whether ``path`` reads as a sweep file (a mapping with ``base:`` and only a sweep's fields)."""
    try:
        data, _ = parse_yaml(read_text_bounded(path, max_scenario_bytes(), MAX_SCENARIO_BYTES_ENV, "the file"), str(path))
    except ScenarioError:
        return False
    return isinstance(data, dict) and "base" in data and set(data) <= set(SweepSpec.model_fields)


MAX_SET_VALUE_CHARS = 10_000  # the longest text a scenario field takes (its description)
_FLOW_MARK = re.compile(r"""[\[\]{},'"]""")


def values_as_written(rhs: str) -> list[str]:
    """``rhs`` of ``--set path=v1,v2`` cut at its commas outside brackets, braces and quoted
    scalars: the values as written, without reading them (an unclosed bracket or quote runs to the
    end). A quote opens a quoted scalar only where a value starts (after a comma, a bracket, a brace
    or a key's ": "), as in YAML's flow style; '' is a quote inside single quotes, \\" inside
    double quotes."""
    return _scan(rhs)[0]


def _scan(rhs: str) -> tuple[list[str], bool]:
    """``values_as_written(rhs)``, and whether every bracket, brace and quote it opens is closed."""
    cuts, depth, quote, start, doubled = [], 0, "", 0, -1
    for mark in _FLOW_MARK.finditer(rhs):
        at, char = mark.start(), mark.group()
        if at == doubled:  # the second quote of '' inside single quotes
            continue
        if quote:
            if char == quote == "'" and rhs.startswith("'", at + 1):
                doubled = at + 1
            elif char == quote and (quote == "'" or not _escaped(rhs, at)):
                quote = ""
        elif char in "'\"":
            before = at - 1  # the last character before the quote that is not a blank
            while before >= start and rhs[before] in " \t":
                before -= 1
            if before < start or rhs[before] in "[{," or (rhs[before] == ":" and before < at - 1):
                quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth = max(depth - 1, 0)
        elif depth == 0:
            cuts.append(rhs[start:at])
            start = at + 1
    cuts.append(rhs[start:])
    return cuts, depth == 0 and not quote


def _escaped(text: str, at: int) -> bool:
    """Whether the character at ``at`` follows an odd run of backslashes (escaped in double quotes)."""
    before = at - 1
    while before >= 0 and text[before] == "\\":
        before -= 1
    return (at - 1 - before) % 2 == 1


def parse_set(text: str) -> tuple[str, list[Any]]:
    """``--set path=v1,v2,...`` as (path, values); values read by YAML 1.2 scalar rules (256 is an
    int, 0.5 a float, true a boolean, own-256 a string; {mean: 3, cv: 0.5} a mapping)."""
    if not isinstance(text, str) or "=" not in text:
        raise ScenarioError("--set", [Problem((), f"{clipped(repr(text))}: expected path=value[,value...], e.g. options.own-256.gpus=256,384")])
    path, _, rhs = text.partition("=")
    path = path.strip()
    # YAML takes about half a second per thousand values: refuse what cannot run before reading it
    written, closed = _scan(rhs)
    if len(written) > MAX_TASKS:
        raise ScenarioError("--set", [Problem((clipped(path),), (
            f"{len(written):,} values: a sweep runs at most {MAX_TASKS:,} tasks (variants × replications); give "
            "fewer values"))])
    if not closed:  # YAML refuses it too, after reading all of it
        raise ScenarioError("--set", [Problem((clipped(path),), (
            f"cannot read {clipped(repr(rhs))} as comma-separated YAML values (a bracket, brace or quote is "
            "not closed)"))])
    # a list or a mapping may be long (a table of quantiles); no text a field takes is
    scalars = (v for v in written if not v.lstrip().startswith(("[", "{")))
    longest = max(scalars, key=len, default="")
    if len(longest) > MAX_SET_VALUE_CHARS:
        raise ScenarioError("--set", [Problem((clipped(path),), (
            f"{clipped(repr(longest))}: longer than any scenario field takes ({MAX_SET_VALUE_CHARS:,} characters)"))])
    try:
        values, _ = parse_yaml(f"[{rhs}]", "--set")
    except ScenarioError as err:
        count = rhs.count(",") + 1  # about as many values (a mapping's commas count too)
        if count > MAX_TASKS:
            raise ScenarioError("--set", [Problem((clipped(path),), (
                f"{count:,} values: a sweep runs at most {MAX_TASKS:,} tasks (variants × replications); give "
                "fewer values"))]) from None
        why = err.problems[0].message if err.problems else "not YAML"
        raise ScenarioError("--set", [Problem((clipped(path),), f"cannot read {clipped(repr(rhs))} as comma-separated "
                                                       f"YAML values ({why})")]) from None
    if not isinstance(values, list) or not values:
        raise ScenarioError("--set", [Problem((path,), "no values: give at least one, e.g. =256,384")])
    return path, values


def sweep_from_sets(scenario_path: str | Path, sets: list[str], replications: int = 1,
                    seed: int | None = None, progress: Callable[[int, int], None] | None = None, *,
                    base: Scenario | None = None) -> Sweep:
    """A quick grid on a plain scenario: ``sets`` as ``--set path=v1,v2`` gives them (the product
    in the order given); ``seed`` None: the scenario's. Raises ScenarioError like ``load_sweep``;
    ``progress`` as there. ``base``: the scenario to vary, in place of the file's (an edit of it
    with the same folder: a search asking how its answer moves with an input)."""
    scenario_path = arguments.path(scenario_path, "scenario_path", "sweep_from_sets")
    progress = arguments.callback(progress, "progress", "sweep_from_sets")
    if isinstance(sets, str) or not isinstance(sets, (list, tuple)):
        raise ScenarioError("--set", [Problem((), f"must be a list of path=values strings (got {type(sets).__name__})")])
    if isinstance(replications, bool) or not isinstance(replications, int) or not 1 <= replications <= MAX_REPLICATIONS:
        raise ScenarioError("--replications", [Problem((), f"must be a whole number from 1 to {MAX_REPLICATIONS:,} (got {replications!r})")])
    if seed is not None:
        try:
            check_seed(seed)
        except ValueError as exc:
            raise ScenarioError("--seed", [Problem((), str(exc))]) from None
    grid: dict[str, tuple[Any, ...]] = {}
    for text in sets:
        path, values = parse_set(text)
        if path in grid:
            raise ScenarioError("--set", [Problem((path,), "given twice: list all its values in one --set")])
        grid[path] = tuple(values)
    base = api.load_scenario(scenario_path) if base is None else base
    axes = _Axes("--set", grid, {}, lambda section, p: (p,), {})
    return _expand(axes, base, scenario_path, replications, base.seed if seed is None else seed, progress)


__all__ = ["MAX_REPLICATIONS", "MAX_TASKS", "Range", "Sweep", "SweepSpec", "Variant", "latin_hypercube",
           "load_sweep", "parse_set", "replication_seed", "set_path", "sweep_from_sets"]
