"""SLURM accounting: ``sacct --parsable2`` output (``|``-separated, one header line).

Make one with, e.g.::

    sacct --allusers --parsable2 --starttime 2024-01-01 --endtime 2024-07-01 \\
          --format JobID,Submit,Start,End,Elapsed,State,AllocTRES,ReqTRES,Partition,Account,User

Columns used: JobID, Submit, Start, End, State and AllocTRES or ReqTRES (required); Elapsed,
Account, Partition, User (optional). ``--parsable`` (a trailing ``|``) is read too.

Rows and jobs:

- steps (``123.batch``, ``123.extern``, ``123.0``, ``77+0.batch``) are folded into their job: the
  allocation line carries the GPUs and times, so step lines are skipped;
- array tasks (``123_4``) are jobs of their own with that id; a pending range (``123_[5-9]``)
  never started and is dropped;
- heterogeneous jobs (``77+0``, ``77+1``) are one job ``77``: GPUs summed, run for the GPU-weighted
  mean of the components' runs (GPU-hours kept), the earliest submit and start, the worst state;
- GPUs: ``gres/gpu=N`` in AllocTRES (what the job got; ReqTRES when AllocTRES is empty), or the
  sum of ``gres/gpu:TYPE=N`` when no total is given. Other TRES, and gres that are not GPU counts
  (``gres/gpumem=80G``, ``gres/gpu-util=…``, ``gres/mps=…``), are ignored. A job without GPUs is dropped. With
  ``--gpu-type T`` only the ``gres/gpu:T`` count is used; jobs on other types, or whose GPUs have no
  type recorded, are dropped;
- ``job_class``: Account, else Partition, else User, else ``trace``.

States (``STATES``): the replayed duration is always the allocation's elapsed time (Elapsed, else
End − Start), which is what the GPUs were held for, whatever the outcome:

=============  ============  =============================================================
State          status        replayed?
=============  ============  =============================================================
COMPLETED      completed     yes, elapsed time
FAILED         failed        yes, elapsed time until it failed
OUT_OF_MEMORY  failed        yes, elapsed time until it failed
TIMEOUT        timeout       yes, elapsed time (about its time limit)
CANCELLED      cancelled     if it started: elapsed time until cancelled; if not: dropped
NODE_FAIL      node_fail     yes, elapsed time until the node failed (if it started)
PREEMPTED      preempted     yes, the elapsed time it ran before preemption
DEADLINE       timeout       if it started, elapsed time; if not: dropped
BOOT_FAIL      failed        dropped if it never started
RUNNING        running       dropped (no end yet: its duration is unknown)
PENDING, REQUEUED, SUSPENDED, RESIZING, REVOKED              dropped (not started / no run of its own)
=============  ============  =============================================================

Any job whose Start is ``Unknown``/``None`` is dropped as "never started". ``CANCELLED by 1234``
is CANCELLED. Times without a zone are in ``--timezone`` (sacct prints the local time of the host
it ran on).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from costsim.scenario.errors import Problem, ScenarioError
from costsim.traces.common import (
    TYPE_SEP,
    BadCell,
    ImportOptions,
    Job,
    Report,
    check_order,
    is_missing,
    iter_csv,
    parse_duration,
    parse_time,
)
from costsim.traces.table import JobColumns

STATES = {  # SLURM base state -> (status, replayed when it started)
    "COMPLETED": ("completed", True),
    "FAILED": ("failed", True),
    "OUT_OF_MEMORY": ("failed", True),
    "TIMEOUT": ("timeout", True),
    "CANCELLED": ("cancelled", True),
    "NODE_FAIL": ("node_fail", True),
    "PREEMPTED": ("preempted", True),
    "DEADLINE": ("timeout", True),
    "BOOT_FAIL": ("failed", True),
    "RUNNING": ("running", False),
    "PENDING": ("pending", False),
    "REQUEUED": ("requeued", False),
    "SUSPENDED": ("suspended", False),
    "RESIZING": ("resizing", False),
    "REVOKED": ("revoked", False),
}
REQUIRED = ("JobID", "Submit", "Start", "End", "State")
PENDING_RANGE = "pending array range"  # the reason an array range that never started is dropped
CLASS_COLUMNS = ("Account", "Partition", "User")  # job_class: the first of these that is not empty
_JOBID = re.compile(r"^(\d+)(?:_(\d+|\[[^\]]*\]))?(?:\+(\d+))?(?:\.(\S+))?$")  # 123, 123_4, 123_[1-3], 77+0, 123.batch
_GRES = re.compile(r"^gres/gpu(?::([^=]+))?=(\d+)$")


def parse_state(text: str) -> tuple[str, bool]:
    """(status, replayed when started) of a State cell (``CANCELLED by 0`` is CANCELLED)."""
    base = text.strip().split(" ")[0].upper().rstrip("+")
    if base not in STATES:
        raise BadCell(f"{text.strip()!r} is not a SLURM job state ({', '.join(STATES)})")
    return STATES[base]


def parse_tres(text: str, gpu_type: str | None) -> tuple[int, str | None]:
    """(GPUs, why none) of a TRES cell like ``cpu=8,gres/gpu:h100=4,gres/gpu=4``.

    Without ``gpu_type``: the untyped total, else the sum of the typed counts. With it: the typed
    count of that type (case-insensitive). ``why`` says why the count is 0: "no GPUs", "another GPU
    type" or "GPU type not recorded" (only an untyped total given); None when there are GPUs."""
    total: int | None = None
    typed: dict[str, int] = {}
    for item in text.split(","):
        item = item.strip()
        name = item.partition("=")[0]
        if name != "gres/gpu" and not name.startswith("gres/gpu:"):
            continue  # cpu, mem, billing, and gres that are not GPU counts: gres/gpumem, gres/gpu-util, gres/mps
        m = _GRES.match(item)
        if not m:
            raise BadCell(f"{item!r} is not a GPU count (gres/gpu=N or gres/gpu:TYPE=N)")
        if m.group(1) is None:
            total = int(m.group(2))
        else:
            typed[m.group(1).lower()] = typed.get(m.group(1).lower(), 0) + int(m.group(2))
    every = total if total is not None else sum(typed.values())
    if every == 0:
        return 0, "no GPUs"
    if gpu_type is None:
        return every, None
    if not typed:
        return 0, "GPU type not recorded"
    n = typed.get(gpu_type.lower(), 0)
    return n, None if n else "another GPU type"


def tres_types(text: str) -> str:
    """The GPU models a TRES cell names (``gres/gpu:TYPE=N`` with N > 0), lower-case as
    ``parse_tres`` matches them, joined by ``|`` in the order they appear; "" when none is named
    (an untyped ``gres/gpu=N``). Cells that are not GPU counts are ``parse_tres``'s to refuse."""
    models: list[str] = []
    for item in text.split(","):
        m = _GRES.match(item.strip())
        if m and m.group(1) is not None and int(m.group(2)) > 0 and m.group(1).lower() not in models:
            models.append(m.group(1).lower())
    return TYPE_SEP.join(models)


def parse_elapsed(text: str) -> float | None:
    """Seconds of an Elapsed cell; None when missing."""
    text = text.strip()
    return None if is_missing(text) else parse_duration(text)


def _row(line: int, row: dict[str, str], options: ImportOptions, report: Report, part: bool = False) -> Job | None:
    """The job of one allocation row, or None (bad row recorded or row dropped). A ``part`` of a
    heterogeneous job is returned even without GPUs (its GPUs are summed with the other parts')."""
    try:
        status, replayed = parse_state(row["State"])
    except BadCell as exc:
        report.bad(line, "State", str(exc))
        return None
    times = {}
    for name in ("Submit", "Start", "End"):
        try:
            times[name] = parse_time(row[name], options.tz)
        except BadCell as exc:
            report.bad(line, name, str(exc))
            return None
    tres_col = "AllocTRES" if row.get("AllocTRES", "").strip() else "ReqTRES"
    try:
        gpus, why = parse_tres(row.get(tres_col, ""), options.gpu_type)
    except BadCell as exc:
        report.bad(line, tres_col, str(exc))
        return None
    try:
        run_s = parse_elapsed(row.get("Elapsed", ""))
    except BadCell as exc:
        report.bad(line, "Elapsed", str(exc))
        return None
    if not check_order(report, line, list(times.items())):  # End before Start: bad whatever Elapsed says
        return None
    submit = times["Submit"]
    assert submit is not None  # check_order refuses a row without one
    if run_s is None and times["Start"] is not None and times["End"] is not None:
        run_s = times["End"] - times["Start"]
    if not replayed:
        report.drop(f"{status} (not replayed)")
        return None
    if times["Start"] is None:
        report.drop("never started")
        return None
    if run_s is None:
        report.bad(line, "Elapsed", "is missing and End is unknown (no duration)")
        return None
    if why is not None and not part:
        report.drop(why)
        return None
    job_class = next((row[c].strip() for c in CLASS_COLUMNS if row.get(c, "").strip()), "trace")
    types = options.gpu_type.lower() if options.gpu_type is not None else tres_types(row.get(tres_col, ""))
    return Job(source_id="", submit_s=submit, gpus=gpus, run_s=run_s, status=status,
               job_class=job_class, start_s=times["Start"], line=line, gpu_types=types)


def read(path: Path, options: ImportOptions, report: Report) -> JobColumns | Iterator[Job]:
    """The GPU jobs of an ``sacct --parsable2`` file: read by columns when the columnar reader is
    sure of every row (:mod:`costsim.traces.slurm_columnar`, the same jobs much faster), else row
    by row (:func:`jobs`, which names every bad row by file:line)."""
    from costsim.traces.slurm_columnar import read_columns

    found = read_columns(path, options, report)
    return found if found is not None else jobs(path, options, report)


def jobs(path: Path, options: ImportOptions, report: Report) -> Iterator[Job]:
    """The GPU jobs of an ``sacct --parsable2`` file, row by row (see the module's docstring)."""
    return fold_rows(iter_csv(path, report, REQUIRED, delimiter="|", quoting=False), options, report)


def fold_rows(rows: Iterable[tuple[int, dict[str, str]]], options: ImportOptions, report: Report) -> Iterator[Job]:
    """The jobs of sacct rows ``(line, {column: cell})``: steps skipped, array ranges dropped,
    heterogeneous components folded into their job."""
    het: dict[str, list[Job]] = {}  # "77" -> its components, in file order
    order: list[tuple[str, Job | None]] = []
    for line, row in rows:
        if "AllocTRES" not in row and "ReqTRES" not in row:
            raise ScenarioError(report.source, [Problem((), "missing column AllocTRES or ReqTRES (the GPUs)", 1)])
        jid = row["JobID"].strip()
        m = _JOBID.match(jid)
        if not m:
            report.bad(line, "JobID", f"{jid!r} is not a SLURM job id (123, 123_4, 77+0, 123.batch)")
            continue
        base, task, component, step = m.groups()
        if step is not None:
            continue  # a step of a job: the job's own line holds its allocation
        if task is not None and task.startswith("["):
            report.drop(PENDING_RANGE)
            continue
        job = _row(line, row, options, report, part=component is not None)
        if job is None:
            continue
        if component is not None:  # a part of heterogeneous job `base`: folded below
            job.source_id = base
            parts = het.setdefault(base, [])
            if not parts:
                order.append((base, None))
            parts.append(job)
        else:
            job.source_id = jid
            order.append((jid, job))
    for jid, job in order:
        job = job if job is not None else _fold(het[jid])
        if job.gpus > 0:
            yield job
        else:
            report.drop("no GPUs" if options.gpu_type is None else "no GPUs of that type")


# A heterogeneous job's status: the worst of its components' (one failed component fails the job).
_STATUS_RANK = {"completed": 0, "timeout": 1, "cancelled": 2, "preempted": 3, "node_fail": 4, "failed": 5}


def _fold(parts: list[Job]) -> Job:
    """One job of a heterogeneous job's components: GPUs summed, run for the GPU-weighted mean of
    the components' runs (so the GPU-hours are theirs: 2 GPUs × 1 h + 4 GPUs × 2 h replays as 6 GPUs
    × 1.67 h = 10 GPU-hours, not 6 × 2 h), earliest submit and start, the worst status, the first
    component's class, named by the first component's line."""
    first = parts[0]
    starts = [p.start_s for p in parts if p.start_s is not None]
    gpus = sum(p.gpus for p in parts)
    run_s = sum(p.gpus * p.run_s for p in parts) / gpus if gpus else max(p.run_s for p in parts)
    status = max((p.status for p in parts), key=lambda st: _STATUS_RANK.get(st, 0))
    models = list(dict.fromkeys(m for p in parts if p.gpus > 0 for m in p.gpu_types.split(TYPE_SEP) if m))
    return Job(source_id=first.source_id, submit_s=min(p.submit_s for p in parts), gpus=gpus, run_s=run_s,
               status=status, job_class=first.job_class, start_s=min(starts) if starts else None, line=first.line,
               gpu_types=TYPE_SEP.join(models))
