"""Where the package branches on an option's kind, read from its source (DESIGN.md section 1: the
resolved plan holds every fact about an option's kind, "so no other layer branches on option kind").

A branch on kind is any of:
- ``isinstance``/``issubclass`` with a plan or scenario option class (``OwnedPlan``, ``CloudOption``,
  …), or a ``case OwnedPlan():`` pattern;
- a comparison of an option's kind (``x.kind``, ``x["kind"]``, ``x.get("kind")``, a name ``kind``)
  with ``"owned"``, ``"cloud"`` or ``"hybrid"`` (alone or in a tuple, list or set);
- a comparison of ``x.pricing`` with anything, or of ``x["pricing"]``, ``x.get("pricing")`` or a
  name ``pricing`` with a pricing label (``"on_demand"``, ``"reserved"``, ``"spot"``, ``"owned"``).

Kinds of other things (a sweep dimension's, a path's, a JSON schema's, a dashboard job's) compare
with other words and are not found. ``violations(root)`` returns ``file:line: what`` per branch
outside the modules allowed to branch: the plan itself, the schema (its union and validators) and
the engine's one dispatch from a plan to its pool objects.
"""

from __future__ import annotations

import ast
from pathlib import Path

OPTION_CLASSES = frozenset({"OwnedPlan", "CloudPlan", "HybridPlan", "FleetPlan", "GroupedPlan", "OwnedOption", "CloudOption",
                            "HybridOption", "FleetOption"})
KINDS = frozenset({"owned", "cloud", "hybrid", "fleet"})
PRICINGS = frozenset({"on_demand", "reserved", "spot", "owned"})
ALLOWED = ("costsim/plan/", "costsim/scenario/", "costsim/engine/run.py")


def _name(node: ast.AST) -> str | None:
    """``x`` of a name ``x``, an attribute ``a.x``, a subscript ``a["x"]`` or a call ``a.get("x")``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return node.args[0].value
    return None


def _words(node: ast.AST) -> set[str]:
    """The string constants of ``node``: itself, or the items of a tuple, list or set."""
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}


def _compared(a: ast.AST, b: ast.AST) -> str | None:
    """What a comparison of ``a`` with ``b`` reads of an option, if it branches on its kind."""
    if _name(a) == "kind" and _words(b) & KINDS:
        return "kind"
    if isinstance(a, ast.Attribute) and a.attr == "pricing":
        return "pricing"
    if _name(a) == "pricing" and _words(b) & PRICINGS:
        return "pricing"
    return None


def _classes(node: ast.AST) -> set[str]:
    items = node.elts if isinstance(node, ast.Tuple) else [node]
    return {n for n in (_name(i) for i in items if isinstance(i, (ast.Name, ast.Attribute))) if n in OPTION_CLASSES}


def branches(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) for each branch on option kind in ``tree``."""
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "issubclass")
                and len(node.args) == 2 and _classes(node.args[1])):
            found.append((node.lineno, f"{node.func.id} with {', '.join(sorted(_classes(node.args[1])))}"))
        elif isinstance(node, ast.MatchClass) and _classes(node.cls):
            found.append((node.lineno, f"a case pattern of {', '.join(sorted(_classes(node.cls)))}"))
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            for a, b in zip(sides, sides[1:], strict=False):
                what = _compared(a, b) or _compared(b, a)
                if what is not None:
                    found.append((node.lineno, f"compares an option's {what}"))
                    break
    return found


def violations(root: Path, allowed: tuple[str, ...] = ALLOWED) -> list[str]:
    """``file:line: what`` for each branch on option kind in the package at ``root`` (its folder,
    named ``costsim``) outside ``allowed`` (paths from the package's parent; a folder ends in /)."""
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = f"{root.name}/{path.relative_to(root).as_posix()}"
        if any(rel == a or (a.endswith("/") and rel.startswith(a)) for a in allowed):
            continue
        for line, what in branches(ast.parse(path.read_text(encoding="utf-8"))):
            out.append(f"{rel}:{line}: {what}")
    return out
