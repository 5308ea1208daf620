"""Importing and replaying a 1,000,000-row SLURM ``sacct --parsable2`` file, side by side with
reading the same rows with pyarrow alone.

    .venv/bin/python benchmarks/import_slurm.py [--rows 1000000] [--gpus 1024]

Writes a generated sacct file (one allocation line per job, Poisson submits, 1-8 GPUs, lognormal run
times of mean about 1 h, a few percent FAILED/CANCELLED, every fourth job with a ``.batch`` step
line), then times, best of ``--repeats``:

- baseline: ``pyarrow.csv`` reads the ``|``-separated file, parses Submit/Start/End and pulls
  ``gres/gpu=N`` out of AllocTRES with pyarrow.compute (no checks, no step folding beyond dropping
  lines whose JobID has a dot): the floor any importer pays to read these bytes;
- ``costsim.traces.import_trace("slurm", ...)``: the columnar reader (``slurm_columnar``, every cell
  checked; a file with a bad row goes to the row reader, which names its line);
- the row reader alone (``slurm.jobs``, line by line: what import_trace used before), unless
  ``--no-row-reader``: it takes about a minute on a million lines;
- ``costsim.simulate`` of a scenario replaying the imported trace on ``--gpus`` owned H100s (FIFO).

Prints seconds and the ratios to the baseline. No assertion on time: the ratios are for reading,
as in the other benchmarks. Checks that the baseline and the importer keep the same jobs with the
same GPU counts, and that the two readers build the same table.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import numpy as np

HEADER = "JobID|JobIDRaw|JobName|Partition|Account|User|Submit|Start|End|Elapsed|State|AllocTRES|ReqTRES"
T0 = np.datetime64("2024-01-01T00:00:00", "s")


def _hms(seconds: np.ndarray) -> list[str]:
    """SLURM elapsed ``HH:MM:SS`` (runs here are under 100 h)."""
    h, rest = np.divmod(seconds, 3600)
    m, s = np.divmod(rest, 60)
    return [f"{a:02d}:{b:02d}:{c:02d}" for a, b, c in zip(h.tolist(), m.tolist(), s.tolist(), strict=True)]


def write_sacct(path: Path, rows: int, per_hour: float, seed: int = 1) -> int:
    """A sacct file of about ``rows`` lines (jobs and some ``.batch`` steps); returns the jobs written."""
    rng = np.random.default_rng(seed)
    jobs = int(rows / 1.25)  # every fourth job adds a step line
    submit = T0 + np.cumsum(rng.exponential(3600 / per_hour, jobs)).astype("timedelta64[s]")
    start = submit + rng.exponential(600, jobs).astype("timedelta64[s]")
    run = np.clip(rng.lognormal(np.log(3600) - 0.5, 1.0, jobs), 60, 90 * 3600).astype(np.int64)
    end = start + run.astype("timedelta64[s]")
    gpus = rng.choice([1, 2, 4, 8], jobs)
    state = rng.choice(["COMPLETED"] * 18 + ["FAILED", "CANCELLED by 0"], jobs)
    part = rng.choice(["h100", "a100"], jobs)
    sub, sta, en = (np.datetime_as_string(x, unit="s") for x in (submit, start, end))
    el = _hms(run)
    lines = [HEADER]
    for k in range(jobs):
        jid = 100000 + k
        tres = f"billing={gpus[k] * 8},cpu={gpus[k] * 8},gres/gpu:{part[k]}={gpus[k]},gres/gpu={gpus[k]},node=1"
        tail = f"{sta[k]}|{en[k]}|{el[k]}|{state[k]}|{tres}"
        lines.append(f"{jid}|{jid}|job|{part[k]}|{part[k]}-lab|u{k % 50}|{sub[k]}|{tail}|gres/gpu={gpus[k]},node=1")
        if k % 4 == 0:
            lines.append(f"{jid}.batch|{jid}.batch|batch||{part[k]}-lab||{sta[k]}|{tail}|")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return jobs


def baseline(path: Path):
    """Jobs (allocation lines with GPUs and a start): submit_h, gpus, duration_h with pyarrow alone."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    t = pacsv.read_csv(path, parse_options=pacsv.ParseOptions(delimiter="|"), convert_options=pacsv.ConvertOptions(
        include_columns=["JobID", "Submit", "Start", "End", "AllocTRES"],
        column_types={c: pa.timestamp("s") for c in ("Submit", "Start", "End")},
        null_values=["", "Unknown", "None"]))
    t = t.filter(pc.invert(pc.match_substring(t["JobID"], ".")))
    gpus = pc.cast(pc.struct_field(pc.extract_regex(t["AllocTRES"], r"gres/gpu=(?P<n>\d+)"), "n"), pa.int64())
    keep = pc.and_(pc.is_valid(gpus), pc.is_valid(t["Start"]))
    submit = pc.filter(t["Submit"], keep).cast(pa.int64()).to_numpy().astype(float)
    start = pc.filter(t["Start"], keep).cast(pa.int64()).to_numpy().astype(float)
    end = pc.filter(t["End"], keep).cast(pa.int64()).to_numpy().astype(float)
    return (submit - submit.min()) / 3600, pc.filter(gpus, keep).to_numpy(), (end - start) / 3600


def scenario_text(days: float, gpus: int) -> str:
    return f"""name: import-slurm-bench
seed: 0
horizon_days: {math.ceil(days) + 4}
workload:
  trace: trace.csv
options:
  - {{name: own, kind: owned, gpu_type: H100, gpus: {gpus}, gpus_per_node: 8, lead_time_days: 0,
      scheduler: fifo, failures: null}}
"""


def best_of(repeats: int, fn):
    """(best seconds, last result) of ``repeats`` calls."""
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000, help="lines in the sacct file (default 1,000,000)")
    ap.add_argument("--gpus", type=int, default=1024, help="owned GPUs of the replay (default 1024: load about 0.7)")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--no-row-reader", action="store_true", help="skip timing the row reader (about a minute)")
    args = ap.parse_args()

    import costsim
    from costsim.traces import import_trace, slurm
    from costsim.traces.common import ImportOptions, write_csv
    from costsim.traces.table import import_jobs

    per_hour = 200.0  # jobs per hour: 3.75 GPUs x ~1 h each = ~750 busy GPUs
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        src = folder / "sacct.txt"
        t = time.perf_counter()
        jobs = write_sacct(src, args.rows, per_hour)
        print(f"generated {src.stat().st_size / 2**20:,.0f} MiB, {args.rows:,} lines, {jobs:,} jobs "
              f"in {time.perf_counter() - t:.1f} s")

        base_s, (b_submit, b_gpus, b_dur) = best_of(args.repeats, lambda: baseline(src))
        imp_s, res = best_of(args.repeats, lambda: import_trace("slurm", src))
        frame = res.frame
        assert len(frame) == len(b_gpus) and np.array_equal(np.sort(frame.gpus.to_numpy()), np.sort(b_gpus)), \
            "the importer and the pyarrow baseline keep different jobs"
        row_s = None
        if not args.no_row_reader:
            row_s, rows = best_of(args.repeats, lambda: import_jobs(slurm.jobs, src, ImportOptions()))
            assert rows.frame.equals(frame) and rows.dropped == res.dropped, "the two readers differ"
        write_csv(frame, folder / "trace.csv")
        days = float((frame.submit_h + frame.duration_h).max()) / 24
        (folder / "scenario.yaml").write_text(scenario_text(days, args.gpus), encoding="utf-8")
        sim_s, out = best_of(args.repeats, lambda: costsim.simulate(folder / "scenario.yaml", max_events=None))
        summary = out.summary.iloc[0]

    print(f"jobs kept: {len(frame):,} (dropped: {res.dropped}); replay on {args.gpus} GPUs: "
          f"{int(summary.jobs_completed):,} completed, utilization {summary.utilization:.2f}, "
          f"mean wait {summary.queue_delay_mean_h:.2f} h")
    print(f"{'step':<34}{'seconds':>9}{'x baseline':>12}")
    print(f"{'pyarrow read (baseline)':<34}{base_s:>9.2f}{1.0:>12.1f}")
    print(f"{'costsim import_trace (columnar)':<34}{imp_s:>9.2f}{imp_s / base_s:>12.1f}")
    if row_s is not None:
        print(f"{'row reader alone (slurm.jobs)':<34}{row_s:>9.2f}{row_s / base_s:>12.1f}"
              f"   (columnar {row_s / imp_s:.0f}x faster)")
    print(f"{'costsim.simulate (replay)':<34}{sim_s:>9.2f}{sim_s / base_s:>12.1f}")
    print(f"{'import + replay':<34}{imp_s + sim_s:>9.2f}{(imp_s + sim_s) / base_s:>12.1f}")


if __name__ == "__main__":
    main()
