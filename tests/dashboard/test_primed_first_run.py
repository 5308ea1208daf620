"""A cold server's first screen: the first spares each run one replication of the scenario a new
session shows first (``bounded.warm_worker``), and a session's run of that replication then finds
its jobs, work plans and option runs in the worker's memo; the server tags each primed spare with
its replication's seed (``name_primed``), so that run goes to it."""

from __future__ import annotations

import io

from costsim.dashboard import bounded
from costsim.dashboard.pool import SPARE_COUNT, new_pool
from costsim.plan.prepare import detached
from costsim.runs import api
from costsim.runs.isolated_child import Child
from costsim.runs.memo import RunMemo
from costsim.runs.sweepfile import replication_seed
from costsim.runs.workerpool import PRIMED


def test_a_primed_worker_holds_the_whole_run_of_its_replication():
    child = Child(io.BytesIO())
    bounded.warm_worker("1", child)
    memo = child.kept("memo", RunMemo)
    made = memo.misses
    first = bounded.first_scenario()
    assert first is not None and first.name == "baseline"
    ready = detached(api.prepare(first))  # as a session sends it, after its own load and knobs
    blob = bounded.simulate_in_worker((ready, replication_seed(first.seed, 1)), child)
    assert blob and memo.misses == made and memo.hits >= 1 + 2 * len(first.options) - 1


def test_the_server_names_its_primed_spares_by_their_seeds():
    pool = new_pool()
    pool.capacity = SPARE_COUNT
    try:
        pool.top_up()
        assert sorted(w.tag for w in pool.idle) == [(PRIMED, str(r)) for r in range(SPARE_COUNT)]
        bounded.name_primed(pool)
        seed = bounded.first_scenario().seed
        assert sorted(w.tag for w in pool.idle) == sorted(replication_seed(seed, r) for r in range(SPARE_COUNT))
    finally:
        pool.close()
