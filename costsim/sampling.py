"""Random draws the workload needs, each from an explicit ``numpy.random.Generator``.

Response lengths: an RL iteration samples n = prompts × samples responses whose lengths are
lognormal(mean, cv) truncated at ``max``. The model needs only each iteration's maximum and sum,
so they are drawn directly instead of drawing n lengths:

- the maximum exactly, by inverse CDF: max of n i.i.d. draws = F⁻¹(U^{1/n});
- the sum as that maximum plus the other n − 1 lengths, which are i.i.d. given the maximum m and
  distributed as the length conditioned to be ≤ m: drawn exactly when n − 1 < ``EXACT_BELOW``,
  else by the central limit theorem from the closed-form truncated-lognormal mean and variance.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr, ndtri

EXACT_BELOW = 64


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


def poisson_times(rng: np.random.Generator, per_h: float, start_h: float, end_h: float) -> np.ndarray:
    """Sorted arrival times of a Poisson process of rate ``per_h`` on [start_h, end_h)."""
    span = max(end_h - start_h, 0.0)
    return np.sort(rng.uniform(start_h, start_h + span, rng.poisson(per_h * span)))


def truncated_moments(mu: float, sigma: float, cap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of lognormal(μ, σ) conditioned on X ≤ cap."""
    a = (np.log(cap) - mu) / sigma
    pa = ndtr(a)
    m1 = np.exp(mu + sigma**2 / 2) * ndtr(a - sigma) / pa
    m2 = np.exp(2 * mu + 2 * sigma**2) * ndtr(a - 2 * sigma) / pa
    return m1, np.maximum(m2 - m1 * m1, 0.0)


def length_sum_max(
    rng: np.random.Generator, n: int, mean: float, cv: float, cap: float, iterations: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per iteration, the sum and the maximum of ``n`` response lengths (tokens)."""
    if cv == 0:
        length = min(float(mean), float(cap))
        return np.full(iterations, n * length), np.full(iterations, length)
    mu, sigma = lognormal_params(mean, cv)
    f_cap = ndtr((np.log(cap) - mu) / sigma)
    # 1 − U^{1/n}·F(cap), computed without cancellation, then the upper-tail quantile.
    u = rng.uniform(size=iterations)
    tail = (1.0 - f_cap) + f_cap * -np.expm1(np.log(u) / n)
    top = np.minimum(np.exp(mu - sigma * ndtri(tail)), cap)
    rest = n - 1
    if rest == 0:
        return top.copy(), top
    if rest < EXACT_BELOW:
        below = ndtr((np.log(top) - mu) / sigma)
        v = rng.uniform(size=(iterations, rest)) * below[:, None]
        others = np.exp(mu + sigma * ndtri(v)).sum(axis=1)
    else:
        m1, var = truncated_moments(mu, sigma, top)
        others = np.clip(rng.normal(rest * m1, np.sqrt(rest * var)), 0.0, rest * top)
    return top + others, top
