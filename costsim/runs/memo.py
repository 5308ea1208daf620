"""What ``costsim.simulate`` can reuse between calls on one process: the jobs drawn, each option's
work plan and each option's run, keyed by exactly what each step reads.

A dashboard knob or a sweep's variant usually changes one thing: a price, a GPU count. The jobs
(``workload.generate``) read only the scenario's workload, horizon, folder and trace file with the
seed; an option's work plan (``plan_work``) reads those and the option's plan; an option's run
(``engine.run_option``) reads the plan, the work, the horizon, the serving load and the seed's
streams for that option's name. So after a price knob only the priced option's run is repeated,
and the tables are built again from the rest (``results.build`` prices usage afterwards).

Keys are built from the inputs as values (``repr`` of frozen dataclasses and pydantic dumps: equal
text means equal inputs) plus the trace file's identity (``scenario.filekind.file_identity``, taken
by ``plan.prepare`` before it reads the file); nothing is keyed by object identity. The functions
below build them, and they are the one place that decides which fields are prices: what none of
them reads (economics, rents, capex, billing) is applied afterwards, so two scenarios with the same
``usage_key`` differ only in prices and one's runs, re-costed, are the other's (a sweep's runner
simulates such variants once: ``costsim.runs.taskrun``). What is kept is made read-only, so a caller that wrote into a shared array would fail loudly
instead of changing a later run. Results equal those without a memo (tests/runs/test_run_memo.py).
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from costsim.errors import ArgumentError

if TYPE_CHECKING:
    from costsim.plan.fleet import Plan
    from costsim.plan.options import CloudPlan, OwnedPlan
    from costsim.scenario import Scenario

T = TypeVar("T")


class RunMemo:
    """The latest ``jobs`` job tables, ``works`` work plans and ``runs`` option runs, by key.

    Not thread-safe: one per process (the dashboard gives each of its workers one). ``hits`` and
    ``misses`` count lookups, for tests and benchmarks."""

    def __init__(self, jobs: int = 2, works: int = 16, runs: int = 16):
        self._limits = {"jobs": jobs, "works": works, "runs": runs}
        for name, limit in self._limits.items():
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
                raise ArgumentError("RunMemo", name, f"must be a whole number of entries >= 1, got {limit!r}")
        self._tables: dict[str, OrderedDict[Any, Any]] = {name: OrderedDict() for name in self._limits}
        self.hits = 0
        self.misses = 0

    def get(self, table: str, key: Any, make: Callable[[], T]) -> T:
        """The value kept for ``key`` in ``table``, else ``make()`` (kept, made read-only)."""
        items = self._tables[table]
        if key in items:
            items.move_to_end(key)
            self.hits += 1
            return items[key]
        self.misses += 1
        value = make()
        freeze(value)
        items[key] = value
        while len(items) > self._limits[table]:
            items.popitem(last=False)
        return value

    def __len__(self) -> int:
        """Entries kept, in all tables."""
        return sum(len(items) for items in self._tables.values())

    def clear(self) -> None:
        """Forget everything (a worker does after running out of memory)."""
        for items in self._tables.values():
            items.clear()


def cached(memo: RunMemo | None, table: str, key: Any, make: Callable[[], T]) -> T:
    """``make()``, through ``memo`` when there is one."""
    return make() if memo is None else memo.get(table, key, make)


def freeze(value: Any) -> None:
    """Make the numpy arrays of ``value`` read-only: of a dataclass's fields (recursively), of a
    tuple's items, or the array itself."""
    if isinstance(value, np.ndarray):
        value.setflags(write=False)
    elif isinstance(value, tuple | list):
        for item in value:
            freeze(item)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            freeze(getattr(value, f.name))


def workload_key(scenario: Scenario, trace_identity: tuple[int, ...] | None) -> tuple:
    """What drawing the jobs reads besides the seed: the workload (not an RL class's scaling curve,
    which only the results read: a target knob reruns nothing), the horizon, the folder relative
    paths are read from and the trace file's identity (``Prepared.trace_identity``)."""
    return (scenario.workload.model_dump_json(exclude={"classes": {"__all__": {"scaling"}}}),
            repr(scenario.horizon_h), str(scenario.base_dir), trace_identity)


def unpriced_key(part: Plan | OwnedPlan | CloudPlan) -> str:
    """An option's plan (or one pool of it) as work plans and runs read it: its prices NaN."""
    return repr(part.unpriced())


def serving_key(scenario: Scenario) -> str | None:
    """The serving load as a run reads it (None without serving)."""
    return None if scenario.serving is None else scenario.serving.model_dump_json()


def usage_key(scenario: Scenario, plans: Sequence[Plan], trace_identity: tuple[int, ...] | None) -> tuple:
    """What every run of ``scenario`` reads besides the seed (its jobs, each option's work plans
    and run): scenarios with equal keys use the same GPU-hours on every seed and differ only in
    what those hours cost."""
    return (workload_key(scenario, trace_identity), tuple(unpriced_key(p) for p in plans), serving_key(scenario))
