"""Alibaba PAI 2020 (alibaba/clusterdata ``cluster-trace-gpu-v2020``, NSDI'22): two tables.

FILE is ``pai_job_table.csv``; the task table is read from the same folder (the same name with
``job_table`` → ``task_table``, else ``pai_task_table.csv``). As published, the CSVs have no
header line (the columns are in separate ``.header`` files); a file that starts with its header
is read too. Columns used:

- ``pai_job_table``: ``job_name, inst_id, user, status, start_time, end_time`` — ``start_time`` is
  the job's *submission*, ``status`` Terminated (the only success), Failed, Running or Waiting;
- ``pai_task_table``: ``job_name, task_name, inst_num, status, start_time, end_time, plan_cpu,
  plan_mem, plan_gpu, gpu_type`` — ``plan_gpu`` is per instance, in percent of a GPU (50 = half a
  GPU; empty for a CPU task such as a parameter server), ``start_time`` the task's launch.

Times are seconds (shifted by a constant for anonymity: hour 0 is the first submit anyway; as epoch
seconds in UTC+8 they keep the source's time of day, so ``--since``/``--until`` dates fall in 1970).

A job becomes one trace row:

- ``gpus``: Σ over its tasks of ``inst_num`` × ``plan_gpu`` / 100 — 4 workers at 50 % is 2 GPUs.
  A job needing 0.75 GPU takes 1 with ``--fractional round-up`` (default), or 1 GPU for 75 % of the
  time with ``pool`` (common.py: the GPU-hours kept);
- the run: from its first task's launch to its last task's end (tasks of a job run together);
  ``observed_delay_h`` is that first launch − the job's ``start_time`` (the wait the trace's README
  names). When a launched task has no end, the job's ``end_time`` ends the run;
- ``job_class``: ``user``; ``status``: Terminated → completed, Failed → failed (replayed for the
  time it held its GPUs);
- ``--gpu-type T``: jobs whose GPU tasks all ran on T (``MISC``, ``T4``, ``P100``, ``V100``,
  ``V100M32``; case-insensitive); others are dropped ("another GPU type", "GPU type not recorded").

Dropped (counted): Waiting jobs and jobs no task of which launched ("never started"), Running jobs
(no end yet), CPU-only jobs, jobs with no task row, task rows of no job, jobs whose task row was
bad (with ``--skip-bad``). Bad rows (file:line): a wrong number of fields, an empty or repeated
job_name, an unknown status, a time, ``inst_num`` or ``plan_gpu`` that is not a number >= 0 (``nan``
included: only an empty ``plan_gpu`` is a task without GPUs), an end before a start, a task
launched before its job was submitted.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from costsim.scenario.errors import Problem, ScenarioError
from costsim.traces.common import (
    TYPE_SEP,
    BadCell,
    ImportOptions,
    Job,
    Report,
    is_missing,
    iter_csv,
    iter_lines,
    parse_number,
    parse_time,
)

JOB_COLUMNS = ["job_name", "inst_id", "user", "status", "start_time", "end_time"]
TASK_COLUMNS = ["job_name", "task_name", "inst_num", "status", "start_time", "end_time",
                "plan_cpu", "plan_mem", "plan_gpu", "gpu_type"]
JOB_REQUIRED = ("job_name", "status", "start_time", "end_time")
TASK_REQUIRED = ("job_name", "inst_num", "start_time", "end_time", "plan_gpu")
STATUSES = {"terminated": "completed", "failed": "failed", "running": "running", "waiting": "waiting"}
RUNNING = "running (not replayed)"  # as SLURM's RUNNING: no end yet, duration unknown


@dataclass(frozen=True)
class Task:
    """One task row: instances, GPUs per instance (1.0 = one GPU), epoch seconds, its line."""

    instances: int
    gpu_each: float
    start_s: float | None
    end_s: float | None
    gpu_type: str
    line: int


def task_table_path(job_table: Path) -> Path:
    """The task table next to ``job_table``: ``…job_table…`` → ``…task_table…``, else
    ``pai_task_table.csv`` in the same folder."""
    if "job_table" in job_table.name:
        sibling = job_table.with_name(job_table.name.replace("job_table", "task_table"))
        if sibling.is_file():
            return sibling
    return job_table.with_name("pai_task_table.csv")


def _rows(path: Path, report: Report, columns: list[str], required: tuple[str, ...]):
    """The data rows of a PAI CSV: with the published header-less layout, or a header line."""
    first = next((text for _, text in iter_lines(path)), "")
    header = None if first.split(",")[0].strip() == columns[0] else columns
    return iter_csv(path, report, required, header=header)


class _Bad(ValueError):
    """A row that cannot be read: ``field`` where, the message why."""

    def __init__(self, fieldname: str, message: str):
        super().__init__(message)
        self.field = fieldname


def _times(row: dict[str, str], options: ImportOptions) -> tuple[float | None, float | None]:
    """(start, end) epoch seconds of a row (None when missing); _Bad when unreadable."""
    out = []
    for name in ("start_time", "end_time"):
        try:
            out.append(parse_time(row[name], options.tz))
        except BadCell as exc:
            raise _Bad(name, str(exc)) from None
    if out[0] is not None and out[1] is not None and out[1] < out[0]:
        raise _Bad("end_time", "is before start_time")
    return out[0], out[1]


def _task(row: dict[str, str], line: int, options: ImportOptions) -> Task:
    try:
        instances = parse_number(row["inst_num"], "a whole number of instances >= 0", integer=True)
    except BadCell as exc:
        raise _Bad("inst_num", str(exc)) from None
    text = row["plan_gpu"].strip()
    try:
        # Only an empty cell is a task without GPUs (as published); "nan", "None" or "-" is not a
        # count, and reading it as 0 would drop the job silently as "no GPUs".
        gpu = 0.0 if not text else parse_number(text, "a percentage of a GPU >= 0 (empty for a task "
                                                      "without GPUs)")
    except BadCell as exc:
        raise _Bad("plan_gpu", str(exc)) from None
    start, end = _times(row, options)
    return Task(int(instances), gpu / 100, start, end, row.get("gpu_type", "").strip(), line)


def read_tasks(path: Path, options: ImportOptions, skip_bad: bool) -> tuple[dict[str, list[Task]], set[str], Report]:
    """Tasks by job name, the names of jobs with a bad task row, and the task table's report
    (raised here when it has bad rows and they are not to be skipped)."""
    report = Report(str(path), skip_bad)
    if not path.is_file():
        raise ScenarioError(str(path), [Problem((), "the PAI task table is not found (it is read from "
                                                    "the folder of pai_job_table.csv)")])
    tasks: dict[str, list[Task]] = {}
    spoiled: set[str] = set()
    for line, row in _rows(path, report, TASK_COLUMNS, TASK_REQUIRED):
        name = row["job_name"].strip()
        if not name:
            report.bad(line, "job_name", "is empty")
            continue
        try:
            tasks.setdefault(name, []).append(_task(row, line, options))
        except _Bad as exc:
            report.bad(line, exc.field, str(exc))
            spoiled.add(name)
    report.check()
    ragged = {p.line for p in report.problems if not p.loc}  # a wrong number of fields: whose task?
    if ragged:  # (only with --skip-bad) the first field names the job, whose GPUs would be short
        spoiled |= {text.split(",")[0].strip() for n, text in iter_lines(path) if n in ragged} - {""}
    return tasks, spoiled, report


def to_job(name: str, row: dict[str, str], line: int, tasks: list[Task], options: ImportOptions,
           report: Report) -> Job | None:
    """The trace job of a job row and its tasks, or None (dropped, counted); _Bad when malformed."""
    status = STATUSES.get(row["status"].strip().lower())
    if status is None:
        raise _Bad("status", f"{row['status'].strip()!r} is not a PAI job status "
                             "(Terminated, Failed, Running, Waiting)")
    submit, end = _times(row, options)
    if submit is None:
        raise _Bad("start_time", "is missing (the job's submission time)")
    early = [t for t in tasks if t.start_s is not None and t.start_s < submit]
    if early:
        raise _Bad("start_time", f"is after the launch of its task at pai_task_table line {early[0].line}")
    if not tasks:
        report.drop("no task row")
        return None
    launched = [t for t in tasks if t.start_s is not None]
    if status == "waiting" or not launched:
        report.drop("never started")
        return None
    if status == "running":
        report.drop(RUNNING)
        return None
    gpu_tasks = [t for t in tasks if t.gpu_each > 0 and t.instances > 0]
    gpus = sum(t.instances * t.gpu_each for t in gpu_tasks)
    if gpus == 0:
        report.drop("no GPUs")
        return None
    if options.gpu_type is not None:
        types = {t.gpu_type.lower() for t in gpu_tasks}
        if "" in types or any(is_missing(t) for t in types):
            report.drop("GPU type not recorded")
            return None
        if types != {options.gpu_type.strip().lower()}:
            report.drop("another GPU type")
            return None
    first = min(t.start_s for t in launched if t.start_s is not None)  # every launched task's
    ends = [t.end_s for t in launched if t.end_s is not None]
    last = max(ends) if len(ends) == len(launched) else end  # the job row's end unless every task has one
    if last is None:
        report.drop("no end time recorded")
        return None
    if last < first:
        raise _Bad("end_time", "is before its first task's launch")
    models = dict.fromkeys(t.gpu_type.strip() for t in gpu_tasks if not is_missing(t.gpu_type))
    return Job(source_id=name, submit_s=submit, gpus=gpus, run_s=last - first, status=status,
               job_class=row.get("user", "").strip() or "trace", start_s=first, line=line,
               gpu_types=TYPE_SEP.join(models))


def jobs(path: Path, options: ImportOptions, report: Report) -> Iterator[Job]:
    """The GPU jobs of ``pai_job_table.csv`` and the task table beside it (module docstring)."""
    task_path = task_table_path(path)
    tasks, spoiled, task_report = read_tasks(task_path, options, report.skip_bad)
    for p in task_report.problems:  # skipped (--skip-bad): listed with the job table's
        where = ".".join(str(x) for x in p.loc)
        report.problems.append(Problem((), f"{task_path.name}:{p.line}: {where + ': ' if where else ''}{p.message}"))
    seen: dict[str, int] = {}
    for line, row in _rows(path, report, JOB_COLUMNS, JOB_REQUIRED):
        name = row["job_name"].strip()
        if not name:
            report.bad(line, "job_name", "is empty")
            continue
        if name in seen:
            report.bad(line, "job_name", f"{name!r} appears twice (first at line {seen[name]})")
            continue
        seen[name] = line
        if name in spoiled:
            report.drop("a bad task row (skipped)")
            continue
        try:
            job = to_job(name, row, line, tasks.get(name, []), options, report)
        except _Bad as exc:
            report.bad(line, exc.field, str(exc))
            continue
        if job is not None:
            yield job
    orphans = sum(len(ts) for name, ts in tasks.items() if name not in seen)
    if orphans:
        report.drop("task rows of no job", orphans)
