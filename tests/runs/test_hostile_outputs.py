"""Hostile outputs: every writer refuses a path that is one of its inputs or is not a regular file,
never removes what it did not write, and says what went wrong naming the file (exit 2, no
traceback). The truth in each test is the victim's bytes (or kind of file) before the command:
they must be the same after it.

Scenarios are tiny (3 days; a run simulates in tens of milliseconds)."""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
import subprocess
from pathlib import Path

import pytest
from helpers import TINY_RL, TWO_SIZES_SWEEP, invoke_cli
from paths import TRACE_SAMPLES

import costsim
from costsim.cli import commands as cli_mod
from costsim.errors import OutputError
from costsim.runs import dataset, outdir
from costsim.runs.export import OUTPUT_NAMES
from costsim.runs.outdir import OutputFolder
from costsim.runs.sweepfile import load_sweep
from costsim.scenario import ScenarioError

SLURM = TRACE_SAMPLES / "slurm_sacct.txt"

RL = TINY_RL
TRACED = """\
name: traced
horizon_days: 3
workload: {trace: TRACE}
options:
  - {name: cloud, kind: cloud, gpu_type: H100, provisioning_delay_h: 0, startup_h: 0}
"""
JOBS = "submit_h,gpus,duration_h\n0,8,1\n1,16,2\n2,8,1\n"  # three submit times: fit-workload fits it
SWEEP = TWO_SIZES_SWEEP


@pytest.fixture
def here(tmp_path: Path, monkeypatch) -> Path:
    """A folder (the current one) with an RL scenario, a traced one, its trace and a sweep file."""
    (tmp_path / "s.yaml").write_text(RL)
    (tmp_path / "t.yaml").write_text(TRACED.replace("TRACE", "jobs.csv"))
    (tmp_path / "jobs.csv").write_text(JOBS)
    (tmp_path / "sw.yaml").write_text(SWEEP)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def cli(*args) -> object:
    """The CLI in this process, 200 columns wide; no traceback, whatever happens."""
    return invoke_cli(*args, columns="200")


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def digest(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with its sha256."""
    return {str(p.relative_to(folder)): sha(p) for p in sorted(folder.rglob("*")) if p.is_file()}


def mode(path: Path) -> int:
    return os.lstat(path).st_mode


# -- 1. a writer never overwrites one of its inputs ----------------------------------------------------

@pytest.mark.parametrize("victim", ["t.yaml", "jobs.csv", "link-to-scenario.html"])
def test_report_out_that_is_its_scenario_or_trace_is_refused(here, victim):
    (here / "link-to-scenario.html").symlink_to("t.yaml")
    before = {name: sha(here / name) for name in ("t.yaml", "jobs.csv")}
    result = cli("report", "t.yaml", "--out", victim, "--replications", "1", "--no-tornado")
    assert result.exit_code == 2
    named = "t.yaml" if victim.startswith("link") else victim
    assert re.search(rf"--out: is the input file (\S*/)?{re.escape(named)}, which writing would destroy", result.output)
    assert {name: sha(here / name) for name in before} == before
    assert (here / "link-to-scenario.html").is_symlink()


@pytest.mark.parametrize("victim", ["sw/sweep.json", "sw/means.csv", "sw/runs/report.html", "s.yaml"])
def test_report_out_in_a_sweep_folder_or_its_base_is_refused_and_the_sweep_stays_usable(here, victim):
    costsim.sweep("sw.yaml", out="sw", executor="local")
    before = digest(here / "sw")
    base = sha(here / "s.yaml")
    result = cli("report", "sw", "--out", victim)
    assert result.exit_code == 2 and "--out" in result.output
    if "runs" in victim:
        assert "inside sw/runs" in result.output
    else:  # the base is named by the absolute path the manifest records
        assert re.search(rf"is the input file (\S*/)?{re.escape(victim)},", result.output)
    assert digest(here / "sw") == before and sha(here / "s.yaml") == base
    ran = []
    costsim.sweep("sw.yaml", out="sw", executor="local", progress=lambda d, t: ran.append(t))
    assert ran == [0]  # every saved task is still this sweep's: nothing runs again


def test_import_and_fit_refuse_their_input_also_through_a_symlink(here):
    (here / "src.txt").write_bytes(SLURM.read_bytes())
    (here / "link.csv").symlink_to("src.txt")
    result = cli("import-trace", "slurm", "src.txt", "--out", "link.csv")
    assert result.exit_code == 2 and "--out: is the input file src.txt" in result.output
    assert (here / "src.txt").read_bytes() == SLURM.read_bytes() and (here / "link.csv").is_symlink()
    (here / "trace-link.yaml").symlink_to("jobs.csv")
    result = cli("fit-workload", "jobs.csv", "--out", "trace-link.yaml")
    assert result.exit_code == 2 and "--out: is the input file jobs.csv" in result.output
    assert (here / "jobs.csv").read_text() == JOBS


def test_run_out_holding_its_own_trace_is_refused_before_simulating(here):
    # A trace kept in a previous run's folder under a name costsim writes there (jobs.csv): the
    # folder is replaced whole, so the run would delete the trace it replays.
    assert cli("run", "s.yaml", "--out", "res").exit_code == 0
    (here / "res" / "jobs.csv").write_text(JOBS)
    (here / "r.yaml").write_text(TRACED.replace("TRACE", "res/jobs.csv"))
    before = digest(here / "res")
    result = cli("run", "r.yaml", "--out", "res")
    assert result.exit_code == 2 and result.stdout == ""
    assert f"--out res: holds {here / 'res' / 'jobs.csv'}, which this run reads" in result.output
    assert digest(here / "res") == before


def test_sweep_out_holding_its_trace_where_it_writes_a_table_is_refused(here):
    (here / "o").mkdir()
    (here / "o" / "means.csv").write_text(JOBS)
    (here / "b.yaml").write_text(TRACED.replace("TRACE", "o/means.csv"))
    (here / "bw.yaml").write_text("base: b.yaml\ngrid:\n  options.cloud.price_per_gpu_hour: [2.0, 3.0]\n")
    with pytest.raises(OutputError, match=rf"means.csv in it is {here}/o/means.csv, which this sweep reads"):
        costsim.sweep("bw.yaml", out="o", executor="local")
    assert digest(here / "o") == {"means.csv": hashlib.sha256(JOBS.encode()).hexdigest()}


# -- 2. a run never removes what appeared in its folder, and shares its lock with sweeps --------------

def test_a_file_put_in_out_while_the_run_simulates_is_kept_and_the_swap_refused(here, monkeypatch):
    assert cli("run", "t.yaml", "--out", "res", "--seed", "1").exit_code == 0
    before = digest(here / "res")
    real = cli_mod._simulate_with_progress

    def meanwhile(*args, **kw):
        (here / "res" / "notes.txt").write_text("precious")  # the user, while the run simulates
        return real(*args, **kw)

    monkeypatch.setattr(cli_mod, "_simulate_with_progress", meanwhile)
    result = cli("run", "t.yaml", "--out", "res", "--seed", "2")
    assert result.exit_code == 2
    assert "--out res: files costsim did not write appeared in it while the run worked (notes.txt)" in result.output
    assert (here / "res" / "notes.txt").read_text() == "precious"
    assert {k: v for k, v in digest(here / "res").items() if k != "notes.txt"} == before
    assert sorted(p.name for p in here.iterdir() if p.name.startswith(".res.")) == []


def test_a_sweep_into_a_folder_a_run_is_writing_is_refused_and_the_other_way_round(here):
    with OutputFolder(here / "x", ours=OUTPUT_NAMES) as folder:
        with pytest.raises(OutputError, match="another costsim run, sweep or report .*is writing"):
            costsim.sweep("sw.yaml", out="x", executor="local")
        assert not (here / "x").exists()  # nothing of the sweep's was created there
        folder.publish(lambda staging: (staging / "summary.csv").write_text("run"))
    assert sorted(p.name for p in (here / "x").iterdir()) == ["costsim-run.json", "summary.csv"]
    refused = []

    def run_meanwhile(done, total):
        if done == 1:
            refused.append(cli("run", "s.yaml", "--out", "y"))

    costsim.sweep("sw.yaml", out="y", executor="local", progress=run_meanwhile)
    assert refused[0].exit_code == 2 and "another costsim run, sweep or report" in refused[0].output
    assert len(list((here / "y").glob("runs/*/*.parquet"))) == 4 and (here / "y" / "means.csv").is_file()


def test_a_file_put_in_during_the_swap_itself_is_moved_back_not_deleted(here, monkeypatch):
    out = here / "res"
    with OutputFolder(out, ours={"summary.csv"}) as folder:
        folder.publish(lambda d: (d / "summary.csv").write_text("old"))
    real = outdir._exchange

    def late_writer(a, b):  # the instant between the last check and the swap
        (out / "late.txt").write_text("mine")
        return real(a, b)

    monkeypatch.setattr(outdir, "_exchange", late_writer)
    with OutputFolder(out, ours={"summary.csv"}) as folder:
        folder.publish(lambda d: (d / "summary.csv").write_text("new"))
    assert (out / "late.txt").read_text() == "mine" and (out / "summary.csv").read_text() == "new"
    assert any("late.txt" in note for note in folder.notes)
    # The fallback swap (two renames) keeps it the same way.
    monkeypatch.setattr(outdir, "_exchange", lambda a, b: (out / "later.txt").write_text("mine too") and False)
    with OutputFolder(out, ours={"summary.csv", "late.txt"}) as folder:
        folder.publish(lambda d: (d / "summary.csv").write_text("newer"))
    assert (out / "later.txt").read_text() == "mine too" and (out / "summary.csv").read_text() == "newer"


# -- 3. FIFOs, devices and symlinks given as --out are refused, never replaced -----------------------

def _victims(here: Path) -> dict[str, Path]:
    """An --out of each kind a rename would destroy: a FIFO, a symlink to a file, a device (root)."""
    (here / "victim.txt").write_text("the link's target")
    found = {"fifo": here / "pipe.csv", "symlink": here / "link.csv"}
    os.mkfifo(found["fifo"])
    found["symlink"].symlink_to("victim.txt")
    if os.geteuid() == 0:  # a copy of /dev/null's node, here: never the real one
        found["device"] = here / "null.csv"
        os.mknod(found["device"], stat.S_IFCHR | 0o666, os.makedev(1, 3))
    return found


@pytest.mark.parametrize("command", [
    ["import-trace", "slurm", str(SLURM), "--out", "VICTIM"],
    ["fit-workload", "jobs.csv", "--out", "VICTIM"],
    ["fit-workload", "jobs.csv", "--out", "c.yaml", "--report", "VICTIM"],
    ["report", "t.yaml", "--out", "VICTIM", "--replications", "1", "--no-tornado"],
])
def test_fifos_symlinks_and_devices_as_out_are_refused_and_left_as_they_are(here, command):
    kinds = {"fifo": "a FIFO", "symlink": "a symbolic link", "device": "a character device"}
    for kind, victim in _victims(here).items():
        before = mode(victim)
        result = cli(*[str(victim) if a == "VICTIM" else a for a in command])
        assert result.exit_code == 2, (kind, result.output)
        assert str(victim) in result.output and kinds[kind] in result.output, (kind, result.output)
        assert mode(victim) == before, kind
    assert (here / "victim.txt").read_text() == "the link's target"
    assert not (here / "c.yaml").exists()


# -- 16. read-only file systems -----------------------------------------------------------------------

@pytest.fixture
def read_only(tmp_path: Path):
    """A read-only tmpfs mounted in the test's folder (root only; skipped elsewhere)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(folder)],
                                           capture_output=True).returncode != 0:
        pytest.skip("needs root and mount to make a read-only file system")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


def test_read_only_file_system_is_a_clear_exit_2(here, read_only):
    for command in (["import-trace", "slurm", str(SLURM), "--out", read_only / "t.csv", "--mixed-gpu-types"],
                    ["fit-workload", "jobs.csv", "--out", read_only / "c.yaml"]):
        result = cli(*command)
        assert result.exit_code == 2, result.output
        assert f"--out {read_only}/" in result.output and "Read-only file system" in result.output
    result = cli("run", "s.yaml", "--out", read_only / "res")
    assert result.exit_code == 2 and "Read-only file system" in result.output and result.stdout == ""
    with pytest.raises(OutputError, match="Read-only file system"):
        costsim.sweep("sw.yaml", out=read_only / "sw", executor="local")
    assert list(read_only.iterdir()) == []


def test_a_write_error_and_a_cleanup_error_give_one_message_not_a_traceback(here, monkeypatch):
    # What a read-only folder does: the write fails, and so does removing the temporary file.
    import costsim.cli.import_trace as import_cli

    def refused(path, *args, **kw):
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(import_cli, "write_csv", lambda frame, temp: refused(temp))
    monkeypatch.setattr(Path, "unlink", refused)
    result = cli("import-trace", "slurm", str(SLURM), "--out", "t.csv", "--mixed-gpu-types")
    assert result.exit_code == 2
    assert "--out t.csv: could not be written (Read-only file system" in result.output
    assert ".t.csv.tmp-" not in result.output


# -- unclear messages ----------------------------------------------------------------------------------

def test_base_naming_a_sweep_file_says_so_once(here):
    (here / "outer.yaml").write_text("seed: 1\nbase: sw.yaml\n")
    with pytest.raises(ScenarioError) as caught:
        load_sweep(here / "outer.yaml")
    assert len(caught.value.problems) == 1
    assert str(caught.value) == (f"{here / 'outer.yaml'}:2:1: base: {here / 'sw.yaml'} is a sweep file, not a "
                                 "scenario: base: names the scenario file the sweep varies (to vary more fields, "
                                 "add them to this file's grid: or sample:)")


def test_a_folder_or_fifo_as_base_or_import_input_is_not_called_missing(here):
    (here / "folder").mkdir()
    os.mkfifo(here / "pipe")
    for name, says in (("folder", "is a folder, not a file"), ("pipe", "is a FIFO, not a regular file")):
        (here / "b.yaml").write_text(f"base: {name}\n")
        with pytest.raises(ScenarioError, match=rf"b.yaml:1:1: base: .*{name} {re.escape(says)}"):
            load_sweep(here / "b.yaml")
        result = cli("import-trace", "slurm", name, "--out", "t.csv")  # a FIFO is never opened: no hang
        assert result.exit_code == 2 and f"{name}: {says}" in result.output and "not found" not in result.output
    assert not (here / "t.csv").exists()


@pytest.mark.slow
def test_set_with_too_many_values_names_the_limit_briefly(here):
    values = ",".join(str(16 + 8 * i) for i in range(100_001))
    result = cli("sweep", "s.yaml", "--set", f"options.own.gpus={values}", "--out", "o")
    assert result.exit_code == 2
    assert "100,001 values: a sweep runs at most 100,000 tasks" in result.output
    assert len(result.output) < 500 and not (here / "o").exists()


@pytest.mark.slow
def test_a_huge_set_value_is_not_echoed_whole(here):
    result = cli("sweep", "s.yaml", "--set", "name=" + "a" * 120_000, "--out", "o")
    assert result.exit_code == 2 and "name" in result.output
    assert "(120,002 characters)" in result.output and len(result.output) < 1000
    result = cli("sweep", "s.yaml", "--set", "options.own.gpus=[" + "1," * 60_000, "--out", "o")
    assert result.exit_code == 2 and "characters)" in result.output and len(result.output) < 1000


def test_a_folder_where_a_task_file_goes_is_refused_by_name_before_anything_runs(here):
    costsim.sweep("sw.yaml", out="sw", executor="local")
    task = here / "sw" / "runs" / "variant=v000" / "replication=1.parquet"
    task.unlink()
    task.mkdir()
    before = digest(here / "sw")
    with pytest.raises(OutputError) as caught:
        costsim.sweep("sw.yaml", out="sw", executor="local")
    assert "runs/variant=v000/replication=1.parquet (a folder)" in str(caught.value)
    assert "make room" not in str(caught.value) and digest(here / "sw") == before


def test_the_trace_edited_mid_sweep_message_promises_only_what_works(here):
    (here / "b.yaml").write_text(TRACED.replace("TRACE", "jobs.csv"))
    (here / "bw.yaml").write_text("base: b.yaml\nreplications: 2\ngrid:\n  options.cloud.price_per_gpu_hour: [2, 3]\n")

    def edit_after_one(done, total):
        if done == 1:
            (here / "jobs.csv").write_text("submit_h,gpus,duration_h\n0,8,5\n")

    with pytest.raises(ScenarioError) as caught:  # the input changed under the sweep
        costsim.sweep("bw.yaml", out="o", executor="local", progress=edit_after_one)
    message = str(caught.value)
    assert f"the trace {here / 'jobs.csv'} or the catalog changed while the sweep ran" in message
    assert "put the previous file back and run the same command to resume" in message
    assert "or the same one" not in message  # the new trace into the same folder is refused:
    with pytest.raises(OutputError, match="holds a different sweep"):
        costsim.sweep("bw.yaml", out="o", executor="local")
    costsim.sweep("bw.yaml", out="new", executor="local")  # a new folder takes the new trace
    (here / "jobs.csv").write_text(JOBS)  # and with the old bytes back, the same command resumes
    ran = []
    costsim.sweep("bw.yaml", out="o", executor="local", progress=lambda d, t: ran.append(t))
    assert ran[0] == 2  # replication 0 of both prices was one simulation, saved before the edit was seen


def test_ctrl_c_while_building_variants_says_nothing_was_written(here, monkeypatch):
    import costsim.runs.sweepfile as sweepfile

    calls = []
    real = sweepfile.api.scenario_from_data

    def interrupted(*args, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kw)

    monkeypatch.setattr(sweepfile.api, "scenario_from_data", interrupted)
    result = cli("sweep", "sw.yaml", "--out", "o")
    assert result.exit_code == 130
    assert "interrupted before any task ran: nothing written to o/" in result.output
    assert "saved" not in result.output and not (here / "o").exists()


def test_ctrl_c_mid_sweep_counts_the_saved_tasks(here, monkeypatch):
    real = dataset.SweepFolder.write_task
    written = []

    def stop_after_three(self, *args):
        if len(written) == 3:
            raise KeyboardInterrupt
        written.append(real(self, *args))

    monkeypatch.setattr(dataset.SweepFolder, "write_task", stop_after_three)
    result = cli("sweep", "sw.yaml", "--out", "o", "--executor", "local")
    assert result.exit_code == 130
    said = " ".join(result.output.split())  # the console wraps at its width
    assert "interrupted: 3 finished task(s) are saved in o/runs; run the same command again to resume" in said


@pytest.mark.slow
def test_a_full_disk_names_out_and_the_file_not_the_staging_folder(here, monkeypatch):
    import costsim.cli.import_trace as import_cli

    def full(path, *args, **kw):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    assert cli("run", "s.yaml", "--out", "res").exit_code == 0
    before = digest(here / "res")
    monkeypatch.setattr(cli_mod, "write_tables", lambda res, staging, **_: full(Path(staging) / "summary.parquet"))
    result = cli("run", "s.yaml", "--out", "res", "--seed", "5")
    assert result.exit_code == 2
    assert ("--out res: could not write the results (summary.parquet: No space left on device: free some space "
            "(or write elsewhere) and run again); res is unchanged") in result.output
    assert ".res.tmp-" not in result.output and digest(here / "res") == before
    monkeypatch.setattr(import_cli, "write_csv", lambda frame, temp: full(temp))
    result = cli("import-trace", "slurm", str(SLURM), "--out", "t.csv", "--mixed-gpu-types")
    assert result.exit_code == 2 and "--out t.csv: could not be written (No space left on device" in result.output
    assert ".t.csv.tmp-" not in result.output
    monkeypatch.setattr(dataset, "write_task_file", lambda frame, path, task, meta: full(path))
    with pytest.raises(OutputError) as caught:
        costsim.sweep("sw.yaml", out="o", executor="local")
    assert ("could not write runs/variant=v000/replication=0.parquet: No space left on device; the tasks "
            "finished before are saved: free some space and run the same sweep again") in str(caught.value)
    assert ".tmp-" not in str(caught.value)


def test_building_variants_reports_progress_and_the_manifest_is_compact(here):
    import json

    values = ", ".join(str(16 + 8 * i) for i in range(20))
    (here / "big.yaml").write_text(f"base: s.yaml\ngrid:\n  options.own.gpus: [{values}]\n"
                                   "  options.cloud.price_per_gpu_hour: [1.0, 2.0, 3.0, 4.0, 5.0]\n")
    seen = []
    spec = load_sweep(here / "big.yaml", progress=lambda done, total: seen.append((done, total)))
    assert seen[0] == (0, 100) and seen[-1] == (100, 100)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen) and len(seen) > 10
    from costsim.runs.dataset import manifest_text
    from costsim.runs.sweep import sweep_manifest

    data = sweep_manifest(spec)
    text = manifest_text(data)
    assert json.loads(text) == data
    assert len(text) < 0.85 * len(json.dumps(data, indent=1))  # what was written before
    assert text.count("\n") == len(spec.variants) + 2  # one variant a line


def test_a_manifest_written_indented_by_an_earlier_version_still_resumes(here):
    import json

    costsim.sweep("sw.yaml", out="sw", executor="local")
    data = json.loads((here / "sw" / "sweep.json").read_text())
    (here / "sw" / "sweep.json").write_text(json.dumps(data, indent=1) + "\n")
    ran = []
    costsim.sweep("sw.yaml", out="sw", executor="local", progress=lambda d, t: ran.append(t))
    assert ran == [0]
