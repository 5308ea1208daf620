"""Decisions on top of runs and sweeps (DESIGN.md section 14), numbers only: a fair comparison
(``fair.py``), targets (``targets.py``), the verdict (``verdict.py``), the cheapest configuration
meeting them (``optimize.py``), the Pareto frontier (``pareto.py``), the sensitivity tornado
(``sensitivity.py``), the flips (``flips.py``) and time to a target score (``time_to_target.py``).

The names below are re-exported lazily: the verdict brings scipy and the optimizer the sweep
machinery, which light users (the dashboard's cards, ``fair_rows``) and the CLI's start-up do not
need. Inside costsim, modules import from the defining module."""

from __future__ import annotations

import importlib
from typing import Any

# Re-exported names -> their module, imported on first use (``from costsim.decisions import decide``).
_WHERE = {
    "fair_rows": "fair", "Target": "targets", "parse_target": "targets", "MAJORITY": "targets",
    "Verdict": "verdict", "decide": "verdict", "Optimum": "optimize", "optimize": "optimize",
    "frontier": "pareto", "sweep_table": "pareto", "Tornado": "sensitivity", "tornado": "sensitivity",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'costsim.decisions' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"costsim.decisions.{_WHERE[name]}"), name)
    globals()[name] = value  # after the submodule import, which binds the module's own name here
    return value
