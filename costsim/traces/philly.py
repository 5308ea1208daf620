"""Microsoft Philly: the ``cluster_job_log`` JSON of msr-fiddle/philly-traces (ATC'19).

The file is a JSON array of jobs (a file of one JSON job per line is read too)::

    {"status": "Pass", "vc": "ee9e8c", "jobid": "application_1506638472019_14199",
     "submitted_time": "2017-10-07 01:11:39", "user": "ce2f4c",
     "attempts": [{"start_time": "2017-10-07 01:12:09", "end_time": "2017-10-07 01:13:23",
                   "detail": [{"ip": "m47", "gpus": ["gpu0", "gpu1", ...]}]}, ...]}

Fields used: ``jobid``, ``submitted_time``, ``status`` (required); ``attempts`` with their
``start_time``, ``end_time`` and ``detail[].gpus``; ``vc`` and ``user`` for the class. Times are
``YYYY-MM-DD HH:MM:SS`` without a zone, read in ``--timezone`` (UTC unless given; the Philly
utilisation logs are stamped PDT/PST, so ``America/Los_Angeles`` gets the 2017-11-05 change right).

A job becomes one trace row:

- GPUs of an attempt: the GPUs listed over its machines (``detail``: 2 machines × 4 GPUs = 8);
  the job's ``gpus`` is its largest attempt;
- ``duration_h``: the GPU-hours of all its attempts (each attempt's GPUs × its end − start) over
  ``gpus`` — the sum of the attempts' times when they all had the same GPUs. Retried attempts are
  replayed because the GPUs were held for them; the gaps between attempts are not;
- ``observed_delay_h``: the first attempt's start − ``submitted_time``;
- ``job_class``: ``vc`` (the virtual cluster, a team's share), else ``user``, else ``trace``.

What is not replayed (counted by reason, never an error): jobs with no attempt (the trace says a
job may have none), attempts with no start or no end time that are not the last (a logging gap:
their time is unknown), jobs still running when the log was taken (the last attempt has no end;
as for SLURM's RUNNING, the duration is unknown), attempts with no GPU listed.

``status``: ``Pass`` → completed, ``Killed`` → cancelled, ``Failed`` → failed (replayed for the
time the attempts ran), ``Running`` → running (dropped). A bad row (file:line, the job's index and
jobid): a job that is not an object, a missing ``jobid``/``submitted_time``, an unknown status, a
time that cannot be read, an attempt ending before it starts or starting before the submit, a
``detail`` or ``gpus`` that is not a list.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from costsim.scenario.errors import Problem, ScenarioError
from costsim.traces.common import BadCell, ImportOptions, Job, Report, parse_time

STATUSES = {"pass": "completed", "killed": "cancelled", "failed": "failed", "running": "running"}
RUNNING = "running (not replayed)"  # the reason SLURM's importer gives for RUNNING jobs too
NO_ATTEMPT = "never ran (no attempt)"
LOG_GAP = "attempts with no start or end time (left out of their jobs)"
NO_GPU = "no GPUs recorded"
PHILLY_DEPTH = 6  # array > job > attempts > attempt > detail > machine > gpus: what a real job nests


class BadJob(ValueError):
    """A job that cannot be read: ``field`` where, the message why."""

    def __init__(self, fieldname: str, message: str):
        super().__init__(message)
        self.field = fieldname


@dataclass(frozen=True)
class Attempt:
    """One scheduling attempt: epoch seconds (None when the log lost them) and GPUs held."""

    start_s: float | None
    end_s: float | None
    gpus: int


def records(text: str, source: str) -> Iterator[tuple[int, int, object]]:
    """(index from 0, line of its first character, value) of each job in a JSON array — or in a
    file of one JSON value per line. Broken JSON is a ScenarioError at its line and column (the
    rest of the file cannot be read past it), and so is a value nested deeper than Python's JSON
    reader can go (about the recursion limit, 1,000 levels; a Philly job nests ``PHILLY_DEPTH``)."""
    decoder = json.JSONDecoder()
    pos, line = 0, 1

    def skip(p: int) -> int:
        while p < len(text) and text[p] in " \t\r\n":
            p += 1
        return p

    def advance(to: int) -> None:
        nonlocal pos, line
        line += text.count("\n", pos, to)
        pos = to

    def broken(exc: json.JSONDecodeError) -> ScenarioError:
        return ScenarioError(source, [Problem((), f"not valid JSON: {exc.msg}", exc.lineno, exc.colno)])

    advance(skip(0))
    if pos == len(text):
        raise ScenarioError(source, [Problem((), "the file is empty (needs a JSON array of jobs)")])
    array = text[pos] == "["
    if array:
        advance(skip(pos + 1))
    index = 0
    while pos < len(text):
        if array and text[pos] == "]":
            if skip(pos + 1) < len(text):
                raise ScenarioError(source, [Problem((), "text after the end of the job array", line)])
            return
        try:
            value, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise broken(exc) from None
        except RecursionError:
            raise ScenarioError(source, [Problem((), (
                f"job {index} is nested deeper than the JSON reader goes (about {sys.getrecursionlimit():,} "
                f"levels; a Philly job nests {PHILLY_DEPTH}): is this a Philly cluster_job_log?"), line)]) from None
        yield index, line, value
        index += 1
        advance(skip(end))
        if array:
            if pos < len(text) and text[pos] == ",":
                advance(skip(pos + 1))
            elif pos < len(text) and text[pos] != "]":
                raise ScenarioError(source, [Problem((), "expected ',' or ']' after a job", line)])
    if array:
        raise ScenarioError(source, [Problem((), "the job array is not closed (no ']')", line)])


def _time(value: object, fieldname: str, options: ImportOptions) -> float | None:
    """Epoch seconds of a time field; None when missing (null, "", "None")."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadJob(fieldname, f"{value!r} is not a time (YYYY-MM-DD HH:MM:SS)")
    try:
        return parse_time(value, options.tz)
    except BadCell as exc:
        raise BadJob(fieldname, str(exc)) from None


def _gpus(detail: object, where: str) -> int:
    """GPUs of an attempt's ``detail``: the length of each machine's ``gpus`` list, summed."""
    if detail is None:
        return 0
    if not isinstance(detail, list):
        raise BadJob(where, "is not a list of machines")
    total = 0
    for m, machine in enumerate(detail):
        gpus = machine.get("gpus") if isinstance(machine, dict) else None
        if not isinstance(gpus, list):
            raise BadJob(f"{where}.{m}.gpus", "is not a list of GPUs")
        total += len(gpus)
    return total


def _attempts(raw: object, options: ImportOptions) -> list[Attempt]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise BadJob("attempts", "is not a list")
    out = []
    for a, attempt in enumerate(raw):
        where = f"attempts.{a}"
        if not isinstance(attempt, dict):
            raise BadJob(where, "is not an object")
        start = _time(attempt.get("start_time"), f"{where}.start_time", options)
        end = _time(attempt.get("end_time"), f"{where}.end_time", options)
        if start is not None and end is not None and end < start:
            raise BadJob(f"{where}.end_time", "is before start_time")
        out.append(Attempt(start, end, _gpus(attempt.get("detail"), f"{where}.detail")))
    return out


def _text(job: dict, key: str) -> str:
    value = job.get(key)
    return value.strip() if isinstance(value, str) else ""


def to_job(job: object, line: int, options: ImportOptions, report: Report) -> Job | None:
    """The trace job of one Philly job, or None (dropped, counted); BadJob when malformed."""
    if not isinstance(job, dict):
        raise BadJob("", "is not a JSON object")
    jobid = _text(job, "jobid")
    if not jobid:
        raise BadJob("jobid", "is missing")
    status = STATUSES.get(_text(job, "status").lower())
    if status is None:
        raise BadJob("status", f"{job.get('status')!r} is not a Philly status (Pass, Killed, Failed, Running)")
    submit = _time(job.get("submitted_time"), "submitted_time", options)
    if submit is None:
        raise BadJob("submitted_time", "is missing (every job has a submit time)")
    attempts = _attempts(job.get("attempts"), options)
    for a, attempt in enumerate(attempts):
        if attempt.start_s is not None and attempt.start_s < submit:
            raise BadJob(f"attempts.{a}.start_time", "is before submitted_time")
    if not attempts:
        report.drop(NO_ATTEMPT)
        return None
    if status == "running" or attempts[-1].end_s is None and attempts[-1].start_s is not None:
        report.drop(RUNNING)  # still running when the log was taken: its duration is unknown
        return None
    timed = [a for a in attempts if a.start_s is not None and a.end_s is not None]
    if len(timed) < len(attempts):
        report.drop(LOG_GAP, len(attempts) - len(timed))
    timed = [a for a in timed if a.gpus > 0]
    if not timed:
        report.drop(NO_GPU)
        return None
    gpus = max(a.gpus for a in timed)
    gpu_seconds = sum(a.gpus * (a.end_s - a.start_s) for a in timed
                      if a.end_s is not None and a.start_s is not None)  # all of them (timed)
    starts = [a.start_s for a in attempts if a.start_s is not None]
    job_class = _text(job, "vc") or _text(job, "user") or "trace"
    return Job(source_id=jobid, submit_s=submit, gpus=gpus, run_s=gpu_seconds / gpus, status=status,
               job_class=job_class, start_s=min(starts) if starts else None, line=line)


def jobs(path: Path, options: ImportOptions, report: Report) -> Iterator[Job]:
    """The GPU jobs of a Philly ``cluster_job_log`` (see the module's docstring)."""
    text = path.read_text(encoding="utf-8-sig")
    for index, line, raw in records(text, report.source):
        try:
            job = to_job(raw, line, options, report)
        except BadJob as exc:
            jobid = _text(raw, "jobid") if isinstance(raw, dict) else ""
            named = f"job {index}" + (f" ({jobid})" if jobid else "")
            report.bad(line, exc.field, f"{named}: {exc}")
            continue
        if job is not None:
            yield job
