"""A cold server's first screen: the first spares each run one replication of the scenario a new
session shows first (``bounded.warm_worker``), and a session's run of that replication then finds
its jobs, work plans and option runs in the worker's memo; the server tags each primed spare with
its replication's seed (``name_primed``), so that run goes to it."""

from __future__ import annotations

import io
import time

from costsim.dashboard import bounded
from costsim.dashboard.pool import SPARE_COUNT, WARM, new_pool
from costsim.plan.prepare import detached
from costsim.runs import api
from costsim.runs.isolated import Call, Worker, run_calls
from costsim.runs.isolated_child import Child
from costsim.runs.memo import RunMemo
from costsim.runs.sweepfile import replication_seed
from costsim.runs.workerpool import PRIMED, WorkerPool


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


def _until_warm(workers, limit_s: float = 120.0) -> None:
    deadline = time.monotonic() + limit_s
    while any(w.warming for w in workers):
        assert time.monotonic() < deadline, "a warm-up did not finish"
        time.sleep(0.05)


def test_a_worker_says_when_its_warm_up_is_done_and_one_without_never_warms():
    plain, warmed = Worker(), Worker(warm=WARM)  # no argument: the short warm-up of a plain spare
    try:
        assert not plain.warming and warmed.warming
        _until_warm([warmed])
        (reply,) = run_calls([(warmed, Call(target="builtins:print", payload="to stderr"))], limit_s=60)
        assert reply.error is None  # the message that said so was not taken for the call's reply
    finally:
        plain.close()
        warmed.close()


def test_a_run_of_another_scenario_ends_primed_spares_still_running_and_keeps_finished_ones():
    """A shared link opened on a cold server: its run must not wait behind the first scenario's
    replications, which no one asked for; a primed spare that has finished is a warm spare."""
    other = bounded.first_scenario().model_copy(update={"horizon_days": 30.0})
    pool = new_pool()
    pool.capacity = SPARE_COUNT
    try:
        pool.top_up()
        running = list(pool.idle)
        assert all(w.warming for w in running)  # a replication of a 365-day year takes seconds
        bounded.name_primed(pool, other)
        assert not pool.idle
        deadline = time.monotonic() + 10
        while any(w.returncode is None for w in running) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all(w.returncode is not None and w.returncode < 0 for w in running)  # killed, not left computing
    finally:
        pool.close()
    plain = WorkerPool(capacity=2, spares=2, warm=WARM)
    try:
        plain.top_up()
        for r, worker in enumerate(plain.idle):  # as if primed: their warm-ups are short ones
            worker.tag = (PRIMED, str(r))
        _until_warm(plain.idle)
        bounded.name_primed(plain, other)
        seed = bounded.first_scenario().seed  # finished: kept, with the seed whose runs its memo holds
        assert [w.tag for w in plain.idle] == [replication_seed(seed, 0), replication_seed(seed, 1)]
    finally:
        plain.close()


def test_the_first_screens_run_takes_its_primed_spares_loaded_as_a_session_loads_it():
    """The session's scenario is its own load of the first file: equal, not the same object, so
    the primed spares are named by their seeds, none ended."""
    pool = new_pool()
    pool.capacity = SPARE_COUNT
    try:
        pool.top_up()
        running = list(pool.idle)
        session = api.load_scenario(bounded.SCENARIO_DIR / "baseline.yaml")
        assert session is not bounded.first_scenario()
        bounded.name_primed(pool, session)
        assert list(pool.idle) == running
        assert sorted(w.tag for w in pool.idle) == sorted(replication_seed(session.seed, r) for r in range(SPARE_COUNT))
    finally:
        pool.close()


def test_a_worker_that_dies_while_warming_is_not_warming():
    worker = Worker(warm=WARM)
    try:
        worker.cancel()
        deadline = time.monotonic() + 10
        while worker.warming and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not worker.warming
    finally:
        worker.close()


def test_a_primed_spare_another_session_took_is_never_ended():
    """Two sessions at once: one takes a primed spare for its run while the other, on another
    scenario, still holds the list it read; ending that spare would kill the first one's run."""
    pool = WorkerPool(capacity=1, spares=1, warm=WARM)
    try:
        pool.top_up()
        (spare,) = pool.idle
        taken = pool.take(memory_bytes=None)
        assert taken is spare and not pool.retire(spare)
        assert spare.returncode is None and spare.reusable  # alive, still the first session's
    finally:
        spare.close()
        pool.close()
