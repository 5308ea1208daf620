"""Scenario editing for the dashboard: knobs -> a new validated scenario. No Streamlit here, so
it is tested like any other module; ``app.py`` only lays out widgets."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from costsim import api
from costsim.scenario import Scenario, scenario_from_data

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"


def shipped_scenarios(folder: Path = SCENARIO_DIR) -> dict[str, Path]:
    """Shipped scenario files by name, baseline first."""
    files = sorted(folder.glob("*.yaml"), key=lambda p: (p.stem != "baseline", p.stem))
    return {p.stem: p for p in files}


@dataclass(frozen=True)
class Knobs:
    """What the sidebar changes: owned GPUs and cloud prices per option, the arrival scale."""

    owned_gpus: dict[str, int]
    cloud_price: dict[str, float | None]
    arrival_scale: float


def current_knobs(scenario: Scenario) -> Knobs:
    return Knobs(
        owned_gpus={o.name: o.gpus for o in scenario.options if o.kind == "owned"},
        cloud_price={o.name: o.price_per_gpu_hour for o in scenario.options if o.kind == "cloud"},
        arrival_scale=scenario.workload.arrival_scale,
    )


def apply_knobs(scenario: Scenario, knobs: Knobs, source: str = "dashboard") -> Scenario:
    """The scenario with the knobs applied, validated and checked like a file (ScenarioError)."""
    data: dict[str, Any] = scenario.model_dump(mode="json", exclude_defaults=False)
    for opt in data["options"]:
        if opt["kind"] == "owned" and opt["name"] in knobs.owned_gpus:
            opt["gpus"] = int(knobs.owned_gpus[opt["name"]])
        if opt["kind"] == "cloud" and opt["name"] in knobs.cloud_price:
            opt["price_per_gpu_hour"] = knobs.cloud_price[opt["name"]]
    data["workload"]["arrival_scale"] = float(knobs.arrival_scale)
    edited = scenario_from_data(data, source, scenario.base_dir)
    return api.check(edited, source)
