"""Shared fixtures: tiny scenarios written to a temp folder, and a hypothesis profile for CI."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=30)
settings.load_profile("ci")

ROOT = Path(__file__).resolve().parent.parent


def write_trace(folder: Path, rows: list[tuple], name: str = "jobs.csv", columns=("submit_h", "gpus", "duration_h")) -> Path:
    path = folder / name
    pd.DataFrame(rows, columns=list(columns)).to_csv(path, index=False)
    return path


def write_scenario(folder: Path, body: str, name: str = "s.yaml") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """A valid two-option scenario over a four-job trace."""
    write_trace(tmp_path, [(0, 8, 10), (1, 16, 5), (2, 4, 3), (2.5, 8, 1)])
    return write_scenario(tmp_path, """\
        name: tiny
        horizon_days: 2
        workload:
          trace: jobs.csv
        options:
          - name: own
            kind: owned
            gpu_type: H100
            gpus: 16
            lead_time_days: 0
            scheduler: backfill
          - name: cloud
            kind: cloud
            gpu_type: H100
        """)
