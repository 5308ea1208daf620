"""The dashboard's long-lived simulation workers (their speed target): a worker whose run
finished serves the next run (no import, no first-use costs), gives the same numbers as
``costsim.simulate`` run by run (nothing leaks from one run into the next), keeps the memory limit
it was given, and a run that is stopped still kills its worker, which is never used again.
"""

from __future__ import annotations

import io
import pickle
import time

import pandas as pd
import pytest

import costsim
from costsim.dashboard import SCENARIO_DIR, Limits, RunStopped, bounded
from costsim.dashboard import pool as pool_of_workers
from costsim.runs.isolated import read_frame


def short(days: float = 30, **economics: float) -> costsim.Scenario:
    """The shipped baseline over ``days`` (no warm-up), with some economics changed."""
    data = costsim.load_scenario(SCENARIO_DIR / "baseline.yaml").model_dump(mode="json")
    data.update(horizon_days=days, warmup_days=0)
    data["economics"].update(economics)
    return costsim.scenario.scenario_from_data(data, "short", SCENARIO_DIR)


@pytest.fixture
def pool():
    """Each test starts and ends with no waiting worker (none outlives the test); its spares are
    plain warm ones (a primed spare still running its replication is ended by a run of another
    scenario: ``tests/dashboard/test_primed_first_run.py``)."""
    pool = pool_of_workers.new_pool(primed=False)
    yield pool
    pool.close()


def waiting(pool) -> dict[int, object]:
    return {c.pid: c for c in pool.idle}


@pytest.mark.slow
def test_a_finished_worker_serves_the_next_run_with_the_right_numbers(pool):
    first, second = short(), short(electricity_usd_per_kwh=0.31)
    (a,) = bounded.simulate_many(first, [5], Limits(), warm=True, pool=pool)
    after_first = waiting(pool)
    assert len(after_first) == pool_of_workers.SPARE_COUNT  # the one that ran is back, beside the new spares
    (b,) = bounded.simulate_many(second, [6], Limits(), warm=True, pool=pool)
    assert waiting(pool).keys() == after_first.keys()  # no process started: the run used a waiting worker
    for blob, scenario, seed in ((a, first, 5), (b, second, 6)):
        pd.testing.assert_frame_equal(pickle.loads(blob).summary, costsim.simulate(scenario, seed=seed).summary)


@pytest.mark.slow
def test_a_worker_keeps_the_memory_limit_it_was_given(pool):
    bounded.simulate_many(short(), [1], Limits(run_memory_gb=3), warm=True, pool=pool)
    used = [c for c in pool.idle if c.memory_bytes is not None]
    assert [c.memory_bytes for c in used] == [3 * 2**30]
    for fresh in [c for c in pool.idle if c not in used]:  # only the limited worker waits now
        pool.retire(fresh)
    bounded.simulate_many(short(), [2], Limits(run_memory_gb=2), warm=True, pool=pool)  # not the worker limited to 3 GiB
    assert used[0].runs == 1
    assert sorted(c.memory_bytes or 0 for c in pool.idle if c.memory_bytes) == [2 * 2**30, 3 * 2**30]


def test_a_stopped_run_kills_its_worker_and_it_is_not_used_again(pool):
    pool_of_workers.warm_up(pool=pool)
    before = waiting(pool)
    start = time.monotonic()
    with pytest.raises(RunStopped, match="did not finish within"):
        bounded.simulate_many(short(days=3650), [1], Limits(run_seconds=1), warm=True, pool=pool)
    assert time.monotonic() - start < 4  # killed at once, not asked to finish
    gone = [c for pid, c in before.items() if pid not in waiting(pool)]
    assert len(gone) == 1 and gone[0].returncode is not None and gone[0].returncode < 0  # killed, reaped
    assert len(waiting(pool)) == pool_of_workers.SPARE_COUNT  # topped up again


def test_reply_frames():
    assert read_frame(io.BytesIO(b"")) == b""
    assert read_frame(io.BytesIO((3).to_bytes(8, "big") + b"abc")) == b"abc"
    assert read_frame(io.BytesIO((4).to_bytes(8, "big") + b"abc")) == b""  # cut short: the worker died mid-reply
