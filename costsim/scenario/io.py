"""Reading and writing scenario YAML (YAML 1.2 via ruamel.yaml) with line-accurate errors."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from .errors import Loc, Problem, ScenarioError
from .model import Scenario


def _plain(node: Any, loc: Loc, lines: dict[Loc, tuple[int, int]]) -> Any:
    """Round-trip YAML nodes -> plain Python, recording each field's 1-based (line, column)."""
    if isinstance(node, CommentedMap):
        out = {}
        for key, value in node.items():
            sub = (*loc, str(key))
            try:
                ln, col = node.lc.key(key)
                lines[sub] = (ln + 1, col + 1)
            except (KeyError, TypeError):
                pass
            out[str(key)] = _plain(value, sub, lines)
        return out
    if isinstance(node, CommentedSeq):
        out_list = []
        for i, value in enumerate(node):
            sub = (*loc, i)
            try:
                ln, col = node.lc.item(i)
                lines[sub] = (ln + 1, col + 1)
            except (KeyError, TypeError, IndexError):
                pass
            out_list.append(_plain(value, sub, lines))
        return out_list
    if isinstance(node, bool) or node is None:
        return node
    if type(node).__name__ == "ScalarBoolean":
        return bool(node)
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
        return str(node)
    return node  # dates etc.: pydantic reports the type error


def parse_yaml(text: str, source: str) -> tuple[Any, dict[Loc, tuple[int, int]]]:
    """Parse YAML 1.2 text into plain data and a map of field path -> (line, column)."""
    yaml = YAML(typ="rt")
    try:
        tree = yaml.load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        col = mark.column + 1 if mark is not None else None
        what = " ".join(p for p in (exc.context, exc.problem) if p) or "malformed YAML"
        raise ScenarioError(source, [Problem((), f"YAML syntax error: {what}", line, col)]) from None
    except YAMLError as exc:
        raise ScenarioError(source, [Problem((), f"YAML error: {exc}")]) from None
    lines: dict[Loc, tuple[int, int]] = {}
    return _plain(tree, (), lines), lines


_SCALAR_BRANCH = re.compile(r"^(constrained-)?(int|float|str|bool|none)$")


def _is_branch_tag(part: object) -> bool:
    """pydantic names union branches in error paths (``Spread``, ``constrained-int``); scenario
    field names are lower_snake_case, so anything else in a path is a branch tag."""
    return isinstance(part, str) and (part[:1].isupper() or "-" in part or bool(_SCALAR_BRANCH.match(part)))


def validation_problems(err: ValidationError) -> list[Problem]:
    """pydantic errors as Problems: union branch tags dropped from paths, and where a mapping was
    given for a number-or-mapping field, only the mapping's errors kept."""
    problems = []
    for e in err.errors(include_url=False):
        raw = tuple(p for p in e["loc"] if p not in ("owned", "cloud", "hybrid"))  # the options' discriminator
        scalar_branch = any(isinstance(p, str) and _SCALAR_BRANCH.match(p) for p in raw)
        if scalar_branch and isinstance(e.get("input"), dict):
            continue  # a mapping was given: the number branch's complaint is noise
        loc = tuple(p for p in raw if not _is_branch_tag(p))
        msg = e["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        if e["type"] == "extra_forbidden":
            msg = "unknown field (check the spelling; `costsim schema` lists the fields)"
        elif e["type"] == "missing":
            msg = "required field is missing"
        elif e["type"] in ("union_tag_invalid", "union_tag_not_found"):
            given = e.get("input", {}).get("kind") if isinstance(e.get("input"), dict) else None
            msg = f"must be one of: owned, cloud, hybrid (got {given!r})" if given is not None else "is required: owned, cloud or hybrid"
            loc = (*loc, "kind")
        problems.append(Problem(loc, msg))
    return problems


def scenario_from_data(
    data: Any, source: str, base_dir: Path | str, lines: Mapping[Loc, tuple[int, int]] | None = None
) -> Scenario:
    """Validate plain data as a Scenario whose relative paths are read from ``base_dir``."""
    if not isinstance(data, dict):
        raise ScenarioError(source, [Problem((), "a scenario must be a YAML mapping of fields")])
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as err:
        raise ScenarioError(source, validation_problems(err)).with_lines(lines or {}) from None
    return scenario.with_base_dir(base_dir)


def scenario_from_yaml(text: str, source: str, base_dir: Path | str) -> tuple[Scenario, dict[Loc, tuple[int, int]]]:
    """Parse and validate scenario YAML text; also return field positions for later errors."""
    data, lines = parse_yaml(text, source)
    return scenario_from_data(data, source, base_dir, lines), lines


def read_scenario(path: Path | str) -> tuple[Scenario, dict[Loc, tuple[int, int]]]:
    """Read a scenario file (schema only: the trace and catalog checks come in ``costsim.load_scenario``)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(str(path), [Problem((), "file not found")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(str(path), [Problem((), f"cannot read the file: {exc}")]) from None
    return scenario_from_yaml(text, str(path), path.resolve().parent)


def dump_scenario(scenario: Scenario) -> str:
    """The scenario as YAML (fields in schema order, defaults written out) that loads back equal."""
    data = json.loads(scenario.model_dump_json())
    yaml = YAML(typ="rt")
    yaml.default_flow_style = False
    yaml.width = 100
    buf = io.StringIO()
    yaml.dump(data, buf)
    return buf.getvalue()
