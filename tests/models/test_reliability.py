"""Closed-form failure model against hand calculations and brute-force Monte Carlo."""

import math

import numpy as np
import pytest

from costsim.models import reliability as rel


def test_expected_segment_by_hand():
    # w = 2 h, λ = 0.1/h, R = 0.5 h: (e^0.2 − 1)(10 + 0.5) = 0.2214028 × 10.5 = 2.324729 h
    assert rel.expected_segment_h(2, 0.1, 0.5) == pytest.approx(2.324729, abs=1e-6)
    assert rel.expected_segment_h(2, 0.0, 0.5) == 2  # no failures: just the work
    assert rel.expected_segment_h(2, 1e-9, 0.5) == pytest.approx(2, rel=1e-6)


def test_expected_segment_monte_carlo():
    # Simulate attempts directly: each fails at Exp(λ) if before w, pays R, retries.
    rng = np.random.default_rng(0)
    w, lam, r = 3.0, 0.2, 0.25
    totals = []
    for _ in range(40_000):
        t = 0.0
        while True:
            x = rng.exponential(1 / lam)
            if x >= w:
                t += w
                break
            t += x + r
        totals.append(t)
    assert np.mean(totals) == pytest.approx(rel.expected_segment_h(w, lam, r), rel=0.01)


def test_young_daly_minimises_expected_time():
    work, write, lam, r = 200.0, 0.1, 1 / 20, 0.25
    opt = rel.young_daly_h(write, lam)
    assert opt == pytest.approx(math.sqrt(2 * 0.1 * 20))  # 2 h
    grid = np.linspace(0.3, 12, 200)
    times = [rel.expected_job_h(work, i, write, lam, r) for i in grid]
    best = grid[int(np.argmin(times))]
    assert abs(best - opt) / opt < 0.2  # first-order optimum is close to the exact one
    a = rel.advice(work, 8.0, write, lam, r)
    assert a.optimal_interval_h == pytest.approx(opt) and a.excess > 0.05


def test_job_failure_rate():
    # 128 nodes at 5 failures per 1,000 node-days: 0.64 a day, one every 37.5 h.
    assert 1 / rel.job_failure_rate_per_h(128, 5) == pytest.approx(37.5)


def test_combined_interruptions_by_hand():
    # Failures at 0.01/h costing 0.5 h and preemptions at 0.03/h costing 2.5 h: 0.04/h, and an
    # interruption costs (0.01 × 0.5 + 0.03 × 2.5) / 0.04 = 2.0 h on average.
    rate, cost = rel.combined_interruptions([(0.01, 0.5), (0.03, 2.5)])
    assert rate == pytest.approx(0.04) and cost == pytest.approx(2.0)
    assert rel.combined_interruptions([]) == (0.0, 0.0)
    assert rel.combined_interruptions([(0.0, 3.0)]) == (0.0, 0.0)


def test_two_causes_monte_carlo():
    # Competing causes simulated directly: each attempt ends at the first of two exponentials;
    # that cause's own restart is paid. The closed form with the rate-weighted restart matches.
    rng = np.random.default_rng(1)
    w, (l1, r1), (l2, r2) = 3.0, (0.05, 0.25), (0.15, 2.0)
    totals = []
    for _ in range(40_000):
        t = 0.0
        while True:
            x1, x2 = rng.exponential(1 / l1), rng.exponential(1 / l2)
            x = min(x1, x2)
            if x >= w:
                t += w
                break
            t += x + (r1 if x1 < x2 else r2)
        totals.append(t)
    rate, cost = rel.combined_interruptions([(l1, r1), (l2, r2)])
    assert np.mean(totals) == pytest.approx(rel.expected_segment_h(w, rate, cost), rel=0.01)


ITERATIONS, EVERY = 1200, 300  # a job long enough that Young/Daly's interval fits in it


def advice_scenario(tmp_path, option):
    import costsim
    from costsim.scenario import scenario_from_data

    cls = {"name": "a", "arrivals_per_day": 2, "gpus": 16, "iterations": ITERATIONS, "model_params_b": 7,
           "rollout": {"prompts": 64, "samples_per_prompt": 4, "response_tokens": 1000},
           "checkpoint": {"every_iterations": EVERY, "write_minutes": 6, "restart_minutes": 15}}
    data = {"name": "adv", "horizon_days": 10, "workload": {"classes": [cls]}, "options": [option]}
    return costsim.runs.api.check(scenario_from_data(data, "test", tmp_path), "test")


def hand_expected_job_h(work, interval, write, lam, r):
    """Segments of ``interval`` + write, the last without a write; each (e^{λw} − 1)(1/λ + R)."""
    full = math.ceil(work / interval - 1e-9) - 1
    seg = lambda w: (math.exp(lam * w) - 1) * (1 / lam + r)  # noqa: E731
    return full * seg(interval + write) + seg(work - full * interval)


def test_spot_advice_counts_reacquisition_provisioning_and_startup(tmp_path):
    from helpers import cloud

    import costsim

    spot = cloud("spot", pricing="spot", gpus_per_instance=8, preemptions_per_instance_day=0.6,
                 reacquire_delay_h=1.0, provisioning_delay_h=0.5, startup_h=0.25,
                 failures={"node_failures_per_1000_node_days": 12})
    res = costsim.simulate(advice_scenario(tmp_path, spot))
    row = res.advice.iloc[0]
    # A 16-GPU job holds 2 instances: failures 2 × 12/1000/24 = 0.001/h, preemptions
    # 2 × 0.6/24 = 0.05/h, together 0.051/h. A failure costs the swap 0.5 h + restart 0.25 h =
    # 0.75 h; a preemption reacquire 1 + provisioning 0.5 + startup 0.25 + restart 0.25 = 2.0 h;
    # rate-weighted: (0.001 × 0.75 + 0.05 × 2.0) / 0.051 = 1.975490 h.
    lam, r = 0.051, 0.100750 / 0.051
    assert row.interruptions_per_h == pytest.approx(lam)
    per_iter_h = res.phases.iteration_s.iloc[0] / 3600  # fixed lengths: every iteration alike
    work, interval, write = ITERATIONS * per_iter_h, EVERY * per_iter_h, 0.1
    assert row.expected_job_h == pytest.approx(hand_expected_job_h(work, interval, write, lam, r), rel=1e-9)
    yd = math.sqrt(2 * 0.1 / 0.051)  # Young/Daly: 1.980295 h, shorter than the job
    assert yd < work and row.optimal_interval_h == pytest.approx(1.980295, rel=1e-6)
    assert row.optimal_expected_job_h == pytest.approx(hand_expected_job_h(work, yd, write, lam, r), rel=1e-9)
    assert row.interruption_cost_h == pytest.approx(1.975490, rel=1e-6)


def test_interruption_cost_on_demand_and_owned(tmp_path):
    from helpers import cloud, owned

    import costsim

    od = cloud("od", gpus_per_instance=8, provisioning_delay_h=0.5, startup_h=0.25,
               failures={"node_failures_per_1000_node_days": 12})
    own = owned("own", gpus=64, failures={"node_failures_per_1000_node_days": 12})
    for option, cost in ((od, 0.5 + 0.25), (own, 0.25)):  # node swap + restart; restart only
        row = costsim.simulate(advice_scenario(tmp_path, option)).advice.iloc[0]
        assert row.interruptions_per_h == pytest.approx(2 * 12 / 1000 / 24)
        assert row.interruption_cost_h == pytest.approx(cost)


def test_free_checkpoints_and_huge_segments_have_limits_not_errors():
    # interval → 0 (write 0: checkpoint continuously): nothing is lost, each interruption costs R.
    # 10 h of work at λ = 0.1/h with R = 0.5 h: 10 · (1 + 0.1 · 0.5) = 10.5 h.
    assert rel.expected_job_h(10.0, 0.0, 0.0, 0.1, 0.5) == pytest.approx(10.5)
    assert rel.expected_job_h(10.0, 1e-5, 0.0, 0.1, 0.5) == pytest.approx(10.5, rel=1e-4)  # the limit
    assert rel.advice(10.0, 1.0, 0.0, 0.1, 0.5).optimal_interval_h == 0.0
    # λw = 10⁴: e^{λw} overflows a float; the segment practically never ends.
    assert rel.expected_segment_h(1e4, 1.0, 0.0) == math.inf
    assert rel.advice(1e4, 1e4, 0.1, 1.0, 0.0).excess == math.inf


def test_advice_with_free_checkpoint_writes_runs(tmp_path):
    """``write_minutes: 0`` is valid; with failures it used to crash the advice (ZeroDivisionError)."""
    from helpers import owned

    import costsim
    from costsim.scenario import scenario_from_data

    cls = {"name": "a", "arrivals_per_day": 2, "gpus": 16, "iterations": 400, "model_params_b": 7,
           "rollout": {"prompts": 64, "samples_per_prompt": 4, "response_tokens": 1000},
           "checkpoint": {"every_iterations": 100, "write_minutes": 0, "restart_minutes": 15}}
    option = owned("own", gpus=64, failures={"node_failures_per_1000_node_days": 50})
    data = {"name": "adv", "horizon_days": 2, "workload": {"classes": [cls]}, "options": [option]}
    res = costsim.simulate(costsim.runs.api.check(scenario_from_data(data, "test", tmp_path), "test"))
    assert len(res.advice) == 1 and res.advice.optimal_interval_h.iloc[0] == 0.0
