"""The passes an owned cluster under serving skips, and that skipping them changes no schedule.

With serving, the pool nearly always shows free GPUs (serving's share is not allocated), so an
arrival or an hour would ask for a pass almost every time. Three claims spare most of them:

1. A job joining the queue can start no sooner than serving admits it and the pool holds it (nor
   before the cluster's delivery), so an arrival lowers the last pass's quiet time to that instead
   of asking for a pass at once.
2. A backfill pass in which every size serving admits would run past the head's reservation and
   take what the head needs then names the reservation's time (or the hour a refused size may be
   admitted), not now: such jobs only run further past the reservation as time goes on.
3. A job refused because its run would meet a short moment ahead is refused from then on too,
   until an hour leaves it room at its start: the cluster looks on that hour, not at the moment.

Held here against the same cluster with a pass at every request and a look every hour while jobs
wait (every skip off), job for job, on the random serving cases of
tests/engine/test_serving_differential.py, with counts showing the skips happen.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import jobs_of, owned, scenario
from test_backfill_differential import replay
from test_serving_differential import SCHEDULERS, case
from test_serving_wake_oracle import hourly_looks

import costsim
from costsim.engine import backfill as backfill_engine
from costsim.engine import owned as owned_engine
from costsim.engine.headroom import ServingHeadroom
from costsim.engine.reservation import INF


def counted(monkeypatch) -> dict[str, int]:
    """Counts, from now on, of scheduling passes and backfill passes over all clusters."""
    counts = {"passes": 0, "backfill": 0}
    real_pass, real_run = owned_engine.OwnedCluster._pass, backfill_engine.EasyBackfill.run

    def one_pass(self):
        counts["passes"] += 1
        return real_pass(self)

    def run(self):
        counts["backfill"] += 1
        return real_run(self)

    monkeypatch.setattr(owned_engine.OwnedCluster, "_pass", one_pass)
    monkeypatch.setattr(backfill_engine.EasyBackfill, "run", run)
    return counts


def every_pass(monkeypatch) -> None:
    """Every skip off: each request for a pass runs one, and every cluster with serving asks for one
    every whole hour while jobs wait (``hourly_looks``)."""
    hourly_looks(monkeypatch)

    def decide(self):
        self.quiet_until = self._pass()
        self.quiet_changes = self.changes

    monkeypatch.setattr(owned_engine.OwnedCluster, "decide", decide)


def run(seed: int, scheduler: str):
    c = case(seed)
    return replay(owned_engine.OwnedCluster, c["submit"], c["gpus"], c["run_h"], c["prio"], c["nodes"], c["gpn"],
                  scheduler, c["placement"], fail=c["fail"], seed=seed, demand=c["demand"], lead_h=c["lead_h"],
                  wait_h=c["wait_h"], restart_h=c["restart_h"], until=3 * max(c["submit"]) + 100)


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_skipped_passes_would_have_started_nothing(monkeypatch, scheduler):
    skipping = []
    counts = counted(monkeypatch)
    for seed in range(8):
        skipping.append(run(seed, scheduler))
    skipped = dict(counts)
    with monkeypatch.context() as m:
        every_pass(m)
        for k in counts:
            counts[k] = 0
        for seed, (log, start, end, _c) in enumerate(skipping):
            want_log, want_start, want_end, _ = run(seed, scheduler)
            assert log == want_log, (seed, scheduler)  # every start and withdrawal, in order
            np.testing.assert_array_equal(start, want_start)
            np.testing.assert_array_equal(end, want_end)
    # The skips happen (a fifth to a quarter of the passes on these small clusters: most requests
    # there come with a change, when a pass is due).
    assert skipped["passes"] < 0.8 * counts["passes"], (skipped, counts)
    assert skipped["backfill"] <= 0.8 * counts["backfill"], (skipped, counts)


def test_arrivals_that_cannot_start_ask_for_no_pass(monkeypatch):
    """Claim 1 alone on the random cases: with every arrival asking for a pass (the rule before it),
    the same schedule and more passes."""
    counts = counted(monkeypatch)
    skipping = [run(seed, "backfill") for seed in range(8)]
    skipped = counts["passes"]
    counts["passes"] = 0
    monkeypatch.setattr(ServingHeadroom, "starts_from", lambda self, gpus, hold_h: -INF)
    for seed, (log, start, _end, _c) in enumerate(skipping):
        want_log, want_start, _want_end, _ = run(seed, "backfill")
        assert log == want_log, seed
        np.testing.assert_array_equal(start, want_start)
    assert skipped < 0.97 * counts["passes"], (skipped, counts["passes"])


def test_jobs_serving_refuses_on_arrival_ask_for_no_pass(tmp_path, monkeypatch):
    """Claim 1 on a cluster built by hand: two 8-GPU nodes beside a flat serving load of 4 GPUs. At
    0, a (8 GPUs, 100 h) takes node 0; from then on serving leaves 4 GPUs, so the 8-GPU jobs arriving
    at 0.5 and every hour after wait for a's end. Their arrivals ask for no pass (one each before);
    they start one after another from 100, as with a pass at every request and every hour."""
    flat = {"gpus": {"base": 4, "diurnal_amplitude": 0.0, "growth_per_year": 0.0}, "priority": True}
    rows = [(0.0, 8, 100.0), (0.5, 8, 1.0)] + [(1.0 + k, 8, 1.0) for k in range(50)]
    sc = scenario(tmp_path, rows, [owned(gpus=16, scheduler="backfill")], horizon_days=20, serving=flat)
    counts = counted(monkeypatch)
    starts = jobs_of(costsim.simulate(sc), "own").sort_values("submit_h")["start_h"].tolist()
    assert starts == [0.0] + [100.0 + k for k in range(51)]
    assert counts["passes"] == 52, counts  # at 0 and at each of the 51 ends; none for the 51 arrivals
    every_pass(monkeypatch)
    assert jobs_of(costsim.simulate(sc), "own").sort_values("submit_h")["start_h"].tolist() == starts


def test_a_job_held_off_by_the_reservation_is_not_looked_at_every_hour(tmp_path, monkeypatch):
    """Claim 2 on a cluster built by hand: three 8-GPU nodes beside a flat serving load of 4 GPUs.
    At 0, a (8 GPUs, 100 h) takes node 0 and d (4 GPUs, 300 h) half of node 1. At 0.5 the head h
    (16 GPUs: two whole nodes, 50 h) is reserved at 100 on nodes 0 and 2, with d, h and serving
    taking all 24 GPUs then. At 0.7, b (2 GPUs, 200 h) fits beside serving now but would run past
    100 and leave serving short beside h: it waits. Only a's end can change that, so the cluster
    does not look on the hours between (it looked every hour before, 99 times); h starts at 100 and
    b at 150, when h ends."""
    looks = []
    real = owned_engine.OwnedCluster._wake
    monkeypatch.setattr(owned_engine.OwnedCluster, "_wake", lambda self, e: (looks.append(self.env.now), real(self, e)))
    flat = {"gpus": {"base": 4, "diurnal_amplitude": 0.0, "growth_per_year": 0.0}, "priority": True}
    rows = [(0.0, 8, 100.0), (0.0, 4, 300.0), (0.5, 16, 50.0), (0.7, 2, 200.0)]
    sc = scenario(tmp_path, rows, [owned(gpus=24, scheduler="backfill")], horizon_days=20, serving=flat)
    res = costsim.simulate(sc)
    assert len(looks) <= 1, looks
    assert jobs_of(res, "own").sort_values("submit_h")["start_h"].tolist() == [0.0, 0.0, 100.0, 150.0]


def test_jobs_arriving_before_delivery_ask_for_no_pass(tmp_path, monkeypatch):
    """Claim 1 before delivery: nothing starts until the cluster is delivered (at 48 h, when it asks
    for a pass), so of the 20 jobs arriving hourly before then only the first asks for one."""
    flat = {"gpus": {"base": 4, "diurnal_amplitude": 0.0, "growth_per_year": 0.0}, "priority": True}
    rows = [(float(k), 1, 1000.0) for k in range(20)]
    sc = scenario(tmp_path, rows, [owned(gpus=24, scheduler="backfill", lead_time_days=2)], horizon_days=20,
                  serving=flat)
    counts = counted(monkeypatch)
    starts = jobs_of(costsim.simulate(sc), "own")["start_h"].tolist()
    assert starts == [48.0] * 20
    assert counts["passes"] == 2, counts  # the first arrival's and the delivery's
    every_pass(monkeypatch)
    assert jobs_of(costsim.simulate(sc), "own")["start_h"].tolist() == starts


def test_a_job_whose_run_would_meet_serving_s_peak_is_looked_at_once_a_day(tmp_path, monkeypatch):
    """Serving refuses a job whose run would cover an hour it leaves too little room in (its first
    short moment), and a start from that moment on is short itself: the cluster looks again on the
    first hour after it with room at the start, not at the moment itself. Three 8-GPU nodes, serving
    5-12 GPUs over the day (12 from 3 to 9 h, 8 or less from 12 to 24 h); a1 and a2 (8 and 4 GPUs,
    200 h) leave 12, so b (4 GPUs, 30 h) fits at the start from 12 h each day but its run meets the
    next peak: one look a day at 12 h (two before: at 12 h and at the rise at 24 h), and b starts
    when the a's end, as with a pass at every request and every hour."""
    looks = []
    real = owned_engine.OwnedCluster._wake
    monkeypatch.setattr(owned_engine.OwnedCluster, "_wake", lambda self, e: (looks.append(self.env.now), real(self, e)))
    daily = {"gpus": {"base": 8, "diurnal_amplitude": 0.5, "growth_per_year": 0.0}, "priority": True}
    rows = [(0.0, 8, 200.0), (0.0, 4, 200.0), (0.5, 4, 30.0)]
    sc = scenario(tmp_path, rows, [owned(gpus=24, scheduler="backfill")], horizon_days=12, serving=daily)
    starts = jobs_of(costsim.simulate(sc), "own").sort_values("submit_h")["start_h"].tolist()
    assert looks == [12.0 + 24 * k for k in range(9)]  # the last one already named when b starts
    assert starts == [0.0, 0.0, 200.0]
    every_pass(monkeypatch)
    assert jobs_of(costsim.simulate(sc), "own").sort_values("submit_h")["start_h"].tolist() == starts
