"""What a dashboard rerun after one knob costs to simulate: ``simulate`` with the worker's memo
(``costsim.runs.memo``) against a plain ``simulate``, side by side in one process, on the shipped
baseline (its 365 days), for the knobs a user turns most.

Each knob is measured as the dashboard meets it: the memo has just run the baseline, then the
edited scenario is run through it (a fresh memo primed each repeat, so every repeat is a first
rerun, not a hit on itself). The tables are checked equal to the plain run's.

    .venv/bin/python benchmarks/dashboard_rerun.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import best

import costsim
from costsim.runs import api
from costsim.runs.memo import RunMemo
from costsim.scenario import scenario_from_data

ROOT = Path(__file__).resolve().parent.parent
REPEATS = 3


def edited(scenario: costsim.Scenario, change) -> costsim.Scenario:
    data = scenario.model_dump(mode="json")
    change(data)
    return scenario_from_data(data, "edited", scenario.base_dir)


def option(data: dict, name: str) -> dict:
    return next(o for o in data["options"] if o["name"] == name)


KNOBS = {
    "cloud-od $/GPU-hour 2.99 -> 2.79": lambda d: option(d, "cloud-od").update(price_per_gpu_hour=2.79),
    "electricity $0.173/kWh": lambda d: d["economics"].update(electricity_usd_per_kwh=0.173),
    "own-256 GPUs 256 -> 320": lambda d: option(d, "own-256").update(gpus=320),
    "arrival scale 1.0 -> 1.2": lambda d: d["workload"].update(arrival_scale=1.2),
}


def memo_rerun_s(base: costsim.Scenario, after: costsim.Scenario) -> tuple[float, costsim.Results]:
    """The shortest time of ``REPEATS`` reruns of ``after``, each through a fresh memo primed with
    the baseline (the priming is not timed), and the last result."""
    times, out = [], None
    for _ in range(REPEATS):
        memo = RunMemo()
        api.simulate(base, memo=memo)
        t = time.perf_counter()
        out = api.simulate(after, memo=memo)
        times.append(time.perf_counter() - t)
    return min(times), out  # type: ignore[return-value]


def main() -> None:
    base = costsim.load_scenario(ROOT / "scenarios" / "baseline.yaml")
    print(f"baseline, {base.horizon_days:g} days, {len(base.options)} options; best of {REPEATS}")
    print(f"{'knob':36} {'plain s':>8} {'memo s':>8} {'ratio':>6}")
    for label, change in KNOBS.items():
        after = edited(base, change)
        plain_s, plain = best(lambda after=after: api.simulate(after), REPEATS)
        memo_s, out = memo_rerun_s(base, after)
        for name in ("summary", "jobs", "cashflow"):
            pd.testing.assert_frame_equal(getattr(out, name), getattr(plain, name))
        print(f"{label:36} {plain_s:8.2f} {memo_s:8.2f} {memo_s / plain_s:6.2f}")


if __name__ == "__main__":
    main()
