"""Input errors that name the file, the field path and, where known, the line."""

from __future__ import annotations

from collections.abc import Mapping

from costsim.errors import CostsimError, Loc, Problem


class ScenarioError(CostsimError, ValueError):
    """A scenario, trace or setting that cannot be used, with every problem found.

    ``str(err)`` is the message to show a user: one line per problem, each
    ``file[:line[:col]]: field.path: what is wrong``.
    """

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
