"""The Plan tab's search without Streamlit (``plan_tab.py`` lays it out): ``costsim plan`` of the
dashboard's scenario, run in a worker process by ``decision_runs.run_bounded`` (a Job of kind
"plan") within the dashboard's limits, and the fields a user may vary.

``capacity_plan`` reads a scenario file (its runs re-read it in every worker), while the dashboard
holds a Scenario that may have been edited: the worker writes it to a file of its own in a fresh
temporary folder, a relative trace path made absolute so the jobs it names are the same."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import yaml

from costsim.dashboard.decision_runs import numeric_paths
from costsim.present.capacity_plan import WordedPlan, capacity_plan
from costsim.runs import api
from costsim.scenario import Scenario

MAX_TRIALS = 24  # the sampler's trials the dashboard runs: more belongs to `costsim plan`
MAX_REPLICATIONS = 3
MAX_RUNS = 150  # simulations at most, refinement included (a run: every option once)
BATCH = 4  # configurations proposed and run at a time, as `costsim plan`'s default


def plan_paths(scenario: Scenario) -> list[str]:
    """Fields a plan may vary here: each option's numeric fields (sizes, reservations, burst
    waits, prices), as ``numeric_paths`` lists them, options first."""
    return [p for p in numeric_paths(scenario) if p.startswith("options.")]


def vary_args(ranges: dict[str, str]) -> list[str]:
    """``--vary`` arguments from {path: "LOW..HIGH" or "V1,V2"}, blank ranges left out."""
    return [f"{p}={text.strip()}" for p, text in ranges.items() if text.strip()]


def scenario_file(scenario: Scenario, folder: Path) -> Path:
    """``scenario`` written into ``folder`` as YAML that loads back equal, its trace (if a
    relative path) pointing at the file the scenario reads."""
    data = yaml.safe_load(api.dump_scenario(scenario))
    trace = (data.get("workload") or {}).get("trace")
    if isinstance(trace, str) and not Path(trace).is_absolute():
        data["workload"]["trace"] = str((Path(scenario.base_dir) / trace).resolve())
    path = folder / "scenario.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def plan_of(scenario: Scenario, vary: list[str], *, replications: int, trials: int, batch: int = BATCH,
            max_runs: int = MAX_RUNS, executor: str = "local", workers: int | None = None,
            progress: Callable[[int, int], None] | None = None) -> WordedPlan:
    """``costsim.capacity_plan`` of ``scenario`` (its own targets) over ``vary``, with its words."""
    with tempfile.TemporaryDirectory(prefix="costsim-plan-") as folder:
        path = scenario_file(scenario, Path(folder))
        return capacity_plan(path, None, vary, replications=replications, trials=trials, batch=batch,
                             max_runs=max_runs, executor=executor, workers=workers if executor != "local" else None,
                             progress=progress)


__all__ = ["BATCH", "MAX_REPLICATIONS", "MAX_RUNS", "MAX_TRIALS", "plan_of", "plan_paths", "scenario_file",
           "vary_args"]
