"""Owned cluster: exact start times worked by hand for each scheduler, node granularity, lead
time, horizon cut; EASY backfill against an independent reference implementation."""

import heapq
import math

import numpy as np
import pytest
from helpers import cloud, jobs_of, owned, scenario

import costsim

# Two 8-GPU nodes. A holds one node 0-10 h; B needs both nodes; C is small and short; D is a
# whole node for 20 h. Times in hours.
ROWS = [(0, 8, 10, "A", 0), (1, 16, 5, "B", 0), (2, 4, 3, "C", 0), (2.5, 8, 20, "D", 1)]
COLS = ("submit_h", "gpus", "duration_h", "job_id", "priority")


def starts(tmp_path, scheduler):
    res = costsim.simulate(scenario(tmp_path, ROWS, [owned(scheduler=scheduler)], columns=COLS))
    j = jobs_of(res, "own")
    return dict(zip(j.job_id, zip(j.start_h, j.end_h, strict=True), strict=True))


def test_fifo_blocks_behind_the_head(tmp_path):
    # B waits for A (10 h); C and D wait behind B although they would fit (head-of-line blocking).
    assert starts(tmp_path, "fifo") == {"A": (0, 10), "B": (10, 15), "C": (15, 18), "D": (15, 35)}


def test_backfill_fills_holes_without_delaying_the_head(tmp_path):
    # B is reserved at 10 h. C (ends at 5 <= 10) backfills at 2 h. D would still hold a node at
    # 10 h, which B needs, so D waits until B is done.
    assert starts(tmp_path, "backfill") == {"A": (0, 10), "B": (10, 15), "C": (2, 5), "D": (15, 35)}


def test_priority_first_then_submit_order(tmp_path):
    # D (priority 1) overtakes B and C and takes the free node at 2.5 h. B needs both nodes: at
    # 22.5 h. C (same priority as B, later) waits behind B: strict order.
    assert starts(tmp_path, "priority") == {"A": (0, 10), "B": (22.5, 27.5), "C": (27.5, 30.5), "D": (2.5, 22.5)}


def test_jobs_over_one_node_take_whole_nodes(tmp_path):
    # 12 GPUs on 8-GPU nodes hold two whole nodes: 16 GPUs × 2 h = 32 GPU-h. At 0.5 h a 4-GPU
    # job takes half the third node, so the 8-GPU job (one whole node) waits until it ends at 1.5 h.
    res = costsim.simulate(scenario(tmp_path, [(0, 12, 2), (0.5, 4, 1), (0.5, 8, 1)], [owned(gpus=24)]))
    j = jobs_of(res, "own")
    assert j.gpu_hours.tolist() == [32.0, 4.0, 8.0]
    assert j.start_h.tolist() == [0.0, 0.5, 1.5]


def test_small_jobs_pack_best_fit(tmp_path):
    # Best fit: two 4-GPU jobs share one node, leaving a whole node for the 8-GPU job.
    res = costsim.simulate(scenario(tmp_path, [(0, 4, 5), (0, 4, 5), (0.1, 8, 1)], [owned(gpus=16)]))
    assert jobs_of(res, "own").start_h.tolist() == [0.0, 0.0, 0.1]


def test_nothing_runs_before_the_lead_time(tmp_path):
    res = costsim.simulate(scenario(tmp_path, [(0, 8, 1), (5, 8, 1), (30, 8, 1)], [owned(lead_time_days=1)]))
    j = jobs_of(res, "own")
    assert j.start_h.tolist() == [24.0, 24.0, 30.0]
    ts = res.timeseries
    assert (ts.capacity_gpus[ts.hour < 24] == 0).all() and (ts.capacity_gpus[ts.hour >= 24] == 16).all()


# Tranches: 8 GPUs (one node) ordered at the start, 8 more ordered on day 1; lead time 6 h: the
# cluster has one node from 6 h and two from 30 h.
TRANCHES = [{"gpus": 8, "order_day": 0}, {"gpus": 8, "order_day": 1}]


@pytest.mark.parametrize("scheduler", ["fifo", "backfill"])
def test_capacity_grows_at_each_delivery(tmp_path, scheduler):
    # W (16 GPUs, both nodes) arrives at 0 h and starts exactly at the second delivery, 30 h. X (one
    # node, 2 h) arrives at 7 h: fifo holds it behind W until W ends at 40 h; backfill runs it on the
    # first node at 7 h, as it ends (9 h) before W's reservation at the delivery.
    rows = [(0, 16, 10, "W", 0), (7, 8, 2, "X", 0)]
    opt = owned(gpus_per_node=8, lead_time_days=0.25, scheduler=scheduler, tranches=TRANCHES)
    del opt["gpus"]  # the tranches' total
    res = costsim.simulate(scenario(tmp_path, rows, [opt], columns=COLS))
    got = dict(zip(jobs_of(res, "own").job_id, jobs_of(res, "own").start_h, strict=True))
    assert got == {"W": 30.0, "X": 40.0 if scheduler == "fifo" else 7.0}
    ts = res.timeseries
    assert (ts.capacity_gpus[ts.hour < 6] == 0).all()
    assert (ts.capacity_gpus[(ts.hour >= 6) & (ts.hour < 30)] == 8).all()
    assert (ts.capacity_gpus[ts.hour >= 30] == 16).all()


def test_backfill_does_not_take_a_node_the_delivery_owes_the_head(tmp_path):
    # As above, but X runs 30 h: started at 7 h it would hold the first node past W's start at the
    # delivery (30 h), so backfill keeps it waiting until W ends (40 h).
    rows = [(0, 16, 10, "W", 0), (7, 8, 30, "X", 0)]
    opt = owned(gpus=16, gpus_per_node=8, lead_time_days=0.25, scheduler="backfill", tranches=TRANCHES)
    res = costsim.simulate(scenario(tmp_path, rows, [opt], columns=COLS))
    got = dict(zip(jobs_of(res, "own").job_id, jobs_of(res, "own").start_h, strict=True))
    assert got == {"W": 30.0, "X": 40.0}


def test_nodes_not_yet_delivered_neither_fail_nor_come_early(tmp_path):
    # Two nodes from 6 h, two more from 30 h; a node fails every ~2.4 h per node and is out 3 h.
    # Were an undelivered node drawn to fail, its repair would bring it in before its delivery.
    rows = [(k * 0.5, 8 * (1 + k % 2), 1.5, f"J{k}", 0) for k in range(80)]
    fail = {"node_failures_per_1000_node_days": 10_000, "repair_hours": 3}
    opt = owned(gpus=32, gpus_per_node=8, lead_time_days=0.25, failures=fail,
                tranches=[{"gpus": 16, "order_day": 0}, {"gpus": 16, "order_day": 1}])
    res = costsim.simulate(scenario(tmp_path, rows, [opt], columns=COLS, horizon_days=3))
    ts = res.timeseries
    delivered = np.where(ts.hour < 6, 0, np.where(ts.hour < 30, 16, 32))
    assert (ts.capacity_gpus <= delivered).all()
    assert (ts.capacity_gpus[ts.hour < 30] < 16).any()  # failures did strike the first tranche
    assert (ts.capacity_gpus[ts.hour >= 30] > 16).any()  # and the second came in
    assert (ts.busy_gpus <= ts.capacity_gpus + 1e-9).all()


@pytest.mark.parametrize(("max_wait_h", "where", "start_h"), [(4, "cloud", 4.0), (48, "own", 24.0)])
def test_a_hybrid_waits_for_a_delivery_or_bursts(tmp_path, max_wait_h, where, start_h):
    # No lead time: the base has one node from 0 h and two from 24 h. W needs both: waiting 4 h it
    # bursts at 4 h (on-demand, no provisioning delay); waiting 48 h it starts on the base at 24 h.
    base = owned(gpus=16, gpus_per_node=8, lead_time_days=0, tranches=TRANCHES)
    hyb = {"name": "hyb", "kind": "hybrid", "base": "own", "burst": "cloud", "max_wait_h": max_wait_h}
    res = costsim.simulate(scenario(tmp_path, [(0, 16, 10, "W", 0)], [base, cloud(), hyb], columns=COLS))
    j = jobs_of(res, "hyb")
    assert (j.ran_on[0], j.start_h[0]) == (where, start_h)


def test_a_job_larger_than_the_final_cluster_is_still_refused(tmp_path):
    opt = owned(gpus=16, gpus_per_node=8, tranches=TRANCHES)
    with pytest.raises(costsim.ScenarioError, match="needs 24 GPUs but option 'own' has 16 GPUs"):
        scenario(tmp_path, [(0, 24, 1, "Y", 0)], [opt], columns=COLS)


def test_horizon_cuts_jobs(tmp_path):
    # Horizon 1 day: the first job ends at 30 h (running at the horizon), the second never starts.
    res = costsim.simulate(scenario(tmp_path, [(6, 16, 24), (7, 16, 1)], [owned()], horizon_days=1))
    j = jobs_of(res, "own")
    assert j.completed.tolist() == [False, False]
    assert j.start_h[0] == 6 and math.isnan(j.end_h[0]) and j.gpu_hours[0] == 16 * 18
    assert math.isnan(j.start_h[1]) and j.queue_delay_h[1] == 24 - 7  # censored: delay so far
    assert res.summary.jobs_completed[0] == 0


def test_checkpoint_writes_lengthen_runs(tmp_path):
    # every 2 h, 3 min writes: a 5 h job writes at 2 h and 4 h (5.1 h); a 4 h job once (4.05 h).
    res = costsim.simulate(scenario(tmp_path, [(0, 8, 5), (0, 8, 4)], [owned()],
                                    workload={"checkpoint": {"every_hours": 2, "write_minutes": 3}}))
    j = jobs_of(res, "own")
    assert (j.end_h - j.start_h).tolist() == pytest.approx([5.1, 4.05], abs=1e-12)


# -- EASY backfill against a reference written from the textbook definition --------------------

def reference_easy(submit, gpus, dur, capacity):
    """Count-based EASY backfill (Lifka 1995): start in order while the head fits; when it does
    not, reserve its start at the earliest time enough running jobs end, and start a later job
    now if it fits and either ends by then or uses only GPUs the head will not need."""
    n = len(submit)
    start = [math.nan] * n
    queue, running, free, nxt, t = [], [], capacity, 0, 0.0
    while nxt < n or queue:
        times = [submit[nxt]] if nxt < n else []
        if running:
            times.append(running[0][0])
        t = min(times)
        while running and running[0][0] <= t:
            free += heapq.heappop(running)[1]
        while nxt < n and submit[nxt] <= t:
            queue.append(nxt)
            nxt += 1
        while queue and gpus[queue[0]] <= free:
            i = queue.pop(0)
            start[i] = t
            free -= gpus[i]
            heapq.heappush(running, (t + dur[i], gpus[i]))
        if queue:
            avail, shadow = free, None
            for end, g in sorted(running):
                avail += g
                if avail >= gpus[queue[0]]:
                    shadow, extra = end, avail - gpus[queue[0]]
                    break
            for i in list(queue[1:]):
                if gpus[i] <= free and (t + dur[i] <= shadow or gpus[i] <= extra):
                    if t + dur[i] > shadow:
                        extra -= gpus[i]
                    queue.remove(i)
                    start[i] = t
                    free -= gpus[i]
                    heapq.heappush(running, (t + dur[i], gpus[i]))
    return start


@pytest.mark.parametrize("seed", range(6))
def test_backfill_matches_reference(tmp_path, seed):
    rng = np.random.default_rng(seed)
    n, cap = 300, 12
    submit = np.sort(rng.uniform(0, 200, n)).round(3)
    gpus = rng.integers(1, cap + 1, n)
    dur = rng.exponential(4.0, n).round(3) + 0.01
    rows = list(zip(submit, gpus, dur, strict=True))
    # One GPU per node makes placement irrelevant, so counts decide, as in the reference.
    res = costsim.simulate(scenario(tmp_path, rows, [owned(gpus=cap, gpus_per_node=1, scheduler="backfill")],
                                    horizon_days=1000))
    got = jobs_of(res, "own").start_h.to_numpy()
    want = reference_easy(submit.tolist(), gpus.tolist(), dur.tolist(), cap)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    # Backfilling started some job out of order, or this test would not test it.
    assert (np.diff(got) < 0).any()
