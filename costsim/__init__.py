"""costsim: should we build (own) GPUs or rent them for RL training, and what does each choice
do to cost, queue delay and iteration speed? See README.md and DESIGN.md."""

from costsim.api import load_scenario, load_scenario_text, simulate
from costsim.results import Results
from costsim.scenario import Scenario, ScenarioError, dump_scenario

__version__ = "0.1.0"

__all__ = [
    "Results",
    "Scenario",
    "ScenarioError",
    "__version__",
    "dump_scenario",
    "load_scenario",
    "load_scenario_text",
    "simulate",
]
