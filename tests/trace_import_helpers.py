"""Shared by the importer tests: run ``costsim import-trace`` and replay what it wrote."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

import costsim
from costsim.cli.import_trace import import_trace_command
from costsim.scenario import scenario_from_data
from costsim.scenario.trace import read_trace
from costsim.traces.common import COLUMNS


def cli(*args: str):
    """``costsim import-trace ...`` (the command as cli.py registers it)."""
    app = typer.Typer()
    app.command("import-trace")(import_trace_command)
    app.command("unused")(lambda: None)  # two commands: typer keeps the command name
    return CliRunner().invoke(app, ["import-trace", *args])


def assert_round_trip(fmt: str, source: Path, frame: pd.DataFrame, folder: Path, gpus: int = 64,
                      flags: tuple[str, ...] = ()) -> None:
    """``import-trace`` writes ``frame`` as a trace costsim reads back; replayed on an owned pool of
    ``gpus`` with no failures over 30 days, every job runs once, for its GPUs × duration."""
    out = cli(fmt, str(source), "--out", str(folder / "trace.csv"), *flags)
    assert out.exit_code == 0, out.output
    assert f"wrote {folder / 'trace.csv'}: {len(frame)} jobs" in out.output
    written = pd.read_csv(folder / "trace.csv")
    assert list(written.columns) == list(COLUMNS)
    assert np.array_equal(written.gpus, frame.gpus) and np.allclose(written.duration_h, frame.duration_h)
    assert len(read_trace(folder / "trace.csv")) == len(frame)
    data = {"name": "round-trip", "horizon_days": 30, "workload": {"trace": "trace.csv"},
            "options": [{"name": "own", "kind": "owned", "gpu_type": "H100", "gpus": gpus, "lead_time_days": 0,
                         "failures": None}]}
    jobs = costsim.simulate(scenario_from_data(data, "test", folder)).jobs
    assert len(jobs) == len(written) and jobs.completed.all()
    assert jobs.gpu_hours.sum() == pytest.approx((written.gpus * written.duration_h).sum(), rel=1e-9)
