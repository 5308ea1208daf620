"""``costsim import-trace``: exit 2 with file:line and nothing written on bad input, --skip-bad
counts, refused flags, and the round trip import → validate → simulate."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import typer
from paths import TRACE_SAMPLES
from typer.testing import CliRunner

import costsim
from costsim.cli.import_trace import import_trace_command
from costsim.runs import api
from costsim.scenario import trace as T

DATA = TRACE_SAMPLES
app = typer.Typer(pretty_exceptions_enable=False)
app.command("import-trace")(import_trace_command)
app.command("noop")(lambda: None)  # two commands: typer keeps the command name in the arguments


def run(*args: str):
    return CliRunner().invoke(app, ["import-trace", *map(str, args)], env={"COLUMNS": "200"})


@pytest.mark.parametrize(("fmt", "name", "jobs"), [
    ("slurm", "slurm_sacct.txt", None), ("k8s-pods", "k8s_openb_pod_list.csv", None),
    ("helios", "helios_cluster_log.csv", None)])
def test_import_writes_a_trace_both_readers_accept(tmp_path, fmt, name, jobs):
    out = tmp_path / "trace.csv"
    result = run(fmt, DATA / name, "--out", out, "--mixed-gpu-types")  # the samples hold several GPU types
    assert result.exit_code == 0, result.output
    assert f"wrote {out}" in result.output
    fast, slow = T._read_columnar(out), T._read_strings(out, str(out))
    assert fast is not None  # the extra columns do not push a clean file to the slow reader
    for f in ("submit_h", "gpus", "duration_h", "job_id", "job_class", "priority"):
        assert np.array_equal(getattr(fast, f), getattr(slow, f)), f
    n = int(result.output.split(": ")[1].split(" jobs")[0].replace(",", ""))
    assert len(slow) == n


def test_bad_row_exits_2_names_line_and_writes_nothing(tmp_path):
    src = tmp_path / "sacct.txt"
    src.write_text("JobID|Submit|Start|End|State|AllocTRES\n"
                   "1|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|COMPLETED|gres/gpu=1\n"
                   "2|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|COMPLETED|gres/gpu=x\n")
    out = tmp_path / "trace.csv"
    out.write_text("previous\n")
    result = run("slurm", src, "--out", out)
    assert result.exit_code == 2
    assert f"error: {src}:3: AllocTRES: 'gres/gpu=x' is not a GPU count" in result.output
    assert "Traceback" not in result.output
    assert out.read_text() == "previous\n" and sorted(p.name for p in tmp_path.iterdir()) == ["sacct.txt", "trace.csv"]
    result = run("slurm", src, "--out", out, "--skip-bad")
    assert result.exit_code == 0, result.output
    assert "skipped 1 malformed row(s)" in result.output and f"skipped: {src}:3: AllocTRES" in result.output
    assert T.read_trace(out).job_id.tolist() == ["1"]


@pytest.mark.parametrize(("args", "message"), [
    (("helios", DATA / "helios_cluster_log.csv", "--gpu-type", "V100"), "--gpu-type: the helios format records no"),
    (("slurm", DATA / "slurm_sacct.txt", "--since", "2024-03-02", "--until", "2024-03-01"), "--until: must be after"),
    (("slurm", DATA / "slurm_sacct.txt", "--since", "March"), "--since: 'March' is not a time"),
    (("slurm", DATA / "slurm_sacct.txt", "--timezone", "Mars/Base"), "--timezone: 'Mars/Base' is not a time zone"),
    (("slurm", DATA / "slurm_sacct.txt", "--fractional", "half"), "--fractional: 'half': one of round-up, pool"),
    (("pbs", DATA / "slurm_sacct.txt"), "FORMAT: 'pbs': one of slurm"),
    (("slurm", DATA / "missing.txt"), "missing.txt: file not found"),
    (("slurm", DATA / "slurm_sacct.txt", "--since", "2030-01-01"), "no job to replay"),
])
def test_refused_flags_exit_2(tmp_path, args, message):
    out = tmp_path / "trace.csv"
    result = run(*args, "--out", out)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not out.exists()


def test_out_must_not_be_the_input(tmp_path):
    src = tmp_path / "s.txt"
    src.write_text((DATA / "slurm_sacct.txt").read_text())
    result = run("slurm", src, "--out", src)
    assert result.exit_code == 2 and "--out: is the input file" in result.output


SCENARIO = """\
name: imported
seed: 3
horizon_days: 4
warmup_days: 0
workload:
  trace: trace.csv
options:
  - name: own-64
    kind: owned
    gpu_type: H100
    gpus: 64
    lead_time_days: 0
    scheduler: fifo
  - name: cloud
    kind: cloud
    gpu_type: H100
    pricing: on_demand
"""


def test_round_trip_import_validate_simulate(tmp_path):
    out = tmp_path / "trace.csv"
    assert run("slurm", DATA / "slurm_sacct.txt", "--out", out, "--mixed-gpu-types").exit_code == 0
    (tmp_path / "s.yaml").write_text(SCENARIO)
    sc = api.load_scenario(tmp_path / "s.yaml")  # what `costsim validate` does
    res = costsim.simulate(sc)
    imported = pd.read_csv(out, dtype={"job_id": str}).set_index("job_id")
    for option in ("own-64", "cloud"):
        jobs = res.jobs[res.jobs["option"] == option].set_index("job_id")
        assert sorted(jobs.index) == sorted(imported.index)  # every imported job is replayed, once
        assert (jobs["gpus"] == imported.loc[jobs.index, "gpus"]).all()
        assert np.allclose(jobs["submit_h"], imported.loc[jobs.index, "submit_h"], rtol=0, atol=1e-9)
    # On unlimited cloud capacity every job runs its imported duration (or more: startup, billing).
    cloud = res.jobs[(res.jobs["option"] == "cloud") & res.jobs["completed"]].set_index("job_id")
    assert len(cloud) > 0.9 * len(imported)
    assert (cloud["end_h"] - cloud["start_h"] >= imported.loc[cloud.index, "duration_h"] - 1e-9).all()
