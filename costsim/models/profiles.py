"""Arrival rates that follow a daily and a weekly profile: the rate of each hour of a week, its
integral and the integral's inverse. Shared by the workload fit (``costsim.calibration.fit``) and the
job classes that replay a fit (``costsim.workload.jobclass``, which draws arrivals by the time
change t = Λ⁻¹(S)), so both count expected arrivals the same way."""

from __future__ import annotations

import numpy as np

from costsim.models.trend import clock, clock_inverse, factor
from costsim.scenario.jobclass import DAYS_PER_WEEK, HOURS_PER_DAY, HOURS_PER_WEEK


def week_rates(hourly: np.ndarray, weekly: np.ndarray) -> np.ndarray:
    """The multiplier of each of the 168 hours of a week from Monday 00:00: weekly[day] · hourly[hour]."""
    return np.repeat(np.asarray(weekly, dtype=float), HOURS_PER_DAY) * np.tile(np.asarray(hourly, dtype=float),
                                                                             DAYS_PER_WEEK)


def week_integral(t, week: np.ndarray):
    """∫ from Monday 00:00 to ``t`` hours after it of the hourly rate ``week`` (168 values, repeated
    every week; constant within each hour): whole weeks at the week's sum, the whole hours of the
    last week by their cumulative sum, and the part of the current hour. ``t`` a number or array."""
    week = np.asarray(week, dtype=float)
    cum = np.concatenate([[0.0], np.cumsum(week)])
    weeks, within = np.divmod(np.asarray(t, dtype=float), float(HOURS_PER_WEEK))
    hour = np.minimum(np.floor(within).astype(np.int64), HOURS_PER_WEEK - 1)  # float rounding at a week's end
    return weeks * cum[-1] + cum[hour] + (within - hour) * week[hour]


def week_integral_inverse(y, week: np.ndarray):
    """The inverse of ``week_integral``: the hours after Monday 00:00 at which the integral of the
    hourly rate ``week`` (168 values, not all 0) reaches ``y`` (≥ 0; a number or array). Where the
    integral is flat (hours of rate 0) the latest such time is taken, so the answer always lies in
    an hour of positive rate: a zero-rate hour never holds an arrival."""
    week = np.asarray(week, dtype=float)
    cum = np.concatenate([[0.0], np.cumsum(week)])
    weeks, within = np.divmod(np.asarray(y, dtype=float), cum[-1])
    over = within >= cum[-1]  # float rounding of the remainder: the start of the next week
    weeks, within = weeks + over, np.where(over, 0.0, within)
    # cum[h] <= within < cum[h + 1]: hour h has positive rate (side="right" steps over flat hours)
    hour = np.minimum(np.searchsorted(cum, within, side="right") - 1, HOURS_PER_WEEK - 1)
    rate = week[hour]
    part = np.where(rate > 0, (within - cum[hour]) / np.where(rate > 0, rate, 1.0), 0.0)
    return weeks * HOURS_PER_WEEK + hour + np.minimum(part, 1.0)


def grown_week_integral(t, week: np.ndarray, k: float):
    """∫ from Monday 00:00 to ``t`` hours after it of the hourly rate ``week`` (168 values,
    repeated every week) times e^(k·u), u in hours from Monday 00:00 (``costsim.models.trend``:
    k = ln(1 + growth per year) / 8760). Closed form: week m (from hour 168·m) holds
    q^m · A with q = e^(168·k) and A = Σₕ week[h] · (clock(h + 1) − clock(h)), so the whole weeks
    sum to A · clock(168·m) / clock(168) (a geometric series), and the hours of the last week add
    their cumulative sum and the part of the current hour, each times q^m. ``t`` a number or
    array; at k = 0 this is ``week_integral`` (up to rounding)."""
    week = np.asarray(week, dtype=float)
    cum = _grown_cumulative(week, k)
    weeks, within = np.divmod(np.asarray(t, dtype=float), float(HOURS_PER_WEEK))
    hour = np.minimum(np.floor(within).astype(np.int64), HOURS_PER_WEEK - 1)  # float rounding at a week's end
    start = weeks * HOURS_PER_WEEK
    part = week[hour] * (clock(within, k) - clock(hour.astype(float), k))
    return cum[-1] * clock(start, k) / clock(float(HOURS_PER_WEEK), k) + factor(start, k) * (cum[hour] + part)


def grown_week_integral_inverse(y, week: np.ndarray, k: float):
    """The inverse of ``grown_week_integral``: the hours after Monday 00:00 at which it reaches
    ``y`` (≥ 0, a number or array; below its limit A / (1 − q) when k < 0). Exact to rounding: the
    week by the geometric series' inverse, the hour by the cumulative sum, the time within the
    hour by ``clock_inverse``. Like ``week_integral_inverse``, the answer lies in an hour of
    positive rate. Past a falling trend's limit (rounding at the end of a long horizon): +inf."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = _grown_inverse(np.asarray(y, dtype=float), np.asarray(week, dtype=float), k)
    return np.where(np.isnan(t), np.inf, t)


def _grown_inverse(y: np.ndarray, week: np.ndarray, k: float) -> np.ndarray:
    cum = _grown_cumulative(week, k)
    total, per_week = cum[-1], clock(float(HOURS_PER_WEEK), k)
    weeks = np.floor(np.asarray(clock_inverse(y * per_week / total, k), dtype=float) / HOURS_PER_WEEK)
    weeks = np.maximum(weeks, 0.0)
    within = (y - total * clock(weeks * HOURS_PER_WEEK, k) / per_week) / factor(weeks * HOURS_PER_WEEK, k)
    # rounding may put the week one off: step to the week whose integral holds y
    over, under = within >= total, within < 0
    weeks = weeks + over - under
    within = np.where(over | under,
                      (y - total * clock(weeks * HOURS_PER_WEEK, k) / per_week) / factor(weeks * HOURS_PER_WEEK, k),
                      within)
    within = np.clip(within, 0.0, total)
    hour = np.minimum(np.searchsorted(cum, within, side="right") - 1, HOURS_PER_WEEK - 1)
    rate = week[hour]
    h = hour.astype(float)
    target = clock(h, k) + (within - cum[hour]) / np.where(rate > 0, rate, 1.0)
    x = np.where(rate > 0, np.asarray(clock_inverse(target, k), dtype=float), h)
    return weeks * HOURS_PER_WEEK + np.clip(x, h, h + 1.0)


def _grown_cumulative(week: np.ndarray, k: float) -> np.ndarray:
    """Σ_{i<h} week[i] · (clock(i + 1) − clock(i)) for h = 0 … 168: the first week's integral up
    to each whole hour."""
    edges = np.arange(HOURS_PER_WEEK + 1, dtype=float)
    return np.concatenate([[0.0], np.cumsum(week * np.diff(clock(edges, k)))])
