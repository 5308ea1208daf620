"""The errors costsim raises on purpose, in one family (stdlib only): ``CostsimError`` and, beneath
it, one type per cause, so a caller can tell bad input from a failed worker or an unwritable folder.

Each carries the problems found (``Problem``: where and what) and renders them one per line as
``source[:line[:col]]: field.path: what is wrong``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input: where (field path, line) and what."""

    loc: Loc
    message: str
    line: int | None = None
    column: int | None = None

    def render(self, source: str) -> str:
        where = source
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        path = ".".join(str(p) for p in self.loc)
        return f"{where}: {path}: {self.message}" if path else f"{where}: {self.message}"


class CostsimError(Exception):
    """Anything costsim refuses or cannot do, with every problem found. ``str(err)`` is the message
    to show a user: one line per problem."""

    def __init__(self, source: str, problems: Iterable[Problem]):
        self.source = source
        self.problems = list(problems)
        super().__init__("\n".join(p.render(source) for p in self.problems))

    def __reduce__(self) -> tuple[type[CostsimError], tuple[str, list[Problem]]]:
        # Rebuilt from its source and problems when it crosses a process (sweeps' workers).
        return (type(self), (self.source, self.problems))


class ArgumentError(CostsimError, ValueError):
    """A bad argument to a public function or a CLI flag (a seed, a replication count, a target text)."""


class ExecutorError(CostsimError, RuntimeError):
    """A worker process or a Dask cluster failed, was unreachable or was lost: the input was fine."""


class OutputError(CostsimError, OSError):
    """An output folder or file that cannot be used: not ours to replace, unwritable, or in use."""
