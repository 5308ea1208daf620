"""Closed-form failure model against hand calculations and brute-force Monte Carlo."""

import math

import numpy as np
import pytest

from costsim import reliability as rel


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
