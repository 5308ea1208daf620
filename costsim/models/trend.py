"""Compound yearly trends as continuous exponentials: a workload's growth, a rental price's change.

A quantity that changes by a fraction c per year (c = 0.8: +80 %/yr; c = −0.2: −20 %/yr) is
x(t) = x₀ · (1 + c)^(t / 8760) = x₀ · e^(k·t) with t in hours from the horizon's start and
k = ln(1 + c) / 8760 per hour (a 365-day year, ``units.HOURS_PER_YEAR``). Its integral from 0 is
the trend's **clock**

    clock(t) = ∫₀ᵗ e^(k·u) du = (e^(k·t) − 1) / k   (t itself when k = 0),

in hours of today's level. Every integral of the trend is a difference of clock values, so the
arrivals' time change (``costsim.workload``) and a trended bill (``costsim.results.costing``) are
closed forms, and ``clock_inverse`` undoes it exactly. At k = 0 both return their argument itself,
unchanged, so a scenario without a trend computes exactly what it did before trends existed.
"""

from __future__ import annotations

import math

import numpy as np

from costsim.units import HOURS_PER_YEAR


def per_hour(change_per_year: float) -> float:
    """k, the continuous rate per hour of a compound change of ``change_per_year`` (a fraction
    per year, above −1): ln(1 + c) / 8760."""
    return math.log1p(change_per_year) / HOURS_PER_YEAR


def factor(t_h, k: float):
    """The trend's multiplier at ``t_h`` hours from the start, e^(k·t) = (1 + c)^(t / 8760) (a
    number or array; exactly 1 when k = 0)."""
    if k == 0.0:
        return np.ones_like(np.asarray(t_h, dtype=float)) if np.ndim(t_h) else 1.0
    return np.exp(k * np.asarray(t_h, dtype=float)) if np.ndim(t_h) else math.exp(k * float(t_h))


def clock(t_h, k: float):
    """∫₀ᵗ e^(k·u) du in hours (a number or array): hours at today's level that the trend makes of
    the first ``t_h`` hours. ``t_h`` itself, unchanged, when k = 0."""
    if k == 0.0:
        return t_h
    return np.expm1(k * np.asarray(t_h, dtype=float)) / k


def between(a_h, b_h, k: float):
    """∫ₐᵇ e^(k·u) du = e^(k·a) · clock(b − a) in hours (numbers or arrays): clock(b) − clock(a)
    without cancelling two large clock values; ``b_h − a_h`` when k = 0."""
    if k == 0.0:
        return np.asarray(b_h) - np.asarray(a_h) if np.ndim(a_h) or np.ndim(b_h) else b_h - a_h
    return factor(a_h, k) * clock(np.asarray(b_h, dtype=float) - np.asarray(a_h, dtype=float), k)


def clock_inverse(y, k: float):
    """The hours t at which ``clock(t, k)`` reaches ``y`` (a number or array). ``y`` itself,
    unchanged, when k = 0. A falling trend's clock never passes its limit −1/k: there (or past it)
    the answer is +inf, never reached."""
    if k == 0.0:
        return y
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.log1p(k * np.asarray(y, dtype=float)) / k
    return np.where(np.isnan(t), np.inf, t) if np.ndim(t) else (math.inf if math.isnan(t) else float(t))
