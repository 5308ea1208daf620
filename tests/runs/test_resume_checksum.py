"""A sweep's resume and ``costsim report SWEEP_DIR`` trust a task file only when it passes its
checksum and names its own task: a file changed in any way is named and run again (resume) or
refused (report), a file that is not one of the sweep's tasks is refused by name, and damaged
metadata never gives a traceback.

The truth is an uninterrupted sweep of the same file: a resume must give its tables bit for bit,
whatever was done to the saved files; a report must give the same means or refuse."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import bits, tiny_sweep_files
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import costsim
from costsim.cli.commands import app
from costsim.errors import OutputError
from costsim.runs.sweepfile import load_sweep
from costsim.scenario import ScenarioError

TASK = "runs/variant=v000/replication=0.parquet"


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> Path:
    """A finished sweep (two variants × two replications) and its tables: the truth."""
    folder = tiny_sweep_files(tmp_path_factory.mktemp("sweep"))
    costsim.sweep(folder / "sw.yaml", out=folder / "out", executor="local")
    return folder


@pytest.fixture
def copy(whole, tmp_path, monkeypatch) -> Path:
    """A fresh copy of the finished sweep (the current folder): ``out`` is its dataset."""
    for name in ("s.yaml", "sw.yaml"):
        shutil.copy(whole / name, tmp_path / name)
    shutil.copytree(whole / "out", tmp_path / "out")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def truth(whole: Path):
    return costsim.sweep(whole / "sw.yaml", executor="local")


def resume(folder: Path, spec=None):
    """Resume the sweep in ``folder/out``: (results, notices, tasks run)."""
    told, ran = [], []
    res = costsim.sweep(spec or folder / "sw.yaml", out=folder / "out", executor="local", notify=told.append,
                        progress=lambda d, t: ran.append(t))
    return res, told, ran[0]


def report(folder: Path):
    result = CliRunner().invoke(app, ["report", str(folder / "out"), "--out", str(folder / "r.html")],
                                env={"COLUMNS": "200"})
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    return result


def rewrite(path: Path, edit=None, meta=None) -> None:
    """Write ``path`` again with its table edited by ``edit(table) -> table`` and its schema
    metadata replaced by ``meta(old) -> new`` (the checksum written with it left as it was)."""
    table = pq.read_table(path)
    old = dict(table.schema.metadata)
    if edit is not None:
        table = edit(table)
    pq.write_table(table.replace_schema_metadata(meta(old) if meta else old), path)


def set_cell(table: pa.Table, column: str, row: int, value) -> pa.Table:
    values = table.column(column).to_pylist()
    values[row] = value
    i = table.schema.get_field_index(column)
    return table.set_column(i, table.schema.field(i), pa.array(values, type=table.schema.field(i).type))


# -- 4. resume trusts only files that pass their checksum ---------------------------------------------

@pytest.mark.slow
def test_an_edited_value_is_named_and_run_again_not_trusted(whole, copy):
    path = copy / "out" / TASK
    rewrite(path, lambda t: set_cell(t, "total_cost_usd", 0, t.column("total_cost_usd")[0].as_py() * 0.5))
    res, told, ran = resume(copy)
    assert ran == 1 and len(told) == 1
    assert told[0] == (f"{copy / 'out'}/{TASK} its contents differ from the checksum written with them: it changed "
                       "after the sweep wrote it: running that task again")
    assert bits(res.runs) == bits(truth(whole).runs) and bits(res.means) == bits(truth(whole).means)


def test_a_copy_of_another_tasks_file_is_run_again(whole, copy):
    shutil.copy(copy / "out" / "runs/variant=v001/replication=1.parquet", copy / "out" / TASK)
    # v001 was run with other swept values than v000: its params differ from the manifest's too
    res, told, ran = resume(copy)
    differ = "is not this task's file (its variant, replication, seed, scenario_sha256, params differ"
    assert ran == 1 and differ in told[0]
    assert bits(res.runs) == bits(truth(whole).runs)


def test_metadata_edited_to_claim_another_task_fails_the_checksum(whole, copy):
    # v001's runs moved into v000's place with their metadata edited to say v000: the checksum
    # covers the task's identity, so the edit does not make them v000's.
    src = pq.read_table(copy / "out" / "runs/variant=v001/replication=0.parquet")
    meta = json.loads(src.schema.metadata[b"costsim.sweep"])
    mine = json.loads(pq.read_table(copy / "out" / TASK).schema.metadata[b"costsim.sweep"])
    meta.update({k: mine[k] for k in ("variant", "scenario_sha256", "params")})
    pq.write_table(src.replace_schema_metadata({**src.schema.metadata, b"costsim.sweep": json.dumps(meta).encode()}),
                   copy / "out" / TASK)
    res, told, ran = resume(copy)
    assert ran == 1 and "differ from the checksum" in told[0]
    assert bits(res.runs) == bits(truth(whole).runs)


@pytest.mark.slow
@pytest.mark.parametrize("damage, says", [
    ({b"costsim.sweep": b"not json"}, "cannot be read (JSONDecodeError"),
    ({b"costsim.sweep": b"[]"}, "has no costsim sweep metadata"),
    ({b"costsim.sweep": b'{"variant": 5}'}, "is not this task's file (its variant, replication, seed, scenario_sha256"),
    ("no checksum", "has no checksum (an older costsim wrote it)"),
    ("truncated", "cannot be read (ArrowInvalid"),
])
def test_damaged_metadata_is_named_run_again_by_resume_and_refused_by_report(whole, copy, damage, says):
    path = copy / "out" / TASK
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "no checksum":
        def drop(old):
            meta = json.loads(old[b"costsim.sweep"])
            del meta["task_sha256"]
            return {**old, b"costsim.sweep": json.dumps(meta).encode()}
        rewrite(path, meta=drop)
    else:
        rewrite(path, meta=lambda old: {**old, **damage})
    result = report(copy)
    assert result.exit_code == 2
    assert f"SWEEP_DIR {copy / 'out'}: {TASK} {says}" in result.output
    assert not (copy / "r.html").exists()
    res, told, ran = resume(copy)
    assert ran == 1 and len(told) == 1 and f"{TASK} {says}" in told[0]
    assert bits(res.runs) == bits(truth(whole).runs)
    assert report(copy).exit_code == 0  # the file is the sweep's again


@pytest.mark.slow
def test_damaged_pandas_metadata_changes_nothing_and_gives_no_traceback(whole, copy):
    # The table is rebuilt from the Arrow schema alone: pandas' metadata cannot alter the values.
    rewrite(copy / "out" / TASK, meta=lambda old: {**old, b"pandas": b"{}"})
    assert report(copy).exit_code == 0
    res, told, ran = resume(copy)
    assert ran == 0 and told == []
    assert bits(res.runs) == bits(truth(whole).runs)


# -- 5 and 15. report reads the manifest's tasks only, each checked -----------------------------------

def test_report_refuses_an_edited_task_file_by_name(copy):
    rewrite(copy / "out" / TASK, lambda t: set_cell(t, "total_cost_usd", 1, 1.0))
    result = report(copy)
    assert result.exit_code == 2
    assert (f"SWEEP_DIR {copy / 'out'}: {TASK} its contents differ from the checksum written with them") in result.output
    assert "run the same sweep again to redo that task" in result.output and not (copy / "r.html").exists()


@pytest.mark.parametrize("stray, named", [
    ("runs/variant=v000/replication=0 (1).parquet", None),  # a second copy of a task
    ("runs/variant=v999/replication=0.parquet", "runs/variant=v999"),  # another sweep's variant
    ("runs/variant=v000/replication=7.parquet", None),  # a replication this sweep does not have
    ("runs/notes.parquet", None),
])
def test_files_that_are_not_this_sweeps_tasks_are_refused_by_name(copy, stray, named):
    path = copy / "out" / stray
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(copy / "out" / TASK, path)
    before = {str(p): p.read_bytes() for p in (copy / "out").rglob("*") if p.is_file()}
    result = report(copy)
    assert result.exit_code == 2 and f"not this sweep's tasks ({named or stray})" in result.output
    with pytest.raises(OutputError, match=rf"not this sweep's tasks \({re.escape(named or stray)}\)"):
        costsim.sweep(copy / "sw.yaml", out=copy / "out", executor="local")
    assert {str(p): p.read_bytes() for p in (copy / "out").rglob("*") if p.is_file()} == before


def test_two_files_for_one_task_are_refused_by_report(copy):
    shutil.copy(copy / "out" / "runs/variant=v000/replication=1.parquet", copy / "out" / TASK)
    result = report(copy)
    assert result.exit_code == 2
    assert f"{TASK} is not this task's file (its replication, seed differ from the manifest's)" in result.output


def test_a_damaged_manifest_is_refused_by_name(copy):
    manifest = copy / "out" / "sweep.json"
    data = json.loads(manifest.read_text())
    data["variants"][0]["id"] = "../../elsewhere"
    manifest.write_text(json.dumps(data))
    result = report(copy)
    assert result.exit_code == 2 and "has a sweep.json that is not a costsim sweep manifest (its variants" in result.output


def test_the_report_of_an_intact_sweep_has_the_means_of_the_truth(whole, copy):
    from costsim.report.sweep import read_sweep_folder

    res, notes = read_sweep_folder(copy / "out")
    assert notes == [] and bits(res.means) == bits(truth(whole).means)


# -- the property: any single-bit flip or value edit ---------------------------------------------------

@pytest.fixture(scope="module")
def pristine(whole):
    """The task file's bytes, the loaded sweep (built once) and the truth's runs."""
    return (whole / "out" / TASK).read_bytes(), load_sweep(whole / "sw.yaml"), bits(truth(whole).runs)


NUMERIC = ["replication", "seed", "jobs_completed", "total_cost_usd", "utilization", "queue_delay_p95_h"]
edits = st.one_of(
    st.tuples(st.just("flip"), st.integers(min_value=0, max_value=10**9)),
    st.tuples(st.just("edit"), st.sampled_from(NUMERIC), st.integers(0, 1),
              st.floats(allow_nan=False, allow_infinity=False, width=64) | st.integers(-2**40, 2**40)),
    st.tuples(st.just("text"), st.sampled_from(["option", "kind", "pricing"]), st.integers(0, 1),
              st.text(max_size=8)),
)


@pytest.mark.slow
@settings(max_examples=50, deadline=None)
@given(change=edits)
def test_any_bit_flip_or_value_edit_is_rerun_or_refused_never_trusted(whole, pristine, change):
    data, spec, expected = pristine
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        shutil.copytree(whole / "out", folder / "out")
        path = folder / "out" / TASK
        if change[0] == "flip":
            bit = change[1] % (len(data) * 8)
            flipped = bytearray(data)
            flipped[bit // 8] ^= 1 << (bit % 8)
            path.write_bytes(bytes(flipped))
        else:
            _, column, row, value = change
            table = pq.read_table(path)
            if table.column(column)[row].as_py() == value:
                return  # not an edit
            kind = table.schema.field(column).type
            if pa.types.is_integer(kind) and (not isinstance(value, int) or not -2**63 <= value < 2**63):
                value = int(value) if isinstance(value, float) and abs(value) < 2**62 else 7
                if table.column(column)[row].as_py() == value:
                    return
            rewrite(path, lambda t: set_cell(t, column, row, value))
        try:
            res, told, ran = resume(folder, spec)
        except ScenarioError as err:
            assert TASK in str(err), str(err)  # refused, naming the file
            return
        assert bits(res.runs) == expected  # never the changed values
        if change[0] != "flip":
            assert ran == 1 and len(told) == 1 and TASK in told[0]  # an edit is always caught and rerun
