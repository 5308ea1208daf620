"""The owned-cluster scheduler under serving against the frozen reference, job for job.

``RefCluster`` (tests/engine/test_backfill_differential.py) asks serving's admission and the head's
reservation afresh on every pass, through frozen copies of the functions the engine used before it
kept serving's headroom incrementally (tests/frozen_reservation.py). Here both run random clusters
with serving's demand (a daily swing, growth up or down, a table shorter than the run so its last
hour is held), node failures, a lead time before delivery, hybrid-like withdrawals of jobs that
waited too long, and every order (fifo, backfill, priority, sjf, lifo) under both placements: every
start (job, instant, nodes and GPUs on each) and every withdrawal must be the same, attempt for
attempt, and so must every job's first start and last end.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_backfill_differential import RefCluster, replay

from costsim.engine.owned import OwnedCluster
from costsim.models.serving import hourly_demand

SCHEDULERS = ("backfill", "fifo", "priority", "sjf", "lifo")


def case(seed: int, n: int = 150, span_h: float = 150.0) -> dict:
    """A random cluster, serving load and trace; every job fits beside serving's highest hour."""
    rng = np.random.default_rng(seed)
    nodes, gpn = int(rng.choice([3, 4, 6])), int(rng.choice([4, 8]))
    base = int(rng.integers(1, gpn + 1))
    amplitude = float(rng.choice([0.0, 0.3, 0.6]))
    growth = float(rng.choice([0.0, 2.0, 40.0, -0.8]))  # per year: flat, slow, steep (over weeks), falling
    demand = hourly_demand(base, amplitude, growth, int(rng.choice([120, 2000])))
    top = nodes * gpn - int(demand.max())
    sizes = np.array([1, 2, 3, gpn // 2, gpn, gpn + 1, 2 * gpn, 3 * gpn])
    gpus = np.minimum(rng.choice(sizes, n, p=[.2, .15, .1, .1, .15, .1, .1, .1]), top).clip(1)
    submit = np.sort(rng.uniform(0, span_h, n))
    run_h = rng.lognormal(1.0, 1.2, n) + 0.05
    if seed % 3 == 0:  # whole hours: ties between ends, ticks, reservations and starts
        run_h, submit = np.ceil(run_h), np.floor(submit)
    waits = rng.exponential(8.0, n) if rng.random() < 0.4 else None
    return dict(submit=submit.tolist(), gpus=gpus.tolist(), run_h=run_h.tolist(), prio=rng.integers(0, 3, n).tolist(),
                nodes=nodes, gpn=gpn, demand=demand, lead_h=float(rng.choice([0.0, 0.5, 13.25, 30.0])),
                fail=float(rng.choice([0.0, 0.0, 8.0, 30.0])), restart_h=float(rng.choice([0.0, 0.25, 2.0])),
                wait_h=None if waits is None else waits.tolist(), placement=str(rng.choice(["best_fit", "first_fit"])))


def run(cls, seed: int, scheduler: str, **size):
    c = case(seed, **size)
    return replay(cls, c["submit"], c["gpus"], c["run_h"], c["prio"], c["nodes"], c["gpn"], scheduler,
                  c["placement"], fail=c["fail"], seed=seed, demand=c["demand"], lead_h=c["lead_h"],
                  wait_h=c["wait_h"], restart_h=c["restart_h"], until=3 * max(c["submit"]) + 100)


def same(seed: int, scheduler: str, **size):
    want_log, want_start, want_end, ref = run(RefCluster, seed, scheduler, **size)
    got_log, got_start, got_end, _ = run(OwnedCluster, seed, scheduler, **size)
    assert got_log == want_log, (seed, scheduler)  # every start and withdrawal, in order
    np.testing.assert_array_equal(got_start, want_start)
    np.testing.assert_array_equal(got_end, want_end)
    return want_log, ref


@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("seed", range(8))
def test_same_schedule_as_the_reference_under_serving(seed, scheduler):
    same(seed, scheduler)


@pytest.mark.slow
@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("seed", range(8, 48))
def test_same_schedule_as_the_reference_under_serving_many(seed, scheduler):
    same(seed, scheduler)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_same_schedule_as_the_reference_under_serving_long_queues(seed):
    """600 jobs over two weeks, so backfill's queue runs deep and serving's days come round."""
    same(100 + seed, "backfill", n=600, span_h=340.0)


def test_the_serving_cases_are_not_vacuous():
    """Over the fast cases: jobs backfilled (some past the reservation), gangs, kills, withdrawals,
    deliveries with a backlog, and serving refusing a job the pool could hold."""
    backfilled = past = gangs = killed = withdrawn = late = refused = 0
    for seed in range(8):
        c = case(seed)
        log, ref = same(seed, "backfill")
        backfilled, past = backfilled + ref.backfilled, past + ref.past
        starts = [(i, t, a) for i, t, a in log if a is not None]
        gangs += sum(1 for _i, _t, a in starts if len(a) > 1)
        killed += len(starts) - len({i for i, _t, _a in starts})
        withdrawn += sum(1 for _i, _t, a in log if a is None)
        late += sum(1 for i, t, _a in starts if math.isclose(t, c["lead_h"]) and c["submit"][i] < t)
        refused += ref.serving_refusals
    assert backfilled > 500 and past > 300 and gangs > 300 and killed > 1000, (backfilled, past, gangs, killed)
    assert withdrawn > 100 and late > 20 and refused > 10_000, (withdrawn, late, refused)
