"""A million-job trace in memory: the trace is read once per simulate, by a
columnar reader that gives exactly what the string reader gives, and memory per job is bounded.

Truth here is independent of the readers: hand-written CSV files with their values written out, the
string reader (``_read_strings``, the format's definition) for
differential checks, and a stated bytes-per-job bound that the pre-issue code (about 1,400 bytes a
job at 100,000 jobs) does not meet.
"""

from __future__ import annotations

import gc
import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import costsim
from costsim.scenario import ScenarioError, read_trace, scenario_from_data
from costsim.scenario import trace as T

HEADER = "submit_h,gpus,duration_h,job_id,job_class,priority"
FIELDS = ("submit_h", "gpus", "duration_h", "job_id", "job_class", "priority", "gpu_type")
TABLES = ("jobs", "summary", "timeseries", "costs", "phases", "cashflow", "breakeven", "advice", "to_target",
          "reward_by_day")


def _write(folder: Path, text: str, name: str = "jobs.csv") -> Path:
    path = folder / name
    path.write_bytes(text.encode("utf-8"))
    return path


def _assert_table(table: T.TraceTable, expected: dict) -> None:
    """Every column: dtype as documented, values exactly (strings as Python strings); a gpu_type not
    in ``expected`` is any (ANY_GPU) for every job."""
    dtypes = {"submit_h": np.float64, "gpus": np.int64, "duration_h": np.float64, "priority": np.int64,
              "job_id": object, "job_class": object, "gpu_type": np.int8}
    expected = {"gpu_type": [T.ANY_GPU] * len(table), **expected}
    for field in FIELDS:
        got = getattr(table, field)
        assert got.dtype == dtypes[field], field
        if got.dtype == object:
            assert [type(v) for v in got] == [str] * len(got), field
            assert list(got) == list(expected[field]), field
        else:
            want = np.asarray(expected[field], dtype=got.dtype)
            assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want)), (field, got)


def _same_tables(a: T.TraceTable, b: T.TraceTable) -> None:
    _assert_table(a, {f: getattr(b, f) for f in FIELDS})


# --- the columnar reader gives the string reader's table ---------------------------------------------

# (case, CSV text, expected columns, whether the columnar reader takes the file)
CASES = [
    ("plain", f"{HEADER}\n0.5,8,2,a1,dev,1\n1.25,16,0.75,a2,,-2\n",
     {"submit_h": [0.5, 1.25], "gpus": [8, 16], "duration_h": [2.0, 0.75], "job_id": ["a1", "a2"],
      "job_class": ["dev", "trace"], "priority": [1, -2]}, True),
    ("spaces around cells and names", " submit_h , gpus,duration_h, job_id\n 0.5 , 8 ,2.0 , a 1 \n1e1,\t16,7.5e-1,b2\n",
     {"submit_h": [0.5, 10.0], "gpus": [8, 16], "duration_h": [2.0, 0.75], "job_id": ["a 1", "b2"],
      "job_class": ["trace", "trace"], "priority": [0, 0]}, True),
    ("whole numbers written as floats", "submit_h,gpus,duration_h,priority\n0,8.0,1,3.0\n2,1.6e1,1,+2\n",
     {"submit_h": [0.0, 2.0], "gpus": [8, 16], "duration_h": [1.0, 1.0], "job_id": ["trace-0", "trace-1"],
      "job_class": ["trace", "trace"], "priority": [3, 2]}, True),
    ("required columns only, reordered", "duration_h,submit_h,gpus\n1.5,3,4\n0.25,1,2\n",
     {"submit_h": [3.0, 1.0], "gpus": [4, 2], "duration_h": [1.5, 0.25], "job_id": ["trace-0", "trace-1"],
      "job_class": ["trace", "trace"], "priority": [0, 0]}, True),
    ("BOM, CRLF and a blank line", "\ufeffsubmit_h,gpus,duration_h\r\n0.5,1,1\r\n\r\n2,1,3\r\n",
     {"submit_h": [0.5, 2.0], "gpus": [1, 1], "duration_h": [1.0, 3.0], "job_id": ["trace-0", "trace-1"],
      "job_class": ["trace", "trace"], "priority": [0, 0]}, True),
    ("Unicode spaces around a class", "submit_h,gpus,duration_h,job_class\n0,1,1,\u3000dev\u00a0\n0,1,1,é\n",
     {"submit_h": [0.0, 0.0], "gpus": [1, 1], "duration_h": [1.0, 1.0], "job_id": ["trace-0", "trace-1"],
      "job_class": ["dev", "é"], "priority": [0, 0]}, True),
    ("GPU types, spaces around them and empty", "submit_h,gpus,duration_h,gpu_type\n0,8,1,H100\n0,8,1, A100\t\n"
     "1,1,1,\n2,1,1,H100\n",
     {"submit_h": [0.0, 0.0, 1.0, 2.0], "gpus": [8, 8, 1, 1], "duration_h": [1.0] * 4,
      "job_id": [f"trace-{i}" for i in range(4)], "job_class": ["trace"] * 4, "priority": [0] * 4,
      "gpu_type": [T.GPU_TYPES.index("H100"), T.GPU_TYPES.index("A100"), T.ANY_GPU, T.GPU_TYPES.index("H100")]},
     True),
    ("quoted fields", '"submit_h",gpus,duration_h,job_id,job_class\n"0.5","8",2,"id,1","a ""b"""\n',
     {"submit_h": [0.5], "gpus": [8], "duration_h": [2.0], "job_id": ["id,1"], "job_class": ['a "b"'],
      "priority": [0]}, False),
    ("a quote after a space", 'submit_h,gpus,duration_h,job_id\n0.5, "8", 2, "x"\n',
     {"submit_h": [0.5], "gpus": [8], "duration_h": [2.0], "job_id": ["x"], "job_class": ["trace"],
      "priority": [0]}, False),
]


@pytest.mark.parametrize("case, text, expected, columnar", CASES, ids=[c[0] for c in CASES])
def test_both_readers_give_the_hand_written_values(tmp_path, case, text, expected, columnar):
    path = _write(tmp_path, text)
    _assert_table(read_trace(path), expected)
    _assert_table(T._read_strings(path, str(path)), expected)
    fast = T._read_columnar(path)
    assert (fast is not None) == columnar, "which reader takes the file"
    if fast is not None:
        _assert_table(fast, expected)


BAD = [
    ("not a number", f"{HEADER}\n0.5,8,abc,a1,dev,1\n"),
    ("nan", "submit_h,gpus,duration_h\nnan,1,1\n"),
    ("infinite", "submit_h,gpus,duration_h\n0,1,inf\n"),
    ("empty cell", "submit_h,gpus,duration_h\n0,,1\n"),
    ("NA", "submit_h,gpus,duration_h\n0,NA,1\n"),
    ("not whole", "submit_h,gpus,duration_h\n0,1.5,1\n"),
    ("out of range", "submit_h,gpus,duration_h\n0,1e20,1\n"),
    ("duplicate id", "submit_h,gpus,duration_h,job_id\n0,1,1,a\n1,1,1,a\n"),
    ("empty id", "submit_h,gpus,duration_h,job_id\n0,1,1, \n"),
    ("ragged row", "submit_h,gpus,duration_h\n0,1,1\n0,1,1,9\n"),
    ("quote left open at the end", 'submit_h,gpus,duration_h,job_class\n0,1,1,"k'),
    ("unknown GPU type", "submit_h,gpus,duration_h,gpu_type\n0,1,1,H100\n0,1,1,h100\n"),
    ("unknown column", "submit_h,gpus,duration_h,user\n0,1,1,x\n"),
    ("no jobs", "submit_h,gpus,duration_h\n"),
    ("empty file", ""),
]


@pytest.mark.parametrize("case, text", BAD, ids=[c[0] for c in BAD])
def test_a_bad_file_gets_the_string_readers_message(tmp_path, case, text):
    path = _write(tmp_path, text)
    assert T._read_columnar(path) is None
    with pytest.raises(ScenarioError) as ref:
        T._read_strings(path, str(path))
    with pytest.raises(ScenarioError) as got:
        read_trace(path)
    assert str(got.value) == str(ref.value)


@pytest.mark.parametrize("rows", ["-0,1,1\n0.5,1,1\n", "-0,1,1\n1,1,1\n", "1,1,1\n-0.0,1,1\n"])
def test_a_negative_zero_keeps_the_string_readers_sign(tmp_path, rows):
    # The string reader parses an all-integer column as integers (-0 becomes +0) and any other
    # column as floats (-0 stays -0); whichever reader takes the file, the sign is that one.
    path = _write(tmp_path, "submit_h,gpus,duration_h\n" + rows)
    _same_tables(read_trace(path), T._read_strings(path, str(path)))


def _random_trace(rng: random.Random) -> str:
    """A small trace in one of many spellings: column subsets and orders, spaces, signs, exponents,
    whole numbers as floats, CRLF, blank lines, a BOM — and now and then a quote or a bad cell."""
    cols = ["submit_h", "gpus", "duration_h"] + [c for c in ("job_id", "job_class", "priority", "gpu_type")
                                           if rng.random() < 0.6]
    rng.shuffle(cols)

    def number(v: float) -> str:
        s = rng.choice([repr(float(v)), f"{v:g}", f"{v:.6e}", str(int(v)) if float(v).is_integer() else f"{v}"])
        s = ("+" if rng.random() < 0.1 else "") + s
        s = (" " if rng.random() < 0.1 else "") + s + (" " if rng.random() < 0.1 else "")
        if rng.random() < 0.005:  # per cell: a file has up to 72
            s = f'"{s}"'
        if rng.random() < 0.005:
            s = rng.choice(["nan", "inf", "", "NA", "-0", "1_0", "0x1"])
        return s

    def text(s: str) -> str:
        s = (" " if rng.random() < 0.1 else "") + s + ("\t" if rng.random() < 0.1 else "")
        if rng.random() < 0.01:
            s = rng.choice(['"a,b"', ' "q"', "", "NA", "\u3000x", 'a"b'])
        return s

    # per column, a cell of row ``row`` (drawn when the row is written, in the columns' order)
    cell = {"submit_h": lambda row: number(round(rng.uniform(0, 100), rng.randint(0, 6))),
            "duration_h": lambda row: number(round(rng.uniform(0.01, 10), rng.randint(0, 6))),
            "gpus": lambda row: number(rng.choice([1, 2, 8, 16])),
            "priority": lambda row: number(rng.randint(-5, 5)),
            "job_id": lambda row: text(f"id{row}"),
            "job_class": lambda row: text(rng.choice(["a", "b", "", "cls x"])),
            "gpu_type": lambda row: text(rng.choice(["H100", "A100", "", "x100"] if rng.random() < 0.02
                                                    else ["H100", "A100", ""]))}
    rows = [",".join((" " if rng.random() < 0.1 else "") + c for c in cols)]
    for i in range(rng.randint(1, 12)):
        rows.append(",".join(cell[c](i) for c in cols))
        if rng.random() < 0.05:
            rows.append("")
    eol = rng.choice(["\n", "\r\n"])
    return ("\ufeff" if rng.random() < 0.05 else "") + eol.join(rows) + (eol if rng.random() < 0.8 else "")


@pytest.mark.slow
def test_the_readers_agree_on_many_random_spellings(tmp_path):
    rng = random.Random(11)
    taken = accepted = 0
    for _ in range(300):
        path = _write(tmp_path, _random_trace(rng))
        fast = T._read_columnar(path)
        try:
            ref = T._read_strings(path, str(path))
        except ScenarioError:
            assert fast is None, path.read_bytes()  # never accepts a file the string reader refuses
            continue
        accepted += 1
        if fast is not None:
            _same_tables(fast, ref)
            taken += 1
    # Not vacuous: most good files take the columnar path (the rest hold a quote or a -0).
    assert accepted > 100 and taken > 0.7 * accepted, (taken, accepted)


def test_whitespace_is_what_str_strip_strips():
    assert T.WHITESPACE == "".join(c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace())


# --- simulate: one read, results unchanged ----------------------------------------------------------


def _scenario_file(folder: Path, trace_text: str) -> Path:
    _write(folder, trace_text, "trace.csv")
    path = folder / "s.yaml"
    path.write_text(textwrap.dedent("""\
        name: small
        horizon_days: 2
        workload: {trace: trace.csv, checkpoint: {every_hours: 1, write_minutes: 6}}
        options:
          - {name: own, kind: owned, gpu_type: H100, gpus: 16, lead_time_days: 0, failures: null, scheduler: backfill}
          - {name: od, kind: cloud, gpu_type: H100, provisioning_delay_h: 0, startup_h: 0}
        """), encoding="utf-8")
    return path


SMALL = (f"{HEADER}\n0.5,8,2.5,a1,dev,1\n0.5, 16 ,3,a2,,0\n1.0,4.0,0.75,a3,prod,-1\n"
         "7,8,12,a4,dev,2\n30,16,1,a5,prod,0\n")


def test_a_simulate_reads_the_trace_once(tmp_path, monkeypatch):
    path = _scenario_file(tmp_path, SMALL)
    calls = {"columnar": 0, "strings": 0}
    columnar, strings = T._read_columnar, T._read_strings

    def count_columnar(*a):
        calls["columnar"] += 1
        return columnar(*a)

    def count_strings(*a):
        calls["strings"] += 1
        return strings(*a)

    monkeypatch.setattr(T, "_read_columnar", count_columnar)
    monkeypatch.setattr(T, "_read_strings", count_strings)
    costsim.simulate(path)
    assert calls == {"columnar": 1, "strings": 0}
    T._read_once.cache_clear()
    calls.update(columnar=0, strings=0)
    sc = costsim.load_scenario(path)  # as `costsim run` does: load (check), then simulate (check again)
    costsim.simulate(sc)
    costsim.simulate(sc)
    assert calls == {"columnar": 1, "strings": 0}  # the file is read by the first check only


def test_an_edited_trace_is_read_again(tmp_path):
    path = _scenario_file(tmp_path, SMALL)
    trace = tmp_path / "trace.csv"
    first = costsim.simulate(path)
    st = trace.stat()
    text = trace.read_text().replace("30,16,1,a5", "31,16,1,a5")  # same size, another submit time
    trace.write_text(text)
    os.utime(trace, ns=(st.st_atime_ns, st.st_mtime_ns + 1))  # a new mtime, whatever the clock's tick
    second = costsim.simulate(path)
    assert set(first.jobs.submit_h[first.jobs.job_id == "a5"]) == {30}  # one row per option
    assert set(second.jobs.submit_h[second.jobs.job_id == "a5"]) == {31}


def test_a_shared_trace_table_cannot_be_changed(tmp_path):
    table = read_trace(_scenario_file(tmp_path, SMALL).parent / "trace.csv")
    assert read_trace(tmp_path / "trace.csv") is table  # kept, not read again
    with pytest.raises(ValueError, match="read-only"):
        table.submit_h[0] = 5.0


def test_results_are_those_of_the_string_reader(tmp_path, monkeypatch):
    path = _scenario_file(tmp_path, SMALL)
    fast = costsim.simulate(path)
    T._read_once.cache_clear()  # forget the columnar table just read
    monkeypatch.setattr(T, "_read_columnar", lambda _path: None)  # every file through the string reader
    slow = costsim.simulate(path)
    for name in TABLES:
        pd.testing.assert_frame_equal(getattr(fast, name), getattr(slow, name), check_exact=True)
    assert list(fast.jobs.job_class[:5]) == ["dev", "trace", "prod", "dev", "prod"]  # the cells, as written


def test_an_unsorted_trace_runs_as_its_sorted_copy(tmp_path):
    # A sorted trace is used as read (no copy); an unsorted one is sorted (ties in file order).
    rows = ["3,4,1,c", "0.5,4,1,a", "3,4,2,d", "1,4,1,b"]  # 8 GPUs: two jobs at a time
    shuffled = scenario_from_data({"name": "t", "horizon_days": 1, "workload": {"trace": "u.csv"},
                                   "options": [{"name": "own", "kind": "owned", "gpu_type": "H100", "gpus": 8,
                                                "lead_time_days": 0, "failures": None}]}, "t", tmp_path)
    _write(tmp_path, "submit_h,gpus,duration_h,job_id\n" + "\n".join(rows) + "\n", "u.csv")
    jobs = costsim.simulate(shuffled).jobs
    assert list(jobs.job_id) == ["a", "b", "c", "d"]
    assert list(jobs.start_h) == [0.5, 1.0, 3.0, 3.0]


# --- memory per job ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_large_run_leaves_no_garbage_behind(tmp_path):
    # A finished run is a web of reference cycles (environment, pools, per-job state) that only the
    # cyclic collector frees; from COLLECT_ABOVE_JOBS jobs on, run_option frees it before returning.
    from costsim.engine import run as engine
    from costsim.plan.resolve import resolve
    from costsim.workload import jobs as workload
    from costsim.workload.plan import plan_work

    n = engine.COLLECT_ABOVE_JOBS
    rng = np.random.default_rng(3)
    pd.DataFrame({"submit_h": np.sort(rng.uniform(0, 400, n)), "gpus": 1,
                  "duration_h": rng.exponential(1.0, n) + 1e-6}).to_csv(tmp_path / "t.csv", index=False)
    sc = scenario_from_data({"name": "t", "horizon_days": 20, "workload": {"trace": "t.csv"},
                             "options": [{"name": "own", "kind": "owned", "gpu_type": "H100", "gpus": 160,
                                          "lead_time_days": 0, "failures": None}]}, "t", tmp_path)
    plan = resolve(sc)[0]
    work = plan_work(sc, workload.generate(sc), plan)
    gc.collect()
    gc.disable()  # only run_option's own collection may free the run
    try:
        rec = engine.run_option(plan, work, sc.horizon_h)
        assert gc.collect() == 0  # nothing unreachable was left
    finally:
        gc.enable()
    assert np.isfinite(rec.start_h).all()


BYTES_PER_JOB = 1000  # peak growth over 100,000 jobs: now 650-720; the pre-issue code needed about 1,400
PROBE = """
import json, sys
from pathlib import Path
import costsim
from costsim.workload.synth import JobGroup, make_trace

def peak():  # this program's resident high-water mark, bytes (Linux VmHWM)
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:")) * 1024

folder = Path(sys.argv[1])
def scenario(n, name):
    trace = make_trace([JobGroup("m", per_day=120 * 24, gpus=1, mean_h=1.0, law="exponential")], n / 120 / 24, 1)
    trace.to_csv(folder / f"{name}.csv", index=False)
    (folder / f"{name}.yaml").write_text(
        f"name: {name}\\nhorizon_days: {n / 120 / 24 + 2:.3f}\\nworkload: {{trace: {name}.csv}}\\noptions:\\n"
        "  - {name: own, kind: owned, gpu_type: H100, gpus: 160, lead_time_days: 0, failures: null,"
        " scheduler: fifo}\\n")
    return folder / f"{name}.yaml"

small, big = scenario(1_000, "warm"), scenario(100_000, "big")
costsim.simulate(small)  # everything imported and warmed: the baseline
before = peak()
n = len(costsim.simulate(big).jobs)
print(json.dumps({"jobs": n, "growth": peak() - before}))
"""


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads Linux's VmHWM")
def test_memory_per_job_is_bounded(tmp_path):
    out = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path)], capture_output=True, text=True, check=True,
                         timeout=120)
    probe = json.loads(out.stdout.strip().splitlines()[-1])
    assert probe["jobs"] > 95_000
    per_job = probe["growth"] / probe["jobs"]
    assert per_job < BYTES_PER_JOB, f"{per_job:.0f} bytes per job"


def test_rows_longer_than_the_header_are_an_error_not_a_shift(tmp_path):
    # Every row has one field more than the header: pandas would take the first column as the index
    # and read submit 1, gpus 1, duration 9 from "0,1,1,9" without a word.
    from costsim.scenario import ScenarioError, read_trace

    path = tmp_path / "t.csv"
    path.write_text("submit_h,gpus,duration_h\n0,1,1,9\n1,2,3,4\n")
    with pytest.raises(ScenarioError, match=r"t.csv:2: the rows have more fields than the header"):
        read_trace(path)


def test_an_edit_with_the_mtime_put_back_is_read_again(tmp_path):
    # cp -p, rsync -t and tar x restore the mtime after writing; the ctime still moves.
    trace = tmp_path / "t.csv"
    trace.write_text("submit_h,gpus,duration_h\n0,8,2\n")
    st = trace.stat()
    assert list(read_trace(trace).duration_h) == [2.0]
    trace.write_text("submit_h,gpus,duration_h\n0,8,7\n")  # same size
    os.utime(trace, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert trace.stat().st_mtime_ns == st.st_mtime_ns and trace.stat().st_size == st.st_size
    assert list(read_trace(trace).duration_h) == [7.0]


def test_a_single_option_run_of_a_sorted_trace_gives_tables_the_user_can_edit(tmp_path):
    path = tmp_path / "s.yaml"
    _write(tmp_path, "submit_h,gpus,duration_h,job_id,job_class\n0,8,2,a,x\n1,8,3,b,y\n", "trace.csv")
    path.write_text("name: one\nhorizon_days: 2\nworkload: {trace: trace.csv}\noptions:\n"
                    "  - {name: own, kind: owned, gpu_type: H100, gpus: 8, lead_time_days: 0}\n")
    jobs = costsim.simulate(path).jobs
    jobs.loc[0, "submit_h"] = 99.0
    jobs.loc[0, "gpus"] = 1
    jobs.loc[0, "job_id"] = "z"
    assert list(read_trace(tmp_path / "trace.csv").submit_h) == [0.0, 1.0]  # the kept table is untouched
