"""Helios (SenseTime, SC'21) ``cluster_log.csv``: one row per SLURM job.

Columns used: job_id, gpu_num, state, submit_time, start_time, end_time (required); duration
(seconds run; End − Start when missing), user, vc, queue (optional). Times are
``2020-04-01 00:00:05`` without a zone (read in ``--timezone``; Helios ran in UTC+8) or epoch
seconds.

- ``state`` is a SLURM state and maps as in :mod:`costsim.traces.slurm` (``STATES``): jobs that
  never started (cancelled while pending) are dropped; every other finished job replays the time it
  ran (``duration``);
- ``gpu_num`` 0: a CPU job, dropped;
- ``job_class``: ``vc`` (the virtual cluster) when present, else ``user``;
- ``queue``: in the released files the queueing delay in seconds (start − submit); a numeric cell is
  read as that (``observed_delay_h`` then comes from it, not from the two times). A cell that is not
  a number is taken for a queue name and becomes the ``job_class`` when there is no ``vc``;
- Helios has no GPU type: ``--gpu-type`` is refused for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from costsim.traces.common import (
    BadCell,
    ImportOptions,
    Job,
    Report,
    check_order,
    is_missing,
    iter_csv,
    parse_duration,
    parse_number,
    parse_time,
)
from costsim.traces.slurm import parse_state

REQUIRED = ("job_id", "gpu_num", "state", "submit_time", "start_time", "end_time")


def _job(line: int, row: dict[str, str], options: ImportOptions, report: Report) -> Job | None:
    """The job of one row, or None (a bad row recorded, or the row dropped)."""
    field = "state"
    try:
        status, replayed = parse_state(row["state"])
        field = "gpu_num"
        gpus = parse_number(row["gpu_num"], "a whole number of GPUs >= 0", integer=True)
        times = {}
        for field in ("submit_time", "start_time", "end_time"):
            times[field] = parse_time(row[field], options.tz)
        field = "duration"
        text = row.get("duration", "")
        run_s = None if is_missing(text) else parse_duration(text)
        field = "queue"
        queue = row.get("queue", "").strip()
        delay_s = None
        if queue and not is_missing(queue):
            try:
                delay_s = parse_number(queue, "a delay in seconds >= 0")
            except BadCell:
                delay_s = None  # a queue name, not a delay
                if not any(ch.isalpha() for ch in queue):
                    raise
    except BadCell as exc:
        report.bad(line, field, str(exc))
        return None
    submit, start, end = times["submit_time"], times["start_time"], times["end_time"]
    if not check_order(report, line, list(times.items())):  # end before start: bad whatever duration says
        return None
    assert submit is not None  # check_order refuses a row without one
    if run_s is None and start is not None and end is not None:
        run_s = end - start
    if not replayed:
        report.drop(f"{status} (not replayed)")
        return None
    if start is None:
        report.drop("never started")
        return None
    if run_s is None:
        report.bad(line, "duration", "is missing and end_time is unknown (no duration)")
        return None
    if gpus == 0:
        report.drop("no GPUs")
        return None
    vc = row.get("vc", "").strip()
    name = queue if queue and delay_s is None and not is_missing(queue) else ""
    job_class = vc or name or row.get("user", "").strip() or "trace"
    return Job(source_id=row["job_id"].strip(), submit_s=submit, gpus=gpus, run_s=run_s, status=status,
               job_class=job_class, start_s=submit + delay_s if delay_s is not None else start, line=line)


def jobs(path: Path, options: ImportOptions, report: Report) -> Iterator[Job]:
    """The GPU jobs of a Helios ``cluster_log.csv`` (see the module's docstring)."""
    for line, row in iter_csv(path, report, REQUIRED):
        job = _job(line, row, options, report)
        if job is not None:
            yield job
