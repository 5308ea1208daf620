"""On-demand cloud: provisioning, billed startup, whole instances, quota, billing to the cent."""

import math

import numpy as np
import pytest
from helpers import cloud, jobs_of, scenario

import costsim


def test_provisioning_then_startup_then_work(tmp_path):
    # Submit at 1 h, 4 GPUs, 2 h of work, on 8-GPU instances; 0.5 h provisioning (not billed),
    # 0.2 h startup (billed): holds 8 GPUs from 1.5 h to 3.7 h.
    res = costsim.simulate(scenario(tmp_path, [(1, 4, 2)], [cloud(provisioning_delay_h=0.5, startup_h=0.2,
                                                                   price_per_gpu_hour=3.0)]))
    j = jobs_of(res, "cloud").iloc[0]
    assert (j.start_h, j.end_h, j.queue_delay_h) == (1.5, pytest.approx(3.7), 0.5)
    assert j.gpu_hours == pytest.approx(8 * 2.2)
    # 2.2 h = 7,920 s, a whole number of minutes: 8 GPUs × 2.2 h × $3 = $52.80
    assert j.cost_usd == pytest.approx(52.80, abs=1e-9)


def test_quota_queues_in_submit_order(tmp_path):
    # Quota 16 GPUs: the second and third jobs wait for the first's release at 5 h.
    res = costsim.simulate(scenario(tmp_path, [(0, 16, 5), (1, 8, 1), (2, 8, 1), (2.5, 1, 1)],
                                    [cloud(max_gpus=16)]))
    j = jobs_of(res, "cloud")
    assert j.start_h.tolist() == [0.0, 5.0, 5.0, 6.0]
    assert j.queue_delay_h.tolist() == [0.0, 4.0, 3.0, 3.5]


def test_unlimited_capacity_never_queues_and_bills_exactly(tmp_path):
    rng = np.random.default_rng(7)
    n = 400
    submit = np.sort(rng.uniform(0, 200, n))
    gpus = rng.choice([1, 4, 8, 12, 64], n)
    dur = rng.lognormal(0, 1.2, n)
    for granularity, minimum in [(1, 60), (3600, 0)]:
        price = 2.37
        res = costsim.simulate(scenario(tmp_path, zip(submit, gpus, dur, strict=True),
                                        [cloud(price_per_gpu_hour=price, billing_granularity_s=granularity,
                                               minimum_billing_s=minimum)], horizon_days=30))
        j = jobs_of(res, "cloud")
        assert j.queue_delay_h.abs().max() < 1e-9
        # Bill by hand, job by job: whole instances × rounded-up seconds × price, to the cent.
        instances = np.ceil(gpus / 8)
        secs = dur * 3600
        billed = np.maximum(np.ceil(secs / granularity - 1e-9) * granularity, minimum)
        want = float((billed / 3600 * instances * 8 * price).sum())
        assert res.summary.total_cost_usd[0] == pytest.approx(want, abs=0.005)
        assert j.cost_usd.sum() == pytest.approx(want, abs=0.005)
        assert res.timeseries.cost_cum_usd.iloc[-1] == pytest.approx(want, abs=0.005)


def test_billing_stops_at_the_horizon(tmp_path):
    # Horizon 1 day; a job from 20 h for 10 h is billed for the 4 h inside the horizon.
    res = costsim.simulate(scenario(tmp_path, [(20, 8, 10)], [cloud(price_per_gpu_hour=1.0)], horizon_days=1))
    j = jobs_of(res, "cloud").iloc[0]
    assert not j.completed and math.isnan(j.end_h)
    assert res.summary.total_cost_usd[0] == pytest.approx(32.0)
