"""Scenario editing for the dashboard: knobs -> a new validated scenario. No Streamlit here, so
it is tested like any other module; ``app.py`` only lays out widgets."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from costsim import api
from costsim.scenario import Scenario, scenario_from_data

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"


def shipped_scenarios(folder: Path = SCENARIO_DIR) -> dict[str, Path]:
    """Shipped scenario files by name, baseline first."""
    files = sorted(folder.glob("*.yaml"), key=lambda p: (p.stem != "baseline", p.stem))
    return {p.stem: p for p in files}


SETUPS = ("colocated sync", "disaggregated sync", "disaggregated async")
"""Placement and mode as one choice: async needs disaggregated placement."""


@dataclass(frozen=True)
class ClassKnobs:
    """What the sidebar changes for an RL class."""

    model_params_b: float
    response_mean: float
    response_cv: float
    setup: str  # one of SETUPS


@dataclass(frozen=True)
class Knobs:
    """What the sidebar changes: owned GPUs and cloud prices per option, the arrival scale, and
    the RL classes' model size, response length and its tail, placement and mode."""

    owned_gpus: dict[str, int]
    cloud_price: dict[str, float | None]
    arrival_scale: float
    classes: dict[str, ClassKnobs] = field(default_factory=dict)


def current_knobs(scenario: Scenario) -> Knobs:
    return Knobs(
        owned_gpus={o.name: o.gpus for o in scenario.options if o.kind == "owned"},
        cloud_price={o.name: o.price_per_gpu_hour for o in scenario.options if o.kind == "cloud"},
        arrival_scale=scenario.workload.arrival_scale,
        classes={
            c.name: ClassKnobs(c.model_params_b, c.rollout.lengths.mean, c.rollout.lengths.cv,
                               f"{c.placement} {c.mode}")
            for c in scenario.workload.classes
        },
    )


def _edit_class(cls: dict[str, Any], k: ClassKnobs) -> None:
    cls["model_params_b"] = float(k.model_params_b)
    lengths = cls["rollout"]["response_tokens"]
    cap = lengths["max"] if isinstance(lengths, dict) else max(float(lengths), 1.0)
    cls["rollout"]["response_tokens"] = {"mean": float(k.response_mean), "cv": float(k.response_cv), "max": cap}
    placement, mode = k.setup.split()
    cls["placement"], cls["mode"] = placement, mode
    if placement == "colocated":
        cls["rollout_gpu_fraction"] = None
    if mode == "sync":
        cls["max_staleness"] = None


def apply_knobs(scenario: Scenario, knobs: Knobs, source: str = "dashboard") -> Scenario:
    """The scenario with the knobs applied, validated and checked like a file (ScenarioError)."""
    data: dict[str, Any] = scenario.model_dump(mode="json", exclude_defaults=False)
    for opt in data["options"]:
        if opt["kind"] == "owned" and opt["name"] in knobs.owned_gpus:
            opt["gpus"] = int(knobs.owned_gpus[opt["name"]])
        if opt["kind"] == "cloud" and opt["name"] in knobs.cloud_price:
            opt["price_per_gpu_hour"] = knobs.cloud_price[opt["name"]]
    data["workload"]["arrival_scale"] = float(knobs.arrival_scale)
    for cls in data["workload"]["classes"]:
        if cls["name"] in knobs.classes:
            _edit_class(cls, knobs.classes[cls["name"]])
    edited = scenario_from_data(data, source, scenario.base_dir)
    return api.check(edited, source)
