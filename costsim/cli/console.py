"""The CLI's stdout: printed in ``COLUMNS`` columns when set, else the terminal's width, or 80
when piped; tables that must not be cropped print as wide as they need (``--wide``, a sweep's
means when piped with no ``COLUMNS``) or are laid out to fit the width asked for.

Every console here is a :class:`SafeConsole`: control characters in what it prints (a scenario
name, a trace's class, a path) are shown escaped (``\\x1b``), so user text can neither send the
terminal an escape sequence (colours, cursor moves, a changed window title, a hyperlink) nor hide
or reorder what is printed around it (NUL, backspace, bidirectional overrides). Where user text
is put into a table or a title, :func:`visible` escapes it first, so the table is laid out for the
text as shown.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console, ConsoleDimensions
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from costsim.errors import CostsimError
from costsim.runs import api
from costsim.scenario import Scenario

# C0 controls but tab and newline, DEL, C1 controls (0x9b is a one-byte CSI on some terminals), and
# the bidirectional embeddings, overrides and isolates (they reorder the text shown around them).
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with each control character (``CONTROL``) written as its Python escape: ESC as
    ``\\x1b``, NUL as ``\\x00``, U+202E as ``\\u202e``. Tab and newline are kept. Idempotent: the
    result holds no control character."""
    return CONTROL.sub(_escape, str(text))


class SafeConsole(Console):
    """A rich Console that prints no control character it was not told to: every segment of text
    goes through :func:`visible`; rich's own control segments (cursor moves of a progress bar)
    and styles (added when the segments are written) are left alone."""

    def render(self, renderable, options=None):
        for segment in super().render(renderable, options):
            if segment.control is None and CONTROL.search(segment.text):
                yield Segment(visible(segment.text), segment.style)
            else:
                yield segment


PIPED_WIDTH = 80  # columns of output piped with no COLUMNS: what a terminal, a log or an e-mail shows
WIDE_LIMIT = 1000  # --wide: tables print as wide as they need, up to this


def stdout_width(environ, is_tty: bool) -> int | None:
    """Columns to print in: ``COLUMNS`` when set; else the terminal's (None: rich measures it) or,
    when piped, ``PIPED_WIDTH`` (not the width of whatever terminal stderr happens to be)."""
    columns = environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return None if is_tty else PIPED_WIDTH


class _Stdout(SafeConsole):
    """stdout, its width decided when printing: ``COLUMNS`` and the stream may change after import
    (a test runner swaps both), and rich alone would read COLUMNS once and measure stderr's
    terminal when stdout is piped."""

    @property
    def size(self) -> ConsoleDimensions:
        measured = super().size
        isatty = getattr(self.file, "isatty", None)
        width = stdout_width(os.environ, bool(isatty and isatty()))
        return measured if width is None else ConsoleDimensions(width, measured.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        """A fixed (width, height) in characters, as on any rich Console (the getter above still
        lets ``COLUMNS`` or a pipe decide the width)."""
        self.width, self.height = new_size


out_console = _Stdout()


def print_wide(table: Table) -> None:
    """Print ``table`` on stdout as wide as it needs to be (at least the usual width): rich never
    prints wider than its console, so this uses a console of the table's own width on that stream."""
    needed = SafeConsole(file=out_console.file, width=WIDE_LIMIT).measure(table).maximum
    SafeConsole(file=out_console.file, width=max(out_console.width, needed)).print(table)


def data_table_width() -> int | None:
    """The columns a table that must stay readable (a sweep's means ± intervals) is laid out for:
    ``COLUMNS`` when set, else the terminal's; None when piped with no ``COLUMNS`` (printed whole,
    ``print_wide``: nobody asked for a width, and a log or a file has room)."""
    isatty = getattr(out_console.file, "isatty", None)
    tty = bool(isatty and isatty())
    width = stdout_width(os.environ, tty)
    if tty and width is None:
        return out_console.width
    return width if tty or os.environ.get("COLUMNS", "").isdigit() else None


def print_data_table(table: Table) -> None:
    """Print a table laid out for ``data_table_width()``: in that width (the table was built to
    fit it, by stacking or leaving out columns rather than cropping numbers), or whole when it is
    None."""
    width = data_table_width()
    if width is None:
        print_wide(table)
    else:
        SafeConsole(file=out_console.file, width=width).print(table)


err_console = SafeConsole(stderr=True)


def fail(err: CostsimError) -> NoReturn:
    """Print each problem of ``err`` as ``error: file:line: field: what`` and exit 2 (bad input)."""
    for line in str(err).splitlines():  # Text, not markup: names and values may hold '[/]'
        err_console.print(Text.assemble(("error", "bold red"), ": ", line), highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def load_scenario_or_exit(path: Path) -> Scenario:
    """The checked scenario at ``path``, or its problems printed and exit 2 (``fail``)."""
    try:
        return api.load_scenario(path)
    except CostsimError as err:
        fail(err)


def interrupted(folder, out: str | Path | None = None) -> NoReturn:
    """Ctrl-C: say what the output folder (an OutputFolder, or None: not opened yet, ``out`` being
    the folder asked for, if any) holds and exit 130 (128 + SIGINT), without a traceback."""
    if folder is None:
        state = "nothing written" + (f"; {out} is unchanged" if out is not None else "")
    elif folder.published:
        state = f"{folder.shown} holds the new results"
    else:
        state = f"{folder.shown} is unchanged"
    err_console.print(Text(f"interrupted: {state}"), highlight=False)
    raise typer.Exit(130)

