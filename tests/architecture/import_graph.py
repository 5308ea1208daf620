"""The package's import graph read from its source (every import statement, at module level or
inside a function, under ``TYPE_CHECKING`` or not) and the rules of DESIGN.md section 1 checked on it.

``violations(root)`` returns one line per broken rule, ``file:line: what``; an empty list is a
package that keeps its layers.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

# Layers in order: a module may import its own layer and the layers before it, never a later one.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("units", ("costsim.units", "costsim._version", "costsim.errors")),
    ("schema", ("costsim.scenario",)),
    ("data", ("costsim.catalog", "costsim.traces")),
    ("pure models", ("costsim.models",)),
    ("resolved plan", ("costsim.plan",)),
    ("workload", ("costsim.workload",)),
    ("engine", ("costsim.engine",)),
    ("results", ("costsim.results",)),
    ("runs", ("costsim.runs",)),
    ("decisions", ("costsim.decisions",)),
    ("calibration", ("costsim.calibration",)),
    ("presentation", ("costsim.present",)),
    ("plots", ("costsim.plots",)),
    ("front ends", ("costsim.report", "costsim.cli", "costsim.dashboard", "costsim")),
]
ENGINE_FORBIDS = ("pandas", "plotly", "ruamel", "yaml", "streamlit")
FACADE = len(LAYERS) - 1  # the front ends' layer, where the bare "costsim" prefix (the façade) falls


@dataclass(frozen=True)
class Import:
    """One import: the importing module, the module imported, the names taken from it, and where."""

    module: str
    target: str
    names: tuple[str, ...]
    path: Path
    line: int


def module_name(path: Path, root: Path) -> str:
    """``costsim/engine/owned.py`` -> ``costsim.engine.owned``; a package's ``__init__`` is the package."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, root: Path) -> list[Import]:
    """Every import in the file, relative ones made absolute."""
    me = module_name(path, root)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [Import(me, a.name, (), path, node.lineno) for a in node.names]
        elif (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))
              and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            # importlib.import_module("costsim.x"): an import all the same, only hidden in a string.
            out.append(Import(me, node.args[0].value, (), path, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.append(Import(me, target, tuple(a.name for a in node.names), path, node.lineno))
    return out


def layer_of(module: str) -> int | None:
    """The index of the layer holding ``module`` (the longest package prefix wins); None outside costsim."""
    best: tuple[int, int] | None = None
    for i, (_, packages) in enumerate(LAYERS):
        for p in packages:
            if module == p or module.startswith(p + "."):
                if best is None or len(p) > best[1]:
                    best = (i, len(p))
    return None if best is None else best[0]


def _submodules(imp: Import, modules: set[str]) -> list[str]:
    """What an import really loads: ``from costsim.plots import layout`` is ``costsim.plots.layout``."""
    found = [f"{imp.target}.{n}" for n in imp.names if f"{imp.target}.{n}" in modules]
    return found or [imp.target]


def violations(root: Path) -> list[str]:
    """Every broken rule in the package at ``root`` (the ``costsim`` folder)."""
    files = sorted(root.rglob("*.py"))
    modules = {module_name(f, root) for f in files}
    out: list[str] = []
    for f in files:
        rel = f.relative_to(root.parent)
        for imp in imports_of(f, root):
            where = f"{rel}:{imp.line}"
            top = imp.target.split(".")[0]
            if top == "streamlit" and not imp.module.startswith("costsim.dashboard"):
                out.append(f"{where}: streamlit imported outside costsim/dashboard")
            if top == "simpy" and not imp.module.startswith("costsim.engine"):
                out.append(f"{where}: simpy imported outside costsim/engine")
            if imp.module.startswith("costsim.engine") and top in ENGINE_FORBIDS:
                out.append(f"{where}: the engine imports {top}")
            if top != "costsim":
                continue
            for target in _submodules(imp, modules):
                if target.startswith("costsim.dashboard") and not imp.module.startswith("costsim.dashboard"):
                    out.append(f"{where}: {imp.module} imports the dashboard ({target}); only app.py may")
                mine, theirs = layer_of(imp.module), layer_of(target)
                for module, layer in ((imp.module, mine), (target, theirs)):
                    if layer == FACADE and module != "costsim" and module.split(".")[1] not in ("report", "cli",
                                                                                                  "dashboard"):
                        out.append(f"{where}: {module} is in no layer of DESIGN.md section 1")
                if mine is not None and theirs is not None and theirs > mine:
                    out.append(f"{where}: {imp.module} ({LAYERS[mine][0]}) imports {target} ({LAYERS[theirs][0]}), "
                               "a layer below it")
            private = [n for n in imp.names if n.startswith("_") and not n.startswith("__")]
            if private and imp.target != imp.module:
                out.append(f"{where}: private name(s) {', '.join(private)} imported from {imp.target}")
    return out
