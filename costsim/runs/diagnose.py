"""Every problem of a scenario file in one pass (``costsim validate``).

``costsim.load_scenario`` stops at the first stage that fails (YAML, schema, catalog, trace, jobs
that can never fit), which is right for a run: nothing downstream of a broken stage can be
trusted. A person fixing a file wants them all at once, so ``diagnose`` runs every stage that can
still run on what is sound:

- **schema**: every field error pydantic finds;
- **catalog** (node and instance sizes, terms): each owned or cloud option that validates on its
  own is resolved on its own, so one option's mistake hides no other's;
- **trace**: the file named by ``workload.trace`` is looked for and read, even when the schema
  failed elsewhere (its path read from the raw YAML);
- **fit** (jobs too large for an option, serving room, rollout offload, scaling curves): on the
  scenario without the options whose schema or catalog check failed (and the hybrids built on
  them), without the trace when it could not be read.

Problems are deduplicated and each keeps its file, field path and line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from costsim.plan import facts
from costsim.plan.resolve import resolve
from costsim.runs import api, arguments
from costsim.scenario import Economics, Option, Problem, Scenario, ScenarioError, parse_yaml, read_trace
from costsim.scenario import scenario_from_data as schema_from_data
from costsim.scenario.errors import Loc
from costsim.scenario.filekind import input_file_problem
from costsim.scenario.io import read_text_bounded
from costsim.scenario.limits import MAX_SCENARIO_BYTES_ENV, max_scenario_bytes
from costsim.scenario.node_groups import trace_gpu_type_problems
from costsim.workload import jobs as workload

_OPTION = TypeAdapter(Option)
_SAFE_HORIZON_DAYS = 1.0  # when the horizon itself is wrong: shorter than any term, so no false "renew"


@dataclass(frozen=True)
class Diagnosis:
    """``scenario``: the checked scenario when there is no problem, else None; ``errors``: what was
    found, by stage (schema, catalog, trace, fit), each naming its file; ``lines``: every problem
    as ``file[:line[:col]]: field.path: what``, each once, in that order."""

    scenario: Scenario | None
    errors: tuple[ScenarioError, ...]

    @property
    def lines(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(line for err in self.errors for line in str(err).splitlines()))


def diagnose(path: Path | str) -> Diagnosis:
    """Check the scenario file at ``path`` through every stage that can run (see the module)."""
    path = arguments.path(path, "path", "diagnose")
    source = str(path)
    try:
        text = read_text_bounded(path, max_scenario_bytes(), MAX_SCENARIO_BYTES_ENV, "the scenario file")
        data, lines = parse_yaml(text, source)
    except ScenarioError as err:  # unreadable or not YAML: no stage can run
        return Diagnosis(None, (err,))
    base_dir = path.resolve().parent
    try:
        scenario = schema_from_data(data, source, base_dir, lines)
    except ScenarioError as err:
        return Diagnosis(None, (err, *_after_schema(data, err, source, base_dir, lines)))
    try:
        return Diagnosis(api.check(scenario, source, lines), ())
    except ScenarioError:
        pass  # find every problem, stage by stage
    return Diagnosis(None, tuple(_stages(scenario, list(range(len(scenario.options))), source, lines)))


def _after_schema(data: Any, err: ScenarioError, source: str, base_dir: Path,
                  lines: Mapping[Loc, tuple[int, int]]) -> list[ScenarioError]:
    """What can still be checked when the schema failed: the stages on the scenario without the
    options it refused, when the rest validates; else the trace file and each option that
    validates alone."""
    if not isinstance(data, dict):
        return []
    salvaged = _without_bad_options(data, err, base_dir)
    repaired = _catalog_errors(_repaired_options(data, err), _economics(data), _horizon(data), source, lines)[0]
    if salvaged is not None:
        return _stages(*salvaged, source, lines) + repaired
    found = repaired
    work = data.get("workload")
    trace = work.get("trace") if isinstance(work, dict) else None
    if isinstance(trace, str) and trace:
        found += [e.with_lines(lines) for e in _trace_errors(base_dir / trace, None, source)[0]]
    options = data.get("options")
    singles = []
    for i, raw in enumerate(options if isinstance(options, list) else []):
        try:
            singles.append((i, _OPTION.validate_python(raw)))
        except ValidationError:
            continue  # its problems are among the schema's
    found += _catalog_errors(singles, _economics(data), _horizon(data), source, lines)[0]
    return found


def _refused(err: ScenarioError) -> dict[int, set]:
    """The options the schema refused (by index in the file) and the fields it refused in each
    (empty: the option as a whole)."""
    bad: dict[int, set] = {}
    for p in err.problems:
        if p.loc[:1] == ("options",) and len(p.loc) > 1 and isinstance(p.loc[1], int):
            bad.setdefault(p.loc[1], set()).update(p.loc[2:3])
    return bad


def _repaired_options(data: dict, err: ScenarioError) -> list[tuple[int, Any]]:
    """Each option the schema refused, with the fields it refused left out (their defaults in
    their place), when that validates: its other values can still meet the catalog (a GPU count
    that is no whole number of nodes beside a misspelt scheduler)."""
    options = data.get("options")
    if not isinstance(options, list):
        return []
    out = []
    for i, fields in sorted(_refused(err).items()):
        raw = options[i] if i < len(options) else None
        if not isinstance(raw, dict) or fields & {"name", "kind"}:
            continue
        try:
            out.append((i, _OPTION.validate_python({k: v for k, v in raw.items() if k not in fields})))
        except ValidationError:
            continue
    return out


def _without_bad_options(data: dict, err: ScenarioError, base_dir: Path) -> tuple[Scenario, list[int]] | None:
    """The scenario without the options the schema refused and those that name them (a hybrid's
    base or burst, a rollout pool), with the original index of each option kept; None when
    problems outside the options remain (or no option is left)."""
    options = data.get("options")
    bad = set(_refused(err))
    if not isinstance(options, list) or not bad:
        return None
    gone = {o.get("name") for i, o in enumerate(options) if i in bad and isinstance(o, dict)}
    keep = [i for i in range(len(options)) if i not in bad and isinstance(options[i], dict)]
    changed = True
    while changed:  # a hybrid on a removed option goes too, and so on
        changed = False
        for i in list(keep):
            refs = {*facts.parts_of(options[i]), options[i].get("rollout_pool")}
            if refs & gone:
                keep.remove(i)
                gone.add(options[i].get("name"))
                changed = True
    if not keep:
        return None
    try:
        scenario = schema_from_data({**data, "options": [options[i] for i in keep]}, "salvage", base_dir)
    except ScenarioError:
        return None
    return scenario, keep


def _stages(scenario: Scenario, index: list[int], source: str, lines: Mapping[Loc, tuple[int, int]]) -> list[ScenarioError]:
    """Catalog, trace and fit problems of a schema-valid ``scenario`` whose option j is option
    ``index[j]`` of the file."""
    catalog, resolved = _catalog_errors(list(enumerate(scenario.options)), scenario.economics, scenario.horizon_days, source, {})
    if not catalog:
        try:
            resolve(scenario, source=source)
        except ScenarioError as err:
            catalog, resolved = [err], set()
    trace_path = scenario.base_dir / scenario.workload.trace if scenario.workload.trace is not None else None
    traced, trace_ok = _trace_errors(trace_path, scenario, source) if trace_path is not None else ([], True)
    kept = _resolvable(scenario, resolved)
    fit: list[ScenarioError] = []
    if kept:
        work = scenario.workload if trace_ok else scenario.workload.model_copy(update={"trace": None})
        reduced = scenario.model_copy(update={"options": tuple(scenario.options[j] for j in kept), "workload": work})
        try:
            api.check(reduced, source)
        except ScenarioError as err:
            fit = [_moved(err, kept)]
    return [_moved(e, index).with_lines(lines) if e.source == source else e for e in (*catalog, *traced, *fit)]


def _catalog_errors(options: list[tuple[int, Any]], economics: Economics, horizon_days: float, source: str,
                    lines: Mapping[Loc, tuple[int, int]]) -> tuple[list[ScenarioError], set[int]]:
    """Each owned or cloud option of ``options`` (index, option pairs; hybrids skipped) resolved
    against the catalog alone, its problems at its own index; and the indices that resolved."""
    errors, ok = [], set()
    for i, opt in options:
        if facts.parts_of(opt):  # a hybrid: no catalog values of its own; its parts are checked as options
            continue
        alone = opt.model_copy(update={"rollout_pool": None, "rollout_link_gb_s": None})  # the pool is a fit check
        try:
            # A partial Scenario on purpose (resolve reads only these fields); pydantic's mypy plugin
            # types model_construct as needing every required field, which it does not at run time.
            resolve(Scenario.model_construct(options=(alone,), economics=economics,  # type: ignore[call-arg]
                                             horizon_days=horizon_days),
                    source=source)
            ok.add(i)
        except ScenarioError as err:
            errors.append(_moved(err, [i]).with_lines(lines))
    return errors, ok


def _resolvable(scenario: Scenario, resolved: set[int]) -> list[int]:
    """Indices of the options the fit checks can use: those that resolved, and hybrids and rollout
    pools whose parts did."""
    names = {scenario.options[j].name for j in resolved}
    kept = []
    for j, o in enumerate(scenario.options):
        parts = set(facts.parts_of(o))  # a hybrid's base and burst
        if (j in resolved or parts) and parts <= names and (o.rollout_pool is None or o.rollout_pool in names):
            kept.append(j)
    return kept


def _trace_errors(path: Path, scenario: Scenario | None, source: str) -> tuple[list[ScenarioError], bool]:
    """The trace file's problems (missing or not a file, at the scenario's ``workload.trace``; bad
    rows, job ids the workload could make and GPU types an option cannot give, at the trace's
    lines), and whether the fit checks can use it (read, and no row refused)."""
    problem = input_file_problem(path)
    if problem is not None:
        shown = f"trace file not found: {path}" if problem == "file not found" else f"the trace file {path} {problem}"
        return [ScenarioError(source, [Problem(("workload", "trace"), shown)])], False
    try:
        trace = read_trace(path)
    except ScenarioError as err:
        return [err], False
    clashes = ([*workload.reserved_id_problems(scenario, trace.job_id),
                *trace_gpu_type_problems(trace, scenario.options)] if scenario is not None else [])
    return ([ScenarioError(str(path), clashes)], False) if clashes else ([], True)


def _moved(err: ScenarioError, index: list[int]) -> ScenarioError:
    """``err`` with ``options.J`` locations renamed ``options.index[J]``."""
    def loc(p: Problem) -> Loc:
        if p.loc[:1] == ("options",) and len(p.loc) > 1 and isinstance(p.loc[1], int) and p.loc[1] < len(index):
            return ("options", index[p.loc[1]], *p.loc[2:])
        return p.loc
    return ScenarioError(err.source, [Problem(loc(p), p.message, p.line, p.column) for p in err.problems])


def _economics(data: dict) -> Economics:
    try:
        return Economics.model_validate(data.get("economics") or {})
    except ValidationError:
        return Economics()


def _horizon(data: dict) -> float:
    h = data.get("horizon_days")
    return float(h) if isinstance(h, (int, float)) and not isinstance(h, bool) and 0 < h <= 10_950 else _SAFE_HORIZON_DAYS


__all__ = ["Diagnosis", "diagnose"]
