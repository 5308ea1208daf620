"""Shared machinery of the trace importers: parsing cells, collecting bad rows, building the table.

A format module (``slurm.py``, ``helios.py``, ...) reads its file and yields one :class:`Job` per
source job, in epoch seconds; everything after that is here and the same for every format:

    def jobs(path: Path, options: ImportOptions, report: Report) -> Iterator[Job]

- a cell that cannot be read: ``report.bad(line, field, message)`` and skip the row (the error is
  raised at the end unless ``--skip-bad``, then the row is only counted);
- a row that is fine but not a job to replay (no GPUs, cancelled before it started, another GPU
  type): ``report.drop(reason)`` and skip it — counted by reason, never an error;
- cells are read with :func:`parse_time` (ISO 8601 with or without a zone, epoch seconds,
  ``Unknown``/``None``/empty → None), :func:`parse_duration` (SLURM ``[D-]HH:MM:SS``, ``MM:SS``,
  plain seconds) and :func:`parse_number`; each raises :class:`BadCell` with the reason.

:func:`import_jobs` runs a format's ``jobs`` and :func:`build_frame` turns the jobs into costsim's
trace CSV columns (``submit_h, gpus, duration_h, job_id, job_class, priority``) plus ``status``,
``observed_delay_h`` (start − submit in the source, hours; empty when the start is unknown) and
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
from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import pandas as pd

from costsim.scenario.errors import Problem, ScenarioError
from costsim.scenario.units import MAX_GPUS, MAX_HOURS, MIN_JOB_H

COLUMNS = ("submit_h", "gpus", "duration_h", "job_id", "job_class", "priority", "status", "observed_delay_h")
SOURCE_ID = "source_id"  # added only when a job id had to change (duplicates in the source)
FRACTIONAL = ("round-up", "pool")  # what to do with a job asking for part of a GPU (or 1.5 GPUs)
MISSING = frozenset({"", "unknown", "none", "null", "nan", "nat", "n/a", "-", "--"})  # no time given
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
    fractional: str = "round-up"  # "round-up": ceil(gpus); "pool": ceil(gpus) GPUs for gpus/ceil(gpus) of the time
    tz: tzinfo = timezone.utc  # the zone of timestamps written without one


@dataclass
class Job:
    """One source job as a format module reads it. Times in epoch seconds (UTC)."""

    source_id: str  # the id in the source (array task ``123_4``, pod name, ...)
    submit_s: float
    gpus: float  # GPUs allocated (may be fractional: k8s gpu_milli, PAI plan_gpu)
    run_s: float  # seconds to replay (elapsed time of the allocation)
    status: str  # lower-case: completed, failed, timeout, cancelled, node_fail, preempted, ...
    job_class: str = "trace"  # user, account, queue or partition
    start_s: float | None = None  # when it started in the source (for observed_delay_h)
    line: int = 0  # line of the file (for messages)
    priority: int = 0


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


# -- cells -------------------------------------------------------------------------------------


def zone(name: str) -> tzinfo:
    """An IANA zone ("Europe/Paris"), "UTC", or a fixed offset ("+08:00"); BadCell if unknown."""
    text = name.strip()
    if text.upper() in ("UTC", "Z"):
        return timezone.utc
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


def parse_time(text: str, tz: tzinfo = timezone.utc) -> float | None:
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


# -- the table ---------------------------------------------------------------------------------


def import_jobs(jobs: Callable[[Path, ImportOptions, Report], Iterable[Job]], path: Path | str,
                options: ImportOptions) -> ImportResult:
    """Run a format's ``jobs`` on ``path`` and build the trace; ScenarioError naming each bad row
    (file:line) unless ``options.skip_bad``, and when no job is left to replay."""
    path = Path(path)
    source = str(path)
    if not path.is_file():
        raise ScenarioError(source, [Problem((), "file not found")])
    report = Report(source, options.skip_bad)
    try:
        found = list(jobs(path, options, report))
    except UnicodeDecodeError as exc:
        raise ScenarioError(source, [Problem((), f"not UTF-8 text ({exc.reason} at byte {exc.start})")]) from None
    except OSError as exc:
        raise ScenarioError(source, [Problem((), f"cannot read the file: {exc.strerror or exc}")]) from None
    # One pass: the rows' own problems and build_frame's (too many GPUs, too long) are reported
    # together, in line order, by build_frame's check.
    frame, first = build_frame(found, options, report)
    report.check()
    if frame.empty:
        why = ", ".join(f"{n} {r}" for r, n in sorted(report.dropped.items())) or "the file has no jobs"
        raise ScenarioError(source, [Problem((), f"no job to replay ({why})")])
    problems = sorted(report.problems, key=lambda p: (p.line is None, p.line or 0))
    return ImportResult(frame, report.skipped, dict(report.dropped), problems, first)


def _window(jobs: list[Job], options: ImportOptions, report: Report) -> list[Job]:
    """The jobs submitted in [since, until)."""
    kept = [j for j in jobs if (options.since_s is None or j.submit_s >= options.since_s)
            and (options.until_s is None or j.submit_s < options.until_s)]
    if len(kept) < len(jobs):
        report.drop("outside --since/--until", len(jobs) - len(kept))
    return kept


def _gpus(jobs: list[Job], policy: str) -> tuple[np.ndarray, np.ndarray]:
    """Whole GPUs and the factor on the run time: "round-up" asks ceil(g) GPUs for the same time;
    "pool" asks ceil(g) GPUs for g/ceil(g) of the time, so GPU-hours are kept (four quarter-GPU
    pods of an hour become four 1-GPU jobs of 15 minutes: the work of one GPU-hour)."""
    g = np.array([j.gpus for j in jobs], dtype=float)
    whole = np.ceil(g - 1e-9)  # 2.0000000001 from a percent sum is 2 GPUs
    whole = np.maximum(whole, 1.0)
    factor = g / whole if policy == "pool" else np.ones_like(g)
    return whole, np.minimum(factor, 1.0)


def unique_ids(ids: list[str]) -> tuple[list[str], bool]:
    """Ids made unique and non-empty: the second ``x`` becomes ``x#2``; True if any id changed.
    Whitespace around an id is dropped (the trace reader strips it)."""
    seen: set[str] = set()
    out: list[str] = []
    changed = False
    for raw in ids:
        base = raw.strip() or "job"
        new, k = base, 1
        while new in seen:
            k += 1
            new = f"{base}#{k}"
        changed |= new != raw
        seen.add(new)
        out.append(new)
    return out, changed


def build_frame(jobs: list[Job], options: ImportOptions, report: Report) -> tuple[pd.DataFrame, float | None]:
    """The trace table of ``jobs`` and the epoch seconds of hour 0 (the first submit kept).

    Replayed duration: ``run_s`` hours (at least MIN_JOB_H, so a zero-second job is still a job);
    jobs with more GPUs or a longer time than costsim accepts are bad rows (file:line)."""
    jobs = _window(jobs, options, report)
    if options.fractional not in FRACTIONAL:
        raise ScenarioError("--fractional", [Problem((), f"must be one of {', '.join(FRACTIONAL)}")])
    if not jobs:
        return pd.DataFrame(columns=list(COLUMNS)), None
    jobs.sort(key=lambda j: (j.submit_s, j.line))
    first = jobs[0].submit_s
    whole, factor = _gpus(jobs, options.fractional)
    rows_ok = []
    for j, g in zip(jobs, whole, strict=True):
        span_h = (j.submit_s - first) / 3600 + j.run_s / 3600
        if g > MAX_GPUS:
            report.bad(j.line, "gpus", f"{g:g} GPUs is more than costsim accepts ({MAX_GPUS:,})")
        elif j.run_s / 3600 > MAX_HOURS:
            report.bad(j.line, "duration", f"{j.run_s / 3600:,.0f} h is longer than costsim accepts ({MAX_HOURS:,} h)")
        elif span_h > MAX_HOURS:
            report.bad(j.line, "submit", f"ends {span_h:,.0f} h after the first submit (at most {MAX_HOURS:,} h)")
        else:
            rows_ok.append(True)
            continue
        rows_ok.append(False)
    report.check()
    keep = np.array(rows_ok)
    jobs = [j for j, k in zip(jobs, keep, strict=True) if k]
    whole, factor = whole[keep], factor[keep]
    if not jobs:
        return pd.DataFrame(columns=list(COLUMNS)), None
    first = jobs[0].submit_s
    ids, changed = unique_ids([j.source_id for j in jobs])
    delay = [(j.start_s - j.submit_s) / 3600 if j.start_s is not None else np.nan for j in jobs]
    frame = pd.DataFrame({
        "submit_h": [(j.submit_s - first) / 3600 for j in jobs],
        "gpus": whole.astype(np.int64),
        "duration_h": np.maximum(np.array([j.run_s for j in jobs]) / 3600 * factor, MIN_JOB_H),
        "job_id": ids,
        "job_class": [j.job_class.strip() or "trace" for j in jobs],
        "priority": np.array([j.priority for j in jobs], dtype=np.int64),
        "status": [j.status for j in jobs],
        "observed_delay_h": np.maximum(np.array(delay, dtype=float), 0.0),
    })
    if changed:
        frame[SOURCE_ID] = [j.source_id for j in jobs]
    return frame, first


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """The trace CSV as costsim reads it (``%.10g`` keeps hours to well under a millisecond)."""
    frame.to_csv(path, index=False, float_format="%.10g")


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number from 1, text without the newline) of a UTF-8 file (a BOM dropped)."""
    with open(path, encoding="utf-8-sig", newline="") as f:
        for n, text in enumerate(f, start=1):
            yield n, text.rstrip("\r\n")


def iter_csv(path: Path, report: Report, required: Iterable[str], delimiter: str = ",",
             header: list[str] | None = None, quoting: bool = True) -> Iterator[tuple[int, dict[str, str]]]:
    """(line of the row's first character, {column: cell}) for each data row of a CSV file.

    The header (first line, names stripped; or ``header`` when the file has none) must hold every
    ``required`` column (ScenarioError at line 1 otherwise). A row with a different number of
    fields is a bad row; blank lines are skipped. Quoted cells may span lines (the row is named by
    the line it starts on) unless ``quoting`` is False (quotes are then plain characters)."""
    with open(path, encoding="utf-8-sig", newline="") as f:
        reader = csv.reader(f, delimiter=delimiter, quoting=csv.QUOTE_MINIMAL if quoting else csv.QUOTE_NONE)
        names = header
        first_data = 1
        if names is None:
            try:
                names = [n.strip() for n in next(reader)]
            except StopIteration:
                raise ScenarioError(report.source, [Problem((), "the file is empty (needs a header and rows)")]) from None
            first_data = reader.line_num + 1
        missing = [c for c in required if c not in names]
        if missing:
            raise ScenarioError(report.source, [Problem((), f"missing column(s) {', '.join(missing)}; "
                                                            f"the header has {', '.join(names)}", 1)])
        start = first_data
        for row in reader:
            line, start = start, reader.line_num + 1
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if len(row) != len(names):
                report.bad(line, "", f"has {len(row)} fields; the header has {len(names)}")
                continue
            yield line, dict(zip(names, row, strict=True))
