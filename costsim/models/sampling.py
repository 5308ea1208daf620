"""Random draws the workload needs, each from an explicit ``numpy.random.Generator``.

Response lengths: an RL iteration samples n = prompts × samples responses whose lengths are
min(L, max) with L ~ lognormal(mean, cv): ``max`` is a generation cap, so a response that would
run longer stops at it and the cap itself carries probability p = P(L ≥ max) = 1 − F(max). The
model needs only each iteration's sum, sum of squares and maximum (and we report how many
responses hit the cap), so they are drawn without drawing n lengths:

- the number K of capped responses is Binomial(n, p);
- K ≥ 1: the maximum is the cap; K = 0: the maximum of n lengths conditioned below the cap, by
  inverse CDF, F⁻¹(U^{1/n}·F(max));
- the sum is K·max (or the maximum m, when K = 0) plus the other n − max(K, 1) lengths, which are
  i.i.d. lognormal conditioned to be ≤ m: drawn exactly when there are fewer than ``EXACT_BELOW``
  of them, else by the central limit theorem from the closed-form truncated-lognormal mean and
  variance;
- the sum of squares likewise: exactly from the same lengths, or jointly normal with the sum
  (the closed-form truncated moments E[X^k | X ≤ m], k ≤ 4, give the covariance), drawn after
  the sum so that the sums of a seed do not change; it is kept within its bounds sum²/k ≤ Σ X² ≤
  m · sum.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

EXACT_BELOW = 64


class LengthDraws(NamedTuple):
    """Per iteration: Σ response tokens, the longest response (tokens), how many responses were
    cut at the cap (int32) and Σ of squared response lengths (tokens²)."""

    length_sum: np.ndarray
    length_max: np.ndarray
    capped: np.ndarray
    length_sq_sum: np.ndarray


def ndtr(x):
    """Φ, the standard normal CDF (scipy's), imported on first use: a trace replay never needs
    scipy, whose import holds about 14 MiB (DESIGN.md §11's memory target is for trace replays)."""
    from scipy.special import ndtr as phi

    return phi(x)


def ndtri(p):
    """Φ⁻¹ (scipy's), imported on first use as ``ndtr``."""
    from scipy.special import ndtri as inverse

    return inverse(p)


def lognormal_params(mean: float, cv: float) -> tuple[float, float]:
    """(μ, σ) of the lognormal with this mean and coefficient of variation."""
    sigma2 = np.log1p(cv * cv)
    return float(np.log(mean) - sigma2 / 2), float(np.sqrt(sigma2))


def lognormal(rng: np.random.Generator, n: int, mean: float, cv: float) -> np.ndarray:
    """``n`` draws with the given mean and cv (cv 0: all equal to the mean)."""
    if cv == 0:
        return np.full(n, float(mean))
    mu, sigma = lognormal_params(mean, cv)
    return rng.lognormal(mu, sigma, n)


def truncated_power_mean(mu: float, sigma: float, cap: np.ndarray, k: int) -> np.ndarray:
    """E[X^k | X ≤ cap] for X ~ lognormal(μ, σ): exp(kμ + k²σ²/2) · Φ(a − kσ) / Φ(a), a = (ln cap − μ)/σ."""
    a = (np.log(cap) - mu) / sigma
    return np.exp(k * mu + k * k * sigma**2 / 2) * ndtr(a - k * sigma) / ndtr(a)


def truncated_moments(mu: float, sigma: float, cap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of lognormal(μ, σ) conditioned on X ≤ cap."""
    m1 = truncated_power_mean(mu, sigma, cap, 1)
    m2 = truncated_power_mean(mu, sigma, cap, 2)
    return m1, np.maximum(m2 - m1 * m1, 0.0)


def sum_below(rng: np.random.Generator, mu: float, sigma: float, bound: np.ndarray,
              count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the sum and the sum of squares of ``count`` i.i.d. lognormal(μ, σ) draws
    conditioned to be ≤ ``bound``: exact (inverse CDF) for counts under ``EXACT_BELOW``, else
    jointly normal by the central limit theorem."""
    out = np.zeros(len(bound))
    out_sq = np.zeros(len(bound))
    exact = np.flatnonzero((count > 0) & (count < EXACT_BELOW))
    if len(exact):
        row = np.repeat(np.arange(len(exact)), count[exact])  # one entry per draw, grouped by row
        below = ndtr((np.log(bound[exact]) - mu) / sigma)
        v = rng.uniform(size=len(row)) * below[row]
        x = np.exp(mu + sigma * ndtri(v))
        out[exact] = np.bincount(row, weights=x, minlength=len(exact))
        out_sq[exact] = np.bincount(row, weights=x * x, minlength=len(exact))
    big = np.flatnonzero(count >= EXACT_BELOW)
    if len(big):
        k, top = count[big], bound[big]
        m1, m2, m3, m4 = (truncated_power_mean(mu, sigma, top, j) for j in (1, 2, 3, 4))
        var1, var2, cov = np.maximum(m2 - m1 * m1, 0.0), np.maximum(m4 - m2 * m2, 0.0), m3 - m1 * m2
        raw = rng.normal(k * m1, np.sqrt(k * var1))
        total = np.clip(raw, 0.0, k * top)
        # Σ X² given Σ X: the conditional of the bivariate normal (drawn after every sum).
        slope = np.where(var1 > 0, cov / np.where(var1 > 0, var1, 1.0), 0.0)
        rest = np.maximum(var2 - slope * cov, 0.0)
        sq = rng.normal(k * m2 + slope * (raw - k * m1), np.sqrt(k * rest))
        out[big] = total
        out_sq[big] = np.clip(sq, total * total / k, total * top)
    return out, out_sq


def length_draws(
    rng: np.random.Generator, n: int, mean: float, cv: float, cap: float, iterations: int
) -> LengthDraws:
    """Per iteration, the sum, the maximum and the sum of squares of ``n`` response lengths
    min(L, cap) (tokens), and the number of them that hit the cap. cv 0: every length is
    min(mean, cap), capped when the mean exceeds the cap."""
    if cv == 0:
        length = min(float(mean), float(cap))
        all_capped = n if mean > cap else 0
        return LengthDraws(np.full(iterations, n * length), np.full(iterations, length),
                           np.full(iterations, all_capped, dtype=np.int32), np.full(iterations, n * length * length))
    mu, sigma = lognormal_params(mean, cv)
    p_cap = float(ndtr(-(np.log(cap) - mu) / sigma))  # P(L ≥ cap), without cancellation
    capped = rng.binomial(n, p_cap, iterations)
    # K = 0: the maximum of n lengths conditioned below the cap. Its upper tail
    # 1 − U^{1/n}·F(cap) = p + (1 − p)(1 − U^{1/n}), computed without cancellation.
    u = rng.uniform(size=iterations)
    tail = p_cap + (1.0 - p_cap) * -np.expm1(np.log(u) / n)
    below_max = np.minimum(np.exp(mu - sigma * ndtri(tail)), cap)
    top = np.where(capped > 0, float(cap), below_max)
    at_top = np.maximum(capped, 1)  # the capped responses, or the one maximum below the cap
    others, others_sq = sum_below(rng, mu, sigma, top, n - at_top)
    return LengthDraws(top * at_top + others, top, capped.astype(np.int32), top * top * at_top + others_sq)
