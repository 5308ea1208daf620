"""Reading and writing scenario YAML (YAML 1.2 via ruamel.yaml) with line-accurate errors."""

from __future__ import annotations

import io
import json
import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.composer import Composer, MaxDepthExceededError
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import AliasEvent

from costsim.scenario.errors import Loc, Problem, ScenarioError
from costsim.scenario.limits import (
    MAX_SCENARIO_BYTES_ENV,
    MAX_YAML_DEPTH,
    MAX_YAML_NODES,
    max_scenario_bytes,
    too_large,
)
from costsim.scenario.model import Scenario


class _Unbounded(Exception):
    """Raised while composing: the document, aliases expanded, is too large or infinite."""

    def __init__(self, message: str, mark: Any):
        super().__init__(message)
        self.mark = mark


class _BoundedComposer(Composer):
    """ruamel's composer, counting nodes as the data will have them: an alias counts as the whole
    subtree its anchor names. Counting while composing refuses an alias bomb (nested anchors that
    expand to 10⁹ nodes from a few hundred bytes) before anything is expanded or constructed."""

    def __init__(self, loader: Any = None) -> None:
        super().__init__(loader)
        self.expanded = 0
        self._subtree: dict[int, int] = {}  # id(anchored node) -> its nodes, aliases expanded

    def _add(self, n: int, mark: Any) -> None:
        self.expanded += n
        if self.expanded > MAX_YAML_NODES:
            msg = (f"more than {MAX_YAML_NODES:,} YAML nodes (aliases counted as the nodes they repeat); "
                   "a scenario needs far fewer")
            raise _Unbounded(msg, mark)

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.parser.peek_event()
        if isinstance(event, AliasEvent):
            target = self.anchors.get(event.anchor)
            if target is not None and id(target) not in self._subtree:  # still being composed: an ancestor
                raise _Unbounded(f"alias *{event.anchor} is inside the node it names (a structure that "
                                 "contains itself)", event.start_mark)
            self._add(self._subtree.get(id(target), 1), event.start_mark)
            return super().compose_node(parent, index)
        self._add(1, event.start_mark)
        before = self.expanded
        node = super().compose_node(parent, index)
        if event.anchor is not None:
            self._subtree[id(node)] = self.expanded - before + 1
        return node


def _position(mark: Any) -> tuple[int | None, int | None]:
    return (mark.line + 1, mark.column + 1) if mark is not None else (None, None)


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


def _check_size(text: str, source: str) -> None:
    limit = max_scenario_bytes()
    # Characters never outnumber UTF-8 bytes: only text that may fit is encoded to count them.
    size = len(text) if len(text) > limit else len(text.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise ScenarioError(source, [too_large(size, limit, MAX_SCENARIO_BYTES_ENV, "the scenario")])


def parse_yaml(text: str, source: str) -> tuple[Any, dict[Loc, tuple[int, int]]]:
    """Parse YAML 1.2 text into plain data and a map of field path -> (line, column).

    Bounded work: text over ``COSTSIM_MAX_SCENARIO_BYTES``, more than ``MAX_YAML_NODES`` nodes
    (aliases expanded) or nesting deeper than ``MAX_YAML_DEPTH`` is refused with a ScenarioError.
    """
    _check_size(text, source)
    yaml = YAML(typ="rt")
    yaml.Composer = _BoundedComposer
    yaml.max_depth = MAX_YAML_DEPTH
    try:
        tree = yaml.load(text)
    except _Unbounded as exc:
        line, col = _position(exc.mark)
        raise ScenarioError(source, [Problem((), str(exc), line, col)]) from None
    except MaxDepthExceededError as exc:
        line, col = _position(exc.problem_mark)
        msg = f"nested more than {MAX_YAML_DEPTH} levels deep; a scenario needs fewer than 10"
        raise ScenarioError(source, [Problem((), msg, line, col)]) from None
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        col = mark.column + 1 if mark is not None else None
        what = " ".join(p for p in (exc.context, exc.problem) if p) or "malformed YAML"
        raise ScenarioError(source, [Problem((), f"YAML syntax error: {what}", line, col)]) from None
    except YAMLError as exc:
        raise ScenarioError(source, [Problem((), f"YAML error: {exc}")]) from None
    except (ValueError, OverflowError, RecursionError) as exc:  # e.g. an integer of 5,000 digits
        raise ScenarioError(source, [Problem((), f"YAML value error: {str(exc).splitlines()[0][:200]}")]) from None
    lines: dict[Loc, tuple[int, int]] = {}
    return _plain(tree, (), lines), lines


# A scalar branch, bare or wrapped by a validator: ``constrained-int``, ``literal['catalog']``,
# ``function-before[_not_bool(), float]``.
_SCALAR_BRANCH = re.compile(r"^(function-\w+\[.*\]|literal\[.*\]|(constrained-)?(int|float|str|bool|none))$")


def _is_branch_tag(part: object) -> bool:
    """pydantic names union branches in error paths (``Spread``, ``constrained-int``); scenario
    field names are lower_snake_case, so anything else in a path is a branch tag."""
    return isinstance(part, str) and (part[:1].isupper() or "-" in part or bool(_SCALAR_BRANCH.match(part)))


def validation_problems(err: ValidationError) -> list[Problem]:
    """pydantic errors as Problems: union branch tags dropped from paths, and where a mapping was
    given for a number-or-mapping field, only the mapping's errors kept."""
    problems: list[Problem] = []
    model_branch: set[int] = set()  # a model branch's "not a mapping" complaint about a number
    for e in err.errors(include_url=False):
        raw = tuple(p for p in e["loc"] if p not in ("owned", "cloud", "hybrid", "fleet"))  # the options' discriminator
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
            msg = (f"must be one of: owned, cloud, hybrid, fleet (got {given!r})" if given is not None
                   else "is required: owned, cloud, hybrid or fleet")
            loc = (*loc, "kind")
        problems.append(Problem(loc, msg))
        if e["type"] == "model_type" and isinstance(e.get("input"), (int, float)):
            model_branch.add(len(problems) - 1)
    # A number given for a number-or-mapping field (iterations, response_tokens): the mapping
    # branch's "should be a valid dictionary" is noise beside the number's own complaint.
    located = [p.loc for i, p in enumerate(problems) if i not in model_branch]
    return [p for i, p in enumerate(problems) if i not in model_branch or p.loc not in located]


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
    text = read_text_bounded(path, max_scenario_bytes(), MAX_SCENARIO_BYTES_ENV, "the scenario file")
    return scenario_from_yaml(text, str(path), path.resolve().parent)


def read_text_bounded(path: Path, limit: int, env: str, what: str) -> str:
    """A regular file's UTF-8 text, refused (ScenarioError) above ``limit`` bytes. At most
    limit + 1 bytes are read, so a file whose size is not known in advance cannot exhaust memory;
    a FIFO or device, which could block or never end, is refused without reading."""
    source = str(path)
    try:
        info = os.stat(path)  # before opening: opening a FIFO would block until someone writes
        if not stat.S_ISREG(info.st_mode):
            raise ScenarioError(source, [Problem((), "not a regular file (a folder, FIFO or device)")])
        if info.st_size > limit:
            raise ScenarioError(source, [too_large(info.st_size, limit, env, what)])
        with open(path, "rb") as f:
            data = f.read(limit + 1)  # /proc files report size 0: read no more than the limit
    except FileNotFoundError:
        raise ScenarioError(source, [Problem((), "file not found")]) from None
    except OSError as exc:
        raise ScenarioError(source, [Problem((), f"cannot read the file: {exc.strerror or exc}")]) from None
    if len(data) > limit:
        raise ScenarioError(source, [Problem((), f"{what} is more than the limit of {limit:,} bytes (set {env} to raise it)")])
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(source, [Problem((), f"cannot read the file: not UTF-8 text ({exc.reason} at byte {exc.start})")]) from None


def yaml_dump(data: Any, width: int = 100, inline_leaves: bool = False) -> str:
    """Plain data as YAML, keys in the order written; ``inline_leaves``: lists and mappings of
    scalars on one line each (a profile of 24 weights), other mappings in block style."""
    yaml = YAML(typ="rt")
    yaml.default_flow_style = None if inline_leaves else False
    yaml.width = width
    buf = io.StringIO()
    yaml.dump(data, buf)
    return buf.getvalue()


def dump_scenario(scenario: Scenario) -> str:
    """The scenario as YAML (fields in schema order, defaults written out) that loads back equal."""
    return yaml_dump(json.loads(scenario.model_dump_json()))


def json_schema() -> dict:
    """JSON schema of a scenario file, for editors (``costsim schema``)."""
    return Scenario.model_json_schema()
