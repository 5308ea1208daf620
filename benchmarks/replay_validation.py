"""Trace replay validation (issue 14 item 4): the imported SLURM sample replayed with FIFO on an
owned pool the size of the source cluster, its queueing delays against those the source recorded.

    .venv/bin/python benchmarks/replay_validation.py [--out docs/replay-validation.md]

Replays ``scenarios/slurm-lab.yaml`` (option ``own-64``: 64 H100s, FIFO, no failures) and pairs
every job's simulated ``queue_delay_h`` with its ``observed_delay_h`` from the imported trace CSV
(start − submit in sacct). Prints the comparison and writes it, with what differs and why, to
``docs/replay-validation.md`` (replaced whole: written beside it, then renamed).

Statistics per job class and overall, hours: mean, p50, p95 (numpy's linear interpolation, as
costsim's summary table uses) and the share of jobs that waited more than one minute.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "slurm-lab.yaml"
TRACE = ROOT / "scenarios" / "traces" / "slurm-lab.csv"
DOC = ROOT / "docs" / "replay-validation.md"
OPTION = "own-64"  # the owned pool the size of the source cluster
WAITED_H = 1 / 60  # a job "waited" if it started more than a minute after its submit (hours)
ALL = "all jobs"  # the overall row's label
STATS = ("mean_h", "p50_h", "p95_h", "waited_share")


def delay_stats(delays: np.ndarray) -> dict[str, float]:
    """Mean, median and 95th percentile of queueing delays (hours) and the share above WAITED_H."""
    d = np.asarray(delays, dtype=float)
    return {"mean_h": float(d.mean()), "p50_h": float(np.percentile(d, 50)),
            "p95_h": float(np.percentile(d, 95)), "waited_share": float((d > WAITED_H).mean())}


def paired(trace: pd.DataFrame, jobs: pd.DataFrame, option: str = OPTION) -> pd.DataFrame:
    """One row per trace job: job_id, job_class, status, observed_delay_h (source) and
    replay_delay_h (costsim's queue_delay_h on ``option``). ValueError when a job of the trace was
    not replayed (or not completed) on ``option``, or a replayed job is not in the trace."""
    ran = jobs.loc[jobs["option"] == option, ["job_id", "queue_delay_h", "completed"]]
    both = trace[["job_id", "job_class", "status", "observed_delay_h"]].astype({"job_id": str}).merge(
        ran.astype({"job_id": str}), on="job_id", how="outer", indicator=True, validate="one_to_one")
    lost = both.loc[both["_merge"] != "both", "job_id"].tolist()
    if lost:
        raise ValueError(f"{len(lost)} job(s) not in both the trace and the replay on {option}: {lost[:5]}")
    unfinished = both.loc[~both["completed"].astype(bool), "job_id"].tolist()
    if unfinished:
        raise ValueError(f"{len(unfinished)} job(s) did not finish on {option} (lengthen the horizon): {unfinished[:5]}")
    return both.rename(columns={"queue_delay_h": "replay_delay_h"})[
        ["job_id", "job_class", "status", "observed_delay_h", "replay_delay_h"]]


def comparison(pairs: pd.DataFrame, by: str = "job_class") -> pd.DataFrame:
    """Per value of ``by`` (largest groups first) and ALL: jobs, then ``observed_<stat>`` and
    ``replay_<stat>`` for each of STATS. Jobs with no recorded delay count only on the replay side
    (their observed stats then cover ``observed_jobs`` of them)."""
    groups = [(name, g) for name, g in pairs.groupby(by, sort=True)]
    groups.sort(key=lambda kv: -len(kv[1]))
    rows = []
    for name, g in [*groups, (ALL, pairs)]:
        obs = g["observed_delay_h"].dropna().to_numpy()
        row = {by: name, "jobs": len(g), "observed_jobs": len(obs)}
        row.update({f"observed_{k}": v for k, v in delay_stats(obs).items()} if len(obs) else
                   {f"observed_{k}": np.nan for k in STATS})
        row.update({f"replay_{k}": v for k, v in delay_stats(g["replay_delay_h"].to_numpy()).items()})
        rows.append(row)
    return pd.DataFrame(rows)


def markdown_table(table: pd.DataFrame, by: str = "job_class") -> str:
    """The comparison as a Markdown table: hours to 2 decimals, shares in whole percent."""
    head = (f"| {by} | jobs | mean h (source / replay) | p50 h (source / replay) | p95 h (source / replay) "
            "| waited > 1 min (source / replay) |")
    lines = [head, "|---|---:|---:|---:|---:|---:|"]
    for r in table.itertuples(index=False):
        r = r._asdict()
        cells = [f"{r[f'observed_{k}']:.2f} / {r[f'replay_{k}']:.2f}" for k in ("mean_h", "p50_h", "p95_h")]
        cells.append(f"{100 * r['observed_waited_share']:.0f} % / {100 * r['replay_waited_share']:.0f} %")
        lines.append(f"| {r[by]} | {r['jobs']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def replay(scenario: Path = SCENARIO, scheduler: str | None = None):
    """costsim.simulate of the scenario; with ``scheduler``, OPTION's scheduler replaced by it."""
    import costsim

    if scheduler is None:
        return costsim.simulate(scenario)
    sc = costsim.load_scenario(scenario)
    options = [o.model_copy(update={"scheduler": scheduler}) if o.name == OPTION else o for o in sc.options]
    return costsim.simulate(sc.model_copy(update={"options": tuple(options)}))


def document(by_class: pd.DataFrame, by_status: pd.DataFrame, backfill: dict[str, float], dropped: str) -> str:
    """The text of docs/replay-validation.md around the two tables."""
    total = by_class.iloc[-1]
    return f"""# Trace replay validation: the SLURM sample on its own cluster

Generated by `.venv/bin/python benchmarks/replay_validation.py`; do not edit by hand.

**The source delays here are drawn, not measured.** The SLURM sample
(`tests/data/traces/slurm_sacct.txt`) is synthetic: `tests/data/traces/make_samples.py` wrote it,
and it drew each random job's wait as an exponential of mean 20 minutes, independently of how busy
its 64-GPU cluster was. Nothing in the sample queued for anything. So this page shows how the
comparison is made and read; it cannot say whether costsim reproduces a real scheduler's delays.
For that, import your own `sacct` export and pair its
`observed_delay_h` with the replay's `queue_delay_h` the same way (`paired` and `comparison` in the script).

## What was compared

- Source: `costsim import-trace slurm tests/data/traces/slurm_sacct.txt --out scenarios/traces/slurm-lab.csv`
  ({int(total['jobs'])} jobs replayed; not replayed: {dropped}). `observed_delay_h` = Start − Submit in sacct.
- Replay: `scenarios/slurm-lab.yaml`, option `{OPTION}`: 64 H100s in 8 nodes of 8 (the size of the source
  cluster in `make_samples.py`), delivered at hour 0, strict FIFO, no node failures; each job holds its
  GPUs for its recorded elapsed time, whatever its outcome. `replay` = costsim's `queue_delay_h`.
- Statistics in hours; p50 and p95 with linear interpolation (numpy, as costsim's summary table);
  "waited" = started more than one minute after submit.

## Delays per job class (job_class = the SLURM Account)

{markdown_table(by_class)}

## Delays per outcome (status)

{markdown_table(by_status, by="status")}

With EASY backfill instead of FIFO on the same pool, the replay's delays over all jobs are: mean
{backfill['mean_h']:.2f} h, p50 {backfill['p50_h']:.2f} h, p95 {backfill['p95_h']:.2f} h, {100 * backfill['waited_share']:.0f} % waited.

## What differs, and why

- **The source delays are synthetic.** They are exponential draws (mean 1/3 h) given to each job
  whatever the load; the replay's delays come from the load itself. The close overall means are a
  coincidence of the drawn mean and this load, not a validation. The shapes differ as expected: in
  the replay most jobs start at once (p50 0) and a minority waits behind large jobs (a long tail),
  while the drawn delays make almost every job wait a little.
- **The scheduler.** SLURM runs priority (fair-share, age, size) with backfill, not strict FIFO;
  strict FIFO holds every job behind a 16-GPU job waiting for room, which backfill would let past.
- **Partitions and quotas.** The source has an `h100` and an `a100` partition (the split of its 64
  GPUs is not recorded in sacct); a job could only use its own partition's nodes. The replay pools
  all 64 GPUs as one cluster of H100s, so a job can start on any free node: fewer and shorter waits
  than partitioned capacity would give. Account limits (GrpTRES, QOS) are not modelled either.
- **Failed, cancelled, preempted jobs.** The replay holds each job's GPUs for its recorded elapsed
  time and never retries it; SLURM requeues preempted jobs and users resubmit failed ones (the
  resubmission is a new job in sacct, with its own wait). Jobs cancelled before they started, still
  pending, or running when sacct ran are not replayed at all, so their waits and the capacity
  they would later have taken are missing from the replay.
- **Node placement and outages.** The replay packs single-node jobs best-fit on whole 8-GPU
  nodes and has no drained or failed nodes; a real cluster has both.
"""


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file in the same folder and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def dropped_text(source: Path) -> str:
    """What the importer left out of the SLURM sample, as "7 never started, 1 no GPUs"."""
    from costsim.traces import import_trace

    dropped = import_trace("slurm", source).dropped
    return ", ".join(f"{n} {why}" for why, n in sorted(dropped.items())) or "none"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=DOC, help="the Markdown file to write (default docs/replay-validation.md)")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    trace = pd.read_csv(TRACE, dtype={"job_id": str})
    pairs = paired(trace, replay().jobs)
    backfill = delay_stats(paired(trace, replay(scheduler="backfill").jobs)["replay_delay_h"].to_numpy())
    by_class, by_status = comparison(pairs), comparison(pairs, by="status")
    print(markdown_table(by_class))
    print()
    print(markdown_table(by_status, by="status"))
    text = document(by_class, by_status, backfill, dropped_text(ROOT / "tests" / "data" / "traces" / "slurm_sacct.txt"))
    write_atomically(args.out, text)
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
