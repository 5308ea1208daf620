"""Hostile outputs, continued: a report on a sweep folder protects every file the sweep's variants
read (a swept trace too, the base found from any working folder), ``optimize --out`` protects its
scenario, a report refuses swept values edited in the manifest, and ``optimize --workers`` is
capped at the cores as ``sweep``'s is. The truth in each test is the victim's bytes before the
command: they must be the same after it."""

from __future__ import annotations

import hashlib
import importlib
import json
from pathlib import Path

import pytest
from helpers import invoke_cli

from costsim.runs import executors

TRACED = """\
name: traced
horizon_days: 3
seed: 1
workload: {trace: trace.csv}
options:
  - {name: own, kind: owned, gpu_type: H100, gpus: 16, lead_time_days: 0}
  - {name: cloud, kind: cloud, gpu_type: H100, provisioning_delay_h: 0, startup_h: 0}
"""
JOBS = "submit_h,gpus,duration_h\n0,8,1\n1,16,2\n"
JOBS2 = "submit_h,gpus,duration_h\n0,8,2\n2,8,1\n"


@pytest.fixture
def here(tmp_path: Path, monkeypatch) -> Path:
    """The current folder, holding t1/s.yaml and its two traces."""
    (tmp_path / "t1").mkdir()
    (tmp_path / "t1" / "s.yaml").write_text(TRACED)
    (tmp_path / "t1" / "trace.csv").write_text(JOBS)
    (tmp_path / "t1" / "trace2.csv").write_text(JOBS2)
    monkeypatch.chdir(tmp_path / "t1")
    return tmp_path


def cli(*args) -> object:
    return invoke_cli(*args, columns="200")


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def flat(text: str) -> str:
    return " ".join(text.split())


def swept_trace(here: Path) -> None:
    """A sweep of t1/s.yaml over its trace into t1/swt, run from t1."""
    result = cli("sweep", "s.yaml", "--set", "workload.trace=trace.csv,trace2.csv", "--out", "swt",
                 "--executor", "local")
    assert result.exit_code == 0, result.output


def test_report_out_naming_a_swept_trace_is_refused(here):
    swept_trace(here)
    before = sha(here / "t1" / "trace2.csv")
    result = cli("report", "swt", "--out", "trace2.csv")
    assert result.exit_code == 2
    assert "is the input file" in flat(result.output) and "trace2.csv" in flat(result.output)
    assert sha(here / "t1" / "trace2.csv") == before


def test_report_from_another_folder_still_protects_the_base(here, monkeypatch):
    swept_trace(here)
    monkeypatch.chdir(here)
    before = sha(here / "t1" / "s.yaml")
    result = cli("report", "t1/swt", "--out", "t1/s.yaml")
    assert result.exit_code == 2
    assert "is the input file" in flat(result.output) and "s.yaml" in flat(result.output)
    assert sha(here / "t1" / "s.yaml") == before


def test_an_old_manifest_with_a_relative_base_is_read_against_the_sweep_folders_parent(here, monkeypatch):
    swept_trace(here)
    manifest = here / "t1" / "swt" / "sweep.json"
    data = json.loads(manifest.read_text())
    assert Path(data["base"]).is_absolute()  # new manifests record where the base is
    manifest.write_text(manifest.read_text().replace(json.dumps(data["base"]), json.dumps("s.yaml")))
    monkeypatch.chdir(here)
    before = sha(here / "t1" / "trace2.csv")
    result = cli("report", "t1/swt", "--out", "t1/trace2.csv")
    assert result.exit_code == 2 and "trace2.csv" in flat(result.output)
    assert sha(here / "t1" / "trace2.csv") == before


def test_a_report_whose_base_cannot_be_loaded_refuses_to_write(here, monkeypatch):
    swept_trace(here)
    manifest = here / "t1" / "swt" / "sweep.json"
    data = json.loads(manifest.read_text())
    manifest.write_text(manifest.read_text().replace(json.dumps(data["base"]), json.dumps("gone/s.yaml")))
    (here / "t1" / "victim.html").write_text("keep me")
    result = cli("report", "swt", "--out", "victim.html")
    assert result.exit_code == 2 and "gone/s.yaml" in flat(result.output)
    assert (here / "t1" / "victim.html").read_text() == "keep me"


def test_optimize_out_holding_its_scenario_is_refused_before_searching(here):
    result = cli("run", "s.yaml", "--out", "o")
    assert result.exit_code == 0, result.output
    before = sha(here / "t1" / "o" / "scenario.resolved.yaml")
    result = cli("optimize", "o/scenario.resolved.yaml", "--vary", "options.own.gpus=64,128", "--out", "o",
                 "--executor", "local", "--replications", "1")
    assert result.exit_code == 2
    assert "scenario.resolved.yaml" in flat(result.output)
    assert sha(here / "t1" / "o" / "scenario.resolved.yaml") == before


def test_report_refuses_swept_values_edited_in_the_manifest(here):
    result = cli("sweep", "s.yaml", "--set", "options.own.gpus=64,128", "--out", "swg", "--executor", "local")
    assert result.exit_code == 0, result.output
    manifest = here / "t1" / "swg" / "sweep.json"
    data = json.loads(manifest.read_text())
    first = data["variants"][0]
    assert first["params"] == {"options.own.gpus": 64}
    first["params"] = {"options.own.gpus": 512}
    manifest.write_text(json.dumps(data))
    (here / "t1" / "r.html").write_text("keep me")
    result = cli("report", "swg", "--out", "r.html")
    assert result.exit_code == 2
    assert first["id"] in flat(result.output) and "params" in flat(result.output)
    assert (here / "t1" / "r.html").read_text() == "keep me"


def test_optimize_workers_are_capped_at_the_cores_with_a_warning(here, monkeypatch):
    asked = []
    real = executors.open_executor

    def spy(name, workers, address=None):
        asked.append(workers)
        return real("local", 1, None)

    monkeypatch.setattr(executors, "available_cores", lambda: 2)
    # The module, not the package's lazy name for its function (costsim.decisions.optimize).
    monkeypatch.setattr(importlib.import_module("costsim.decisions.optimize"), "open_executor", spy)
    result = cli("optimize", "s.yaml", "--vary", "options.own.gpus=16,24,32,40,48,56", "--workers", "6",
                 "--replications", "1", "--max-runs", "6")
    assert result.exit_code == 0, result.output
    assert "--workers 6 is more than the 2 core(s)" in flat(result.output)
    assert asked and max(asked) == 2
    asked.clear()
    result = cli("optimize", "s.yaml", "--vary", "options.own.gpus=16,24,32,40,48,56", "--workers", "6",
                 "--force-workers", "--replications", "1", "--max-runs", "6")
    assert result.exit_code == 0, result.output
    assert "more than the" not in flat(result.output)
    assert asked and max(asked) > 2  # forced: more workers than the cores


def test_a_task_file_whose_checksum_does_not_cover_its_params_is_named_as_older(tmp_path):
    import pandas as pd

    from costsim.runs.taskfiles import TaskId, read_task_file, write_task_file

    frame = pd.DataFrame({"replication": [0], "seed": [7], "total_cost_usd": [1.5]})
    old = TaskId("v000", 0, 7, "0" * 64)  # an older costsim's identity: no swept values
    write_task_file(frame, tmp_path / "t.parquet", old, {"params": {"options.own.gpus": 64}})
    now = TaskId("v000", 0, 7, "0" * 64, {"options.own.gpus": 64})
    table, why = read_task_file(tmp_path / "t.parquet", now)
    assert table is None and "does not cover its swept values (an older costsim wrote it)" in why
    write_task_file(frame, tmp_path / "t.parquet", now, {})
    table, why = read_task_file(tmp_path / "t.parquet", now)
    assert why is None and table["total_cost_usd"].tolist() == [1.5]
    edited = TaskId("v000", 0, 7, "0" * 64, {"options.own.gpus": 512})
    table, why = read_task_file(tmp_path / "t.parquet", edited)
    assert table is None and "is not this task's file (its params differs from the manifest's)" in why
