"""Response-length ``max`` is a generation cap: lengths are min(L, max), L ~ lognormal(mean, cv),
so the cap carries probability P(L ≥ max). Closed forms written here, not taken from the code."""

import math

import numpy as np
import pytest
from helpers import owned

import costsim
from costsim.cli.tables import phase_table
from costsim.scenario import scenario_from_data
from costsim.workload import jobs as workload

MEAN, CV, CAP = 1000.0, 1.0, 1425.0  # P(L ≥ 1,425) ≈ 0.2: the cap binds often


def phi(x: float) -> float:
    """Standard normal CDF."""
    return 0.5 * math.erfc(-x / math.sqrt(2))


def lognormal_mu_sigma(mean: float, cv: float) -> tuple[float, float]:
    s2 = math.log(1 + cv * cv)
    return math.log(mean) - s2 / 2, math.sqrt(s2)


def capped_power_mean(mean: float, cv: float, cap: float, k: int) -> float:
    """E[min(L, cap)^k] for lognormal L: the lognormal truncated below the cap plus the cap's mass,
    E[L^k; L < c] + c^k · P(L ≥ c), with E[L^k; L < c] = e^{kμ + k²σ²/2} Φ(z − kσ), z = (ln c − μ)/σ."""
    mu, sigma = lognormal_mu_sigma(mean, cv)
    z = (math.log(cap) - mu) / sigma
    return math.exp(k * mu + k * k * sigma**2 / 2) * phi(z - k * sigma) + cap**k * (1 - phi(z))


def capped_moments(mean: float, cv: float, cap: float) -> tuple[float, float, float]:
    """P(L ≥ cap), E[min(L, cap)] and Var[min(L, cap)] for lognormal L, in closed form."""
    mu, sigma = lognormal_mu_sigma(mean, cv)
    p = 1 - phi((math.log(cap) - mu) / sigma)
    m1, m2 = capped_power_mean(mean, cv, cap, 1), capped_power_mean(mean, cv, cap, 2)
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
    from costsim.models.sampling import length_draws

    iterations = 20_000
    s, m, _, _ = length_draws(np.random.default_rng(11), n, MEAN, CV, CAP, iterations)
    p, m1, var = capped_moments(MEAN, CV, CAP)
    assert s.mean() == pytest.approx(n * m1, abs=5 * math.sqrt(n * var / iterations))
    assert s.var() == pytest.approx(n * var, rel=0.05)
    # The longest response is the cap unless none of the n reached it: 1 − (1 − p)^n.
    hit = 1 - (1 - p) ** n
    assert (m == CAP).mean() == pytest.approx(hit, abs=5 * math.sqrt(hit * (1 - hit) / iterations) + 1e-9)


def test_capped_count_is_binomial():
    from costsim.models.sampling import length_draws

    n, iterations = 40, 20_000
    d = length_draws(np.random.default_rng(12), n, MEAN, CV, CAP, iterations)
    p, _, _ = capped_moments(MEAN, CV, CAP)
    assert d.capped.mean() == pytest.approx(n * p, abs=5 * math.sqrt(n * p * (1 - p) / iterations))
    assert d.capped.var() == pytest.approx(n * p * (1 - p), rel=0.05)


def test_default_cap_is_reached_in_most_iterations():
    # DESIGN's defaults (mean 2,000, cv 1, cap 16,384): P(L ≥ cap) ≈ 0.0016, yet with n = 2,048
    # responses the cap is reached in 1 − (1 − p)^2048 ≈ 96 % of iterations.
    from costsim.models.sampling import length_draws

    n, iterations = 2048, 4000
    s, m, _, _ = length_draws(np.random.default_rng(13), n, 2000, 1.0, 16384, iterations)
    p, m1, var = capped_moments(2000, 1.0, 16384)
    assert p == pytest.approx(0.00163, rel=0.02)
    assert s.mean() == pytest.approx(n * m1, abs=5 * math.sqrt(n * var / iterations))
    hit = 1 - (1 - p) ** n
    assert (m == 16384).mean() == pytest.approx(hit, abs=5 * math.sqrt(hit * (1 - hit) / iterations))


# --- Σ L² per iteration (the drain's KV term) ----------------------------------------------------

def test_capped_second_moment_by_hand():
    # E[min(L, c)²] = e^{2μ + 2σ²} Φ(z − 2σ) + c² p with e^{2μ + 2σ²} = mean² (1 + cv²) = 2e6,
    # 2e6 × Φ(0.841681 − 1.665109) = 2e6 × Φ(−0.823428) = 2e6 × 0.205132 = 410,265, plus
    # 1,425² × 0.199981 = 406,091: 816,356 tokens² (uncapped: 2,000,000).
    assert capped_power_mean(MEAN, CV, CAP, 2) == pytest.approx(816_356, rel=1e-5)


# n = 16: the lengths under the cap are drawn exactly; 256: by the CLT; 72: around EXACT_BELOW.
@pytest.mark.parametrize("n", [16, 72, 256])
def test_mean_square_sum_is_n_times_the_capped_second_moment(n):
    from costsim.models.sampling import length_draws

    iterations = 20_000
    d = length_draws(np.random.default_rng(21), n, MEAN, CV, CAP, iterations)
    m2, m4 = capped_power_mean(MEAN, CV, CAP, 2), capped_power_mean(MEAN, CV, CAP, 4)
    # Σ L² of n i.i.d. min(L, cap): mean n · E[min²], variance n · (E[min⁴] − E[min²]²).
    assert d.length_sq_sum.mean() == pytest.approx(n * m2, abs=5 * math.sqrt(n * (m4 - m2 * m2) / iterations))
    assert d.length_sq_sum.var() == pytest.approx(n * (m4 - m2 * m2), rel=0.06)
    # Σ L and Σ L² covary as n · (E[min³] − E[min] E[min²]) — the CLT draws them jointly.
    m1, m3 = capped_power_mean(MEAN, CV, CAP, 1), capped_power_mean(MEAN, CV, CAP, 3)
    corr = (m3 - m1 * m2) / math.sqrt((m2 - m1 * m1) * (m4 - m2 * m2))
    assert np.corrcoef(d.length_sum, d.length_sq_sum)[0, 1] == pytest.approx(corr, abs=0.03)


def brute_force_square_sums(rng, n, mean, cv, cap, iterations):
    """n lognormal lengths per iteration, cut at the cap, squared and summed: the obvious way."""
    mu, sigma = lognormal_mu_sigma(mean, cv)
    x = np.minimum(rng.lognormal(mu, sigma, (iterations, n)), cap)
    return (x * x).sum(axis=1)


@pytest.mark.parametrize("n, mean, cv, cap", [(16, MEAN, CV, CAP), (256, MEAN, CV, CAP), (2048, 2000, 1.0, 16384),
                                              (40, 1000, 1.5, 8000)])
def test_square_sum_variance_matches_brute_force(n, mean, cv, cap):
    from costsim.models.sampling import length_draws

    iterations = 4000
    got = length_draws(np.random.default_rng(22), n, mean, cv, cap, iterations).length_sq_sum
    brute = brute_force_square_sums(np.random.default_rng(23), n, mean, cv, cap, iterations)
    assert got.var() == pytest.approx(brute.var(), rel=0.12)
    assert got.mean() == pytest.approx(brute.mean(), rel=0.02)


CASES = [(1, 1000, 1.0, 1425), (3, 100, 1.0, 300), (16, MEAN, CV, CAP), (63, 500, 2.0, 600), (64, 500, 2.0, 600),
         (72, 1000, 1.0, 1900), (256, MEAN, CV, CAP), (2048, 2000, 1.0, 16384), (4096, 50, 0.1, 16384),
         (500, 3000, 1.0, 2048), (100, 800, 0.0, 2048), (100, 3000, 0.0, 2048),
         # caps far beyond reach: the others are conditioned below the sampled maximum, a heavy tail
         # where the normal approximation of Σ L² alone would often fall under (Σ L)² / n
         (70, 1000, 2.0, 1e7), (200, 1000, 1.0, 1e7)]


@pytest.mark.parametrize("n, mean, cv, cap", CASES)
def test_square_sum_within_its_bounds(n, mean, cv, cap):
    # Cauchy–Schwarz: (Σ L)² / n ≤ Σ L²; every L ≤ max L: Σ L² ≤ max L · Σ L.
    from costsim.models.sampling import length_draws

    d = length_draws(np.random.default_rng(24), n, mean, cv, cap, 5000)
    assert (d.length_sum**2 / n <= d.length_sq_sum * (1 + 1e-12)).all()
    assert (d.length_sq_sum <= d.length_max * d.length_sum * (1 + 1e-12)).all()
    assert d.length_sq_sum.shape == d.length_sum.shape


def below_bound(count, cv, z, rows=20_000):
    """sum_below for ``rows`` rows of ``count`` lognormal(mean 1,000, cv) lengths ≤ the bound
    b = e^{μ + zσ}: (b, Σ X, Σ X²)."""
    from costsim.models.sampling import sum_below

    mu, sigma = lognormal_mu_sigma(1000, cv)
    bound = math.exp(mu + z * sigma)
    s, q = sum_below(np.random.default_rng(25), mu, sigma, np.full(rows, bound), np.full(rows, count))
    return bound, s, q


@pytest.mark.parametrize("count", [64, 65, 200])
@pytest.mark.parametrize("cv, z", [(1.0, 2.0), (2.0, 2.0), (2.0, 4.0), (0.1, -3.0)])
def test_lengths_below_a_bound_keep_their_bounds(count, cv, z):
    # By the CLT (count ≥ EXACT_BELOW), count lengths ≤ b keep (Σ X)² / count ≤ Σ X² ≤ b Σ X. With
    # heavy tails and the bound far above the median (cv 2, z = 4) a normal Σ X² alone falls under
    # (Σ X)² / count in about a quarter of the rows at count 64.
    from costsim.models.sampling import EXACT_BELOW

    assert count >= EXACT_BELOW
    bound, s, q = below_bound(count, cv, z)
    assert (s * s / count <= q * (1 + 1e-12)).all() and (q <= bound * s * (1 + 1e-12)).all()


@pytest.mark.parametrize("count", [64, 200])
@pytest.mark.parametrize("cv, z", [(1.0, 2.0), (2.0, 2.0), (0.1, -3.0)])
def test_lengths_below_a_bound_square_to_the_truncated_moment(count, cv, z):
    # E[Σ X²] = count · E[X² | X ≤ b] = count · e^{2μ + 2σ²} Φ(z − 2σ) / Φ(z). (Where the normal
    # approximation is poor — cv 2, z = 4, count 64 — keeping the bounds lifts the mean ~19 %.)
    mu, sigma = lognormal_mu_sigma(1000, cv)
    _, _, q = below_bound(count, cv, z)
    m2 = math.exp(2 * mu + 2 * sigma**2) * phi(z - 2 * sigma) / phi(z)
    assert q.mean() == pytest.approx(count * m2, rel=0.01)


def test_constant_lengths_square_exactly():
    from costsim.models.sampling import length_draws

    # 100 × 800² = 6.4e7; capped at 2,048: 100 × 2,048² = 419,430,400
    assert length_draws(np.random.default_rng(0), 100, 800, 0.0, 2048, 3).length_sq_sum.tolist() == [6.4e7] * 3
    assert length_draws(np.random.default_rng(0), 100, 3000, 0.0, 2048, 3).length_sq_sum.tolist() == [419_430_400.0] * 3


def rl_scenario(tmp_path, response_tokens):
    cls = {"name": "a", "arrivals_per_day": 4, "gpus": 16, "iterations": {"mean": 150, "cv": 0.5},
           "model_params_b": 7, "rollout": {"prompts": 16, "samples_per_prompt": 4, "response_tokens": response_tokens}}
    data = {"name": "capped", "horizon_days": 20, "workload": {"classes": [cls]}, "options": [owned(gpus=64)]}
    return costsim.runs.api.check(scenario_from_data(data, "test", tmp_path), "test")


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
    assert "capped\n%" in [c.header for c in phase_table(res.phases).columns]


def test_fixed_lengths_are_never_capped(tmp_path):
    res = costsim.simulate(rl_scenario(tmp_path, 800))
    assert res.phases.capped_share.tolist() == [0.0]
