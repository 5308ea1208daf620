"""Decisions on top of runs and sweeps (DESIGN.md section 14): a fair comparison (fair.py), the
verdict (verdict.py), targets (targets.py), the cheapest configuration meeting them
(optimize.py), the Pareto frontier (pareto.py) and the sensitivity tornado (sensitivity.py).

Names are imported on first use: the verdict brings scipy.stats and the optimizer the sweep
machinery, which light users (the dashboard's cards, ``fair_rows``) and the CLI's start-up do not
need. (The tornado's module is ``sensitivity``, not ``tornado``: a submodule of that name would be
bound over the function ``costsim.decisions.tornado`` whenever anything imported it.)"""

from __future__ import annotations

import importlib

_WHERE = {
    "fair_rows": "fair", "Target": "targets", "parse_target": "targets", "Verdict": "verdict", "decide": "verdict",
    "Optimum": "optimize", "optimize": "optimize", "frontier": "pareto", "sweep_table": "pareto",
    "Tornado": "sensitivity", "tornado": "sensitivity",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'costsim.decisions' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"costsim.decisions.{_WHERE[name]}"), name)
    globals()[name] = value  # after the submodule import, which binds the module's own name here
    return value
