"""The errors costsim raises on purpose, in one family (stdlib only): ``CostsimError`` and, beneath
it, one type per cause, so a caller can tell bad input from a failed worker or an unwritable folder.

Each carries the problems found (``Problem``: where and what) and renders them one per line as
``source[:line[:col]]: field.path: what is wrong``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

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

    def __reduce__(self) -> tuple[type[CostsimError], tuple[Any, ...]]:
        # Rebuilt from its source and problems when it crosses a process (sweeps' workers); a
        # subclass rebuilt from its own fields returns those instead.
        return (type(self), (self.source, self.problems))


class ArgumentError(CostsimError, ValueError):
    """A bad argument to a public function: ``function(): argument: what is wrong`` (a seed, a
    replication count, an executor name, a memo of the wrong type)."""

    def __init__(self, function: str, argument: str, message: str):
        self.function, self.argument, self.message = function, argument, message
        super().__init__(f"{function}()", [Problem((argument,), message)])

    def __reduce__(self) -> tuple[type[CostsimError], tuple[Any, ...]]:
        return (type(self), (self.function, self.argument, self.message))


class ExecutorError(CostsimError, RuntimeError):
    """An executor that cannot be used or lost a worker (``executor NAME: what is wrong``): a process
    pool or a Dask cluster failed, was unreachable or differs from this machine; the input was fine."""

    def __init__(self, name: str, message: str):
        self.name, self.message = name, message
        super().__init__(f"executor {name}", [Problem((), message)])

    def __reduce__(self) -> tuple[type[CostsimError], tuple[Any, ...]]:
        return (type(self), (self.name, self.message))


class OutputError(CostsimError):
    """An output folder or file that cannot be used or written (``label path: what is wrong``): not
    ours to replace, unwritable, locked by another run, or the disk is full."""

    def __init__(self, label: str, folder: str, message: str):
        self.label, self.folder, self.message = label, folder, message
        super().__init__(" ".join(part for part in (label, folder) if part), [Problem((), message)])

    def __reduce__(self) -> tuple[type[CostsimError], tuple[Any, ...]]:
        return (type(self), (self.label, self.folder, self.message))
