"""The columnar reader of ``sacct --parsable2`` files: the same jobs as :func:`costsim.traces.slurm.jobs`
(the row reader), read column by column with pyarrow, for files of millions of lines.

:func:`read_columns` returns the jobs as a :class:`~costsim.traces.table.JobColumns`, or None when
it is not sure of every row; the row reader then reads the file and names each bad row by
file:line. It is exact by construction rather than by imitation:

- cells are read as text (``pyarrow.csv``, ``|``, no quoting: as the row reader) and the file's
  line of each row is its index + 2 (a blank line is a row of empty cells here and is skipped by
  the row reader: its empty JobID sends the file to the row reader);
- the columns with few distinct values (State, AllocTRES/ReqTRES, Elapsed, Account, Partition,
  User) are parsed once per distinct value by the row reader's own functions (``parse_state``,
  ``parse_tres``, ``parse_elapsed``);
- timestamps as sacct prints them (``2024-03-01T08:00:00``, no zone) are parsed by pyarrow and
  refused as Python refuses them (``2024-02-30``, ``24:00:00``: bad rows); every other form
  (epoch seconds, a zone, ``Unknown``) goes through :func:`~costsim.traces.common.parse_time` once
  per distinct value. A zone's offset is taken once per local hour; an hour in which the offset
  changes (a DST switch) is parsed cell by cell, as the row reader does;
- heterogeneous job components (``77+0``: rare) go through the row reader's code.

Anything the row reader would record as a bad row (a cell that does not parse, End before Start, a
JobID that is not one) and anything outside what is described above (non-ASCII JobIDs, duplicate
column names, a field count that differs, text that is not UTF-8) returns None.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Callable
from datetime import timezone, tzinfo
from pathlib import Path

import numpy as np

from costsim.traces.common import BadCell, ImportOptions, Report, parse_time
from costsim.traces.slurm import (
    CLASS_COLUMNS,
    PENDING_RANGE,
    REQUIRED,
    fold_rows,
    parse_elapsed,
    parse_state,
    parse_tres,
    tres_types,
)
from costsim.traces.table import JobColumns, columns_of

# sacct's timestamps, years 1900-2999 (where Arrow's and Python's ISO parsers agree)
_ISO = r"^(19|2[0-9])[0-9]{2}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}$"
_USED = ("JobID", "Submit", "Start", "End", "Elapsed", "State", "AllocTRES", "ReqTRES", "Account", "Partition", "User")
# The row reader's JobID pattern for printable ASCII, around the spaces str.strip() removes.
_JOBID = (r"^ *(?P<base>[0-9]+)(?:_(?P<task>[0-9]+|\[[^\]]*\]))?(?:\+(?P<comp>[0-9]+))?"
          r"(?:\.(?P<step>[!-~]+))?(?P<trail> *)$")
_PRINTABLE = r"^[ -~]*$"  # ASCII without control characters: str.strip() removes only spaces


class _Unsure(Exception):
    """A row the columnar reader leaves to the row reader (a bad row, or a form it does not read)."""


def read_columns(path: Path, options: ImportOptions, report: Report) -> JobColumns | None:
    """The jobs of ``path`` in columns, the drops counted into ``report``; None (``report``
    untouched) when the row reader must read the file."""
    import pyarrow as pa

    scratch = Report(report.source, report.skip_bad)
    try:
        jobs = _read(path, options, scratch)
    except (_Unsure, pa.ArrowException, UnicodeDecodeError, csv.Error, StopIteration):
        return None
    if scratch.problems:  # a heterogeneous component that is a bad row
        return None
    report.dropped.update(scratch.dropped)
    return jobs


def _header(path: Path) -> list[str]:
    """The column names as the row reader reads them (first line, names stripped)."""
    with open(path, encoding="utf-8-sig", newline="") as f:
        return [n.strip() for n in next(csv.reader(f, delimiter="|", quoting=csv.QUOTE_NONE))]


def _table(path: Path, names: list[str]):
    """Every data row, every cell as text (pyarrow Table)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    return pacsv.read_csv(
        path, read_options=pacsv.ReadOptions(column_names=names, skip_rows=1, block_size=1 << 24),
        parse_options=pacsv.ParseOptions(delimiter="|", quote_char=False, escape_char=False,
                                         ignore_empty_lines=False),
        convert_options=pacsv.ConvertOptions(column_types={n: pa.string() for n in names},
                                             include_columns=[n for n in names if n in _USED],
                                             strings_can_be_null=False, quoted_strings_can_be_null=False))


def _per_value(column, fn: Callable[[str], object]) -> np.ndarray:
    """``fn`` of every cell of a pyarrow string array, called once per distinct value (object
    array); a BadCell is _Unsure."""
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(column)
    try:
        values = [fn(v) for v in encoded.dictionary.to_pylist()]
    except BadCell:
        raise _Unsure from None
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out[encoded.indices.to_numpy(zero_copy_only=False)]


def _floats(values: np.ndarray) -> np.ndarray:
    """Numbers or None (object array) as float64, None as NaN."""
    return np.array([np.nan if v is None else v for v in values], dtype=float) if len(values) else np.zeros(0)


def _times(column, tz: tzinfo) -> np.ndarray:
    """Epoch seconds (UTC) of a timestamp column (a pyarrow string array), NaN where missing;
    exactly parse_time's."""
    import pyarrow as pa
    import pyarrow.compute as pc

    fast = pc.match_substring_regex(column, _ISO).to_numpy(zero_copy_only=False)
    out = np.full(len(column), np.nan)
    if fast.any():
        text = column.filter(pa.array(fast))
        # Arrow's ISO parser refuses what fromisoformat refuses (2024-02-30, 24:00:00, :60); a
        # refused cell raises ArrowInvalid: a bad row, which the row reader then names.
        naive = text.cast(pa.timestamp("s")).cast(pa.int64()).to_numpy(zero_copy_only=False).astype(float)
        out[fast] = naive - _offsets(naive, tz, text)
    slow = ~fast
    if slow.any():  # epoch seconds, zones, Unknown: the row reader's parser, once per distinct value
        out[slow] = _floats(_per_value(column.filter(pa.array(slow)), lambda v: parse_time(v, tz)))
    return out


def _offsets(naive: np.ndarray, tz: tzinfo, text) -> np.ndarray:
    """Seconds east of UTC of local times ``naive`` (seconds since 1970 on the local clock) in
    ``tz``, as ``datetime.replace(tzinfo=tz)`` gives them (fold 0): one lookup per local hour; the
    hours in which the offset changes are parsed cell by cell from ``text``."""
    from datetime import UTC, datetime

    if isinstance(tz, timezone):  # UTC or a fixed offset
        return np.full(len(naive), tz.utcoffset(None).total_seconds())
    hours = np.floor(naive / 3600).astype(np.int64)
    unique, index = np.unique(hours, return_inverse=True)

    def offset(s: float) -> float:
        delta = datetime.fromtimestamp(s, UTC).replace(tzinfo=tz).utcoffset()
        assert delta is not None  # an aware time: tz gives every local time an offset
        return delta.total_seconds()

    first = np.array([offset(h * 3600.0) for h in unique])
    last = np.array([offset(h * 3600.0 + 3599) for h in unique])
    out = first[index]
    switch = (first != last)[index]
    if switch.any():
        cells = np.asarray(text.to_pylist(), dtype=object)[switch]
        out[switch] = naive[switch] - np.array([parse_time(c, tz) for c in cells])
    return out


def _read(path: Path, options: ImportOptions, report: Report) -> JobColumns:
    import pyarrow as pa
    import pyarrow.compute as pc

    names = _header(path)
    if len(set(names)) != len(names) or any(c not in names for c in REQUIRED) \
            or ("AllocTRES" not in names and "ReqTRES" not in names):
        raise _Unsure  # the row reader says what is missing
    t = _table(path, names)
    if t.num_rows == 0:
        raise _Unsure
    raw = t["JobID"].combine_chunks()
    if not pc.all(pc.match_substring_regex(raw, _PRINTABLE)).as_py():
        raise _Unsure
    parts = pc.extract_regex(raw, _JOBID)
    if parts.null_count:
        raise _Unsure  # not a SLURM job id: a bad row (or a blank line)
    # extract_regex gives "" for a group that did not take part; each group is non-empty when it does
    task, comp, step = (pc.struct_field(parts, f) for f in ("task", "comp", "step"))
    is_step = pc.not_equal(step, "").to_numpy(zero_copy_only=False)
    pending = pc.starts_with(task, "[").to_numpy(zero_copy_only=False) & ~is_step
    if pending.any():
        report.drop(PENDING_RANGE, int(pending.sum()))
    het = pc.not_equal(comp, "").to_numpy(zero_copy_only=False) & ~is_step & ~pending
    plain = ~is_step & ~pending & ~het
    lines = np.arange(t.num_rows, dtype=np.int64) + 2  # header on line 1; no quoting: one row per line
    jobs = _plain(t.filter(pa.array(plain)), lines[plain], options, report)
    if het.any():
        rows = zip(lines[het].tolist(), t.filter(pa.array(het)).to_pylist(), strict=True)
        jobs = JobColumns.concat([jobs, columns_of(list(fold_rows(rows, options, report)))])
    return jobs


def _plain(t, lines: np.ndarray, options: ImportOptions, report: Report) -> JobColumns:
    """The jobs of allocation rows that are neither steps, array ranges nor het components: the
    checks and drops of ``slurm._row`` in its order, on whole columns."""
    import pyarrow.compute as pc

    def text(name: str):  # a column as one array; empty cells where the file has no such column
        return t[name].combine_chunks() if name in t.column_names else _empty(t.num_rows)

    state = _per_value(text("State"), parse_state)
    status = np.array([s for s, _ in state], dtype=object) if len(state) else np.zeros(0, dtype=object)
    replayed = np.array([r for _, r in state], dtype=bool)
    submit, start, end = (_times(text(c), options.tz) for c in ("Submit", "Start", "End"))
    alloc, req = text("AllocTRES"), text("ReqTRES")
    use_alloc = _per_value(alloc, lambda v: bool(v.strip())).astype(bool)
    tres = _per_value(pc.if_else(use_alloc, alloc, req),
                      lambda v: parse_tres(v, options.gpu_type))
    # as slurm._row: with --gpu-type the GPUs kept are of that type only
    types = (np.full(t.num_rows, options.gpu_type.lower(), dtype=object) if options.gpu_type is not None
             else _per_value(pc.if_else(use_alloc, alloc, req), tres_types))
    gpus = np.array([g for g, _ in tres], dtype=float)
    why = np.array([w for _, w in tres], dtype=object)
    elapsed = _floats(_per_value(text("Elapsed"), parse_elapsed))
    has_start, has_end = ~np.isnan(start), ~np.isnan(end)
    if np.isnan(submit).any() or (has_start & has_end & (end < start)).any() or (has_start & (start < submit)).any():
        raise _Unsure  # bad rows: a missing Submit, End before Start, Start before Submit
    run = np.where(~np.isnan(elapsed), elapsed, np.where(has_start & has_end, end - start, np.nan))
    _drop(report, status[~replayed], "{} (not replayed)")
    never = replayed & ~has_start
    if never.any():
        report.drop("never started", int(never.sum()))
    ran = replayed & has_start
    if (ran & np.isnan(run)).any():
        raise _Unsure  # no Elapsed and no End: a bad row
    _drop(report, why[ran & (why != None)], "{}")  # noqa: E711 — elementwise on an object array
    keep = ran & (why == None)  # noqa: E711
    cls = np.full(t.num_rows, "trace", dtype=object)
    for name in reversed(CLASS_COLUMNS):  # the first non-empty of Account, Partition, User wins
        value = _per_value(text(name), str.strip)
        cls = np.where(value != "", value, cls)
    ids = pc.utf8_trim(text("JobID"), " ").filter(keep).to_numpy(zero_copy_only=False)
    n = int(keep.sum())
    return JobColumns(source_id=np.asarray(ids, dtype=object), submit_s=submit[keep], gpus=gpus[keep],
                      run_s=run[keep], status=status[keep], job_class=cls[keep], start_s=start[keep],
                      line=lines[keep], priority=np.zeros(n, dtype=np.int64), share=np.ones(n),
                      gpu_types=types[keep])


def _empty(n: int):
    """A column of ``n`` empty cells (a column the file does not have)."""
    import pyarrow as pa

    return pa.nulls(n, pa.string()).fill_null("")


def _drop(report: Report, reasons: np.ndarray, template: str) -> None:
    """Count the rows dropped, by reason (``template`` formatted with each)."""
    for reason, n in Counter(reasons.tolist()).items():
        report.drop(template.format(reason), n)


__all__ = ["read_columns"]
