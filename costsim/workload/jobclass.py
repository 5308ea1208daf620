"""Drawing the jobs of a plain job class (``costsim.scenario.jobclass.JobClass``).

- **arrivals** (stream ``arrivals``, per layer): a Poisson process of rate λ(t) = per_day / 24 ·
  hourly[h] · weekly[d] · (1 + g)^(t / 8760) per hour (profiles scaled to mean 1; h, d the hour of
  the day and the weekday of scenario hour t on the profiles' clock; g the growth per year, t from
  hour 0), drawn in sequence by the time change t = Λ⁻¹(S) of a unit-rate process
  (``costsim.workload.arrivals``: a longer horizon keeps every earlier arrival, a larger arrival
  scale keeps every arrival of a smaller one). Memory is the arrivals themselves, whatever the
  profile's peak;
- **GPUs** (stream ``job_shapes``, per layer, in blocks of ``SHAPE_BLOCK`` jobs): a uniform per
  job, by inverse CDF of the pmf (drawn for a fixed count too, so the durations' draws never
  depend on the GPU law);
- **durations** (the same stream, after each block's GPUs): lognormal by mean and cv
  (``sampling.lognormal``), or by inverse CDF, linear between the quantiles at evenly spaced
  probabilities; kept within the trace reader's range [MIN_JOB_H, MAX_HOURS].
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from costsim.models import trend
from costsim.models.profiles import (
    grown_week_integral,
    grown_week_integral_inverse,
    week_integral,
    week_integral_inverse,
    week_rates,
)
from costsim.models.sampling import lognormal
from costsim.scenario.bounds import MAX_HOURS, MIN_JOB_H
from costsim.scenario.jobclass import DAYS_PER_WEEK, HOURS_PER_DAY, JobClass, LognormalDuration
from costsim.workload.arrivals import Arrivals, layer_draws, layered_arrivals, per_job


def mean_one(weights: tuple[float, ...] | None, length: int) -> np.ndarray:
    """A profile scaled to mean 1 (flat when None)."""
    if weights is None:
        return np.ones(length)
    w = np.asarray(weights, dtype=float)
    return w / w.mean()


def week_profile(cls: JobClass) -> np.ndarray:
    """The class's rate multiplier for each of the 168 hours of a week from Monday 00:00 (mean 1)."""
    return week_rates(mean_one(cls.hourly_profile, HOURS_PER_DAY), mean_one(cls.weekly_profile, DAYS_PER_WEEK))


def profiled_arrivals(cls: JobClass, seed: int, scale: float, horizon_h: float) -> Arrivals:
    """The class's arrivals on [start_day, horizon_h) at arrival scale ``scale``: the time change
    t = Λ⁻¹(S) of layered unit-rate points (``costsim.workload.arrivals``), Λ the integral of the
    rate per_day / 24 · week[hour of the week] (× (1 + g)^(t / 8760) with growth g;
    ``costsim.models.profiles``, ``time_change``), scenario hour t being
    ``profile_start_hour_of_week`` + t hours after Monday 00:00."""
    total, to_time = time_change(cls, horizon_h)
    return layered_arrivals(seed, cls.name, scale, total, to_time, horizon_h)


def time_change(cls: JobClass, horizon_h: float) -> tuple[float, Callable[[np.ndarray], np.ndarray]]:
    """The class's Λ(horizon_h) and t = Λ⁻¹(S) (scenario hours, vectorised), Λ(t) the integral of
    its rate from ``start_day``. On the profiles' clock τ = offset + t, Λ(t) = per_h · (W(τ) −
    W(τ₀)) with W the week integral of the profile (``week_integral``), or with growth g
    (rate × e^(k·t), k = ln(1 + g) / 8760, t from the horizon's start) per_h · e^(−k·offset) ·
    (W_k(τ) − W_k(τ₀)), W_k the profile's integral against e^(k·τ) (``grown_week_integral``, a
    closed form inverted exactly). g = 0 keeps the first, so its arrivals are bit for bit those
    drawn before growth existed."""
    per_h = cls.arrivals_per_day / HOURS_PER_DAY
    week = week_profile(cls)
    offset = cls.profile_start_hour_of_week
    start = cls.start_day * HOURS_PER_DAY
    if cls.growth_per_year == 0:
        integral, inverse = week_integral, week_integral_inverse
        unit = per_h
    else:
        k = trend.per_hour(cls.growth_per_year)

        def integral(t, w):
            return grown_week_integral(t, w, k)

        def inverse(y, w):
            return grown_week_integral_inverse(y, w, k)

        unit = per_h * float(trend.factor(-offset, k))  # the growth clock starts at hour 0, τ = offset
    origin = float(integral(offset + start, week))
    total = unit * max(float(integral(offset + horizon_h, week)) - origin, 0.0) if horizon_h > start else 0.0

    def to_time(s: np.ndarray) -> np.ndarray:
        # never before the start (rounding); a start in an hour of rate 0 moves to the next busy hour
        return np.maximum(inverse(origin + s / unit, week) - offset, start)

    return total, to_time


def draw_gpus(rng: np.random.Generator, cls: JobClass, n: int) -> np.ndarray:
    """``n`` GPU counts (int64) from the class's count or pmf, by inverse CDF of n uniforms."""
    u = rng.uniform(0.0, 1.0, n)
    if isinstance(cls.gpus, int):
        return np.full(n, cls.gpus, dtype=np.int64)
    sizes = np.array([e.gpus for e in cls.gpus], dtype=np.int64)
    cdf = np.cumsum([e.share for e in cls.gpus])
    cdf /= cdf[-1]  # shares sum to 1 within 1e-6: the last bin ends exactly at 1
    return sizes[np.minimum(np.searchsorted(cdf, u, side="right"), len(sizes) - 1)]


def law_mean_h(cls: JobClass) -> float:
    """The mean of the class's run-time law (hours): the lognormal's ``mean_h``, or the mean of the
    piecewise-linear inverse CDF through the quantiles (the trapezoid rule over evenly spaced
    probabilities)."""
    d = cls.duration
    if isinstance(d, LognormalDuration):
        return float(d.mean_h)
    q = np.asarray(d.quantiles_h, dtype=float)
    return float(np.sum(q[1:] + q[:-1]) / (2 * (len(q) - 1)))


def draw_durations(rng: np.random.Generator, cls: JobClass, n: int, gpus: np.ndarray | None = None) -> np.ndarray:
    """``n`` run times (hours) from the class's law, within [MIN_JOB_H, MAX_HOURS]; a job whose GPU
    count (``gpus``) has its own ``mean_h`` gets the law scaled to that mean."""
    d = cls.duration
    if isinstance(d, LognormalDuration):
        hours = lognormal(rng, n, d.mean_h, d.cv)
    else:
        q = np.asarray(d.quantiles_h, dtype=float)
        hours = np.interp(rng.uniform(0.0, 1.0, n), np.linspace(0.0, 1.0, len(q)), q)
    if gpus is not None and not isinstance(cls.gpus, int) and any(e.mean_h is not None for e in cls.gpus):
        base = law_mean_h(cls)
        sizes = np.array([e.gpus for e in cls.gpus], dtype=np.int64)
        factors = np.array([e.mean_h / base if e.mean_h is not None and base > 0 else 1.0 for e in cls.gpus])
        order = np.argsort(sizes)
        hours = hours * factors[order][np.searchsorted(sizes[order], gpus)]
    return np.clip(hours, MIN_JOB_H, MAX_HOURS)


def expected_jobs(cls: JobClass, scale: float, horizon_h: float) -> float:
    """Expected arrivals of the class on [start_day, horizon_h): Λ, the integral of its rate
    (whole weeks at the mean rate, plus the hours of the partial week by the profile). A float
    for any horizon: never an array as long as the horizon."""
    start = cls.start_day * HOURS_PER_DAY
    if horizon_h <= start:
        return 0.0
    if cls.growth_per_year != 0:
        return scale * time_change(cls, horizon_h)[0]
    per_h = cls.arrivals_per_day * scale / HOURS_PER_DAY
    week = week_profile(cls)
    offset = cls.profile_start_hour_of_week
    return per_h * float(week_integral(offset + horizon_h, week) - week_integral(offset + start, week))


def job_class_jobs(cls: JobClass, seed: int, scale: float, horizon_h: float, class_index: int) -> dict[str, np.ndarray]:
    """The class's jobs as trace-like columns (``costsim.workload.JobTable``'s per-job arrays), in
    submit order: a duration, no iterations, class index ``class_index``, ids ``<name>-<k>`` (k the
    job's index among its layer's arrivals; ``~<layer>`` appended in the layers a scale above 1
    adds). A job's GPUs and duration are drawn per job (``layer_draws``), so a shared job has the
    same ones under any horizon or scale."""
    arrivals = profiled_arrivals(cls, seed, scale, horizon_h)

    def shapes(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        gpus = draw_gpus(rng, cls, n)
        return gpus, draw_durations(rng, cls, n, gpus)

    gpus, hours = per_job(arrivals, layer_draws(arrivals, seed, "job_shapes", cls.name, shapes))
    n = len(arrivals)
    return {
        "job_id": arrivals.ids(cls.name),
        "job_class": np.full(n, cls.name, dtype=object), "submit_h": arrivals.submit_h, "gpus": gpus,
        "priority": np.full(n, cls.priority, dtype=np.int64), "duration_h": hours,
        "class_index": np.full(n, class_index, dtype=np.int64), "iterations": np.zeros(n, dtype=np.int64),
        "iter_start": np.zeros(n, dtype=np.int64),
    }
