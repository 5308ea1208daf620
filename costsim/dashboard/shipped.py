"""The scenarios and traces shipped beside the dashboard, and which scenario a new session shows
first. Imports nothing heavy: the server looks here before costsim's schema and models are
imported (``costsim.dashboard.pool``: whether the first screen's runs are on disk already).
"""

from __future__ import annotations

import os
from pathlib import Path

SCENARIOS_ENV = "COSTSIM_SCENARIOS"
# The shipped scenarios' folder: the environment's, else scenarios/ in the folder the server was
# started from (``make app`` starts it from the repository). Not found through the package's own
# location: an installed wheel holds no scenarios.
SCENARIO_DIR = Path(os.environ.get(SCENARIOS_ENV) or "scenarios").resolve()


def shipped_scenarios(folder: Path = SCENARIO_DIR) -> dict[str, Path]:
    """Shipped scenario files by name, baseline first (the one a new session shows first)."""
    files = sorted(folder.glob("*.yaml"), key=lambda p: (p.stem != "baseline", p.stem))
    return {p.stem: p for p in files}


def shipped_traces(folder: Path = SCENARIO_DIR) -> dict[str, Path]:
    """Shipped traces by the name a scenario gives them (``traces/<file>.csv``): regular files
    directly in ``folder/traces``, so a link cannot lead an upload elsewhere."""
    traces = (folder / "traces").resolve()
    return {f"traces/{p.name}": p for p in sorted(traces.glob("*.csv"))
            if p.is_file() and p.resolve().parent == traces}


__all__ = ["SCENARIOS_ENV", "SCENARIO_DIR", "shipped_scenarios", "shipped_traces"]
