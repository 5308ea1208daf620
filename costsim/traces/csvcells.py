"""Tables written as CSV that a spreadsheet opens without running anything in them.

A spreadsheet (Excel, LibreOffice, Google Sheets) reads a cell that starts with ``=``, ``+``,
``-`` or ``@`` as a formula, and one that starts with a tab or a carriage return may be read so
too; a trace's job id or class, a scenario's name or a swept value are user text, so a cell such
as ``=HYPERLINK("http://…")`` or ``@SUM(…)`` would run when the CSV is opened (CSV injection).
Every CSV costsim writes goes through :func:`write_csv` or :func:`csv_text`, which apply OWASP's
rule: a text cell starting with one of those characters is written with a leading ``'``, which a
spreadsheet shows as text and does not evaluate. Numbers are never touched (``-3.5`` in a numeric
column stays a number); only cells that are text (Python ``str``) in the table, and the column
names, are guarded.

A text cell holding a carriage return (a guarded one starts with ``'\r``) is only quoted by
Python's CSV writer when ``\r`` is in its line terminator, which is ``\n``: unquoted, every CSV
reader takes it for the end of the row. A table with such a cell is written with every text cell
quoted (``csv.QUOTE_NONNUMERIC``), which reads back the same.

The guard is part of the value written: reading the file back gives the text with its ``'``
(an imported trace whose job id was ``=1`` has the job id ``'=1``). Nothing strips it on
reading, so a file read and written again is guarded once, not twice: a guarded cell starts with
``'``, which needs no guard.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
GUARD = "'"


def guard_text(text: str) -> str:
    """One text cell as written: with a leading ``'`` when it starts like a formula."""
    return GUARD + text if text.startswith(FORMULA_START) else text


def _guard_values(values: pd.Series) -> pd.Series | None:
    """The column with its formula-like text cells guarded, or None when none is."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        cats = values.cat.categories
        if not any(isinstance(c, str) and c.startswith(FORMULA_START) for c in cats):
            return None
        return values.cat.rename_categories([guard_text(c) if isinstance(c, str) else c for c in cats])
    if values.dtype != object and not pd.api.types.is_string_dtype(values.dtype):
        return None  # numbers, booleans, times: never text
    # Vectorised: .str.startswith is NaN (here False) for a cell that is not a str (a number in a
    # mixed column stays a number).
    try:
        risky = values.str.startswith(FORMULA_START, na=False).to_numpy(dtype=bool)
    except AttributeError:  # no str in the column at all (pandas refuses .str): nothing to guard
        return None
    if not risky.any():
        return None
    out = values.astype(object).copy()
    where = np.flatnonzero(risky)
    out.iloc[where] = [GUARD + values.iloc[i] for i in where]
    return out


def guarded(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as it is to be written: every text cell and column name that starts with ``=``,
    ``+``, ``-``, ``@``, a tab or a carriage return prefixed with ``'`` (OWASP's rule); the frame
    itself (not a copy) when no cell needs it."""
    changed: dict[int, pd.Series] = {}  # by column position (names may repeat)
    for k, _name in enumerate(frame.columns):
        col = _guard_values(frame.iloc[:, k])
        if col is not None:
            changed[k] = col
    names = [guard_text(c) if isinstance(c, str) else c for c in frame.columns]
    if not changed and names == list(frame.columns):
        return frame
    out = frame.copy(deep=False)
    for k, col in changed.items():
        out.isetitem(k, col)
    out.columns = names
    return out


def _holds_cr(frame: pd.DataFrame) -> bool:
    """Whether a text cell or column name holds a carriage return."""
    if any(isinstance(c, str) and "\r" in c for c in frame.columns):
        return True
    for k in range(frame.shape[1]):
        values = frame.iloc[:, k]
        if isinstance(values.dtype, pd.CategoricalDtype):
            values = pd.Series(values.cat.categories)
        elif values.dtype != object and not pd.api.types.is_string_dtype(values.dtype):
            continue
        try:
            if values.str.contains("\r", regex=False, na=False).any():
                return True
        except AttributeError:  # no str in the column
            continue
    return False


def _to_csv(frame: pd.DataFrame, target, kwargs: dict):
    safe = guarded(frame)
    if _holds_cr(safe):
        kwargs = {**kwargs, "quoting": csv.QUOTE_NONNUMERIC}
    return safe.to_csv(target, index=False, **kwargs)


def write_csv(frame: pd.DataFrame, path: Path | str, **kwargs) -> None:
    """``frame.to_csv(path, index=False, **kwargs)`` with formula-like text cells guarded."""
    _to_csv(frame, path, kwargs)


def csv_text(frame: pd.DataFrame, **kwargs) -> str:
    """The CSV text of ``frame`` (no index), formula-like text cells guarded (a download)."""
    return _to_csv(frame, None, kwargs)
