"""Compound yearly trends (``costsim.models.trend``) and the growing week profile's integral
(``costsim.models.profiles.grown_week_integral``) against hand-worked closed forms.

Truth: (1 + g)^(t / 8760) integrated by hand, ∫₀ᵀ aᵗ dt = (aᵀ − 1) / ln a (t in years, times 8760
for hours), and a profile's integral summed hour by hour in plain Python with that formula for
each hour, never with the module's geometric series.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from costsim.models import trend
from costsim.models.profiles import grown_week_integral, grown_week_integral_inverse, week_integral

YEAR_H = 8760.0


def test_per_hour_rate_compounds_to_the_yearly_change():
    k = trend.per_hour(0.8)
    assert math.exp(k * YEAR_H) == pytest.approx(1.8, rel=1e-14)
    assert trend.factor(2 * YEAR_H, k) == pytest.approx(1.8**2, rel=1e-13)
    assert trend.factor(YEAR_H / 2, trend.per_hour(-0.19)) == pytest.approx(0.9, rel=1e-13)  # √0.81


def test_clock_is_the_integral_of_the_trend_worked_by_hand():
    # ∫₀² 1.8^t dt years = (1.8² − 1) / ln 1.8 = 2.24 / 0.587787 = 3.81090 years of today's level.
    k = trend.per_hour(0.8)
    assert trend.clock(2 * YEAR_H, k) == pytest.approx(YEAR_H * (1.8**2 - 1) / math.log(1.8), rel=1e-13)
    assert trend.clock(2 * YEAR_H, k) / YEAR_H == pytest.approx(3.810905, rel=1e-6)
    # falling: ∫₀¹ 0.8^t dt = (0.8 − 1) / ln 0.8 = 0.896284 years
    assert trend.clock(YEAR_H, trend.per_hour(-0.2)) / YEAR_H == pytest.approx(0.896284, rel=1e-6)


@pytest.mark.parametrize("g", [0.8, -0.5, 1e-12, 10.0])
def test_clock_inverse_undoes_the_clock(g):
    k = trend.per_hour(g)
    t = np.array([0.0, 1.5, 4000.0, 3 * YEAR_H])
    np.testing.assert_allclose(trend.clock_inverse(trend.clock(t, k), k), t, rtol=1e-12, atol=1e-9)


def test_no_trend_returns_its_argument_unchanged():
    t = np.array([0.0, 1.25, 99.0])
    assert trend.clock(t, 0.0) is t and trend.clock_inverse(t, 0.0) is t
    assert trend.factor(5.0, 0.0) == 1.0


def test_a_falling_clock_never_passes_its_limit():
    k = trend.per_hour(-0.5)
    limit = -1.0 / k  # ∫₀^∞ e^(k·t) dt
    assert trend.clock_inverse(limit * 1.0001, k) == math.inf
    assert np.isinf(trend.clock_inverse(np.array([limit, limit * 2]), k)).all()


def hour_by_hour(t: float, week: np.ndarray, k: float) -> float:
    """∫₀ᵗ week[⌊u⌋ mod 168] · e^(k·u) du, one hour at a time: w · (e^(k·b) − e^(k·a)) / k."""
    total, a = 0.0, 0.0
    while a < t:
        b = min(math.floor(a) + 1.0, t)
        total += week[int(math.floor(a)) % 168] * (math.exp(k * b) - math.exp(k * a)) / k
        a = b
    return total


PROFILE = np.array([0.0] * 8 + [3.0] * 10 + [1.0] * 6)  # a day: nothing 00:00-08:00
WEEK = np.concatenate([PROFILE * w for w in (2, 2, 2, 2, 2, 0.5, 0.5)])


@pytest.mark.parametrize("g", [0.8, -0.6, 4.0])
@pytest.mark.parametrize("t", [0.0, 5.5, 8.25, 167.9, 168.0, 1000.3, 2 * 8760 + 37.75])
def test_grown_week_integral_is_the_hour_by_hour_sum(g, t):
    k = trend.per_hour(g)
    assert grown_week_integral(t, WEEK, k) == pytest.approx(hour_by_hour(t, WEEK, k), rel=1e-11, abs=1e-12)


@pytest.mark.parametrize("g", [0.8, -0.6, 4.0])
def test_grown_week_integral_inverse_lands_on_the_time(g):
    k = trend.per_hour(g)
    # times in hours of positive rate (08:00-24:00), over several weeks and years
    t = np.array([8.0, 8.5, 17.99, 200.25, 5000.6, 2 * 8760 + 12.5])
    y = np.array([hour_by_hour(x, WEEK, k) for x in t])
    np.testing.assert_allclose(grown_week_integral_inverse(y, WEEK, k), t, rtol=1e-10, atol=1e-7)


def test_inverse_skips_hours_of_rate_zero():
    k = trend.per_hour(0.8)
    y = grown_week_integral(8.0, WEEK, k)  # the integral is flat from 00:00 to 08:00 of each day
    assert float(grown_week_integral_inverse(y + 1e-9, WEEK, k)) == pytest.approx(8.0, abs=1e-6)
    # from day 2's 00:00 the integral is flat until 08:00: the inverse of its level is 08:00 (24 + 8)
    y = grown_week_integral(24.0, WEEK, k)
    assert float(grown_week_integral_inverse(y, WEEK, k)) == pytest.approx(32.0, abs=1e-9)


def test_tiny_growth_is_the_flat_week_integral():
    t = np.array([3.0, 170.5, 4000.0])
    np.testing.assert_allclose(grown_week_integral(t, WEEK, trend.per_hour(1e-12)), week_integral(t, WEEK),
                               rtol=1e-9)


def test_between_is_the_integral_over_an_interval():
    # ∫ from year 1 to year 1.5 of 1.8^t dt = (1.8^1.5 − 1.8) / ln 1.8 years
    k = trend.per_hour(0.8)
    assert trend.between(YEAR_H, 1.5 * YEAR_H, k) == pytest.approx(YEAR_H * (1.8**1.5 - 1.8) / math.log(1.8), rel=1e-13)
    a, b = np.array([0.0, 10.0]), np.array([5.0, 10.5])
    assert np.array_equal(trend.between(a, b, 0.0), b - a)
