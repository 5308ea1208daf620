"""`costsim run --out DIR` writes its results all at once: killed at any point (SIGINT, SIGKILL), out
of space, or beside a concurrent run, DIR holds either the complete previous results or the
complete new ones, and an unusable DIR is refused before simulating.

The truth the crash tests compare against is an independent, uninterrupted run of the same
scenario and seed into another folder (the outputs are byte-for-byte reproducible).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from costsim.cli.commands import app
from costsim.runs.export import TABLES
from costsim.runs.outdir import MANIFEST, OutputFolder, safe_folder_name

CLI = [sys.executable, "-m", "costsim.cli"]
JOBS = 30_000  # enough for the tables to take a good fraction of a second to write

SMALL = """\
name: {name}
horizon_days: 5
workload:
  trace: jobs.csv
options:
  - name: cloud
    kind: cloud
    gpu_type: H100
    provisioning_delay_h: 0
    startup_h: 0
"""


def cli(args, cwd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + list(args), cwd=cwd, capture_output=True, text=True, timeout=120, **kw)


def digest(folder: Path) -> dict[str, str]:
    """Every file of a folder with its sha256: equal digests mean the same complete results."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def leftovers(out: Path) -> list[str]:
    """Staging, old or lock files of ``out`` in its parent."""
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))


def clean_exit(proc, status: int, *needles: str) -> None:
    assert proc.returncode == status, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    for needle in needles:
        assert needle in proc.stderr, (needle, proc.stderr)


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    """A folder with a 30,000-job scenario and uninterrupted reference runs for seeds 1 and 2."""
    folder = tmp_path_factory.mktemp("big")
    rng = np.random.default_rng(0)
    pd.DataFrame({
        "submit_h": np.sort(rng.uniform(0, 24 * 20, JOBS)).round(3),
        "gpus": rng.choice([1, 2, 4, 8], JOBS),
        "duration_h": rng.uniform(0.1, 3, JOBS).round(3),
    }).to_csv(folder / "jobs.csv", index=False)
    (folder / "s.yaml").write_text(SMALL.format(name="big").replace("horizon_days: 5", "horizon_days: 20"))
    for seed in (1, 2):
        clean_exit(cli(["run", "s.yaml", "--out", f"ref{seed}", "--seed", str(seed)], folder), 0)
    return folder


def reference(big: Path, seed: int) -> dict[str, str]:
    return digest(big / f"ref{seed}")


@pytest.mark.slow
def test_references_are_complete_and_differ(big):
    for seed in (1, 2):
        ref = big / f"ref{seed}"
        manifest = json.loads((ref / MANIFEST).read_text())
        assert manifest["seed"] == seed
        # The manifest lists exactly the other files, with their sizes.
        assert manifest["files"] == {p.name: p.stat().st_size for p in ref.iterdir() if p.name != MANIFEST}
        assert {"jobs.csv", "jobs.parquet", "summary.parquet", "scenario.resolved.yaml"} <= set(manifest["files"])
        assert len(pd.read_parquet(ref / "jobs.parquet")) == JOBS
    assert reference(big, 1) != reference(big, 2)  # else "old or new" would prove nothing


def stages(big: Path, out: Path) -> list[Path]:
    return [p for p in big.glob(f".{out.name}.tmp-*") if p.is_dir()]


def writing(big: Path, out: Path):
    """A test for 'the run has started writing its tables': a file in a staging folder, or (for a
    program writing in place) a file of ``out`` changed since now."""
    def state():
        return {p.name: p.stat().st_mtime_ns for p in out.iterdir()} if out.is_dir() else {}

    before = state()
    return lambda: any(any(s.iterdir()) for s in stages(big, out)) or state() != before


def _wait_for(predicate, proc, limit_s=60.0) -> bool:
    end = time.monotonic() + limit_s
    while time.monotonic() < end and proc.poll() is None:
        if predicate():
            return True
        time.sleep(0.005)
    return False


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_killed_run_leaves_old_or_new_results(big, sig):
    """Kill runs at random points, half of them while the tables are being written."""
    out = big / f"out-{sig.name}"
    shutil.copytree(big / "ref1", out)
    held = 1
    rng = random.Random(sig.value)
    outcomes = []
    for attempt in range(3):
        new = 2 if held == 1 else 1
        proc = subprocess.Popen(CLI + ["run", "s.yaml", "--out", out.name, "--seed", str(new)], cwd=big,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

        # Attempts 0 and 2: while the tables are being written; attempt 1: any time from the lock on
        # (a program without a staging folder gets no such signal: then after the wait). The wait is
        # long because a loaded machine can take seconds to import the CLI, and an interrupt during
        # the imports is Python's, not the CLI's, to handle.
        if attempt % 2 == 0:
            _wait_for(writing(big, out), proc)
            time.sleep(rng.uniform(0.0, 0.3))
        else:
            _wait_for(lambda: bool(stages(big, out)), proc, limit_s=30.0)
            time.sleep(rng.uniform(0.0, 1.0))
        if proc.poll() is None:
            proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=60)
        outcomes.append(proc.returncode)
        assert "Traceback" not in stderr, stderr
        got = digest(out)
        assert got in (reference(big, held), reference(big, new)), f"attempt {attempt}: mixed results {sorted(got)}"
        if proc.returncode == 0 or got == reference(big, new):
            held = new
        if sig == signal.SIGINT and proc.returncode != 0:
            assert proc.returncode == 130 and "interrupted" in stderr and out.name in stderr, (proc.returncode, stderr)
        if sig == signal.SIGKILL and proc.returncode != 0:
            assert proc.returncode == -signal.SIGKILL
    assert any(code != 0 for code in outcomes), "no run was actually interrupted"
    # The next run recovers from whatever the killed ones left (staging folders, a stale lock).
    new = 2 if held == 1 else 1
    clean_exit(cli(["run", "s.yaml", "--out", out.name, "--seed", str(new)], big), 0)
    assert digest(out) == reference(big, new)
    assert leftovers(out) == []


@pytest.mark.slow
def test_concurrent_run_exits_2_and_the_first_wins(big):
    out = big / "out-concurrent"
    first = subprocess.Popen(CLI + ["run", "s.yaml", "--out", out.name, "--seed", "2"], cwd=big,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert _wait_for(writing(big, out), first), "first run never started writing"
        first.send_signal(signal.SIGSTOP)  # holds the lock for as long as the second run needs
        second = cli(["run", "s.yaml", "--out", out.name, "--seed", "1"], big)
    finally:
        first.send_signal(signal.SIGCONT)
    _, first_err = first.communicate(timeout=60)
    clean_exit(second, 2, f"--out {out.name}", "another costsim run", f"pid {first.pid}")
    assert second.stdout == ""  # refused before simulating
    assert first.returncode == 0, first_err
    assert digest(out) == reference(big, 2)
    assert leftovers(out) == []


@pytest.fixture
def small(tmp_path, monkeypatch) -> Path:
    """A two-job scenario in the current folder, beside a file that must not be touched."""
    (tmp_path / "jobs.csv").write_text("submit_h,gpus,duration_h\n0,8,1\n1,16,2\n")
    (tmp_path / "s.yaml").write_text(SMALL.format(name="s"))
    (tmp_path / "afile").write_text("keep me")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_here(*args: str):
    """The CLI in this process (cheap): exit status, stdout, stderr, and no exception escaped."""
    result = CliRunner().invoke(app, ["run", "s.yaml", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.stderr
    return result


@pytest.mark.slow
def test_write_error_is_a_message_and_keeps_the_old_results(small):
    """A file size limit makes writes fail with EFBIG, as a full disk makes them fail with ENOSPC."""
    assert run_here("--out", "res", "--seed", "1").exit_code == 0
    before = digest(small / "res")
    limit = 4096  # bytes: every Parquet file is larger

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = cli(["run", "s.yaml", "--out", "res", "--seed", "2"], small, preexec_fn=small_files)
    clean_exit(proc, 2, "--out res", "could not write the results", "File too large", "unchanged")
    assert digest(small / "res") == before
    assert leftovers(small / "res") == []


@pytest.mark.parametrize("out, needle", [
    ("afile/sub", "afile is a file, not a folder"),
    ("afile/sub/deeper", "afile is a file, not a folder"),
    ("afile", "exists and is not a folder"),
    ("", "is empty"),
])
def test_unusable_out_is_refused_before_simulating(small, out, needle):
    result = run_here("--out", out)
    assert result.exit_code == 2
    assert f"--out {out or chr(34) * 2}" in result.stderr and needle in result.stderr, result.stderr
    assert result.stdout == ""  # the comparison table is printed after simulating: it never was
    assert (small / "afile").read_text() == "keep me"
    assert sorted(p.name for p in small.iterdir()) == ["afile", "jobs.csv", "s.yaml"]


@pytest.mark.slow
def test_folder_with_other_files_is_not_replaced(small):
    (small / "mine").mkdir()
    (small / "mine" / "notes.txt").write_text("precious")
    result = run_here("--out", "mine")
    assert result.exit_code == 2 and result.stdout == ""
    assert "--out mine" in result.stderr and "notes.txt" in result.stderr and "costsim did not write" in result.stderr
    assert [p.name for p in (small / "mine").iterdir()] == ["notes.txt"]
    result = run_here("--out", ".")
    assert result.exit_code == 2 and "--out ." in result.stderr and "current folder" in result.stderr
    # A folder a run wrote is replaced by the next run.
    assert run_here("--out", "res", "--seed", "1").exit_code == 0
    assert run_here("--out", "res", "--seed", "2").exit_code == 0
    assert json.loads((small / "res" / MANIFEST).read_text())["seed"] == 2


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores permission bits; the path-under-a-file case covers "
                    "an unwritable parent")
def test_read_only_parent_is_refused_before_simulating(small):
    (small / "ro").mkdir()
    (small / "ro").chmod(0o555)
    try:
        result = run_here("--out", "ro/results")
    finally:
        (small / "ro").chmod(0o755)
    assert result.exit_code == 2 and "--out ro/results" in result.stderr and "cannot write in" in result.stderr
    assert result.stdout == "" and list((small / "ro").iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("name, folder", [("../../x", "x"), ("..", "scenario"), ("a/../../b", "a_.._.._b"),
                                          ("ABSOLUTE", None)])
def test_scenario_name_cannot_lead_outside_out(small, name, folder):
    if name == "ABSOLUTE":  # an absolute path, inside this test's folder so the old code did no harm
        name = str(small / "abs" / "path")
        folder = name.lstrip("/").replace("/", "_")  # every separator one '_', the leading one dropped
        assert len(folder) <= 100 and all(c.isalnum() or c in "_.-" for c in folder)  # the rule above suffices
    (small / "s.yaml").write_text(SMALL.format(name=json.dumps(name)))
    outside_before = sorted(p.name for p in small.parent.iterdir())
    assert run_here().exit_code == 0
    assert sorted(p.name for p in small.iterdir()) == ["afile", "jobs.csv", "out", "s.yaml"]
    assert [p.name for p in (small / "out").iterdir()] == [folder]
    assert (small / "out" / folder / "summary.csv").is_file()
    assert sorted(p.name for p in small.parent.iterdir()) == outside_before


def test_safe_folder_name_is_one_harmless_component():
    for name in ["/abs/path", "../../x", "..", ".", "", "a\\b", "a\x00b", "~/x", "[/]evil[bold]", "é" * 300,
                 "con:1", "-rf", " spaced name "]:
        safe = safe_folder_name(name)
        assert safe and "/" not in safe and "\\" not in safe and "\x00" not in safe, name
        assert not safe.startswith((".", "-")) and len(safe.encode()) <= 100, name
        assert Path(safe).name == safe and Path("out", safe).parent == Path("out")
    assert safe_folder_name("baseline") == "baseline"  # ordinary names are kept
    assert safe_folder_name("my run 2") == "my_run_2"


def test_crash_between_the_two_renames_is_recovered(small, monkeypatch):
    """Where the atomic exchange is missing, a kill between 'DIR -> old' and 'staging -> DIR' leaves
    no DIR; the next run puts the previous results back before anything else."""
    out = small / "res"
    out.mkdir()
    (out / "summary.csv").write_text("previous")
    # The state such a kill leaves, built by hand: previous results aside, a complete staging folder.
    os.rename(out, small / ".res.old-0123abcd")
    (small / ".res.tmp-89abcdef").mkdir()
    (small / ".res.tmp-89abcdef" / "summary.csv").write_text("new, never published")
    with OutputFolder(out, ours={"summary.csv"}) as folder:
        assert (out / "summary.csv").read_text() == "previous"
        assert leftovers(out) == sorted([".res.lock", folder.staging.name])
    assert leftovers(out) == []
    # And the fallback swap itself: forced by making the exchange unavailable.
    monkeypatch.setattr("costsim.runs.outdir._exchange", lambda a, b: False)
    with OutputFolder(out, ours={"summary.csv"}) as folder:
        folder.publish(lambda d: (d / "summary.csv").write_text("new"))
    assert (out / "summary.csv").read_text() == "new" and leftovers(out) == []


@pytest.mark.slow
def test_out_through_a_symlink_replaces_the_folder_it_points_to(small):
    assert run_here("--out", "real", "--seed", "1").exit_code == 0
    (small / "link").symlink_to("real")
    assert run_here("--out", "link", "--seed", "2").exit_code == 0
    assert (small / "link").is_symlink() and os.readlink(small / "link") == "real"
    assert json.loads((small / "real" / MANIFEST).read_text())["seed"] == 2
    assert leftovers(small / "real") == [] and leftovers(small / "link") == []


def test_write_results_from_python_is_atomic_too(small):
    import costsim
    from costsim.runs.export import write_results

    res = costsim.simulate(small / "s.yaml", seed=3)
    written = write_results(res, small / "res")
    # Every table as CSV and Parquet, the resolved scenario, the assumptions and the manifest, nothing else.
    assert sorted(p.name for p in written) == sorted(p.name for p in (small / "res").iterdir())
    assert len(written) == 2 * len(TABLES) + 3
    assert "assumptions.csv" in {p.name for p in written}
    assert json.loads((small / "res" / MANIFEST).read_text())["seed"] == 3
    (small / "res" / "notes.txt").write_text("mine")
    with pytest.raises(costsim.OutputError, match="notes.txt"):
        write_results(res, small / "res")
    assert (small / "res" / "notes.txt").read_text() == "mine"


def test_a_ctrl_c_before_the_folder_is_opened_names_it_unchanged(small, monkeypatch):
    """A Ctrl-C that lands while the scenario is still being read (on a loaded machine, the first
    seconds) says the --out folder asked for is unchanged, as one landing later does."""
    import costsim.cli.commands as cli

    def interrupted_read(path):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "load_scenario_or_exit", interrupted_read)
    result = CliRunner().invoke(app, ["run", "s.yaml", "--out", "kept"])
    assert result.exit_code == 130
    assert "interrupted: nothing written; kept is unchanged" in result.output
    assert "Traceback" not in result.output
