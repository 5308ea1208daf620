"""Response-length ``max`` is a generation cap: lengths are min(L, max), L ~ lognormal(mean, cv),
so the cap carries probability P(L ≥ max). Closed forms written here, not taken from the code."""

import math

import numpy as np
import pytest

import costsim
from costsim import workload
from costsim.cli import phase_table
from costsim.scenario import scenario_from_data
from helpers import owned

MEAN, CV, CAP = 1000.0, 1.0, 1425.0  # P(L ≥ 1,425) ≈ 0.2: the cap binds often


def phi(x: float) -> float:
    """Standard normal CDF."""
    return 0.5 * math.erfc(-x / math.sqrt(2))


def lognormal_mu_sigma(mean: float, cv: float) -> tuple[float, float]:
    s2 = math.log(1 + cv * cv)
    return math.log(mean) - s2 / 2, math.sqrt(s2)


def capped_moments(mean: float, cv: float, cap: float) -> tuple[float, float, float]:
    """P(L ≥ cap), E[min(L, cap)] and Var[min(L, cap)] for lognormal L, in closed form:
    E[L^k; L < c] = e^{kμ + k²σ²/2} Φ(z − kσ) with z = (ln c − μ)/σ, plus c^k · P(L ≥ c)."""
    mu, sigma = lognormal_mu_sigma(mean, cv)
    z = (math.log(cap) - mu) / sigma
    p = 1 - phi(z)
    m1 = math.exp(mu + sigma**2 / 2) * phi(z - sigma) + cap * p
    m2 = math.exp(2 * mu + 2 * sigma**2) * phi(z - 2 * sigma) + cap**2 * p
    return p, m1, m2 - m1 * m1


def test_closed_form_by_hand():
    # σ = √ln 2 = 0.832555, μ = ln 1000 − ln 2 / 2 = 6.561182, z = (ln 1425 − μ)/σ = 0.841681:
    # P(L ≥ cap) = 1 − Φ(0.841681) = 0.19998; E[L; L < cap] = 1000 · Φ(z − σ) = 1000 · Φ(0.009126)
    # = 503.64; E[min(L, cap)] = 503.64 + 1425 × 0.19998 = 788.62 (conditioned: 503.64 / 0.8 = 629.5).
    p, m1, _ = capped_moments(MEAN, CV, CAP)
    assert p == pytest.approx(0.19998, abs=1e-5)
    assert m1 == pytest.approx(788.62, abs=0.01)


@pytest.mark.parametrize("n", [16, 256])  # the lengths under the cap summed exactly, and by the CLT
def test_mean_sum_is_n_times_the_mean_capped_length(n):
    # Truncating (conditioning) at the cap gives n · E[L | L < cap] ≈ n × 629; capping gives
    # n · E[min(L, cap)] ≈ n × 788.
    from costsim.sampling import length_draws

    iterations = 20_000
    s, m, _ = length_draws(np.random.default_rng(11), n, MEAN, CV, CAP, iterations)
    p, m1, var = capped_moments(MEAN, CV, CAP)
    assert s.mean() == pytest.approx(n * m1, abs=5 * math.sqrt(n * var / iterations))
    assert s.var() == pytest.approx(n * var, rel=0.05)
    # The longest response is the cap unless none of the n reached it: 1 − (1 − p)^n.
    hit = 1 - (1 - p) ** n
    assert (m == CAP).mean() == pytest.approx(hit, abs=5 * math.sqrt(hit * (1 - hit) / iterations) + 1e-9)


def test_capped_count_is_binomial():
    from costsim.sampling import length_draws

    n, iterations = 40, 20_000
    d = length_draws(np.random.default_rng(12), n, MEAN, CV, CAP, iterations)
    p, _, _ = capped_moments(MEAN, CV, CAP)
    assert d.capped.mean() == pytest.approx(n * p, abs=5 * math.sqrt(n * p * (1 - p) / iterations))
    assert d.capped.var() == pytest.approx(n * p * (1 - p), rel=0.05)


def test_default_cap_is_reached_in_most_iterations():
    # DESIGN's defaults (mean 2,000, cv 1, cap 16,384): P(L ≥ cap) ≈ 0.0016, yet with n = 2,048
    # responses the cap is reached in 1 − (1 − p)^2048 ≈ 96 % of iterations.
    from costsim.sampling import length_draws

    n, iterations = 2048, 4000
    s, m, _ = length_draws(np.random.default_rng(13), n, 2000, 1.0, 16384, iterations)
    p, m1, var = capped_moments(2000, 1.0, 16384)
    assert p == pytest.approx(0.00163, rel=0.02)
    assert s.mean() == pytest.approx(n * m1, abs=5 * math.sqrt(n * var / iterations))
    hit = 1 - (1 - p) ** n
    assert (m == 16384).mean() == pytest.approx(hit, abs=5 * math.sqrt(hit * (1 - hit) / iterations))


def rl_scenario(tmp_path, response_tokens):
    cls = {"name": "a", "arrivals_per_day": 4, "gpus": 16, "iterations": {"mean": 150, "cv": 0.5},
           "model_params_b": 7, "rollout": {"prompts": 16, "samples_per_prompt": 4, "response_tokens": response_tokens}}
    data = {"name": "capped", "horizon_days": 20, "workload": {"classes": [cls]}, "options": [owned(gpus=64)]}
    return costsim.api.check(scenario_from_data(data, "test", tmp_path), "test")


def test_phases_report_the_share_of_responses_that_hit_the_cap(tmp_path):
    sc = rl_scenario(tmp_path, {"mean": MEAN, "cv": CV, "max": CAP})
    res = costsim.simulate(sc)
    row = res.phases.iloc[0]
    # Realized from the draws: Σ capped over the class's jobs' planned iterations ÷ (iterations × n).
    jobs = workload.generate(sc)
    rows = np.concatenate([np.arange(a, a + k) for a, k in zip(jobs.iter_start, jobs.iterations, strict=True)])
    assert row.capped_share == pytest.approx(jobs.length_capped[rows].sum() / (len(rows) * 64), rel=1e-12)
    # ... and, over ~3,000 iterations × 64 responses, close to P(L ≥ cap).
    p, _, _ = capped_moments(MEAN, CV, CAP)
    assert row.capped_share == pytest.approx(p, abs=5 * math.sqrt(p * (1 - p) / (len(rows) * 64)))
    assert "capped" in [c.header for c in phase_table(res.phases).columns]


def test_fixed_lengths_are_never_capped(tmp_path):
    res = costsim.simulate(rl_scenario(tmp_path, 800))
    assert res.phases.capped_share.tolist() == [0.0]
