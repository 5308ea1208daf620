"""Where a text file stops being readable: the line of its first byte that is not UTF-8, the
first CSV row with the wrong number of fields, and the CSV field-size bound.

These run only once a reader has failed (pandas' and Python's decoders report a position inside
the chunk they were decoding, pandas' tokenizer a record number, neither the file's line), so the
message can name ``file:line`` and say what to do.
"""

from __future__ import annotations

import codecs
import csv
from pathlib import Path

from costsim.scenario.errors import Problem
from costsim.scenario.limits import MAX_TRACE_BYTES_ENV, max_trace_bytes

CHUNK_BYTES = 1 << 20


def first_bad_utf8(path: Path) -> tuple[int, int, int] | None:
    """(line, column, byte) of the first byte of ``path`` that is not UTF-8 — line and column
    from 1, the column counted in bytes — or None when the whole file decodes. Read in chunks:
    memory stays bounded whatever the file's size."""
    line, line_start, offset, pending = 1, 0, 0, b""
    with open(path, "rb") as f:
        while True:
            block = f.read(CHUNK_BYTES)
            data, final = pending + block, not block
            try:
                _, used = codecs.utf_8_decode(data, "strict", final)
                bad = None
            except UnicodeDecodeError as exc:
                used, bad = exc.start, exc.start
            good = data[:used]
            newlines = good.count(b"\n")
            if newlines:
                line += newlines
                line_start = offset + good.rindex(b"\n") + 1
            if bad is not None:
                return line, offset + bad - line_start + 1, data[bad]
            offset += used
            pending = data[used:]
            if final:
                return None


def not_utf8(path: Path, reason: str = "") -> Problem:
    """The problem of a file that is not UTF-8 text, at the line and column of its first bad byte."""
    where = first_bad_utf8(path)
    if where is None:  # decoded now: the file changed while it was read
        return Problem((), f"is not UTF-8 text{f' ({reason})' if reason else ''}; save it as UTF-8")
    line, column, byte = where
    return Problem((), f"byte 0x{byte:02x} at column {column} is not UTF-8 text: save the file as UTF-8 "
                       "(in a spreadsheet: CSV UTF-8)", line)


def csv_field_limit() -> int:
    """Raise Python's CSV field-size limit (131,072 characters by default) to the trace file-size
    bound (``COSTSIM_MAX_TRACE_BYTES``): a field as long as a trace may be is read, a longer one
    is an error naming its line (``field_too_long``). Returns the limit."""
    limit = max_trace_bytes()
    csv.field_size_limit(limit)
    return limit


def field_too_long(line: int, limit: int) -> Problem:
    """The problem of a CSV field over ``csv_field_limit``."""
    return Problem((), f"a field is longer than {limit:,} characters, the bound on a trace file (set "
                       f"{MAX_TRACE_BYTES_ENV} to raise it; a field this long is usually an unclosed quote)", line)


def ragged_row(path: Path, skipinitialspace: bool = True) -> tuple[int, int, int] | None:
    """(line, fields, header fields) of the first data row of the CSV ``path`` whose number of
    fields differs from its header's (blank lines skipped; a quoted cell may span lines, the row
    is named by the line it starts on), or None when every row matches."""
    csv_field_limit()
    with open(path, encoding="utf-8-sig", newline="") as f:
        reader = csv.reader(f, skipinitialspace=skipinitialspace)
        try:
            header = next(reader, None)
            if header is None:
                return None
            start = reader.line_num + 1
            for row in reader:
                line, start = start, reader.line_num + 1
                if row and len(row) != len(header):
                    return line, len(row), len(header)
        except csv.Error:  # not even Python's CSV reader can read it: the caller says so as it can
            return None
    return None
