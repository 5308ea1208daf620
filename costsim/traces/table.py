"""From a format's jobs to costsim's trace table: the window, whole GPUs, the limits, hour 0.

A format's reader returns its jobs either as :class:`~costsim.traces.common.Job` objects (the row
readers) or, already in columns, as a :class:`JobColumns` (the columnar SLURM reader); both become
the same :class:`JobColumns` and go through the one :func:`build_frame`, so the two paths cannot
build different tables from the same jobs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from costsim.scenario.bounds import MAX_GPUS, MAX_HOURS, MIN_JOB_H
from costsim.scenario.errors import Problem, ScenarioError
from costsim.scenario.textfile import not_utf8
from costsim.traces.common import (
    COLUMNS,
    FRACTIONAL,
    SOURCE_ID,
    TYPE_SEP,
    ImportFacts,
    ImportOptions,
    ImportResult,
    Job,
    Report,
)


@dataclass
class JobColumns:
    """Jobs as columns (one entry per job). Times in epoch seconds (UTC); ``start_s`` NaN when the
    start is unknown. The fields are those of :class:`~costsim.traces.common.Job`."""

    source_id: np.ndarray  # object (str)
    submit_s: np.ndarray  # float64
    gpus: np.ndarray  # float64 (may be fractional)
    run_s: np.ndarray  # float64
    status: np.ndarray  # object (str)
    job_class: np.ndarray  # object (str)
    start_s: np.ndarray  # float64, NaN: unknown
    line: np.ndarray  # int64
    priority: np.ndarray  # int64
    share: np.ndarray  # float64: the part of each GPU used (1: whole GPUs)
    gpu_types: np.ndarray  # object (str): GPU models joined by TYPE_SEP, "" when not recorded

    def __len__(self) -> int:
        return len(self.submit_s)

    def take(self, index: np.ndarray) -> JobColumns:
        """The jobs at ``index`` (an integer or boolean array), in that order."""
        return JobColumns(**{k: v[index] for k, v in vars(self).items()})

    @staticmethod
    def concat(parts: list[JobColumns]) -> JobColumns:
        """The jobs of every part, one after another."""
        return JobColumns(**{k: np.concatenate([vars(p)[k] for p in parts]) for k in vars(parts[0])})


def columns_of(jobs: list[Job]) -> JobColumns:
    """The jobs of a row reader as columns."""
    def obj(values: list) -> np.ndarray:
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out

    return JobColumns(
        source_id=obj([j.source_id for j in jobs]),
        submit_s=np.array([j.submit_s for j in jobs], dtype=float),
        gpus=np.array([j.gpus for j in jobs], dtype=float),
        run_s=np.array([j.run_s for j in jobs], dtype=float),
        status=obj([j.status for j in jobs]),
        job_class=obj([j.job_class for j in jobs]),
        start_s=np.array([np.nan if j.start_s is None else j.start_s for j in jobs], dtype=float),
        line=np.array([j.line for j in jobs], dtype=np.int64),
        priority=np.array([j.priority for j in jobs], dtype=np.int64),
        share=np.array([j.share for j in jobs], dtype=float),
        gpu_types=obj([j.gpu_types for j in jobs]))


Reader = Callable[[Path, ImportOptions, Report], "Iterable[Job] | JobColumns"]


def import_jobs(jobs: Reader, path: Path | str, options: ImportOptions) -> ImportResult:
    """Run a format's reader on ``path`` and build the trace; ScenarioError naming each bad row
    (file:line) unless ``options.skip_bad``, and when no job is left to replay."""
    path = Path(path)
    source = str(path)
    if not path.is_file():
        raise ScenarioError(source, [Problem((), "file not found")])
    report = Report(source, options.skip_bad)
    try:
        found = jobs(path, options, report)
        found = found if isinstance(found, JobColumns) else columns_of(list(found))
    except UnicodeDecodeError as exc:  # its position is within a decoded chunk: find the line
        raise ScenarioError(source, [not_utf8(path, exc.reason)]) from None
    except OSError as exc:
        raise ScenarioError(source, [Problem((), f"cannot read the file: {exc.strerror or exc}")]) from None
    # One pass: the rows' own problems and build_frame's (too many GPUs, too long) are reported
    # together, in line order, by build_frame's check.
    frame, first, facts = build_table(found, options, report)
    report.check()
    if frame.empty:
        why = ", ".join(f"{n} {r}" for r, n in sorted(report.dropped.items())) or "the file has no jobs"
        raise ScenarioError(source, [Problem((), f"no job to replay ({why})")])
    problems = sorted(report.problems, key=lambda p: (p.line is None, p.line or 0))
    from costsim.traces.shape import record_shape

    dropped = dict(report.dropped)
    shape = record_shape(frame, dropped, facts.used_gpu_hours, facts.rounded_jobs)
    return ImportResult(frame, report.skipped, dropped, problems, first, facts, shape)


def type_counts(gpu_types: np.ndarray) -> tuple[dict[str, int], int]:
    """(GPU model -> jobs naming it, jobs naming none) of per-job ``gpu_types`` cells (models
    joined by TYPE_SEP). Models are matched case-insensitively, as ``--gpu-type`` matches them,
    and shown as first spelled; a job naming two models counts for both."""
    codes, cells = pd.factorize(pd.Series(gpu_types, dtype=object).fillna(""))
    per_cell = np.bincount(codes[codes >= 0], minlength=len(cells))
    counts: dict[str, int] = {}
    spelling: dict[str, str] = {}
    untyped = 0
    for cell, n in zip(cells, per_cell, strict=True):
        models = {m.strip().lower(): m.strip() for m in str(cell).split(TYPE_SEP) if m.strip()}
        if not models:
            untyped += int(n)
        for key, name in models.items():
            spelling.setdefault(key, name)
            counts[spelling[key]] = counts.get(spelling[key], 0) + int(n)
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0].lower()))), untyped


def _gpus(gpus: np.ndarray, share: np.ndarray, policy: str) -> tuple[np.ndarray, np.ndarray]:
    """Whole GPUs and the factor on the run time of jobs of ``gpus`` GPUs each used for ``share``
    of it: "round-up" asks ceil(g) GPUs for the same time; "pool" asks ceil(g) GPUs for
    share · g/ceil(g) of the time, so GPU-hours are kept (four quarter-GPU pods of an hour become
    four 1-GPU jobs of 15 minutes: the work of one GPU-hour; a pod of 2 GPUs at 500 milli each is
    2 GPUs for half its time)."""
    g = np.asarray(gpus, dtype=float)
    whole = np.ceil(g - 1e-9)  # 2.0000000001 from a percent sum is 2 GPUs
    whole = np.maximum(whole, 1.0)
    factor = g / whole * np.asarray(share, dtype=float) if policy == "pool" else np.ones_like(g)
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


def _unique_ids_fast(ids: np.ndarray) -> tuple[np.ndarray, bool]:
    """:func:`unique_ids` without the loop when nothing is to change (the usual case): unique, and
    each id printable ASCII with no space at either end (so ``str.strip`` keeps it)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if len(ids) and pd.Series(ids, dtype=object).is_unique:
        try:
            tidy = pc.all(pc.match_substring_regex(pa.array(ids, type=pa.string()), r"^[!-~]([ -~]*[!-~])?$")).as_py()
        except (pa.ArrowException, TypeError):
            tidy = False
        if tidy:
            return ids, False
    out, changed = unique_ids(list(ids))
    return np.array(out, dtype=object), changed


def _classes(job_class: np.ndarray) -> np.ndarray:
    """Each class stripped, ``trace`` when empty (once per distinct class)."""
    codes, names = pd.factorize(pd.Series(job_class, dtype=object))
    clean = np.array([str(n).strip() or "trace" for n in names] + ["trace"], dtype=object)
    return clean[codes]  # code -1 (a missing value) takes the last: "trace"


def _limits(jobs: JobColumns, whole: np.ndarray, report: Report) -> np.ndarray:
    """The jobs within costsim's limits (GPUs, duration, end after hour 0); the others are bad rows."""
    first = jobs.submit_s.min()
    span_h = (jobs.submit_s - first) / 3600 + jobs.run_s / 3600
    too_many = whole > MAX_GPUS
    too_long = ~too_many & (jobs.run_s / 3600 > MAX_HOURS)
    too_late = ~too_many & ~too_long & (span_h > MAX_HOURS)
    for k in np.flatnonzero(too_many | too_long | too_late):  # few: a loop for the messages
        line = int(jobs.line[k])
        if too_many[k]:
            report.bad(line, "gpus", f"{whole[k]:g} GPUs is more than costsim accepts ({MAX_GPUS:,})")
        elif too_long[k]:
            report.bad(line, "duration", f"{jobs.run_s[k] / 3600:,.0f} h is longer than costsim accepts "
                                         f"({MAX_HOURS:,} h)")
        else:
            report.bad(line, "submit", f"ends {span_h[k]:,.0f} h after the first submit (at most {MAX_HOURS:,} h)")
    return ~(too_many | too_long | too_late)


def build_frame(jobs: JobColumns | list[Job], options: ImportOptions,
                report: Report) -> tuple[pd.DataFrame, float | None]:
    """The trace table of ``jobs`` and the epoch seconds of hour 0 (``build_table`` without its facts)."""
    frame, first, _ = build_table(jobs, options, report)
    return frame, first


def build_table(jobs: JobColumns | list[Job], options: ImportOptions,
                report: Report) -> tuple[pd.DataFrame, float | None, ImportFacts]:
    """The trace table of ``jobs``, the epoch seconds of hour 0 (the first submit kept) and the
    facts of the GPU handling (:class:`~costsim.traces.common.ImportFacts`) over the jobs kept.

    Jobs submitted outside [since, until) are dropped; rows are sorted by submit time, ties in file
    order. Replayed duration: ``run_s`` hours (at least MIN_JOB_H, so a zero-second job is still a
    job); jobs with more GPUs or a longer time than costsim accepts are bad rows (file:line)."""
    if not isinstance(jobs, JobColumns):
        jobs = columns_of(list(jobs))
    inside = np.ones(len(jobs), dtype=bool)
    if options.since_s is not None:
        inside &= jobs.submit_s >= options.since_s
    if options.until_s is not None:
        inside &= jobs.submit_s < options.until_s
    if not inside.all():
        report.drop("outside --since/--until", int((~inside).sum()))
        jobs = jobs.take(inside)
    if options.fractional not in FRACTIONAL:
        raise ScenarioError("--fractional", [Problem((), f"must be one of {', '.join(FRACTIONAL)}")])
    if not len(jobs):
        return pd.DataFrame(columns=list(COLUMNS)), None, ImportFacts(0.0, 0)
    jobs = jobs.take(np.lexsort((jobs.line, jobs.submit_s)))  # by submit, ties in file order
    whole, factor = _gpus(jobs.gpus, jobs.share, options.fractional)
    keep = _limits(jobs, whole, report)
    report.check()
    jobs, whole, factor = jobs.take(keep), whole[keep], factor[keep]
    if not len(jobs):
        return pd.DataFrame(columns=list(COLUMNS)), None, ImportFacts(0.0, 0)
    first = float(jobs.submit_s[0])
    ids, changed = _unique_ids_fast(jobs.source_id)
    frame = pd.DataFrame({
        "submit_h": (jobs.submit_s - first) / 3600,
        "gpus": whole.astype(np.int64),
        "duration_h": np.maximum(jobs.run_s / 3600 * factor, MIN_JOB_H),
        "job_id": ids,
        "job_class": _classes(jobs.job_class),
        "priority": jobs.priority.astype(np.int64),
        "status": jobs.status,
        "observed_delay_h": np.maximum((jobs.start_s - jobs.submit_s) / 3600, 0.0),
    })
    if changed:
        frame[SOURCE_ID] = jobs.source_id
    used = float(np.sum(jobs.gpus * jobs.share * jobs.run_s) / 3600)
    # A job asks for part of a GPU when its count is not whole or it uses a share of each GPU.
    rounded = int(np.count_nonzero((np.abs(jobs.gpus - whole) > 1e-9) | (jobs.share < 1.0)))
    types, untyped = type_counts(jobs.gpu_types)
    return frame, first, ImportFacts(used, rounded, types, untyped)
