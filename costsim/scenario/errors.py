"""Input errors that name the file, the field path and, where known, the line."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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


class ScenarioError(ValueError):
    """A scenario, trace or setting that cannot be used, with every problem found.

    ``str(err)`` is the message to show a user: one line per problem, each
    ``file[:line[:col]]: field.path: what is wrong``.
    """

    def __init__(self, source: str, problems: Iterable[Problem]):
        self.source = source
        self.problems = list(problems)
        super().__init__("\n".join(p.render(source) for p in self.problems))

    def __reduce__(self):
        # Rebuilt from its source and problems when it crosses a process (sweeps' workers).
        return (ScenarioError, (self.source, self.problems))

    def with_lines(self, lines: Mapping[Loc, tuple[int, int]]) -> ScenarioError:
        """The same error, each problem given the line of its deepest located field."""
        return ScenarioError(self.source, [locate(p, lines) for p in self.problems])


def locate(problem: Problem, lines: Mapping[Loc, tuple[int, int]]) -> Problem:
    """Attach the position of the longest prefix of ``problem.loc`` that has one."""
    if problem.line is not None:
        return problem
    loc = problem.loc
    for n in range(len(loc), -1, -1):
        pos = lines.get(tuple(loc[:n]))
        if pos is not None:
            return Problem(problem.loc, problem.message, pos[0], pos[1])
    return problem
