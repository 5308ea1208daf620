"""Build and simulate small scenarios in Python (no YAML needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import simpy

import costsim
from costsim.runs import api
from costsim.scenario import scenario_from_data


TINY_RL = """\
name: tiny
horizon_days: 3
seed: 1
workload:
  classes:
    - name: grpo
      arrivals_per_day: 6
      gpus: 8
      iterations: {mean: 40, cv: 0.5}
      model_params_b: 7
options:
  - {name: own, kind: owned, gpu_type: H100, gpus: 16, lead_time_days: 0}
  - {name: cloud, kind: cloud, gpu_type: H100}
"""
"""A three-day RL scenario of a few jobs on an owned cluster and on-demand: the smallest that sweeps."""
TWO_SIZES_SWEEP = "base: s.yaml\nseed: 3\nreplications: 2\ngrid:\n  options.own.gpus: [16, 24]\n"
"""A sweep of ``TINY_RL`` saved as s.yaml: two owned sizes, two replications."""


def invoke_cli(*args, columns: str | None = None):
    """``costsim ARGS`` in this process (``COLUMNS`` set when given); fails on any traceback."""
    from typer.testing import CliRunner

    from costsim.cli.commands import app

    result = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": columns} if columns else None)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    return result


def scenario(folder: Path, rows, options: list[dict[str, Any]], horizon_days: float = 10.0,
             columns=("submit_h", "gpus", "duration_h"), **top: Any) -> costsim.Scenario:
    """A checked scenario over ``rows`` (written as a trace CSV in ``folder``)."""
    trace = folder / "trace.csv"
    pd.DataFrame(list(rows), columns=list(columns)).to_csv(trace, index=False)
    workload = {"trace": "trace.csv", **top.pop("workload", {})}
    data = {"name": "t", "horizon_days": horizon_days, "workload": workload, "options": options, **top}
    sc = scenario_from_data(data, "test", folder)
    return api.check(sc, "test")


def owned(name="own", gpus=16, **kw) -> dict[str, Any]:
    """An owned option ready at once and, unless a test asks, without failures (deterministic)."""
    return {"name": name, "kind": "owned", "gpu_type": "H100", "gpus": gpus, "lead_time_days": 0, "failures": None, **kw}


def cloud(name="cloud", **kw) -> dict[str, Any]:
    """An on-demand option with no provisioning delay or startup (spot: never preempted unless asked)."""
    extra = {"preemptions_per_instance_day": 0} if kw.get("pricing") == "spot" else {}
    return {"name": name, "kind": "cloud", "gpu_type": "H100", "provisioning_delay_h": 0, "startup_h": 0, **extra, **kw}


def jobs_of(res: costsim.Results, option: str) -> pd.DataFrame:
    return res.jobs[res.jobs["option"] == option].reset_index(drop=True)


def bare_simpy_mmc(submit_h: np.ndarray, service_h: np.ndarray, servers: int) -> np.ndarray:
    """The textbook SimPy model: one process per job, a Resource of ``servers``; start times."""
    env = simpy.Environment()
    res = simpy.Resource(env, servers)
    start = np.full(len(submit_h), np.nan)
    submit = submit_h.tolist()
    service = service_h.tolist()

    def job(i):
        with res.request() as req:
            yield req
            start[i] = env.now
            yield env.timeout(service[i])

    def source():
        now = 0.0
        for i, t in enumerate(submit):
            yield env.timeout(t - now)
            now = t
            env.process(job(i))

    env.process(source())
    env.run()
    return start
