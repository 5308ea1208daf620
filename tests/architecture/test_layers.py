"""The layers of DESIGN.md section 1 hold in the package's import graph (function-level imports
included): no upward import, streamlit only in costsim/dashboard, simpy only in the engine, no
pandas/plotly/yaml in the engine, the dashboard imported only by app.py, no private name imported
from another module, and ``__init__`` files that only re-export."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

from architecture.import_graph import violations

import costsim

PACKAGE = Path(costsim.__file__).resolve().parent


def test_the_package_keeps_its_layers():
    found = violations(PACKAGE)
    assert not found, "\n".join(found)


def test_a_planted_upward_import_is_found(tmp_path):
    copy = tmp_path / "costsim"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.yaml"))
    models = copy / "models" / "rl.py"
    # Inside a function, where an import hides from a reader of the file's top.
    models.write_text(models.read_text() + "\n\ndef _planted():\n    from costsim.engine import run_option\n")
    (copy / "engine" / "owned.py").write_text((copy / "engine" / "owned.py").read_text() + "\nimport pandas\n")
    (copy / "results" / "costing.py").write_text((copy / "results" / "costing.py").read_text()
                                                 + "\nfrom costsim.runs.sweep import _private\n")
    (copy / "plots" / "layout.py").write_text((copy / "plots" / "layout.py").read_text() + "\nimport streamlit\n")
    # Decisions return numbers: wording them with the formatter is presentation's (a layer below).
    verdict = copy / "decisions" / "verdict.py"
    verdict.write_text(verdict.read_text() + "\n\ndef _said():\n    from costsim.present.formats import money\n")
    found = "\n".join(violations(copy))
    assert "costsim/models/rl.py" in found and "imports costsim.engine (engine), a layer below it" in found
    assert "costsim/engine/owned.py" in found and "the engine imports pandas" in found
    assert "private name(s) _private imported from costsim.runs.sweep" in found
    assert "costsim/results/costing.py" in found and "imports costsim.runs.sweep (runs), a layer below it" in found
    assert "costsim/plots/layout.py" in found and "streamlit imported outside costsim/dashboard" in found
    assert ("costsim/decisions/verdict.py" in found
            and "imports costsim.present.formats (presentation), a layer below it" in found)


def test_init_files_only_re_export():
    """A package's ``__init__`` holds a docstring, imports and ``__all__``, or lazy re-exports (a
    ``_WHERE`` table read by ``__getattr__``): logic lives in a module named for it."""
    for init in sorted(PACKAGE.rglob("__init__.py")):
        tree = ast.parse(init.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue  # the docstring
            if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["__all__"]:
                continue
            # Lazy re-exports: a table of names and their modules, and the module __getattr__/__dir__ reading it.
            if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] in (["_WHERE"],
                                                                                                  ["_PACKAGES"]):
                continue
            if isinstance(node, ast.FunctionDef) and node.name in ("__getattr__", "__dir__"):
                continue
            if init.parent == PACKAGE and isinstance(node, ast.If):  # TYPE_CHECKING imports for type checkers
                continue
            raise AssertionError(f"{init.relative_to(PACKAGE.parent)}:{node.lineno}: logic in an __init__ file")


def test_only_app_py_imports_the_dashboard_and_streamlit():
    """Outside the package, app.py is the dashboard's one importer; benchmarks and the CLI never
    import streamlit (so the CLI and the package run without the app extra)."""
    root = PACKAGE.parent
    assert "costsim.dashboard" in (root / "app.py").read_text(encoding="utf-8")
    for path in sorted((root / "benchmarks").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "import streamlit" not in text, path
        assert "costsim.dashboard" not in text or "dashboard" in path.name, path


def test_a_module_in_no_layer_and_a_hidden_import_are_found(tmp_path):
    copy = tmp_path / "costsim"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.yaml"))
    (copy / "pricing").mkdir()
    (copy / "pricing" / "core.py").write_text("from costsim.units import HOURS_PER_DAY\n")
    rl = copy / "models" / "rl.py"
    rl.write_text(rl.read_text() + "\n\ndef _hidden():\n    import importlib\n"
                  "    return importlib.import_module('costsim.runs.api')\n")
    found = "\n".join(violations(copy))
    assert "costsim.pricing.core is in no layer" in found
    assert "costsim/models/rl.py" in found and "imports costsim.runs.api (runs), a layer below it" in found


def test_no_path_is_built_from_the_package_location():
    """A path from ``__file__`` reaches outside the package on a source checkout and nowhere on a
    wheel install: data inside the package is read with importlib.resources, the rest is given."""
    uses = [f"{p.relative_to(PACKAGE.parent)}" for p in sorted(PACKAGE.rglob("*.py"))
            if "__file__" in p.read_text(encoding="utf-8")]
    assert not uses, uses
