"""The columnar SLURM reader (costsim.traces.slurm_columnar) against the row reader (slurm.jobs),
its reference: the same table and the same drop counts on the shipped sample and on a generated file
with every feature, under every option; a malformed row sends the file to the row reader, which
names its line."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from paths import TRACE_SAMPLES

from costsim.scenario import ScenarioError
from costsim.traces import import_trace, slurm
from costsim.traces.common import ImportOptions, Report, zone
from costsim.traces.slurm_columnar import read_columns
from costsim.traces.table import build_frame

SAMPLE = TRACE_SAMPLES / "slurm_sacct.txt"
HEADER = "JobID|JobName|Partition|Account|User|Submit|Start|End|Elapsed|State|AllocTRES|ReqTRES"
STATES = ["COMPLETED", "COMPLETED", "COMPLETED", "FAILED", "TIMEOUT", "CANCELLED by 42", "NODE_FAIL", "PREEMPTED",
          "OUT_OF_MEMORY", "DEADLINE", "BOOT_FAIL", "RUNNING", "PENDING", "REQUEUED", "completed", "CANCELLED+"]
OPTIONS = {
    "default": ImportOptions(),
    "h100": ImportOptions(gpu_type="H100"),
    "paris": ImportOptions(tz=zone("Europe/Paris")),  # DST switches inside the generated span
    "new-york": ImportOptions(tz=zone("America/New_York"), fractional="pool"),
    "offset": ImportOptions(tz=zone("+05:30")),
    "window": ImportOptions(since_s=datetime(2024, 3, 20, tzinfo=UTC).timestamp(),
                            until_s=datetime(2024, 4, 10, tzinfo=UTC).timestamp()),
}


def both(path: Path, options: ImportOptions):
    """(columnar frame, row frame, columnar drops, row drops); the columnar reader must not fall back."""
    fast_report, row_report = Report(str(path)), Report(str(path))
    columns = read_columns(path, options, fast_report)
    assert columns is not None, "the columnar reader fell back to the row reader"
    fast, _ = build_frame(columns, options, fast_report)
    rows, _ = build_frame(list(slurm.jobs(path, options, row_report)), options, row_report)
    assert not fast_report.problems and not row_report.problems
    return fast, rows, dict(fast_report.dropped), dict(row_report.dropped)


def _stamp(t: datetime, kind: int) -> str:
    """A timestamp in one of the forms sacct and exports use (``kind``): mostly sacct's, sometimes
    a space, epoch seconds, a zone, or surrounded by spaces. One row uses one form, so its times
    stay in order whatever zone naive times are read in."""
    if kind == 0:
        return str(int(t.replace(tzinfo=UTC).timestamp()))
    if kind == 1:
        return t.strftime("%Y-%m-%d %H:%M:%S")
    if kind == 2:
        return t.strftime("%Y-%m-%dT%H:%M:%S") + "+00:00"
    if kind == 3:
        return " " + t.strftime("%Y-%m-%dT%H:%M:%S") + "Z "
    return t.strftime("%Y-%m-%dT%H:%M:%S")


def _elapsed(seconds: int) -> str:
    d, rest = divmod(seconds, 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    return f"{d}-{h:02d}:{m:02d}:{s:02d}" if d else f"{h:02d}:{m:02d}:{s:02d}"


def _tres(rng: np.random.Generator, gpus: int) -> tuple[str, str]:
    """(AllocTRES, ReqTRES): totals, typed counts, typed only, memory/utilisation gres, none."""
    gpu_type = rng.choice(["h100", "a100", "H100"])
    kind = rng.choice(6)
    extra = ",gres/gpumem=80G,gres/gpu-util=100" if rng.random() < 0.3 else ""
    if kind == 0:
        alloc = f"billing={gpus},cpu={8 * gpus},gres/gpu:{gpu_type}={gpus},gres/gpu={gpus}{extra},mem=64G,node=1"
    elif kind == 1:
        alloc = f"cpu=8,gres/gpu={gpus}{extra},node=1"  # no type recorded
    elif kind == 2:
        alloc = f"cpu=8,gres/gpu:h100={gpus},gres/gpu:a100={gpus}{extra}"  # two types, no total
    elif kind == 3:
        alloc = "cpu=8,mem=4G"  # a CPU job
    elif kind == 4:
        return "", f"cpu=8,gres/gpu={gpus}"  # only ReqTRES (never allocated)
    else:
        alloc = f" cpu=8 , gres/gpu:{gpu_type}={gpus} "
    return alloc, f"cpu=8,gres/gpu={gpus}"


def write_every_feature(path: Path, jobs: int = 600, seed: int = 7) -> None:
    """An sacct file with steps, array tasks and pending ranges, heterogeneous jobs (one part
    without GPUs), every state, unknown starts and ends, missing Elapsed, days in Elapsed, job
    classes from Account, Partition, User or none, and timestamps in several forms around the
    spring DST switches in Europe (2024-03-31) and America (2024-03-10)."""
    rng = np.random.default_rng(seed)
    t0 = datetime(2024, 3, 8)
    lines = [HEADER]
    t = t0
    for k in range(jobs):
        t += timedelta(seconds=int(rng.exponential(3600 * 24 * 30 / jobs)))
        start = t + timedelta(seconds=int(rng.exponential(900))) if rng.random() > 0.05 else None
        run = int(rng.lognormal(8, 1.5))
        end = start + timedelta(seconds=run) if start is not None and rng.random() > 0.05 else None
        state = rng.choice(STATES)
        elapsed = _elapsed(run) if rng.random() > 0.1 or end is None and start is not None else ""
        if start is None:
            elapsed = "00:00:00"
        acct = ["", " llm ", "rl", ""][k % 4]
        part, user = ["h100", "", "a100"][k % 3], ["alice", ""][k % 2]
        gpus = int(rng.choice([1, 2, 4, 8, 16]))
        alloc, req = _tres(rng, gpus)
        form = int(rng.choice(8))
        cells = [_stamp(t, form), _stamp(start, form) if start is not None else rng.choice(["Unknown", "None"]),
                 _stamp(end, form) if end is not None else "Unknown", elapsed, state, alloc, req]
        jid = str(5000 + k)
        kind = rng.choice(10)
        if kind == 0:  # an array: two tasks and a pending range
            lines += [f"{jid}_{i}|arr|{part}|{acct}|{user}|" + "|".join(cells) for i in (1, 2)]
            lines.append(f"{jid}_[3-9]|arr|{part}|{acct}|{user}|{cells[0]}|Unknown|Unknown|00:00:00|PENDING||"
                         f"gres/gpu={gpus}")
        elif kind == 1:  # a heterogeneous job: a CPU part and a GPU part
            cpu = cells[:5] + ["cpu=4,mem=8G", ""]
            lines += [f"{jid}+0|het|{part}|{acct}|{user}|" + "|".join(cpu),
                      f"{jid}+1|het|{part}|{acct}|{user}|" + "|".join(cells)]
        else:
            lines.append(f"{jid}|job|{part}|{acct}|{user}|" + "|".join(cells))
        if rng.random() < 0.3:  # steps: not jobs, and their cells are not read
            lines.append(f"{jid}.batch|batch||{acct}||{cells[0]}|{cells[1]}|x|garbage|NOT_A_STATE|gres/gpu=x|")
            lines.append(f" {jid}.0 |step||{acct}||||||||")
    for k, day in enumerate((10, 31)):  # in the hour the clocks skip in New York (10th) and Paris (31st)
        lines.append(f"{6000 + k}|dst|h100|lab||2024-03-{day}T01:59:30|2024-03-{day}T02:30:00|"
                     f"2024-03-{day}T03:40:00||COMPLETED|gres/gpu=1|")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("columnar") / "sacct.txt"
    write_every_feature(path)
    return path


@pytest.mark.parametrize("name", list(OPTIONS))
def test_same_table_as_the_row_reader_on_the_sample(name):
    fast, rows, fast_drops, row_drops = both(SAMPLE, OPTIONS[name])
    assert fast.equals(rows) and list(fast.dtypes) == list(rows.dtypes)
    assert fast_drops == row_drops


@pytest.mark.parametrize("name", list(OPTIONS))
def test_same_table_as_the_row_reader_on_every_feature(generated, name):
    fast, rows, fast_drops, row_drops = both(generated, OPTIONS[name])
    assert len(rows) > 150 and fast.equals(rows)
    assert fast_drops == row_drops
    if name == "default":  # the generated file does hold what it is meant to
        assert {"pending array range", "never started", "no GPUs", "running (not replayed)"} <= set(row_drops)
        assert {"completed", "failed", "timeout", "cancelled", "node_fail", "preempted"} <= set(rows.status)
        assert {"llm", "rl", "h100", "a100", "alice", "trace"} <= set(rows.job_class)
        assert rows.job_id.str.fullmatch(r"\d+").sum() > 300 and rows.job_id.str.contains("_").any()


def test_import_trace_uses_the_columnar_reader(generated):
    fast, rows, _, _ = both(generated, ImportOptions())
    assert import_trace("slurm", generated).frame.equals(fast)


BAD_ROWS = [  # (row, field the row reader names): the columnar reader must leave each to it
    ("11|j|p|lab|u|2024-03-01T08:00:00|2024-03-01T08:00:00|2024-03-01T09:00:00|01:00:00|EXPLODED|gres/gpu=1|", "State"),
    ("11|j|p|lab|u|2024-02-30T08:00:00|2024-03-01T08:00:00|2024-03-01T09:00:00|01:00:00|COMPLETED|gres/gpu=1|",
     "Submit"),
    ("11|j|p|lab|u|2024-03-01T08:00:00|2024-03-01T24:00:00|2024-03-02T09:00:00|01:00:00|COMPLETED|gres/gpu=1|",
     "Start"),
    ("11|j|p|lab|u|2024-03-01T08:00:00|2024-03-01T08:00:00|2024-03-01T09:00:00|1:99:00|COMPLETED|gres/gpu=1|",
     "Elapsed"),
    ("11|j|p|lab|u|2024-03-01T08:00:00|2024-03-01T08:00:00|2024-03-01T09:00:00|01:00:00|COMPLETED|gres/gpu=two|",
     "AllocTRES"),
    ("x11|j|p|lab|u|2024-03-01T08:00:00|2024-03-01T08:00:00|2024-03-01T09:00:00|01:00:00|COMPLETED|gres/gpu=1|",
     "JobID"),
    ("11|j|p|lab|u|2024-03-01T08:00:00|2024-03-01T08:00:00|01:00:00|COMPLETED|gres/gpu=1|", "has 11 fields"),
    ("11|j|p|lab|u|2024-03-01T08:00:00|2024-03-01T09:00:00|2024-03-01T08:00:00||COMPLETED|gres/gpu=1|", "End"),
    ("11|j|p|lab|u|2024-03-01T08:00:00|2024-03-01T07:00:00|2024-03-01T09:00:00|01:00:00|COMPLETED|gres/gpu=1|",
     "Start"),
    ("11|j|p|lab|u|Unknown|2024-03-01T07:00:00|2024-03-01T09:00:00|01:00:00|COMPLETED|gres/gpu=1|", "Submit"),
    ("11|j|p|lab|u|2024-03-01T08:00:00|2024-03-01T08:00:00|Unknown||FAILED|gres/gpu=1|", "Elapsed"),
    ("11+0|j|p|lab|u|2024-03-01T08:00:00|2024-03-01T08:00:00|2024-03-01T09:00:00|01:00:00|EXPLODED|gres/gpu=1|",
     "State"),
]


@pytest.mark.parametrize(("row", "field"), BAD_ROWS)
def test_a_bad_row_is_left_to_the_row_reader_which_names_its_line(tmp_path, generated, row, field):
    lines = generated.read_text().splitlines()
    at = 200  # in the middle of good rows
    path = tmp_path / "sacct.txt"
    path.write_text("\n".join(lines[:at] + [row] + lines[at:]) + "\n")
    report = Report(str(path))
    assert read_columns(path, ImportOptions(), report) is None and not report.dropped
    with pytest.raises(ScenarioError) as err:
        import_trace("slurm", path)
    assert str(err.value).startswith(f"{path}:{at + 1}: {field}")
    assert import_trace("slurm", path, ImportOptions(skip_bad=True)).skipped == 1


def test_a_blank_line_or_an_empty_file_is_left_to_the_row_reader(tmp_path, generated):
    lines = generated.read_text().splitlines()
    path = tmp_path / "sacct.txt"
    path.write_text("\n".join(lines[:50] + [""] + lines[50:]) + "\n")
    assert read_columns(path, ImportOptions(), Report(str(path))) is None
    # the same jobs (one line later from line 51 on: lines are not in the table)
    assert import_trace("slurm", path).frame.equals(import_trace("slurm", generated).frame)
    for text in ("", HEADER + "\n"):
        path.write_text(text)
        assert read_columns(path, ImportOptions(), Report(str(path))) is None


@pytest.mark.parametrize("tz", ["UTC", "+05:30", "Europe/Paris", "America/New_York", "Australia/Lord_Howe"])
def test_timestamps_read_as_parse_time_reads_them_across_clock_changes(tz):
    # Every 7 minutes through the 2024 days the clocks change in Europe, North America and on Lord
    # Howe Island (half-hour switches at 02:00: the hour in which the offset changes mid-way).
    import pyarrow as pa

    from costsim.traces.common import parse_time
    from costsim.traces.slurm_columnar import _times

    days = ["2024-03-10", "2024-03-31", "2024-04-07", "2024-10-06", "2024-10-27", "2024-11-03"]
    cells = [f"{d}T{m // 60:02d}:{m % 60:02d}:{s:02d}" for d in days for m in range(0, 24 * 60, 7) for s in (0, 59)]
    cells += ["Unknown", "1709290800", "2024-03-01T10:00:00+02:00", " 2024-03-01 10:00:00 "]
    got = _times(pa.array(cells), zone(tz))
    want = np.array([np.nan if (v := parse_time(c, zone(tz))) is None else v for c in cells])
    assert np.array_equal(got, want, equal_nan=True)
