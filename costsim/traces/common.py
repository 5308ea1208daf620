"""Shared machinery of the trace importers: parsing cells, collecting bad rows, building the table.

A format module (``slurm.py``, ``helios.py``, ...) reads its file and yields one :class:`Job` per
source job, in epoch seconds; everything after that is here and the same for every format:

    def jobs(path: Path, options: ImportOptions, report: Report) -> Iterator[Job]

(or, for a reader that works by columns, a :class:`costsim.traces.table.JobColumns`: the SLURM
reader's columnar path, ``slurm_columnar.py``)

- a cell that cannot be read: ``report.bad(line, field, message)`` and skip the row (the error is
  raised at the end unless ``--skip-bad``, then the row is only counted);
- a row that is fine but not a job to replay (no GPUs, cancelled before it started, another GPU
  type): ``report.drop(reason)`` and skip it — counted by reason, never an error;
- time-order checks (submit before start before end) with :func:`check_order`;
- cells are read with :func:`parse_time` (ISO 8601 with or without a zone, epoch seconds,
  ``Unknown``/``None``/empty → None), :func:`parse_duration` (SLURM ``[D-]HH:MM:SS``, ``MM:SS``,
  plain seconds) and :func:`parse_number`; each raises :class:`BadCell` with the reason.

:func:`costsim.traces.table.import_jobs` runs a format's ``jobs`` and
:func:`costsim.traces.table.build_frame` turns the jobs into costsim's trace CSV columns
(``submit_h, gpus, duration_h, job_id, job_class, priority``) plus ``status``, ``observed_delay_h`` (start − submit in the source, hours; empty when the start is unknown) and
``source_id`` (only when some job id had to change to stay unique). The first submit kept (after
``--since``/``--until``) is hour 0; rows are sorted by submit time, ties in file order.
"""

from __future__ import annotations

import csv
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pandas as pd

from costsim.scenario.errors import Problem, ScenarioError
from costsim.scenario.textfile import csv_field_limit, field_too_long

if TYPE_CHECKING:
    from costsim.traces.shape import RecordShape

COLUMNS = ("submit_h", "gpus", "duration_h", "job_id", "job_class", "priority", "status", "observed_delay_h")
SOURCE_ID = "source_id"  # added only when a job id had to change (duplicates in the source)
FRACTIONAL = ("round-up", "pool")  # what to do with a job asking for part of a GPU (or 1.5 GPUs)
MISSING = frozenset({"", "unknown", "none", "null", "nan", "nat", "n/a", "-", "--"})  # no time given
TYPE_SEP = "|"  # between the GPU models of one job (a pod's gpu_spec "A100|H100", a SLURM job on two types)
# Drop reasons of jobs still running when the record was taken (no end: their duration is unknown);
# every format counts them under one of these.
STILL_RUNNING = ("running (not replayed)", "running (no end yet)")
MAX_REPORTED = 8  # bad rows listed in an error; the count of the rest is given
_DURATION = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+(?:\.\d*)?)$")  # [D-][HH:]MM:SS[.fff]
_EPOCH_MIN, _EPOCH_MAX = 0.0, 32503680000.0  # 1970 .. 3000: numbers outside are not epoch seconds


class BadCell(ValueError):
    """A cell that cannot be read; the message says why (without the file, line or field)."""


@dataclass(frozen=True)
class ImportOptions:
    """What the user asked for. Times are epoch seconds (UTC)."""

    since_s: float | None = None  # keep jobs submitted at or after this
    until_s: float | None = None  # keep jobs submitted before this
    gpu_type: str | None = None  # keep only jobs on this GPU type (case-insensitive), where the format says
    skip_bad: bool = False  # skip malformed rows (counted) instead of failing
    fractional: str = "round-up"  # "round-up": ceil(gpus); "pool": ceil(gpus) GPUs for share·gpus/ceil(gpus) of the time
    tz: tzinfo = UTC  # the zone of timestamps written without one


@dataclass
class Job:
    """One source job as a format module reads it. Times in epoch seconds (UTC)."""

    source_id: str  # the id in the source (array task ``123_4``, pod name, ...)
    submit_s: float
    gpus: float  # GPUs allocated (may be fractional: PAI plan_gpu)
    run_s: float  # seconds to replay (elapsed time of the allocation)
    status: str  # lower-case: completed, failed, timeout, cancelled, node_fail, preempted, ...
    job_class: str = "trace"  # user, account, queue or partition
    start_s: float | None = None  # when it started in the source (for observed_delay_h)
    line: int = 0  # line of the file (for messages)
    priority: int = 0
    share: float = 1.0  # the part of each of its GPUs it uses (k8s gpu_milli / 1000): "pool" shortens the run by it
    gpu_types: str = ""  # the GPU models it ran on (or may run on), joined by TYPE_SEP; "": not recorded


@dataclass
class Report:
    """Bad rows and dropped rows of one file, as a format module finds them."""

    source: str  # the file, as messages name it
    skip_bad: bool = False
    problems: list[Problem] = field(default_factory=list)  # every bad row (one problem each)
    dropped: Counter = field(default_factory=Counter)  # reason -> rows left out on purpose

    def bad(self, line: int | None, fieldname: str, message: str) -> None:
        """Record a malformed row: ``file:line: field: message``."""
        self.problems.append(Problem((fieldname,) if fieldname else (), message, line))

    def drop(self, reason: str, n: int = 1) -> None:
        """Count a row (or ``n``) that is valid but not replayed, by reason ("no GPUs", ...)."""
        self.dropped[reason] += n

    @property
    def skipped(self) -> int:
        """Malformed rows skipped (with ``skip_bad``)."""
        return len(self.problems)

    def error(self) -> ScenarioError:
        """The error listing the first bad rows and the count of the others."""
        self.problems.sort(key=lambda p: (p.line is None, p.line or 0))  # in line order, whichever check found them
        shown = self.problems[:MAX_REPORTED]
        if len(self.problems) > MAX_REPORTED:
            shown = shown + [Problem((), f"... and {len(self.problems) - MAX_REPORTED} more bad row(s); "
                                         "--skip-bad skips and counts them")]
        return ScenarioError(self.source, shown)

    def check(self) -> None:
        """Raise the error when there are bad rows and they are not to be skipped."""
        if self.problems and not self.skip_bad:
            raise self.error()


@dataclass
class ImportResult:
    """An imported trace: the table and what was left out."""

    frame: pd.DataFrame  # COLUMNS (+ SOURCE_ID), sorted by submit_h
    skipped: int  # malformed rows skipped (--skip-bad)
    dropped: dict[str, int]  # reason -> valid rows not replayed
    problems: list[Problem]  # the skipped rows' problems
    first_submit_s: float | None  # epoch seconds of hour 0 (None when no job is kept)
    facts: ImportFacts | None = None  # what the GPU handling did to the kept jobs
    shape: RecordShape | None = None  # where the jobs and GPU-hours sit (costsim.traces.shape)


@dataclass(frozen=True)
class ImportFacts:
    """What whole-GPU handling and GPU types look like over the jobs kept (before costsim's own
    MIN_JOB_H floor on a run). GPU-hours: GPUs × hours."""

    used_gpu_hours: float  # Σ GPUs (fractional) × share of each GPU × run hours: what the source says was used
    rounded_jobs: int  # jobs asking for part of a GPU (a fractional count or a share below 1)
    gpu_types: dict[str, int] = field(default_factory=dict)  # GPU model -> jobs naming it (a job on two counts for both)
    untyped_jobs: int = 0  # jobs whose GPU model is not recorded


# -- cells -------------------------------------------------------------------------------------


def zone(name: str) -> tzinfo:
    """An IANA zone ("Europe/Paris"), "UTC", or a fixed offset ("+08:00"); BadCell if unknown."""
    text = name.strip()
    if text.upper() in ("UTC", "Z"):
        return UTC
    m = re.fullmatch(r"([+-])(\d{2}):?(\d{2})", text)
    if m and int(m.group(2)) < 24 and int(m.group(3)) < 60:
        sign = 1 if m.group(1) == "+" else -1
        return timezone(sign * timedelta(hours=int(m.group(2)), minutes=int(m.group(3))))
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise BadCell(f"{text!r} is not a time zone (an IANA name like Europe/Paris, UTC, or +08:00)") from None


def is_missing(text: str) -> bool:
    """True for a cell that says there is no value (empty, Unknown, None, NaN, ...)."""
    return text.strip().lower() in MISSING


def parse_time(text: str, tz: tzinfo = UTC) -> float | None:
    """Epoch seconds (UTC) of a timestamp cell; None when missing (``Unknown``, ``None``, empty).

    Accepts ISO 8601 (``2024-03-01T08:00:00``, a space for the T, fractions, ``Z`` or ``+02:00``)
    and epoch seconds (a number). A timestamp without a zone is in ``tz``; a local time that does
    not exist or is ambiguous (DST) takes the offset before the change (Python's fold=0)."""
    s = text.strip()
    if s.lower() in MISSING:
        return None
    try:
        x = float(s)
    except ValueError:
        pass
    else:
        if not (math.isfinite(x) and _EPOCH_MIN <= x <= _EPOCH_MAX):
            raise BadCell(f"{_quote(s)} is not a time (epoch seconds between 1970 and 3000)")
        return x
    try:
        t = datetime.fromisoformat(s[:-1] + "+00:00" if s.endswith(("Z", "z")) else s)
    except ValueError:
        raise BadCell(f"{_quote(s)} is not a time (ISO 8601 like 2024-03-01T08:00:00 or epoch seconds)") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=tz)
    return t.timestamp()


def parse_duration(text: str) -> float:
    """Seconds of a duration cell: SLURM ``[D-][HH:]MM:SS[.fff]`` (``1-02:03:04``, ``05:06``) or a
    plain number of seconds. BadCell when it is neither, or negative."""
    s = text.strip()
    m = _DURATION.match(s)
    if m:
        days, hours, minutes, seconds = (float(g) if g else 0.0 for g in m.groups())
        if minutes >= 60 or seconds >= 60 or (m.group(1) and hours >= 24):
            raise BadCell(f"{_quote(s)} is not a duration (minutes and seconds below 60)")
        return ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    try:
        x = float(s)
    except ValueError:
        raise BadCell(f"{_quote(s)} is not a duration ([D-]HH:MM:SS or seconds)") from None
    if not math.isfinite(x) or x < 0:
        raise BadCell(f"{_quote(s)} is not a duration (a finite number of seconds >= 0)")
    return x


def parse_number(text: str, what: str = "a number", integer: bool = False, minimum: float = 0.0) -> float:
    """A finite number >= ``minimum`` (whole if ``integer``); BadCell naming ``what`` otherwise."""
    s = text.strip()
    try:
        x = float(s)
    except ValueError:
        raise BadCell(f"{_quote(s)} is not {what}") from None
    if not math.isfinite(x) or x < minimum or (integer and x != round(x)):
        raise BadCell(f"{_quote(s)} is not {what}")
    return x


def _quote(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")


def cell(report: Report, line: int, fieldname: str, read: Callable[[], object]) -> tuple[bool, object]:
    """``(True, read())``, or ``(False, None)`` after recording the BadCell as a bad row."""
    try:
        return True, read()
    except BadCell as exc:
        report.bad(line, fieldname, str(exc))
        return False, None


def check_order(report: Report, line: int, times: list[tuple[str, float | None]]) -> bool:
    """Whether a row's times are in order, e.g. ``[("Submit", s), ("Start", t), ("End", e)]``; if
    not, the bad row is recorded (False). The first time is required (``Submit: is missing``); each
    other is not before the one listed before it when both are known (``Start: is before Submit``)."""
    first, t0 = times[0]
    if t0 is None:
        report.bad(line, first, "is missing (every job has one)")
        return False
    for (before, a), (after, b) in zip(times, times[1:], strict=False):  # each time with the next: one pair fewer
        if a is not None and b is not None and b < a:
            report.bad(line, after, f"is before {before}")
            return False
    return True


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """The trace CSV as costsim reads it (``%.10g`` keeps hours to well under a millisecond), text
    cells that a spreadsheet would take for a formula guarded with a leading ``'``
    (``costsim.traces.csvcells``: the guard is part of the value the trace then holds)."""
    from costsim.traces.csvcells import write_csv as guarded_csv

    guarded_csv(frame, path, float_format="%.10g")


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number from 1, text without the newline) of a UTF-8 file (a BOM dropped)."""
    with open(path, encoding="utf-8-sig", newline="") as f:
        for n, text in enumerate(f, start=1):
            yield n, text.rstrip("\r\n")


def _rows(reader, source: str, limit: int) -> Iterator[list[str]]:
    """The rows of a ``csv.reader``, its ``csv.Error`` a ScenarioError at the line it stopped on."""
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            problem = (field_too_long(reader.line_num, limit) if "field larger than field limit" in str(exc)
                       else Problem((), f"cannot read the CSV: {exc}", reader.line_num))
            raise ScenarioError(source, [problem]) from None
        yield row


def iter_csv(path: Path, report: Report, required: Iterable[str], delimiter: str = ",",
             header: list[str] | None = None, quoting: bool = True) -> Iterator[tuple[int, dict[str, str]]]:
    """(line of the row's first character, {column: cell}) for each data row of a CSV file.

    The header (first line, names stripped; or ``header`` when the file has none) must hold every
    ``required`` column (ScenarioError at line 1 otherwise). A row with a different number of
    fields is a bad row; blank lines are skipped. Quoted cells may span lines (the row is named by
    the line it starts on) unless ``quoting`` is False (quotes are then plain characters). A field
    may be as long as a trace file may be (``csv_field_limit``); a longer one, or anything else
    Python's CSV reader refuses, is a ScenarioError at its line (the rest cannot be read)."""
    limit = csv_field_limit()
    with open(path, encoding="utf-8-sig", newline="") as f:
        reader = csv.reader(f, delimiter=delimiter, quoting=csv.QUOTE_MINIMAL if quoting else csv.QUOTE_NONE)
        names = header
        first_data = 1
        if names is None:
            try:
                names = [n.strip() for n in next(_rows(reader, report.source, limit))]
            except StopIteration:
                raise ScenarioError(report.source, [Problem((), "the file is empty (needs a header and rows)")]) from None
            first_data = reader.line_num + 1
        missing = [c for c in required if c not in names]
        if missing:
            raise ScenarioError(report.source, [Problem((), f"missing column(s) {', '.join(missing)}; "
                                                            f"the header has {', '.join(names)}", 1)])
        start = first_data
        rows = 0
        for row in _rows(reader, report.source, limit):
            line, start = start, reader.line_num + 1
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            rows += 1
            if len(row) != len(names):
                report.bad(line, "", f"has {len(row)} fields; the header has {len(names)}")
                continue
            yield line, dict(zip(names, row, strict=True))
        if not rows:
            what = "a header line" if header is None else "no line"
            raise ScenarioError(report.source, [Problem((), f"has {what} and no job rows (nothing to import)")])
