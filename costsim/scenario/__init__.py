"""Schema layer: scenario models, YAML load/dump with line numbers, trace files, JSON schema."""

from costsim.scenario.errors import Problem, ScenarioError
from costsim.scenario.fleet import FleetOption, FleetPart, Option
from costsim.scenario.io import (
    dump_scenario,
    json_schema,
    parse_yaml,
    read_scenario,
    scenario_from_data,
    scenario_from_yaml,
)
from costsim.scenario.model import Decision, Economics, Scenario, Serving, ServingGPUs, TraceCheckpoint, Workload
from costsim.scenario.options import CloudOption, Failures, HybridOption, OwnedOption, Stockout
from costsim.scenario.trace import TraceTable, read_trace

__all__ = [
    "CloudOption",
    "Decision",
    "Economics",
    "Failures",
    "FleetOption",
    "FleetPart",
    "HybridOption",
    "Option",
    "OwnedOption",
    "Problem",
    "Scenario",
    "ScenarioError",
    "Serving",
    "ServingGPUs",
    "Stockout",
    "TraceCheckpoint",
    "TraceTable",
    "Workload",
    "dump_scenario",
    "json_schema",
    "parse_yaml",
    "read_scenario",
    "read_trace",
    "scenario_from_data",
    "scenario_from_yaml",
]
