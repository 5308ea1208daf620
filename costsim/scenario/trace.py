"""Reading a job trace CSV: ``submit_h, gpus, duration_h [, job_id, job_class, priority]``.

Every problem names the file, the CSV line (header is line 1) and the column.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from costsim.scenario.units import MAX_GPUS, MAX_HOURS, MAX_PRIORITY, MIN_JOB_H, show

from .errors import Problem, ScenarioError
from .limits import MAX_TRACE_BYTES_ENV, max_trace_bytes, too_large

REQUIRED = ("submit_h", "gpus", "duration_h")
OPTIONAL = ("job_id", "job_class", "priority")
MAX_REPORTED = 8  # problems listed per file; the count of the rest is given


@dataclass(frozen=True)
class TraceTable:
    """A validated trace, in file order. Times in hours."""

    submit_h: np.ndarray  # float64
    gpus: np.ndarray  # int64
    duration_h: np.ndarray  # float64, hours of work
    job_id: np.ndarray  # object (str)
    job_class: np.ndarray  # object (str)
    priority: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.submit_h)


def _bad_rows(mask: np.ndarray) -> np.ndarray:
    return np.flatnonzero(mask)


def _cell(text: str, limit: int = 40) -> str:
    """A cell as an error quotes it: at most ``limit`` characters, so a message stays one line."""
    return repr(text if len(text) <= limit else text[:limit] + "…")


def read_trace(path: Path | str) -> TraceTable:
    """Read and validate a trace file; raises ScenarioError naming each bad line and column."""
    path = Path(path)
    source = str(path)
    if not path.is_file():
        raise ScenarioError(source, [Problem((), "trace file not found")])
    limit = max_trace_bytes()
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ScenarioError(source, [Problem((), f"cannot read the file: {exc.strerror or exc}")]) from None
    if size > limit:
        raise ScenarioError(source, [too_large(size, limit, MAX_TRACE_BYTES_ENV, "the trace file")])
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except pd.errors.EmptyDataError:
        raise ScenarioError(source, [Problem((), "trace file is empty (needs a header and jobs)")]) from None
    except (pd.errors.ParserError, UnicodeDecodeError, OSError) as exc:
        raise ScenarioError(source, [Problem((), f"cannot parse the CSV: {exc}".splitlines()[0])]) from None

    cols = [c.strip() for c in df.columns]
    df.columns = cols
    problems: list[Problem] = []
    missing = [c for c in REQUIRED if c not in cols]
    unknown = [c for c in cols if c not in REQUIRED + OPTIONAL]
    if missing:
        problems.append(Problem((), f"missing column(s) {', '.join(missing)}; needs {', '.join(REQUIRED)}", 1))
    if unknown:
        problems.append(
            Problem((), f"unknown column(s) {', '.join(unknown)}; allowed: {', '.join(REQUIRED + OPTIONAL)}", 1)
        )
    if problems:
        raise ScenarioError(source, problems)
    if len(df) == 0:
        raise ScenarioError(source, [Problem((), "trace has no jobs", 2)])

    def numbers(col: str, integer: bool) -> np.ndarray:
        raw = df[col].str.strip()
        values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(values)
        if integer:
            bad |= np.isfinite(values) & (values != np.round(values))
        for i in _bad_rows(bad):
            kind = "a whole number" if integer else "a finite number"
            problems.append(Problem((col,), f"{_cell(raw.iloc[i])} is not {kind}", int(i) + 2))
        return values

    submit = numbers("submit_h", False)
    gpus = numbers("gpus", True)
    duration = numbers("duration_h", False)
    priority = numbers("priority", True) if "priority" in cols else np.zeros(len(df))
    # The scenario's physical bounds (costsim.scenario.units); beyond them a count would not fit an
    # int64 (gpus 1e20, priority 1e30) or a time would outlast any horizon.
    in_range = (
        ("submit_h", submit, submit < 0, submit > MAX_HOURS, f">= 0 and <= {show(MAX_HOURS)} h"),
        ("gpus", gpus, gpus < 1, gpus > MAX_GPUS, f">= 1 and <= {show(MAX_GPUS)}"),
        ("duration_h", duration, duration < MIN_JOB_H, duration > MAX_HOURS,
         f">= {MIN_JOB_H:g} h and <= {show(MAX_HOURS)} h"),
        ("priority", priority, priority < -MAX_PRIORITY, priority > MAX_PRIORITY,
         f"between {show(-MAX_PRIORITY)} and {show(MAX_PRIORITY)}"),
    )
    for col, values, low, high, rule in in_range:
        for i in _bad_rows((low | high) & np.isfinite(values)):  # non-finite cells are reported above
            problems.append(Problem((col,), f"must be {rule} (got {values[i]:g})", int(i) + 2))

    if "job_id" in cols:
        job_id = df["job_id"].str.strip().to_numpy(dtype=object)
        for i in _bad_rows(job_id == ""):
            problems.append(Problem(("job_id",), "is empty", int(i) + 2))
        dup = pd.Series(job_id).duplicated().to_numpy()
        for i in _bad_rows(dup & (job_id != "")):
            problems.append(Problem(("job_id",), f"{_cell(job_id[i])} appears more than once", int(i) + 2))
    else:
        job_id = np.array([f"trace-{i}" for i in range(len(df))], dtype=object)
    if "job_class" in cols:
        job_class = df["job_class"].str.strip().replace("", "trace").to_numpy(dtype=object)
    else:
        job_class = np.full(len(df), "trace", dtype=object)

    if problems:
        problems.sort(key=lambda p: (p.line or 0, str(p.loc)))
        shown = problems[:MAX_REPORTED]
        if len(problems) > MAX_REPORTED:
            shown.append(Problem((), f"... and {len(problems) - MAX_REPORTED} more problem(s) in this file"))
        raise ScenarioError(source, shown)

    return TraceTable(
        submit_h=submit.astype(np.float64),
        gpus=gpus.astype(np.int64),
        duration_h=duration.astype(np.float64),
        job_id=job_id,
        job_class=job_class,
        priority=priority.astype(np.int64),
    )
