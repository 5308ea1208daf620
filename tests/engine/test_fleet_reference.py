"""A three-part fleet against a small independent reference: two FIFO pools of one 8-GPU node each,
in order of preference, and an on-demand burst after a constant wait.

The reference is an event loop written from the rules in costsim/engine/events.py and
costsim/engine/fleet.py, not from the engine's code: at each instant, jobs ending free their GPUs,
jobs submitted join both queues (each with a timer at submit + wait), then FIFO passes run — the
first pool, then the second, again until neither starts anything (a job started on one pool leaves
the other's queue); then the timers due at that instant fire in submit order: a job never started
leaves both queues for the burst (starting there at once: no provisioning, no startup), and the
passes run again before the next timer.
"""

from __future__ import annotations

import heapq
import math

import numpy as np
from helpers import cloud, jobs_of, owned, scenario
from hypothesis import given, settings
from hypothesis import strategies as st
from test_hybrid_reference import trace

import costsim

BURST = 2  # the reference's part number of the burst (pools: 0, 1)


def reference_fleet(submit, gpus, dur, wait, capacity=(8, 8)):
    """Start time and part (0, 1: the pools; 2: the burst) of every job."""
    n = len(submit)
    start, part = [math.nan] * n, [-1] * n
    queues: list[list[int]] = [[] for _ in capacity]
    free = list(capacity)
    running: list[tuple[float, int]] = []  # (end, job)
    timers: list[tuple[float, int]] = []  # (time, job)
    nxt = 0

    def passes(t):
        moved = True
        while moved:
            moved = False
            for k, queue in enumerate(queues):
                while queue and gpus[queue[0]] <= free[k]:
                    i = queue.pop(0)
                    start[i], part[i] = t, k
                    free[k] -= gpus[i]
                    heapq.heappush(running, (t + dur[i], i))
                    for other in queues:
                        if i in other:
                            other.remove(i)
                    moved = True

    while nxt < n or running or timers:
        t = min(([submit[nxt]] if nxt < n else []) + ([running[0][0]] if running else []) +
                ([timers[0][0]] if timers else []))
        while running and running[0][0] <= t:
            i = heapq.heappop(running)[1]
            if part[i] != BURST:
                free[part[i]] += gpus[i]
        while nxt < n and submit[nxt] <= t:
            for queue in queues:
                queue.append(nxt)
            heapq.heappush(timers, (submit[nxt] + wait, nxt))
            nxt += 1
        passes(t)
        while timers and timers[0][0] <= t:
            _, i = heapq.heappop(timers)
            if part[i] == -1:
                for queue in queues:
                    queue.remove(i)
                start[i], part[i] = t, BURST
                heapq.heappush(running, (t + dur[i], i))
                passes(t)
    return np.array(start), np.array(part)


def run_engine(folder, submit, gpus, dur, wait):
    rows = list(zip(submit.tolist(), gpus.tolist(), dur.tolist(), strict=True))
    res_pool = {"name": "res", "kind": "cloud", "gpu_type": "H100", "pricing": "reserved", "reserved_gpus": 8,
                "gpus_per_instance": 8, "scheduler": "fifo"}
    fleet = {"name": "fleet", "kind": "fleet",
             "parts": [{"option": "own"}, {"option": "res"}, {"option": "cloud", "max_wait_h": wait}]}
    days = float(submit[-1] + dur.sum() + wait) / 24 + 1
    opts = [owned(gpus=8, gpus_per_node=8, scheduler="fifo"), res_pool, cloud(failures=None), fleet]
    j = jobs_of(costsim.simulate(scenario(folder, rows, opts, horizon_days=days)), "fleet")
    parts = j.ran_on.map({"own": 0, "res": 1, "cloud": BURST}).to_numpy()
    return j.start_h.to_numpy(), parts


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 100_000), st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.75]), st.booleans())
def test_a_fleet_matches_the_reference_job_for_job(tmp_path_factory, seed, wait, dyadic):
    submit, gpus, dur = trace(seed, 120, dyadic)
    got_start, got_part = run_engine(tmp_path_factory.mktemp("f"), submit, gpus, dur, wait)
    want_start, want_part = reference_fleet(submit.tolist(), gpus.tolist(), dur.tolist(), wait)
    np.testing.assert_array_equal(got_part, want_part)
    np.testing.assert_allclose(got_start, want_start, rtol=0, atol=1e-9)


def test_the_reference_exercises_every_part_and_ties(tmp_path):
    # A fixed busy trace on a quarter-hour grid: jobs run on each part, and some start on the second
    # pool at the very instant a job bursts or the first pool takes another, so the comparison above
    # is not vacuous.
    submit, gpus, dur = trace(7, 400, True)
    start, part = reference_fleet(submit.tolist(), gpus.tolist(), dur.tolist(), 0.5)
    assert {0, 1, BURST} <= set(part.tolist())
    assert 0.02 < (part == BURST).mean() < 0.9
    assert ((part == 1) & (start > submit)).any()  # waited, then taken by the second pool
    got_start, got_part = run_engine(tmp_path, submit, gpus, dur, 0.5)
    np.testing.assert_array_equal(got_part, part)
    np.testing.assert_allclose(got_start, start, rtol=0, atol=1e-9)
