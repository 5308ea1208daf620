"""Reading a job trace CSV: ``submit_h, gpus, duration_h [, job_id, job_class, priority, gpu_type]``.

Every problem names the file, the CSV line (header is line 1) and the column.

Two readers, one result. A clean file — a plain header, numbers (spaces around them allowed), no
quote anywhere, no problem in any cell — is read once by pyarrow into typed columns
(``_read_columnar``: numbers straight into float64 buffers; a million jobs in a fraction of a
second and tens of MiB). Anything it cannot vouch for (a quote, a control character in a text cell,
an unusual header, -0, any bad cell, an encoding or parse error) is read again by the string reader
(``_read_strings``: every cell a Python string, pandas' CSV dialect), which defines the format and
words every problem. The columnar reader accepts only files on which both readers give the same
table; ``tests/scenario/test_trace_reader_scale.py`` compares them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import get_args

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from costsim.scenario.bounds import MAX_GPUS, MAX_HOURS, MAX_PRIORITY, MIN_JOB_H, GPUType, show
from costsim.scenario.errors import Problem, ScenarioError
from costsim.scenario.filekind import input_file_problem
from costsim.scenario.limits import MAX_TRACE_BYTES_ENV, max_trace_bytes, too_large
from costsim.scenario.textfile import not_utf8, ragged_row

REQUIRED = ("submit_h", "gpus", "duration_h")
OPTIONAL = ("job_id", "job_class", "priority", "gpu_type")
# Written by `costsim import-trace` beside the jobs (the source's outcome, its queueing delay, the
# original id when the job id had to change); read by neither reader, so any text is accepted.
IGNORED = ("status", "observed_delay_h", "source_id")
MAX_REPORTED = 8  # problems listed per file; the count of the rest is given
TEXT = ("job_id", "job_class", "gpu_type")  # the only string columns
# A job's gpu_type cell as a code into the catalog's GPU types (the types a class or node group may
# name): one byte a job, and no memory at all for a trace without the column (one code seen n times).
GPU_TYPES: tuple[str, ...] = get_args(GPUType)
ANY_GPU = -1  # an empty cell, or no gpu_type column: the job runs on any GPU type
UNKNOWN_GPU = -2  # while reading: a cell naming no catalog GPU type (an error, never in a table)
HEADER_BYTES = 1 << 16  # a header longer than this goes to the string reader
# What Python's str.strip() strips (the string reader's rule: every character whose isspace() is
# true), for pyarrow's trim; tests/scenario/test_trace_reader_scale.py checks it against all of Unicode.
WHITESPACE = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
              "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")


@dataclass(frozen=True)
class TraceTable:
    """A validated trace, in file order. Times in hours."""

    submit_h: np.ndarray  # float64
    gpus: np.ndarray  # int64
    duration_h: np.ndarray  # float64, hours of work
    job_id: np.ndarray  # object (str)
    job_class: np.ndarray  # object (str)
    priority: np.ndarray  # int64
    gpu_type: np.ndarray  # int8: index into GPU_TYPES of the type the job asks for; ANY_GPU: any

    def __len__(self) -> int:
        return len(self.submit_h)

    def gpu_type_names(self) -> list[str | None]:
        """The GPU type each job asks for (None: any). One Python list item per job: for messages
        and small tables; code on many jobs reads the ``gpu_type`` codes."""
        return [None if c == ANY_GPU else GPU_TYPES[c] for c in self.gpu_type.tolist()]


def any_gpu(n: int) -> np.ndarray:
    """The ``gpu_type`` codes of ``n`` jobs asking for any GPU type: one int8 seen ``n`` times
    (a read-only view, no memory per job)."""
    return np.broadcast_to(np.int8(ANY_GPU), (n,))


def gpu_type_code(name: str | None) -> int:
    """The ``gpu_type`` code of catalog GPU type ``name`` (None: ANY_GPU); ValueError for another name."""
    return ANY_GPU if name is None else GPU_TYPES.index(name)


def _bad_rows(mask: np.ndarray) -> np.ndarray:
    return np.flatnonzero(mask)


def _cell(text: str, limit: int = 40) -> str:
    """A cell as an error quotes it: at most ``limit`` characters, so a message stays one line."""
    return repr(text if len(text) <= limit else text[:limit] + "…")


def _ranges(submit: np.ndarray, gpus: np.ndarray, duration: np.ndarray, priority: np.ndarray):
    """Per numeric column: (name, values, below its range, above it, the rule in words). Both
    readers apply these; non-finite values are neither below nor above."""
    return (
        ("submit_h", submit, submit < 0, submit > MAX_HOURS, f">= 0 and <= {show(MAX_HOURS)} h"),
        ("gpus", gpus, gpus < 1, gpus > MAX_GPUS, f">= 1 and <= {show(MAX_GPUS)}"),
        ("duration_h", duration, duration < MIN_JOB_H, duration > MAX_HOURS,
         f">= {MIN_JOB_H:g} h and <= {show(MAX_HOURS)} h"),
        ("priority", priority, priority < -MAX_PRIORITY, priority > MAX_PRIORITY,
         f"between {show(-MAX_PRIORITY)} and {show(MAX_PRIORITY)}"),
    )


def read_trace(path: Path | str) -> TraceTable:
    """Read and validate a trace file; raises ScenarioError naming each bad line and column.

    The file is read once when it is clean (``_read_columnar``), twice at most otherwise. The last
    ``CACHED_TRACES`` tables read are kept, keyed by the file's identity, size and modification and
    change times: checking a scenario, checking each variant of a sweep over it, and then running it
    (or a sweep worker's next task) read the file once between them. An edited file is read again.
    The arrays of the table returned are read-only, as they may be shared."""
    path = Path(path)
    source = str(path)
    problem = input_file_problem(path)  # a stat only: a FIFO is never opened
    if problem is not None:
        raise ScenarioError(source, [Problem((), "trace file not found" if problem == "file not found" else problem)])
    limit = max_trace_bytes()
    try:
        st = path.stat()
    except OSError as exc:
        raise ScenarioError(source, [Problem((), f"cannot read the file: {exc.strerror or exc}")]) from None
    if st.st_size > limit:
        raise ScenarioError(source, [too_large(st.st_size, limit, MAX_TRACE_BYTES_ENV, "the trace file")])
    return _read_once(path, source, (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))


CACHED_TRACES = 2  # tables kept (a sweep over two traces reads each once); a failed read is not kept


@lru_cache(maxsize=CACHED_TRACES)
def _read_once(path: Path, source: str, identity: tuple[int, int, int, int, int]) -> TraceTable:
    """The table of ``path`` as it is at ``identity`` (device, inode, size, mtime and ctime in ns:
    a tool that restores the mtime after an edit, as ``cp -p`` and ``rsync -t`` do, still changes
    the ctime, which no user can set)."""
    table = _read_columnar(path)
    table = table if table is not None else _read_strings(path, source)
    for f in fields(table):
        getattr(table, f.name).setflags(write=False)
    return table


def _read_strings(path: Path, source: str) -> TraceTable:
    """The reference reader: every cell read as a string (pandas), then checked; words every problem."""
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except pd.errors.EmptyDataError:
        raise ScenarioError(source, [Problem((), "trace file is empty (needs a header and jobs)")]) from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(source, [not_utf8(path, exc.reason)]) from None
    except pd.errors.ParserError as exc:
        raise ScenarioError(source, [_parse_problem(path, exc)]) from None
    except OSError as exc:
        raise ScenarioError(source, [Problem((), f"cannot read the file: {exc.strerror or exc}")]) from None
    if not isinstance(df.index, pd.RangeIndex):
        # Every row one field longer than the header: pandas would silently take the first column
        # as an index and shift the others into the wrong columns.
        raise ScenarioError(source, [Problem((), "the rows have more fields than the header has columns", 2)])

    cols = [c.strip() for c in df.columns]
    df.columns = cols
    problems: list[Problem] = []
    missing = [c for c in REQUIRED if c not in cols]
    unknown = [c for c in cols if c not in REQUIRED + OPTIONAL + IGNORED]
    if missing:
        problems.append(Problem((), f"missing column(s) {', '.join(missing)}; needs {', '.join(REQUIRED)}", 1))
    if unknown:
        problems.append(
            Problem((), f"unknown column(s) {', '.join(unknown)}; allowed: {', '.join(REQUIRED + OPTIONAL + IGNORED)}", 1)
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
    # The scenario's physical bounds (costsim.scenario.bounds); beyond them a count would not fit an
    # int64 (gpus 1e20, priority 1e30) or a time would outlast any horizon.
    for col, values, low, high, rule in _ranges(submit, gpus, duration, priority):
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
    if "gpu_type" in cols:
        # Few distinct cells: each looked up once, its jobs given its code.
        cells, uniques = pd.factorize(df["gpu_type"].str.strip())
        codes = np.array([_type_code(u) for u in uniques] or [ANY_GPU], dtype=np.int16)
        for i in _bad_rows(codes[cells] == UNKNOWN_GPU):
            problems.append(Problem(("gpu_type",), f"{_cell(uniques[cells[i]])} is not a catalog GPU type "
                                                   f"({', '.join(GPU_TYPES)}); leave it empty for any", int(i) + 2))
        gpu_type = np.where(codes == UNKNOWN_GPU, ANY_GPU, codes).astype(np.int8)[cells]
    else:
        gpu_type = any_gpu(len(df))

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
        gpu_type=gpu_type,
    )


def _type_code(cell: str) -> int:
    """The ``gpu_type`` code of a stripped cell: ANY_GPU when empty, UNKNOWN_GPU for a name the
    catalog lacks (exact spelling, as a class's or node group's gpu_type)."""
    if cell == "":
        return ANY_GPU
    return GPU_TYPES.index(cell) if cell in GPU_TYPES else UNKNOWN_GPU


def _parse_problem(path: Path, exc: Exception) -> Problem:
    """What pandas' tokenizer refused, at the file's line: a row with more fields than the header
    (pandas names a record, not a line), else pandas' own first line of words."""
    ragged = ragged_row(path)
    if ragged is not None:
        line, fields, width = ragged
        return Problem((), f"has {fields} fields; the header has {width} columns (a cell holding a comma must be "
                           'quoted: "a,b")', line)
    return Problem((), f"cannot parse the CSV: {exc}".splitlines()[0])


def _header(path: Path) -> list[str] | None:
    """The column names of a plain header line (no quotes, no duplicates, only known names, the
    required ones present), stripped as the string reader strips them; None for any other header."""
    try:
        with open(path, "rb") as f:
            head = f.read(HEADER_BYTES)
    except OSError:
        return None
    end = head.find(b"\n")
    if end < 0:
        return None
    line = head[:end].removesuffix(b"\r")
    if b'"' in line or b"\r" in line:
        return None
    try:
        names = [name.strip() for name in line.decode("utf-8-sig").split(",")]  # pandas drops a BOM too
    except UnicodeDecodeError:
        return None
    allowed = REQUIRED + OPTIONAL + IGNORED
    if len(set(names)) != len(names) or any(n not in allowed for n in names) or any(n not in names for n in REQUIRED):
        return None
    return names


def _arrow_table(path: Path, names: list[str], typed: bool) -> pa.Table | None:
    """The data rows with numbers as float64 (``typed``) or every cell as a string; None if pyarrow
    refuses the file (a cell that is not a plain number, a ragged row, bad UTF-8, ...).

    Quotes are read as plain characters: the two CSV dialects differ on quotes (after a space, left
    open at the end of the file, ...), so a file with any quote reaches the string reader — a quote
    then shows in a cell (``_texts``), fails a number, or splits a quoted comma into a ragged row."""
    types = {n: pa.string() if n in TEXT + IGNORED or not typed else pa.float64() for n in names}
    try:
        return pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(column_names=names, skip_rows=1),
            parse_options=pacsv.ParseOptions(quote_char=False),
            convert_options=pacsv.ConvertOptions(column_types=types, null_values=[], strings_can_be_null=False,
                                                 quoted_strings_can_be_null=False),
        )
    except (pa.ArrowException, OSError):
        return None


def _numbers(column: pa.ChunkedArray) -> np.ndarray | None:
    """A numeric column as float64: numbers as read, or strings trimmed as the string reader trims
    them and converted; None if a cell is not a plain number."""
    if pa.types.is_floating(column.type):
        return column.to_numpy()
    try:
        return pc.cast(pc.utf8_trim(column, characters=WHITESPACE), pa.float64()).to_numpy()
    except pa.ArrowException:
        return None


def _texts(column: pa.ChunkedArray) -> pa.ChunkedArray | None:
    """A string column trimmed as the string reader trims it; None if a cell holds a quote or a
    control character other than a tab (where the two CSV dialects could read it differently)."""
    if pc.any(pc.match_substring_regex(column, '["\\x00-\\x08\\x0a-\\x1f\\x7f]')).as_py():
        return None
    return pc.utf8_trim(column, characters=WHITESPACE)


def _read_columnar(path: Path) -> TraceTable | None:
    """A clean trace read by pyarrow into typed columns, exactly as ``_read_strings`` reads it; None
    when the file has anything the string reader must look at (including every kind of problem)."""
    names = _header(path)
    if names is None:
        return None
    table = _arrow_table(path, names, typed=True) or _arrow_table(path, names, typed=False)
    if table is None or table.num_rows == 0 or any(c.null_count for c in table.columns):
        return None
    n = table.num_rows
    cols: dict[str, np.ndarray] = {}
    for name in ("submit_h", "gpus", "duration_h", "priority"):
        values = _numbers(table[name]) if name in names else np.zeros(n)
        # Not finite, -0 (the string reader's integer parse gives +0) or not whole: the string reader decides.
        if values is None or not np.isfinite(values).all() or np.signbit(values[values == 0]).any():
            return None
        if name in ("gpus", "priority") and (values != np.round(values)).any():
            return None
        cols[name] = values
    if any((low | high).any() for _, _, low, high, _ in _ranges(cols["submit_h"], cols["gpus"],
                                                               cols["duration_h"], cols["priority"])):
        return None
    texts = {name: _texts(table[name]) for name in TEXT if name in names}
    # An ignored column with a quote or a control character: the string reader decides the rows.
    if any(t is None for t in texts.values()) or any(_texts(table[n]) is None for n in IGNORED if n in names):
        return None
    del table
    if "job_id" in texts:
        ids = texts.pop("job_id")
        assert ids is not None  # a column with a quote or control character returned above
        if pc.any(pc.equal(ids, "")).as_py() or pc.count_distinct(ids).as_py() != n:
            return None
        job_id = ids.to_numpy(zero_copy_only=False)
        del ids
    else:
        job_id = np.array([f"trace-{i}" for i in range(n)], dtype=object)
    if "job_class" in texts:
        # Few distinct classes: one Python string each, shared by their jobs.
        column = texts.pop("job_class")
        assert column is not None  # as job_id
        coded = pc.dictionary_encode(column.combine_chunks())
        del column
        classes = np.array(["trace" if c == "" else c for c in coded.dictionary.to_pylist()], dtype=object)
        job_class = classes[coded.indices.to_numpy(zero_copy_only=False)]
    else:
        job_class = np.full(n, "trace", dtype=object)
    if "gpu_type" in texts:
        column = texts.pop("gpu_type")
        assert column is not None  # as job_id
        coded = pc.dictionary_encode(column.combine_chunks())
        del column
        codes = np.array([_type_code(c) for c in coded.dictionary.to_pylist()] or [ANY_GPU], dtype=np.int16)
        if (codes == UNKNOWN_GPU).any():
            return None  # a cell naming no catalog type: the string reader words it
        gpu_type = codes.astype(np.int8)[coded.indices.to_numpy(zero_copy_only=False)]
    else:
        gpu_type = any_gpu(n)
    pa.default_memory_pool().release_unused()  # hand pyarrow's read buffers back before the run
    return TraceTable(
        submit_h=cols["submit_h"].astype(np.float64),
        gpus=cols["gpus"].astype(np.int64),
        duration_h=cols["duration_h"].astype(np.float64),
        job_id=job_id,
        job_class=job_class,
        priority=cols["priority"].astype(np.int64),
        gpu_type=gpu_type,
    )
