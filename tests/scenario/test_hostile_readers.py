"""Hostile and degenerate inputs to the readers: each is refused (or read) with a message naming
the file, the field and the line and saying what to do, exit 2 from the CLI and no traceback.

Truths are written here: the line of a bad byte from Python's own decoder on the whole bytes, the
rate a degenerate fit would make up by hand (n jobs over the 1-hour floor, × 24)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import costsim
from costsim import Scenario
from costsim.calibration.fit import fit_trace
from costsim.cli.commands import app
from costsim.scenario import ScenarioError, textfile
from costsim.scenario.trace import read_trace
from costsim.traces import import_trace

FIELD = "x" * 131_073  # one character over Python's default CSV field-size limit


def invoke(*args: str, **kw):
    result = CliRunner().invoke(app, list(args), **kw)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    return result


# -- Alibaba PAI: nan is not a count ------------------------------------------------------------------

def _pai(folder: Path, plan_gpu: str) -> Path:
    jobs = folder / "pai_job_table.csv"
    jobs.write_text("j1,i1,u1,Terminated,100,200\nj2,i2,u2,Terminated,100,300\n")
    (folder / "pai_task_table.csv").write_text(f"j1,worker,1,Terminated,110,200,600,29,{plan_gpu},V100\n"
                                               "j2,worker,2,Terminated,120,300,600,29,100,V100\n")
    return jobs


@pytest.mark.parametrize("cell", ["nan", "NaN", "None", "-"])
def test_pai_plan_gpu_that_is_not_a_number_is_a_bad_row(tmp_path, cell):
    jobs = _pai(tmp_path, cell)
    with pytest.raises(ScenarioError) as err:
        import_trace("alibaba-pai", jobs)
    assert f"pai_task_table.csv:1: plan_gpu: {cell!r} is not a percentage of a GPU >= 0 (empty for a task " \
           "without GPUs)" in str(err.value)
    result = invoke("import-trace", "alibaba-pai", str(jobs), "--out", str(tmp_path / "t.csv"))
    assert result.exit_code == 2 and not (tmp_path / "t.csv").exists()


def test_pai_empty_plan_gpu_is_still_a_task_without_gpus(tmp_path):
    """A guard rather than a regression test (the old code passed it too): as published."""
    r = import_trace("alibaba-pai", _pai(tmp_path, ""))
    assert list(r.frame["job_id"]) == ["j2"] and r.dropped == {"no GPUs": 1}


# -- CSV field size and JSON depth ------------------------------------------------------------------

def _k8s(path: Path, qos: str) -> Path:
    path.write_text("name,num_gpu,gpu_milli,creation_time,scheduled_time,deletion_time,pod_phase,qos\n"
                    f"p1,1,0,0,10,3600,Succeeded,{qos}\np2,1,0,5,10,3600,Succeeded,LS\n")
    return path


def _helios(path: Path, user: str) -> Path:
    path.write_text("job_id,user,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
                    f"a,{user},1,1,1,COMPLETED,0,0,3600,3600,0\n")
    return path


def _pai_long(folder: Path, user: str) -> Path:
    jobs = folder / "pai_job_table.csv"
    jobs.write_text(f"j1,i1,{user},Terminated,100,4000\n")
    (folder / "pai_task_table.csv").write_text("j1,worker,1,Terminated,110,4000,600,29,100,V100\n")
    return jobs


@pytest.mark.parametrize("fmt, make", [("k8s-pods", lambda d: _k8s(d / "pods.csv", FIELD)),
                                        ("helios", lambda d: _helios(d / "helios.csv", FIELD)),
                                        ("alibaba-pai", lambda d: _pai_long(d, FIELD))])
def test_a_field_over_131072_characters_is_read(tmp_path, fmt, make):
    """k8s: the class is qos; Helios: user (no vc); PAI: user."""
    r = import_trace(fmt, make(tmp_path))
    assert FIELD in set(r.frame["job_class"])


@pytest.mark.parametrize("fmt, make, line", [("k8s-pods", lambda d: _k8s(d / "pods.csv", FIELD), 2),
                                              ("helios", lambda d: _helios(d / "helios.csv", FIELD), 2),
                                              ("alibaba-pai", lambda d: _pai_long(d, FIELD), 1)])
def test_a_field_over_the_trace_bound_is_an_error_at_its_line(tmp_path, monkeypatch, fmt, make, line):
    monkeypatch.setenv("COSTSIM_MAX_TRACE_BYTES", "100000")
    source = make(tmp_path)
    result = invoke("import-trace", fmt, str(source), "--out", str(tmp_path / "t.csv"))
    assert result.exit_code == 2 and not (tmp_path / "t.csv").exists()
    assert (f"error: {source}:{line}: a field is longer than 100,000 characters, the bound on a trace file "
            "(set COSTSIM_MAX_TRACE_BYTES to raise it") in " ".join(result.stderr.split()), result.stderr


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000,
                                  '[{"jobid": "a", "x": ' + "[" * 100_000 + "]" * 100_000 + "}]",
                                  '{"jobid": "a"}\n' + '{"x": ' * 100_000 + "1" + "}" * 100_000 + "\n"])
def test_philly_json_nested_100000_deep_is_bad_input_naming_the_job(tmp_path, text):
    source = tmp_path / "philly.json"
    source.write_text(text)
    with pytest.raises(ScenarioError) as err:
        import_trace("philly", source)
    job, line = (1, 2) if text.startswith('{"jobid"') else (0, 1)
    assert str(err.value).startswith(f"{source}:{line}: job {job} is nested deeper than the JSON reader goes")
    result = invoke("import-trace", "philly", str(source), "--out", str(tmp_path / "t.csv"))
    assert result.exit_code == 2 and "is this a Philly cluster_job_log?" in " ".join(result.stderr.split())


# -- trace CSV: extra fields and bytes that are not UTF-8 -------------------------------------------

@pytest.mark.parametrize("text, line", [
    ("submit_h,gpus,duration_h\n0,8,1\n1,16,2,5\n2,8,1\n", 3),
    ("submit_h,gpus,duration_h\n\n0,8,1\n\n1,16,2,5\n", 5),  # blank lines count
    ('submit_h,gpus,duration_h,job_id\n0,8,1,"a\nb"\n1,16,2,c,5\n', 4),  # a quoted newline: the row's own line
])
def test_a_row_with_an_extra_field_names_its_line(tmp_path, text, line):
    path = tmp_path / "trace.csv"
    path.write_text(text)
    with pytest.raises(ScenarioError) as err:
        read_trace(path)
    width = text.splitlines()[0].count(",") + 1
    assert str(err.value) == (f"{path}:{line}: has {width + 1} fields; the header has {width} columns (a cell "
                              'holding a comma must be quoted: "a,b")')


def test_a_trace_that_is_not_utf8_names_line_and_column(tmp_path, monkeypatch):
    path = tmp_path / "trace.csv"
    path.write_bytes(b"submit_h,gpus,duration_h,job_class\n0,8,1,a\n1,16,2,b\xff\n")
    with pytest.raises(ScenarioError) as err:
        read_trace(path)
    assert str(err.value) == (f"{path}:3: byte 0xff at column 9 is not UTF-8 text: save the file as UTF-8 (in a "
                              "spreadsheet: CSV UTF-8)")
    monkeypatch.chdir(tmp_path)
    result = invoke("fit-workload", "trace.csv", "--out", "c.yaml")
    assert result.exit_code == 2 and "trace.csv:3: byte 0xff at column 9" in result.stderr


def test_an_import_not_utf8_far_into_the_file_names_its_line(tmp_path):
    """Past the first chunk Python's text reader decodes (its error's position is within a chunk)."""
    rows = "".join(f"p{i},1,0,{i},{i + 1},{i + 3600},Succeeded,LS\n" for i in range(5000))
    path = tmp_path / "pods.csv"
    path.write_bytes(("name,num_gpu,gpu_milli,creation_time,scheduled_time,deletion_time,pod_phase,qos\n"
                      + rows).encode() + b"bad,1,0,1,2,3,Succeeded,\xc3\x28\n")
    with pytest.raises(ScenarioError) as err:
        import_trace("k8s-pods", path)
    assert str(err.value).startswith(f"{path}:5002: byte 0xc3 at column 25 is not UTF-8 text")


def _truth(data: bytes) -> tuple[int, int, int] | None:
    """(line, column, byte) of the first bad byte, from one decode of the whole bytes."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[:exc.start]
        return before.count(b"\n") + 1, exc.start - (before.rfind(b"\n") + 1) + 1, data[exc.start]
    return None


def test_first_bad_utf8_agrees_with_one_decode_for_any_chunk_size(tmp_path, monkeypatch):
    rng = random.Random(7)
    alphabet = ["a", "é", "€", "𝄞", "\n", ","]  # 1 to 4 bytes: chunks cut through characters
    path = tmp_path / "f"
    for trial in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))).encode()
        if trial % 3:
            at = rng.randint(0, len(text))
            text = text[:at] + rng.choice([b"\xff", b"\xc3", b"\xe2\x82", b"\x80"]) + text[at:]
        path.write_bytes(text)
        monkeypatch.setattr(textfile, "CHUNK_BYTES", rng.randint(1, 9))
        assert textfile.first_bad_utf8(path) == _truth(text), text


# -- fit-workload on degenerate traces --------------------------------------------------------------

def _trace(path: Path, submit_h) -> Path:
    n = len(submit_h)
    pd.DataFrame({"submit_h": submit_h, "gpus": 8, "duration_h": np.linspace(1, 2, n)}).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("submit_h, words", [
    ([0.0], "its one job is submitted at hour 0"),
    ([0.0] * 100, "all 100 jobs are submitted at hour 0"),
    ([5.0] * 3, "all 3 jobs are submitted at hour 5"),
])
def test_fit_workload_refuses_a_trace_that_spans_no_time(tmp_path, submit_h, words):
    path = _trace(tmp_path / "t.csv", submit_h)
    made_up = len(submit_h) / max(submit_h[0], 1.0) * 24  # n jobs over the window's floor, per day
    result = invoke("fit-workload", str(path), "--out", str(tmp_path / "c.yaml"))
    assert result.exit_code == 2 and not (tmp_path / "c.yaml").exists()
    message = " ".join(result.stderr.split())
    assert f"error: {path}: submit_h: {words}: the trace spans no time, so it holds no arrival rate" in message
    assert f"{made_up:,.0f} a day); fit a trace whose jobs arrive over time" in message
    with pytest.raises(ValueError, match="spans no time"):
        fit_trace(read_trace(path))


def test_fit_workload_warns_about_few_jobs(tmp_path):
    path = _trace(tmp_path / "t.csv", [0.0, 1.5, 3.0])
    result = invoke("fit-workload", str(path), "--out", str(tmp_path / "c.yaml"))
    assert result.exit_code == 0, result.output
    message = " ".join(result.stderr.split())
    assert (f"warning: {path}: only 3 jobs (fewer than 30): the rate, the profiles and the KS checks rest on few "
            "arrivals") in message
    header = (tmp_path / "c.yaml").read_text()
    assert "# warning: only 3 jobs (fewer than 30)" in header


def test_fit_workload_refuses_arrivals_within_minutes(tmp_path):
    path = _trace(tmp_path / "t.csv", [0.0, 0.1, 0.3])
    result = invoke("fit-workload", str(path), "--out", str(tmp_path / "c.yaml"))
    assert result.exit_code == 2 and not (tmp_path / "c.yaml").exists()
    message = " ".join(result.stderr.split())
    assert f"error: {path}: submit_h: the 3 jobs arrive within 18 minutes (hours 0 to 0.3)" in message


def test_fit_workload_warns_about_a_small_class_of_a_large_trace(tmp_path):
    frame = pd.DataFrame({"submit_h": np.arange(45.0), "gpus": 8, "duration_h": 1.0,
                          "job_class": ["big"] * 40 + ["small"] * 5})
    frame.to_csv(tmp_path / "t.csv", index=False)
    result = invoke("fit-workload", str(tmp_path / "t.csv"), "--out", str(tmp_path / "c.yaml"))
    assert result.exit_code == 0, result.output
    message = " ".join(result.stderr.split())
    assert "class small: only 5 jobs (fewer than 30): its profiles and KS checks mean little" in message
    assert "class big" not in message


# -- the Python API ---------------------------------------------------------------------------------

@pytest.mark.parametrize("make, source", [(lambda: Scenario.model_construct(name="x"), "scenario 'x'"),
                                          (lambda: Scenario.model_construct(), "scenario")])
def test_simulate_of_an_unvalidated_scenario_is_a_scenario_error(make, source):
    with pytest.raises(ScenarioError) as err:
        costsim.simulate(make())
    text = str(err.value)
    assert f"{source}: horizon_days: required field is missing" in text
    assert f"{source}: options: required field is missing" in text
