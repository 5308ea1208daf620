"""Arrival rates that follow a daily and a weekly profile: the rate of each hour of a week, its
integral and the integral's inverse. Shared by the workload fit (``costsim.calibration.fit``) and the
job classes that replay a fit (``costsim.workload.jobclass``, which draws arrivals by the time
change t = Λ⁻¹(S)), so both count expected arrivals the same way."""

from __future__ import annotations

import numpy as np

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
