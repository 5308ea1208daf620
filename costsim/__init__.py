"""costsim: should we build (own) GPUs or rent them for RL training, and what does each choice
do to cost, queue delay and iteration speed? See README.md and docs/ (docs/architecture.md: the layers).

Every function here checks its arguments and its scenario in full and raises ``ScenarioError``
(file or function, field, message) on bad input: ``simulate`` re-validates and re-checks a
``Scenario`` object however it was built.
"""

from costsim.runs.api import dump_scenario, load_scenario, load_scenario_text, scenario_from_data, simulate
from costsim.runs.budget import DEFAULT_MAX_EVENTS
from costsim.runs.memo import RunMemo
from costsim.results import Results
from costsim.scenario import Scenario, ScenarioError

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_MAX_EVENTS",
    "Results",
    "RunMemo",
    "Scenario",
    "ScenarioError",
    "__version__",
    "decide",
    "dump_scenario",
    "load_scenario",
    "load_scenario_text",
    "optimize",
    "scenario_from_data",
    "simulate",
    "sweep",
]


def __getattr__(name: str):
    """``costsim.sweep`` (``costsim.runs.sweep.sweep``), ``costsim.decide`` and ``costsim.optimize``
    (``costsim.decisions``), imported on first use: they bring scipy.stats and the
    executors, which a single run does not need (half a second at every import)."""
    if name == "sweep":
        from costsim.runs.sweep import sweep

        return sweep
    if name in ("decide", "optimize"):
        from costsim import decisions

        return getattr(decisions, name)
    raise AttributeError(f"module 'costsim' has no attribute {name!r}")
