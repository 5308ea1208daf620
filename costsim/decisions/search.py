"""The runs of one ``optimize`` search: configurations simulated on one executor, priced fairly.

A configuration is a point: one level index per varied dimension (``space.Dimension``). The search
*wants* points, each call one sweep (``costsim.runs.sweepfile.sweep_from_sets``: replication r on
the same seed in every configuration, so comparisons are paired) whose tasks go to the executor in
groups that share a simulation (``costsim.runs.taskrun``: configurations that differ only in a
price are simulated once per replication), and *settles* them: waits for their runs and records
them, in the order wanted. It may also *guess* points it may want next: their tasks take only the
lanes the wanted runs leave idle (``costsim.runs.taskqueue``), the guess the runs back so far point
to first (``prefer``), are recorded only once wanted, and are dropped when the search goes
elsewhere. What is recorded, and so every table and answer, is
the same whatever the executor and whichever guesses ran.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pandas as pd

from costsim.decisions.fair import fair_rows, why_over
from costsim.decisions.space import Dimension
from costsim.decisions.targets import MAJORITY, METRICS, Target, value
from costsim.decisions.verdict import MEANS
from costsim.runs.executors import Lanes
from costsim.runs.sweepfile import Sweep, sweep_from_sets
from costsim.runs.taskqueue import Failed, TaskQueue
from costsim.runs.taskrun import (
    PREPARED_KEPT,
    Task,
    TaskOutput,
    TaskRunner,
    bytes_sha256,
    inputs_sha256,
    shared_runs,
    tasks,
)
from costsim.scenario import Scenario, ScenarioError

Point = tuple[int, ...]  # a configuration: one level index per dimension
# Queue priorities: runs the search waits for; the guess the runs back so far point to; other guesses.
NOW, LIKELY, LATER = 0, 1, 2


def key(p: Point) -> str:
    """A configuration as a table cell ("3,0"): tuples in a column are taken for lists by pandas."""
    return ",".join(map(str, p))


def point(cell: str) -> Point:
    """The configuration of a table cell (``key``)."""
    return tuple(map(int, cell.split(",")))


@dataclass
class _Unit:
    """One sweep of the search: its configurations in the sweep's variant order, its tasks, their
    groups (``shared_runs``) and the outputs come back so far, by task index."""

    points: tuple[Point, ...]
    spec: Sweep
    todo: list[Task]
    groups: list[list[int]]
    outputs: dict[int, TaskOutput] = field(default_factory=dict)
    queued: bool = False
    wanted: bool = False
    recorded: bool = False
    error: Exception | None = None  # a run's, kept until the unit is wanted (a guess may never be)


class Search:
    """The state of one search: the runs recorded so far, priced fairly, by configuration, and the
    runs queued on ``lanes`` (an open executor, given before the first run: ``plan`` needs none).
    ``done``: runs recorded or wanted and back (the budget ``max_runs`` counts these); ``planned``:
    the runs the search expects, for ``progress``."""

    def __init__(self, *, path: Path, dims: list[Dimension], candidates: list[str], wanted: tuple[Target, ...],
                 replications: int, seed: int | None, max_runs: int, lanes: Lanes | None,
                 progress: Callable[[int, int], None] | None, waiting_usd_per_gpu_hour: float):
        self.path, self.dims, self.candidates, self.wanted = path, dims, candidates, wanted
        self.replications, self.seed, self.max_runs, self.lanes = replications, seed, max_runs, lanes
        self.progress, self.waiting_usd_per_gpu_hour = progress, waiting_usd_per_gpu_hour
        # the means reported, and any a target reads that a verdict does not report (p99 delay)
        self.columns = list(dict.fromkeys([*MEANS, *(METRICS[t.metric][0] for t in wanted)]))
        self.frames: list[pd.DataFrame] = []
        self.uses: dict[str, list[int]] = {c: list(range(len(dims))) for c in candidates}
        self.stage: dict[str, str] = {}  # by configuration as a table cell (key)
        self.done = 0
        self.planned = 0
        self.units: dict[tuple[Point, ...], _Unit] = {}
        self.queue: TaskQueue | None = None  # made with the first sweep, its runner sized to it
        self.file_sha256: dict[Path, str] = {}  # each input file hashed once, when first varied
        self.base: Scenario | None = None  # the scenario varied, when not the file's (an edit of it)

    def _file_sha256(self, path: Path) -> str:
        if path not in self.file_sha256:
            self.file_sha256[path] = bytes_sha256(path.read_bytes())
        return self.file_sha256[path]

    def values(self, p: Point) -> dict[str, Any]:
        return {d.path: d.value(k) for d, k in zip(self.dims, p, strict=True)}

    def plan(self, points: list[Point]) -> None:
        """Build the sweep of ``points`` (its variants checked: a value the scenario refuses is a
        ScenarioError naming ``--vary``) without running it yet."""
        if tuple(points) not in self.units:
            self.units[tuple(points)] = self._unit(points)

    def want(self, points: list[Point]) -> None:
        """Queue the runs of ``points`` as one sweep (those a guess queued already: urged)."""
        self.plan(points)
        unit = self.units[tuple(points)]
        if not unit.queued:
            self._put([unit], NOW)
        elif not unit.wanted:
            for g in range(len(unit.groups)):
                self._queue().urge((unit.points, g), NOW)
        if not unit.wanted:
            unit.wanted = True
            self._count(len(unit.outputs))  # what a guess has finished already
        if unit.error is not None:  # a run of it, guessed, failed: as it would have when wanted
            raise unit.error

    def guess(self, points: Sequence[Point]) -> None:
        """Queue each of ``points`` (one sweep each) for lanes the wanted runs leave idle, their
        replications in turn; a point queued already, or refused by the scenario (wanting it will
        say why), is not guessed."""
        known = {p for u in self.units.values() for p in u.points}
        fresh = []
        for p in points:
            if p in known:
                continue
            try:
                unit = self._unit([p])
            except ScenarioError:
                continue
            self.units[unit.points] = unit
            fresh.append(unit)
        self._put(fresh, LATER)

    def forget(self, keep: Sequence[Point] = ()) -> None:
        """Drop the guesses not wanted, but for those of ``keep``."""
        kept = {(p,) for p in keep}
        for points, unit in list(self.units.items()):
            if not unit.wanted and points not in kept:
                for g in range(len(unit.groups) if unit.queued else 0):
                    self._queue().drop((points, g))
                del self.units[points]

    def prefer(self, points: Sequence[Point]) -> None:
        """The guess of ``points`` before the others, for the next idle lane."""
        unit = self.units.get(tuple(points))
        if unit is not None and unit.queued and not unit.wanted:
            for g in range(len(unit.groups)):
                self._queue().urge((unit.points, g), LIKELY)

    def settle(self, points: list[Point], stage: str, lean: Callable[[], None] | None = None) -> None:
        """Wait for the runs of ``points`` (wanted) and record them under ``stage``; ``lean()``
        after each of their groups that comes back while others are still out (it may ``prefer`` a
        guess by what ``partial`` says)."""
        unit = self.units[tuple(points)]
        queue = self._queue()
        while len(unit.outputs) < len(unit.todo):
            done, outs = queue.next()
            which, g = cast(tuple[tuple[Point, ...], int], done)  # the keys _put gives: (points, group)
            other = self.units[which]  # a dropped guess never comes back
            if isinstance(outs, Failed):
                if other.wanted:
                    raise outs.error
                other.error = outs.error  # raised if the search comes to want this guess
                continue
            other.outputs.update(zip(other.groups[g], outs, strict=True))
            if other.wanted:
                self._count(len(outs))
            if other is unit and len(unit.outputs) < len(unit.todo) and lean is not None:
                lean()
        self._record(unit, stage)

    def outstanding(self, points: list[Point]) -> int:
        """Groups of tasks of ``points`` not back yet."""
        unit = self.units[tuple(points)]
        return sum(g[0] not in unit.outputs for g in unit.groups)

    def slots(self) -> int:
        """Tasks the executor runs at once."""
        return self.lanes.slots if self.lanes is not None else 1

    def partial(self, points: list[Point]) -> pd.DataFrame:
        """``table`` of the runs of ``points`` back so far (not recorded: a guide, never the answer)."""
        return self.table(self._rows(self.units[tuple(points)]))

    def _unit(self, points: list[Point]) -> _Unit:
        axes = [sorted({p[i] for p in points}) for i in range(len(self.dims))]
        sets = [f"{d.path}={','.join(d.text(k) for k in levels)}" for d, levels in zip(self.dims, axes, strict=True)]
        try:
            spec = sweep_from_sets(self.path, sets, self.replications, self.seed, base=self.base)
        except ScenarioError as err:  # a value the scenario refuses: the --vary that gave it
            raise (ScenarioError("--vary", err.problems) if err.source == "--set" else err) from None
        # each task checks its trace and catalog against these as it runs, as a sweep's do: an edit
        # during the search, or another file at the path on a Dask worker, is refused, never mixed in
        shas = {v.id: inputs_sha256(v.scenario, self._file_sha256) for v in spec.variants}
        todo = tasks(spec, shas)
        return _Unit(tuple(itertools.product(*axes)), spec, todo, shared_runs(todo))  # sweep_from_sets' order

    def _queue(self) -> TaskQueue:
        assert self.queue is not None  # made by the first _put
        return self.queue

    def _put(self, units: list[_Unit], priority: int) -> None:
        """Queue the groups of ``units``, the first group of each in turn, then the second, …"""
        if self.queue is None:  # each of the first sweep's groups prepared once across replications
            assert self.lanes is not None  # given before the first run
            largest = max((len(g) for u in units for g in u.groups), default=1)
            self.queue = TaskQueue(self.lanes, TaskRunner(kept=max(PREPARED_KEPT, largest)))
        for u in units:
            u.queued = True
        for g in range(max((len(u.groups) for u in units), default=0)):
            for u in units:
                if g < len(u.groups):
                    self.queue.put((u.points, g), tuple(u.todo[i] for i in u.groups[g]), priority)

    def _count(self, runs: int) -> None:
        """``runs`` more back (0: a sweep wanted, which the progress shows as it starts)."""
        self.done += runs
        if self.progress is not None:
            self.progress(self.done, max(self.planned, self.done))

    def _record(self, unit: _Unit, stage: str) -> None:
        """The unit's runs priced fairly, appended to the search's tables."""
        self.frames.append(self._rows(unit))
        for p in unit.points:
            self.stage.setdefault(key(p), stage)
        unit.recorded, unit.outputs = True, {}

    def _rows(self, unit: _Unit) -> pd.DataFrame:
        """The unit's runs back so far, in task order, priced fairly."""
        runs = pd.concat([unit.outputs[i].summary for i in sorted(unit.outputs)], ignore_index=True)
        spec = unit.spec
        ids = {v.id: unit.points[k] for k, v in enumerate(spec.variants)}
        # A resized option runs under the name the sweep gave it (own-256 at 320 GPUs: own-320); the
        # search follows each option of the scenario by its place, the table shows the name it ran as.
        origin = {(v.id, o.name): self.candidates[i] for v in spec.variants for i, o in enumerate(v.scenario.options)}
        runs = runs.assign(_option=[origin[k] for k in zip(runs["variant"], runs["option"], strict=True)])
        rows = fair_rows(runs, self.waiting_usd_per_gpu_hour)
        rows["_point"] = [key(ids[v]) for v in rows["variant"]]
        return rows

    def table(self, rows: pd.DataFrame | None = None) -> pd.DataFrame:
        """Per (configuration, option) of ``rows`` (default: every run recorded): the varied
        values, means, keep-up and target flags."""
        rows = pd.concat(self.frames, ignore_index=True) if rows is None else rows
        groups = rows.groupby(["_point", "_option"], sort=False)
        t = groups[self.columns].mean()
        t["option"] = groups["option"].first()
        t["n"] = groups.size()
        t["keeps_up"] = groups["keeps_up"].mean() >= MAJORITY
        t["why"] = [why_over(g) for _, g in groups]
        t = t.reset_index()
        t["meets_targets"] = [all(g.met(value(r, g.metric)) for g in self.wanted) for _, r in t.iterrows()]
        t["meets"] = t["keeps_up"] & t["meets_targets"]
        t["stage"] = [self.stage.get(p, "") for p in t["_point"]]  # "": not recorded yet
        levels = [point(k) for k in t["_point"]]
        for i, d in enumerate(self.dims):
            t.insert(i, d.path, [d.value(p[i]) for p in levels])
        return t[[*(d.path for d in self.dims), "option", "n", *self.columns, "keeps_up", "why", "meets_targets",
                  "meets", "stage", "_point", "_option"]]

    def runs_of(self, p: Point, option: str) -> pd.DataFrame:
        """The runs at ``p`` of the scenario's option ``option`` (by its name in the scenario)."""
        rows = pd.concat(self.frames, ignore_index=True)
        return rows[(rows["_point"] == key(p)) & (rows["_option"] == option)]


__all__ = ["LATER", "LIKELY", "NOW", "Point", "Search", "key", "point"]
