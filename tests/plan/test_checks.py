"""The cross-field checks on the resolved plans, each against a hand calculation."""

from __future__ import annotations

import pytest

import costsim
from costsim.runs import api
from costsim.scenario import ScenarioError, scenario_from_data

FLAT_SERVING = {"gpus": {"base": 10, "diurnal_amplitude": 0, "growth_per_year": 0}}  # 10 GPUs every hour


def sc(options, job_gpus=4, **top):
    """A schema-valid (unchecked) scenario of one job class of ``job_gpus`` GPUs over two days."""
    data = {"name": "t", "horizon_days": 2, "seed": 1, "workload": {"job_classes": [
        {"name": "j", "arrivals_per_day": 4, "gpus": job_gpus, "duration": {"law": "lognormal", "mean_h": 1, "cv": 0.5}}]},
        "options": options, **top}
    return scenario_from_data(data, "t", ".")


def test_the_engine_runs_what_the_reserved_check_lets_through():
    # 16 reserved GPUs (two 8-GPU instances), serving 10 every hour: 6 free. A 4-GPU job holds 4 of
    # one instance there (the engine runs a reservation as a cluster of instances), so it runs; one
    # of 7 never does. Counting whole instances (8) for the 4-GPU job would refuse it.
    res = {"name": "res", "kind": "cloud", "gpu_type": "H100", "pricing": "reserved", "reserved_gpus": 16,
           "scheduler": "fifo"}
    scenario = api.check(sc([res], job_gpus=4, serving=FLAT_SERVING), "t")
    out = costsim.simulate(scenario)
    assert out.summary["jobs_completed"].iloc[0] > 0
    assert (out.timeseries["serving_gpus"] == 10).all()  # served in full beside the RL jobs
    with pytest.raises(ScenarioError, match="serving never leaves that many free"):
        api.check(sc([res], job_gpus=7, serving=FLAT_SERVING), "t")
