"""Decisions on top of runs and sweeps (DESIGN.md section 14): a fair comparison (fair.py), the
verdict (verdict.py), targets (targets.py), the cheapest configuration meeting them
(optimize.py), the Pareto frontier (pareto.py) and the sensitivity tornado (tornado.py).

``costsim.decisions.tornado`` is the function (the module's name is shadowed by it here; import
the module as ``importlib.import_module("costsim.decisions.tornado")`` if you need it)."""

from costsim.decisions.fair import fair_rows
from costsim.decisions.optimize import Optimum, optimize
from costsim.decisions.pareto import frontier, sweep_table
from costsim.decisions.targets import Target, parse_target
from costsim.decisions.tornado import Tornado, tornado
from costsim.decisions.verdict import Verdict, decide

__all__ = ["Optimum", "Target", "Tornado", "Verdict", "decide", "fair_rows", "frontier", "optimize", "parse_target",
           "sweep_table", "tornado"]
