"""Hybrid bursting against a small independent reference: FIFO on one node plus a constant wait limit.

The reference is an event loop written from the rules in costsim/engine/events.py, not from the
engine's code: at each instant, jobs ending free their GPUs, jobs submitted join the queue (each with
a timer at submit + wait), one FIFO pass starts jobs from the head while they fit; then the timers
due at that instant fire in submit order: a job still queued leaves for the burst (starting there at
once: no provisioning, no startup) and the base gets another FIFO pass at the same instant.
"""

import heapq
import math

import numpy as np
import pytest
from helpers import cloud, jobs_of, owned, scenario
from hypothesis import given, settings
from hypothesis import strategies as st

import costsim


def reference_hybrid(submit, gpus, dur, capacity, wait):
    """Start time and part (True: burst) of every job."""
    n = len(submit)
    start, burst = [math.nan] * n, [False] * n
    queue: list[int] = []
    running: list[tuple[float, int]] = []  # (end, job)
    timers: list[tuple[float, int]] = []  # (time, job)
    free, nxt = capacity, 0

    def fifo_pass(t):
        nonlocal free
        while queue and gpus[queue[0]] <= free:
            i = queue.pop(0)
            start[i] = t
            free -= gpus[i]
            heapq.heappush(running, (t + dur[i], i))

    while nxt < n or running or timers:
        candidates = ([submit[nxt]] if nxt < n else []) + ([running[0][0]] if running else []) + \
                     ([timers[0][0]] if timers else [])
        t = min(candidates)
        while running and running[0][0] <= t:
            free += gpus[heapq.heappop(running)[1]]
        while nxt < n and submit[nxt] <= t:
            queue.append(nxt)
            heapq.heappush(timers, (submit[nxt] + wait, nxt))
            nxt += 1
        fifo_pass(t)
        while timers and timers[0][0] <= t:
            _, i = heapq.heappop(timers)
            if i in queue:
                queue.remove(i)
                burst[i], start[i] = True, t
                fifo_pass(t)
    return np.array(start), np.array(burst)


def trace(seed, n, dyadic):
    """Jobs of 1/2/4/8 GPUs, busy enough to queue. ``dyadic``: times on a quarter-hour grid, so
    ends, submits and wait limits coincide exactly (float sums of quarters are exact) and the
    same-instant order decides."""
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(0.6, n)
    dur = rng.exponential(2.0, n) + 0.05
    if dyadic:
        gaps, dur = np.floor(gaps * 4) / 4, np.ceil(dur * 4) / 4
    return np.cumsum(gaps), rng.choice([1, 2, 4, 8], n), dur


def run_engine(tmp_path, submit, gpus, dur, wait):
    rows = list(zip(submit.tolist(), gpus.tolist(), dur.tolist(), strict=True))
    hyb = {"name": "hyb", "kind": "hybrid", "base": "own", "burst": "cloud", "max_wait_h": wait}
    days = float(submit[-1] + dur.sum() + wait) / 24 + 1
    res = costsim.simulate(scenario(tmp_path, rows, [owned(gpus=8, gpus_per_node=8, scheduler="fifo"),
                                                     cloud(failures=None), hyb], horizon_days=days))
    j = jobs_of(res, "hyb")
    return j.start_h.to_numpy(), (j.ran_on == "cloud").to_numpy()


@settings(max_examples=20)
@given(st.integers(0, 100_000), st.sampled_from([0.0, 0.25, 0.5, 1.0, 2.75]), st.booleans())
def test_hybrid_matches_the_reference_job_for_job(tmp_path_factory, seed, wait, dyadic):
    submit, gpus, dur = trace(seed, 120, dyadic)
    got_start, got_burst = run_engine(tmp_path_factory.mktemp("h"), submit, gpus, dur, wait)
    want_start, want_burst = reference_hybrid(submit.tolist(), gpus.tolist(), dur.tolist(), 8, wait)
    np.testing.assert_array_equal(got_burst, want_burst)
    np.testing.assert_allclose(got_start, want_start, rtol=0, atol=1e-9)


def test_the_reference_exercises_withdrawals_and_ties(tmp_path):
    # A fixed busy trace: some jobs burst, some start on the base at the very instant another bursts
    # (the rescheduling after a withdrawal), so the comparison above is not vacuous.
    submit, gpus, dur = trace(7, 400, True)
    start, burst = reference_hybrid(submit.tolist(), gpus.tolist(), dur.tolist(), 8, 0.5)
    assert 0.05 < burst.mean() < 0.9
    burst_times = set(start[burst].tolist())
    on_base_at_a_burst = [i for i in np.flatnonzero(~burst) if start[i] in burst_times and start[i] > submit[i]]
    assert on_base_at_a_burst
    got_start, got_burst = run_engine(tmp_path, submit, gpus, dur, 0.5)
    np.testing.assert_array_equal(got_burst, burst)
    np.testing.assert_allclose(got_start, start, rtol=0, atol=1e-9)


@pytest.mark.parametrize("wait", [0.5])
def test_withdrawals_reschedule_the_base_on_a_long_trace(tmp_path, wait):
    # The measure on a smaller trace: without rescheduling after a withdrawal, jobs queued
    # behind a burst job sit beside free GPUs until their own limit, and more of them burst.
    submit, gpus, dur = trace(11, 3000, False)
    start, burst = run_engine(tmp_path, submit, gpus, dur, wait)
    want_start, want_burst = reference_hybrid(submit.tolist(), gpus.tolist(), dur.tolist(), 8, wait)
    assert burst.mean() == pytest.approx(want_burst.mean(), abs=0)
    np.testing.assert_allclose(start, want_start, rtol=0, atol=1e-9)
