"""Running sweeps (costsim.runs.sweep): common random numbers, identical tables from every
executor, the Parquet dataset (atomic writes, resume, refusal of another sweep) and the CLI.

Scenarios are tiny (3 days, one small RL class): a task simulates in tens of milliseconds, so the
process pool's and Dask's start-up dominate; the whole file runs in well under a minute."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pandas as pd
import pytest
from helpers import bits, tiny_sweep_files
from typer.testing import CliRunner

import costsim
import costsim._version
from costsim.cli.commands import app
from costsim.errors import ArgumentError, ExecutorError, OutputError
from costsim.runs import dataset, executors, identity
from costsim.runs import sweep as sweep_mod
from costsim.runs.sweep import METRICS, Task, run_sweep, run_task, tasks
from costsim.runs.sweepfile import load_sweep, replication_seed
from costsim.scenario import Problem, ScenarioError
from costsim.scenario import scenario_from_data as schema_from_data

# Two sizes (they change the schedule) × two cloud prices (they must not), three replications.
SWEEP = """\
base: s.yaml
seed: 3
replications: 3
grid:
  options.own.gpus: [16, 24]
  options.cloud.price_per_gpu_hour: [2.0, 4.0]
"""


@pytest.fixture
def files(tmp_path: Path) -> Path:
    return tiny_sweep_files(tmp_path, SWEEP)


def _files(out: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``out`` (hidden ones too): its inode and modification time in ns."""
    found = (p for p in sorted(out.rglob("*")) if p.is_file())
    return {str(p.relative_to(out)): (p.stat().st_ino, p.stat().st_mtime_ns) for p in found}


def _jobs(task: Task) -> pd.DataFrame:
    scenario = schema_from_data(task.scenario, task.source, task.base_dir)
    return costsim.simulate(scenario, seed=task.seed).jobs


# -- common random numbers ---------------------------------------------------------------------------

def test_variants_differing_only_in_a_price_run_identical_jobs_in_each_replication(files):
    spec = load_sweep(files / "sw.yaml")
    by = {(t.variant, t.replication): t for t in tasks(spec)}
    price = {v.id: v.params["options.cloud.price_per_gpu_hour"] for v in spec.variants}
    size = {v.id: v.params["options.own.gpus"] for v in spec.variants}
    cheap, dear = [next(v for v in price if size[v] == 16 and price[v] == p) for p in (2.0, 4.0)]
    bigger = next(v for v in price if size[v] == 24 and price[v] == 2.0)
    schedule = ["option", "job_id", "job_class", "gpus", "submit_h", "start_h", "end_h", "queue_delay_h", "completed"]
    submits = []
    for r in range(spec.replications):
        a, b = _jobs(by[cheap, r]), _jobs(by[dear, r])
        assert by[cheap, r].seed == by[dear, r].seed == replication_seed(3, r)
        pd.testing.assert_frame_equal(a[schedule], b[schedule], check_exact=True)
        cloud_a, cloud_b = (j[j.option == "cloud"].cost_usd.sum() for j in (a, b))
        assert cloud_b == pytest.approx(2 * cloud_a, rel=1e-9) and cloud_a > 0  # the price did change the bill
        submits.append(tuple(a.submit_h))
        c = _jobs(by[bigger, r])  # more GPUs: another schedule, the same jobs
        workload = ["option", "job_id", "job_class", "gpus", "submit_h"]
        pd.testing.assert_frame_equal(a[workload], c[workload], check_exact=True)
        assert not a.start_h.equals(c.start_h)
    assert len(set(submits)) == spec.replications  # replications are different draws


def test_every_variant_of_a_replication_has_its_seed_and_workload(files):
    res = costsim.sweep(files / "sw.yaml", executor="local")
    assert list(res.runs.columns[:3]) == ["variant", "replication", "seed"]
    for r, rows in res.runs.groupby("replication"):
        assert set(rows.seed) == {replication_seed(3, r)}
        assert rows.jobs_submitted.nunique() == 1  # same jobs in every variant and option
    assert len(res.runs) == 4 * 3 * 2
    assert [tuple(x) for x in res.runs[["variant", "replication", "option"]].head(4).to_numpy()] == [
        ("v000", 0, "own"), ("v000", 0, "cloud"), ("v000", 1, "own"), ("v000", 1, "cloud")]


# -- executors -----------------------------------------------------------------------------------------

@pytest.mark.slow
def test_local_processes_and_dask_give_identical_tables(files):
    local = run_sweep(files / "sw.yaml", executor="local")
    pool = run_sweep(files / "sw.yaml", executor="processes", workers=2)
    pytest.importorskip("distributed", reason="dask[distributed] not installed (pip install 'costsim[dask]')")
    dask = run_sweep(files / "sw.yaml", executor="dask", workers=2)
    for other in (pool, dask):
        for name in ("runs", "means", "differences", "variants"):
            assert bits(getattr(other, name)) == bits(getattr(local, name)), name
    assert set(local.means.columns) >= {f"{m}{s}" for m in METRICS for s in ("", "_low", "_high")}


def test_task_errors_cross_processes_as_the_scenario_error_they_were():
    err = ScenarioError("sw.yaml variant v001", [Problem(("options", 0, "gpus"), "too many", 7, 3)])
    failed = pickle.loads(pickle.dumps(executors.TaskFailed(err.source, tuple(err.problems))))
    assert str(failed.error()) == str(err) == "sw.yaml variant v001:7:3: options.0.gpus: too many"

    def boom(_task):
        raise err

    with pytest.raises(executors.TaskFailed):
        executors.guarded(boom, None)


def test_bad_arguments_are_refused_before_anything_runs(files):
    """Each refused with the error of its kind, before anything is written."""
    A, E, O, S = ArgumentError, ExecutorError, OutputError, ScenarioError
    for kwargs, says, kind in [
            ({"executor": "threads"}, "executor", A), ({"executor": None}, "executor", A),
            ({"workers": 0}, "workers", A), ({"workers": True}, "workers", A), ({"workers": 1.5}, "workers", A),
            ({"executor": "local", "address": "h:1"}, "address", A), ({"progress": 3}, "progress", A),
            ({"executor": "dask", "address": "h:port"}, "HOST:PORT", E),
            ({"spec": {"base": "s.yaml"}}, "spec: must be a Sweep", A), ({"spec": 3}, "spec", A),
            ({"spec": files / "nope.yaml"}, "not found", S), ({"out": 5}, "out: must be a path", A),
            ({"out": files / "s.yaml"}, "not a folder", O), ({"out": files / "s.yaml" / "o"}, "is a file", O)]:
        kwargs = {"spec": files / "sw.yaml", "out": files / "o", **kwargs}
        with pytest.raises(kind, match=says) as err:
            costsim.sweep(**kwargs)
        assert type(err.value) is kind, (says, type(err.value))
        assert sorted(p.name for p in files.iterdir()) == ["s.yaml", "sw.yaml"]


# -- the dataset: resume, atomic writes, another sweep -----------------------------------------------

@pytest.mark.slow
def test_interrupted_sweep_resumes_to_the_dataset_of_an_uninterrupted_one(files):
    whole = costsim.sweep(files / "sw.yaml", out=files / "whole", executor="local")
    calls = []

    def stop_after_five(done, total):
        calls.append((done, total))
        if done == 5:
            raise KeyboardInterrupt  # Ctrl-C in the middle of a sweep on the process pool

    with pytest.raises(KeyboardInterrupt):
        costsim.sweep(files / "sw.yaml", out=files / "cut", executor="processes", workers=2, progress=stop_after_five)
    saved = _files(files / "cut" / "runs")
    assert len(saved) == 5 and not list((files / "cut").rglob(".*tmp-*"))
    assert calls[0] == (0, 12)
    calls.clear()
    resumed = costsim.sweep(files / "sw.yaml", out=files / "cut", executor="processes", workers=2,
                            progress=lambda d, t: calls.append((d, t)))
    assert calls == [(k, 7) for k in range(8)]  # only the 7 missing tasks ran
    assert {k: v for k, v in _files(files / "cut" / "runs").items() if k in saved} == saved  # the 5 left alone
    for name in ("runs", "means", "differences", "variants"):
        assert bits(getattr(resumed, name)) == bits(getattr(whole, name)), name
    for name in ("means.csv", "differences.csv", "variants.csv", "means.parquet"):
        assert (files / "cut" / name).read_bytes() == (files / "whole" / name).read_bytes(), name
    # The dataset on disk is the runs table (Hive partitions: variant from the folder names).
    disk = pd.read_parquet(files / "cut" / "runs")
    disk["variant"] = disk["variant"].astype(str)
    disk = disk.sort_values(["variant", "replication"], kind="stable").reset_index(drop=True)
    pd.testing.assert_frame_equal(disk[whole.runs.columns], whole.runs, check_exact=True, check_dtype=False)


def test_deleted_task_files_are_the_only_ones_run_again(files, monkeypatch):
    out = files / "out"
    first = costsim.sweep(files / "sw.yaml", out=out, executor="local")
    gone = ["runs/variant=v001/replication=2.parquet", "runs/variant=v003/replication=0.parquet"]
    for name in gone:
        (out / name).unlink()
    before = _files(out / "runs")
    ran = []
    again = costsim.sweep(files / "sw.yaml", out=out, executor="local", progress=lambda d, t: ran.append((d, t)))
    assert ran == [(0, 2), (1, 2), (2, 2)]
    after = _files(out / "runs")
    assert {k: after[k] for k in before} == before and all((out / n).is_file() for n in gone)
    assert bits(again.runs) == bits(first.runs)
    def no_workers(*args):
        raise AssertionError("workers started for a sweep with nothing left to run")

    monkeypatch.setattr(sweep_mod, "open_executor", no_workers)
    done = []
    costsim.sweep(files / "sw.yaml", out=out, progress=lambda d, t: done.append((d, t)))
    assert done == [(0, 0)]


def test_a_task_killed_mid_write_leaves_no_partial_file(files, monkeypatch):
    real = dataset.fsync
    seen = []

    def crash_on_the_temporary(path: Path):
        if ".tmp-" in path.name:
            seen.append(path.stat().st_size)  # the temporary file exists, with data in it
            raise KeyboardInterrupt
        real(path)

    monkeypatch.setattr(dataset, "fsync", crash_on_the_temporary)
    out = files / "out"
    with pytest.raises(KeyboardInterrupt):
        costsim.sweep(files / "sw.yaml", out=out, executor="local")
    assert seen and seen[0] > 0
    assert sorted(p.name for p in out.rglob("*") if p.is_file()) == [".sweep.lock"]  # the manifest was the write cut
    monkeypatch.setattr(dataset, "fsync", real)
    writes = []

    def crash_on_the_third_task(path: Path):
        if path.name.startswith(".replication="):
            writes.append(path)
            if len(writes) == 3:
                raise KeyboardInterrupt
        real(path)

    monkeypatch.setattr(dataset, "fsync", crash_on_the_third_task)
    with pytest.raises(KeyboardInterrupt):
        costsim.sweep(files / "sw.yaml", out=out, executor="local")
    left = sorted(str(p.relative_to(out)) for p in out.rglob("*.parquet"))
    # The first two tasks written: v000 and v001 differ only in the cloud's price, so their
    # replication 0 is one simulation and comes back together (costsim.runs.taskrun.shared_runs).
    assert left == ["runs/variant=v000/replication=0.parquet", "runs/variant=v001/replication=0.parquet"]
    assert not list(out.rglob(".*tmp-*"))


def test_a_different_sweep_into_the_same_folder_is_refused_untouched(files):
    out = files / "out"
    costsim.sweep(files / "sw.yaml", out=out, executor="local")
    before = _files(out)
    (files / "other.yaml").write_text(SWEEP.replace("seed: 3", "seed: 4"))
    with pytest.raises(OutputError, match="holds a different sweep .*differ in seed"):
        costsim.sweep(files / "other.yaml", out=out, executor="local")
    (files / "more.yaml").write_text(SWEEP.replace("[2.0, 4.0]", "[2.0, 3.0]"))
    with pytest.raises(OutputError, match="differ in variants"):
        costsim.sweep(files / "more.yaml", out=out, executor="local")
    assert _files(out) == before
    foreign = files / "notes"
    foreign.mkdir()
    (foreign / "thesis.tex").write_text("mine")
    with pytest.raises(OutputError, match="not a costsim sweep's .*thesis.tex"):
        costsim.sweep(files / "sw.yaml", out=foreign, executor="local")
    assert [p.name for p in foreign.iterdir()] == ["thesis.tex"]


def test_the_same_sweep_from_another_folder_resumes(files, monkeypatch):
    out = files / "out"
    costsim.sweep(files / "sw.yaml", out=out, executor="local")
    monkeypatch.chdir(files)  # the sweep's path as written differs; the sweep does not
    ran = []
    costsim.sweep("sw.yaml", out="out", executor="local", progress=lambda d, t: ran.append(t))
    assert ran == [0]


# -- the CLI -------------------------------------------------------------------------------------------

runner = CliRunner()


def _means_cell(res, variant: str, option: str) -> str:
    row = res.means[(res.means.variant == variant) & (res.means.option == option)].iloc[0]
    half = (row.total_cost_usd_high - row.total_cost_usd_low) / 2
    return f"${row.total_cost_usd:,.0f} ± {half:,.0f}"


def test_cli_sweep_writes_the_dataset_and_prints_the_means(files, monkeypatch):
    monkeypatch.chdir(files)
    # Piped with no COLUMNS (whatever this process's environment holds): the table prints whole.
    result = runner.invoke(app, ["sweep", "sw.yaml", "--executor", "local"], env={"COLUMNS": None})
    assert result.exit_code == 0, result.output
    out = files / "out" / "sw"  # the default: out/<sweep file stem>
    assert (out / "runs" / "variant=v003" / "replication=2.parquet").is_file()
    for name in ("sweep.json", "means.csv", "means.parquet", "differences.csv", "variants.parquet"):
        assert (out / name).is_file(), name
    res = costsim.sweep("sw.yaml", executor="local")
    for v in ("v000", "v003"):
        assert _means_cell(res, v, "own") in result.output
    assert "options.own.gpus=24, options.cloud.price_per_gpu_hour=4.0" in result.output
    assert (out / "means.csv").read_text() == res.means.to_csv(index=False)


def test_cli_bad_sweep_file_exit_2_with_file_line_and_path(files):
    (files / "bad.yaml").write_text(SWEEP.replace("options.own.gpus", "options.own-999.gpus"))
    result = runner.invoke(app, ["sweep", str(files / "bad.yaml"), "--out", str(files / "o")])
    assert result.exit_code == 2
    assert f"{files / 'bad.yaml'}:5:3: grid.options.own-999.gpus: no option named 'own-999'" in result.output
    assert "Traceback" not in result.output and not (files / "o").exists()
    result = runner.invoke(app, ["sweep", str(files / "sw.yaml"), "--replications", "2", "--out", str(files / "o")])
    assert result.exit_code == 2 and "--replications: applies with --set only" in result.output
    result = runner.invoke(app, ["sweep", str(files / "sw.yaml"), "--address", "h:1", "--out", str(files / "o")])
    assert result.exit_code == 2 and "--address" in result.output and not (files / "o").exists()


def test_cli_dask_missing_is_a_clear_exit_2(files, monkeypatch):
    monkeypatch.setattr(executors, "dask_available", lambda: False)
    result = runner.invoke(app, ["sweep", str(files / "sw.yaml"), "--executor", "dask", "--out", str(files / "o")])
    assert result.exit_code == 2
    assert "pip install 'costsim[dask]'" in result.output and not (files / "o").exists()


def test_cli_quick_grid_with_set(files):
    out = files / "grid"
    result = runner.invoke(app, ["sweep", str(files / "s.yaml"), "--set", "options.own.gpus=16,32",
                                 "--set", "economics.electricity_usd_per_kwh=0.1", "--replications", "2",
                                 "--seed", "9", "--executor", "local", "--out", str(out)])
    assert result.exit_code == 0, result.output
    variants = pd.read_csv(out / "variants.csv")
    assert variants.to_dict("list") == {"variant": ["v000", "v001"], "options.own.gpus": [16, 32],
                                        "economics.electricity_usd_per_kwh": [0.1, 0.1]}
    runs = pd.read_parquet(out / "runs")
    assert len(runs) == 2 * 2 * 2 and set(runs.seed) == {replication_seed(9, 0), replication_seed(9, 1)}


@pytest.mark.slow
def test_cli_dask_local_cluster(files):
    pytest.importorskip("distributed", reason="dask[distributed] not installed (pip install 'costsim[dask]')")
    out = files / "d"
    result = runner.invoke(app, ["sweep", str(files / "sw.yaml"), "--executor", "dask", "--workers", "2",
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    disk = pd.read_parquet(out / "runs")
    local = costsim.sweep(files / "sw.yaml", executor="local").runs
    disk["variant"] = disk["variant"].astype(str)
    disk = disk.sort_values(["variant", "replication"], kind="stable").reset_index(drop=True)
    pd.testing.assert_frame_equal(disk[local.columns], local, check_exact=True, check_dtype=False)


def test_run_task_labels_come_first_and_the_summary_is_simulate_s(files):
    spec = load_sweep(files / "sw.yaml")
    task = tasks(spec)[4]  # v001, replication 1
    table = run_task(task).summary
    assert (task.variant, task.replication) == ("v001", 1)
    direct = costsim.simulate(spec.variants[1].scenario, seed=replication_seed(3, 1)).summary
    pd.testing.assert_frame_equal(table.drop(columns=["variant", "replication", "seed"]), direct, check_exact=True)
    assert pickle.loads(pickle.dumps(task)) == task and Path(task.base_dir) == files.resolve()


def test_an_unreachable_dask_scheduler_is_an_error_before_anything_is_written(files, monkeypatch):
    pytest.importorskip("distributed", reason="dask[distributed] not installed (pip install 'costsim[dask]')")
    monkeypatch.setattr(executors, "CONNECT_TIMEOUT_S", 1)
    with pytest.raises(ExecutorError, match=r"executor dask: cannot reach the Dask scheduler at 127\.0\.0\.1:9"):
        costsim.sweep(files / "sw.yaml", out=files / "o", executor="dask", address="127.0.0.1:9")
    assert not (files / "o").exists()


@pytest.mark.slow
def test_pool_workers_errors_come_back_as_scenario_errors_and_a_dead_worker_is_named(tmp_path):
    missing = str(tmp_path / "nowhere.yaml")
    with pytest.raises(ScenarioError) as here:
        costsim.load_scenario(missing)
    with executors.open_executor("processes", 2) as run:
        with pytest.raises(ScenarioError) as there:
            list(run(costsim.load_scenario, [missing]))
    assert type(there.value) is ScenarioError and str(there.value) == str(here.value)
    with executors.open_executor("processes", 1) as run:
        with pytest.raises(executors.ExecutorError, match="a worker process died"):
            list(run(os._exit, [3]))  # the worker vanishes mid-task, as when the kernel kills it


TRACE_SCENARIO = """\
name: traced
horizon_days: 3
workload: {trace: jobs.csv}
options:
  - {name: own, kind: owned, gpu_type: H100, gpus: 16, lead_time_days: 0}
"""


def test_an_edited_trace_is_a_different_sweep_not_a_resume(tmp_path):
    # The scenario names its trace by path; the sweep's identity carries the trace's bytes, so a
    # folder of runs over the old trace is never topped up with runs over the new one.
    (tmp_path / "jobs.csv").write_text("submit_h,gpus,duration_h\n0,8,2\n1,8,3\n")
    (tmp_path / "s.yaml").write_text(TRACE_SCENARIO)
    (tmp_path / "sw.yaml").write_text("base: s.yaml\nreplications: 2\ngrid:\n  options.own.gpus: [16, 24]\n")
    out = tmp_path / "out"
    costsim.sweep(tmp_path / "sw.yaml", out=out, executor="local")
    (tmp_path / "jobs.csv").write_text("submit_h,gpus,duration_h\n0,8,20\n1,8,30\n")
    next(out.glob("runs/*/*.parquet")).unlink()  # as if interrupted
    with pytest.raises(OutputError, match="holds a different sweep .*differ in variants"):
        costsim.sweep(tmp_path / "sw.yaml", out=out, executor="local")


def test_runs_without_their_manifest_are_never_reused(files):
    # Finished tasks whose sweep.json is gone belong to an unknown sweep: a sweep with the same
    # variant ids and seed but other prices must not pick them up.
    out = files / "out"
    costsim.sweep(files / "sw.yaml", out=out, executor="local")
    (out / "sweep.json").unlink()
    (files / "other.yaml").write_text(SWEEP.replace("[2.0, 4.0]", "[2.5, 4.5]"))
    with pytest.raises(OutputError, match="holds a runs/ folder but no sweep.json"):
        costsim.sweep(files / "other.yaml", out=out, executor="local")


def test_a_task_file_of_other_inputs_is_run_again(files):
    # A file in the right place whose recorded inputs are not the variant's (here: its metadata
    # edited) is not taken as finished: the task runs again and replaces it.
    import json

    import pyarrow.parquet as pq

    out = files / "out"
    whole = costsim.sweep(files / "sw.yaml", out=out, executor="local")
    path = next(out.glob("runs/variant=v000/replication=0.parquet"))
    table = pq.read_table(path)
    meta = json.loads(table.schema.metadata[b"costsim.sweep"])
    meta["scenario_sha256"] = "0" * 64
    pq.write_table(table.replace_schema_metadata({b"costsim.sweep": json.dumps(meta).encode()}), path)
    calls = []
    with pytest.warns(UserWarning, match=r"replication=0.parquet is not this task's file .*running that task again"):
        again = costsim.sweep(files / "sw.yaml", out=out, executor="local", progress=lambda d, t: calls.append((d, t)))
    assert calls[-1] == (1, 1)  # exactly that one task ran again
    pd.testing.assert_frame_equal(again.runs, whole.runs)


@pytest.mark.slow
def test_a_running_dask_scheduler_gives_the_local_tables_and_refuses_other_versions(files, monkeypatch):
    distributed = pytest.importorskip("distributed", reason="dask[distributed] not installed (pip install 'costsim[dask]')")
    local = run_sweep(files / "sw.yaml", executor="local")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as cluster:
        remote = run_sweep(files / "sw.yaml", executor="dask", address=cluster.scheduler_address)
        for name in ("runs", "means", "differences", "variants"):
            assert bits(getattr(remote, name)) == bits(getattr(local, name)), name
        # This machine now has another costsim than the worker: refused before anything is written.
        monkeypatch.setattr(costsim._version, "__version__", "0.0.0-other")
        with pytest.raises(ExecutorError, match=r"executor dask: workers differ from this machine \(costsim "
                                                r"0\.0\.0-other, numpy .*\): tcp://.* has costsim "):
            costsim.sweep(files / "sw.yaml", out=files / "o", executor="dask", address=cluster.scheduler_address)
        assert not (files / "o").exists()


def test_a_dask_scheduler_without_workers_is_an_error(files, monkeypatch):
    distributed = pytest.importorskip("distributed", reason="dask[distributed] not installed (pip install 'costsim[dask]')")
    monkeypatch.setattr(executors, "CONNECT_TIMEOUT_S", 1)
    with distributed.LocalCluster(n_workers=0, processes=True, dashboard_address=None, silence_logs=40) as cluster:
        with pytest.raises(ExecutorError, match=r"executor dask: the Dask scheduler at .* has no worker"):
            costsim.sweep(files / "sw.yaml", executor="dask", address=cluster.scheduler_address)


def test_a_trace_edited_while_the_sweep_runs_stops_it_and_saves_nothing_of_the_new_bytes(tmp_path):
    (tmp_path / "jobs.csv").write_text("submit_h,gpus,duration_h\n0,8,2\n1,8,3\n")
    (tmp_path / "s.yaml").write_text(TRACE_SCENARIO)
    (tmp_path / "sw.yaml").write_text("base: s.yaml\nreplications: 2\ngrid:\n  options.own.gpus: [16, 24]\n")
    out = tmp_path / "out"

    def edit_after_two(done, total):
        if done == 2:
            (tmp_path / "jobs.csv").write_text("submit_h,gpus,duration_h\n0,8,20\n1,8,30\n")

    with pytest.raises(ScenarioError, match="changed while the sweep ran"):
        costsim.sweep(tmp_path / "sw.yaml", out=out, executor="local", progress=edit_after_two)
    assert len(list(out.glob("runs/*/*.parquet"))) == 2  # the two run before the edit, on the old bytes
    # With the old bytes back, the same sweep resumes to what an uninterrupted run gives.
    (tmp_path / "jobs.csv").write_text("submit_h,gpus,duration_h\n0,8,2\n1,8,3\n")
    resumed = costsim.sweep(tmp_path / "sw.yaml", out=out, executor="local")
    whole = costsim.sweep(tmp_path / "sw.yaml", executor="local")
    assert bits(resumed.runs) == bits(whole.runs)


def test_runs_of_other_code_are_never_resumed(files, monkeypatch):
    out = files / "out"
    costsim.sweep(files / "sw.yaml", out=out, executor="local")
    monkeypatch.setattr(sweep_mod, "code_identity", lambda: "another version of costsim")
    with pytest.raises(OutputError, match="holds a different sweep .*differ in code"):
        costsim.sweep(files / "sw.yaml", out=out, executor="local")


def test_code_identity_follows_the_source_and_the_libraries(monkeypatch):
    from importlib import metadata

    first = sweep_mod.code_identity()
    sweep_mod.code_identity.cache_clear()
    real = metadata.version
    monkeypatch.setattr(metadata, "version", lambda name: "0.0" if name == "numpy" else real(name))
    try:
        assert sweep_mod.code_identity() != first
    finally:
        sweep_mod.code_identity.cache_clear()
    monkeypatch.undo()
    assert sweep_mod.code_identity() == first


def test_code_identity_follows_what_makes_the_numbers_not_the_words(tmp_path):
    """An edited engine or catalog is other code; an edited label, chart or CLI is not."""
    import shutil

    package = Path(costsim.__file__).resolve().parent
    copy = tmp_path / "costsim"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    first = identity.source_identity(copy)
    for words in ("present/formats.py", "dashboard/views.py", "cli/tables.py", "plots/styles.py", "report/html.py"):
        (copy / words).write_text((copy / words).read_text() + "\n# an edited label\n")
    assert identity.source_identity(copy) == first
    for numbers in ("engine/owned.py", "catalog/catalog.yaml", "results/costing.py", "units.py"):
        before = (copy / numbers).read_text()
        (copy / numbers).write_text(before + "\n# edited\n")
        assert identity.source_identity(copy) != first, numbers
        (copy / numbers).write_text(before)
    assert identity.source_identity(copy) == first


def test_workers_with_an_address_are_refused(files):
    with pytest.raises(ArgumentError, match="workers.*has no effect with a Dask scheduler"):
        costsim.sweep(files / "sw.yaml", executor="dask", workers=2, address="127.0.0.1:8786")


WATCHED = """\
import sys, time
from costsim.runs.executors import open_executor

def slow(x):
    import os
    print(os.getpid(), flush=True)
    time.sleep(x)
    return x

if __name__ == "__main__":
    with open_executor("processes", 1) as run:
        for _ in run(slow, [120]):
            pass
"""


@pytest.mark.slow
def test_pool_workers_exit_when_the_sweep_process_is_killed(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "watched.py"
    script.write_text(WATCHED)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        worker = int(proc.stdout.readline())  # the task is running in this worker
        assert Path(f"/proc/{worker}").exists()
        proc.send_signal(signal.SIGKILL)  # nothing in the main process runs to stop it
        proc.wait()
        for _ in range(100):
            if not Path(f"/proc/{worker}").exists() or "Z" in Path(f"/proc/{worker}/stat").read_text().split()[2]:
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"worker {worker} still alive 10 s after the sweep's process was killed")
    finally:
        proc.kill()
