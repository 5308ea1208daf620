"""costsim: should we build (own) GPUs or rent them for RL training, and what does each choice
do to cost, queue delay and iteration speed? See README.md and docs/ (docs/architecture.md: the layers).

Every function here checks its arguments and its scenario in full and raises ``ScenarioError``
(file or function, field, message) on bad input: ``simulate`` (and ``prepare``, which prepares a
scenario once for ``simulate`` to run on many seeds) re-validates and re-checks a ``Scenario``
object however it was built. Every error costsim raises on purpose is a
``CostsimError``: ``ScenarioError`` (bad input), ``ArgumentError`` (a bad argument to a function),
``ExecutorError`` (a worker or cluster failed) and ``OutputError`` (an output folder cannot be written).

The façade imports nothing itself: each name is imported on first use, so ``import costsim`` (and
``import costsim.models.rl``) costs nothing beyond what is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from costsim._version import __version__ as __version__

if TYPE_CHECKING:
    from costsim import plots as plots
    from costsim.errors import ArgumentError as ArgumentError
    from costsim.errors import CostsimError as CostsimError
    from costsim.errors import ExecutorError as ExecutorError
    from costsim.errors import OutputError as OutputError
    from costsim.present.capacity_plan import capacity_plan as capacity_plan
    from costsim.present.optimize import optimize as optimize
    from costsim.present.verdict import decide as decide
    from costsim.results.contract import Results as Results
    from costsim.runs.api import dump_scenario as dump_scenario
    from costsim.runs.api import load_scenario as load_scenario
    from costsim.runs.api import load_scenario_text as load_scenario_text
    from costsim.runs.api import prepare as prepare
    from costsim.runs.api import scenario_from_data as scenario_from_data
    from costsim.runs.api import simulate as simulate
    from costsim.runs.budget import DEFAULT_MAX_EVENTS as DEFAULT_MAX_EVENTS
    from costsim.runs.memo import RunMemo as RunMemo
    from costsim.runs.sweep import sweep as sweep
    from costsim.scenario import Scenario as Scenario
    from costsim.scenario import ScenarioError as ScenarioError

# public name -> the module that defines it
_WHERE = {
    "ArgumentError": "costsim.errors",
    "CostsimError": "costsim.errors",
    "DEFAULT_MAX_EVENTS": "costsim.runs.budget",
    "ExecutorError": "costsim.errors",
    "OutputError": "costsim.errors",
    "Results": "costsim.results.contract",
    "RunMemo": "costsim.runs.memo",
    "Scenario": "costsim.scenario",
    "ScenarioError": "costsim.scenario",
    "capacity_plan": "costsim.present.capacity_plan",
    "decide": "costsim.present.verdict",
    "dump_scenario": "costsim.runs.api",
    "load_scenario": "costsim.runs.api",
    "load_scenario_text": "costsim.runs.api",
    "optimize": "costsim.present.optimize",
    "prepare": "costsim.runs.api",
    "scenario_from_data": "costsim.runs.api",
    "simulate": "costsim.runs.api",
    "sweep": "costsim.runs.sweep",
}

# Subpackages reached as attributes (``import costsim; costsim.runs.api``), as an eager façade allowed.
_PACKAGES = ("calibration", "catalog", "cli", "decisions", "engine", "models", "plan", "plots", "present", "report",
             "results", "runs", "scenario", "traces", "workload")

__all__ = sorted([*_WHERE, "__version__"])


def __getattr__(name: str) -> Any:
    """Each public name from its module, and each subpackage, on first use (then kept here)."""
    if name in _PACKAGES:
        value: Any = importlib.import_module(f"costsim.{name}")
    elif name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name]), name)
    else:
        raise AttributeError(f"module 'costsim' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*__all__, *_PACKAGES])
