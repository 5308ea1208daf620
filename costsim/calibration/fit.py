"""Fitting a workload model to a job trace, per class (``costsim fit-workload``).

Classes (``BY``): by default (``job_class_gpus``) one per GPU count of each of the trace's
``job_class`` values, so a class's jobs all ask for the same GPUs and have their own rate,
profiles and run-time law. GPU counts with fewer than ``FEW_JOBS`` jobs in their class are pooled
into one class (``<class>-other``, with a GPU pmf); a class with one GPU count, or none with
enough jobs, stays whole. ``job_class``: one class per ``job_class``; ``none``: all jobs as one.
Where a class keeps a GPU pmf, each count carries its own mean run time (``gpus_mean_h``, written
as the pmf entry's ``mean_h``: the class's law is scaled to it), because big jobs run longer than
small ones: one run-time law drawn independently of the GPUs got the GPU-hours wrong by −7.5 % on
the SLURM sample and +38 % on the Alibaba PAI one (tests/calibration/test_fit_workload.py).

Per class:

- **arrivals**: a rate in jobs per day over the trace's window [0, T) (T: the last submit of the
  whole trace, so classes share one window), times a daily profile (24 hourly multipliers, mean 1)
  and a weekly profile (7 daily multipliers, mean 1). The profiles are by the source's clock:
  index 0 is midnight and Monday. A trace CSV carries no clock time, so the clock time of its hour 0
  (its first submit, which ``costsim import-trace`` prints) is given as ``start_h``, the hour of the
  week of hour 0 (0 = Monday 00:00; :func:`hour_of_week`); a job submitted at ``submit_h`` is at
  hour ``(start_h + submit_h) mod 24`` of the day. Without it (``start_h`` 0) hour 0 is taken for
  Monday midnight and the profiles are shifted by the true start's hour of the week. Each
  multiplier is (jobs in that hour of the day ÷ hours of that kind in the window) ÷ the overall
  rate: exposure-weighted, so a window that is not a whole number of days or weeks is not biased.
  An hour or weekday the window never covers gets 1 (no data).
  The two profiles are fitted separately (marginals), and the model multiplies them.
- **GPUs per job**: the empirical pmf over the counts seen.
- **durations**: a lognormal by moments: its mean is the sample mean and its cv the sample's
  (1/n) standard deviation ÷ mean, the very parameters a scenario's lognormal takes, so the
  GPU-hours are kept. Maximum likelihood would fit log durations instead, where a few jobs of
  almost no time (a zero-second job, stored as 1e-9 h) drag μ down and σ up: 3 such jobs in 248
  made its mean 10× the sample's. Or the empirical law (``empirical_quantiles``): the generator's
  inverse CDF, linear between quantiles at evenly spaced probabilities, built to keep every order
  statistic (up to ``EMPIRICAL_BINS`` jobs) and the sample mean exactly. Goodness of fit: the
  one-sample Kolmogorov–Smirnov statistic and p-value (``scipy.stats.kstest``) of the durations
  against the fitted law; the empirical law's is in-sample (the law is the sample smoothed: its KS
  is of the order of 1/n whatever the data, and says nothing about how new jobs would fit).
- **arrival check**: the time-rescaling theorem (Brown et al., Neural Computation 2002): if the
  arrivals are Poisson with intensity λ(t) = rate · hourly[h(t)] · weekly[d(t)], the increments of
  Λ(t) = ∫₀ᵗ λ between successive arrivals are i.i.d. exponential with mean 1. We report the KS
  statistic and p-value of those de-seasonalised gaps against Exp(1).

Both p-values are computed as if the law were known in advance; its parameters were fitted to
the same data, so they are conservative (too high: Lilliefors' correction would lower them). The
KS statistic is the number to compare between laws and classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from costsim.models.profiles import week_integral, week_rates
from costsim.models.sampling import lognormal_params
from costsim.scenario.jobclass import DAYS_PER_WEEK, HOURS_PER_DAY, MAX_QUANTILES
from costsim.scenario.trace import TraceTable

EMPIRICAL_BINS = (MAX_QUANTILES - 1) // 2  # the empirical law takes 2 · bins + 1 quantiles (5,000 bins)
DISTRIBUTIONS = ("lognormal", "empirical")
FEW_JOBS = 30  # below this a class's fit is flagged (KS and profiles mean little), and a GPU count is pooled
ARRIVAL_TEST = "KS of time-rescaled inter-arrival gaps against Exp(1)"


@dataclass(frozen=True)
class DurationFit:
    """A fitted run-time law (hours). ``law``: lognormal | empirical | deterministic (every duration
    equal: no spread to fit). ``mu``/``sigma`` are of log hours; ``quantiles`` are hours at evenly
    spaced probabilities 0 … 1 (empirical only; ``probabilities``)."""

    law: str
    mean_h: float
    cv: float
    median_h: float
    mu: float = float("nan")
    sigma: float = float("nan")
    quantiles: tuple[float, ...] = ()
    ks: float = float("nan")
    ks_p: float = float("nan")

    @property
    def probabilities(self) -> np.ndarray:
        """The probabilities of ``quantiles``: evenly spaced from 0 to 1, as the generator reads them."""
        return np.linspace(0.0, 1.0, len(self.quantiles))

    def cdf(self, x: np.ndarray) -> np.ndarray:
        """P(duration ≤ x hours) under the fitted law."""
        x = np.asarray(x, dtype=float)
        if self.law == "lognormal":
            from scipy.stats import lognorm

            return lognorm.cdf(x, self.sigma, loc=0.0, scale=np.exp(self.mu))
        if self.law == "empirical":
            q = np.asarray(self.quantiles)
            # np.interp needs increasing x: repeated quantiles (ties) keep the highest probability.
            return np.interp(x, q, self.probabilities, left=0.0, right=1.0)
        return (x >= self.mean_h).astype(float)

    def ppf(self, p: np.ndarray) -> np.ndarray:
        """The duration (hours) at probability ``p`` under the fitted law."""
        p = np.asarray(p, dtype=float)
        if self.law == "lognormal":
            from scipy.stats import lognorm

            return lognorm.ppf(p, self.sigma, loc=0.0, scale=np.exp(self.mu))
        if self.law == "empirical":
            return np.interp(p, self.probabilities, np.asarray(self.quantiles))
        return np.full(p.shape, self.mean_h)


@dataclass(frozen=True)
class ClassFit:
    """The fitted model of one class of jobs."""

    name: str
    jobs: int
    window_h: float  # the observation window [0, window_h) the rate is over
    per_day: float  # jobs per day, averaged over the window
    hourly: tuple[float, ...]  # 24 multipliers, mean 1; index 0 = midnight on the source's clock
    weekly: tuple[float, ...]  # 7 multipliers, mean 1; index 0 = Monday
    gpus_pmf: dict[int, float]  # GPUs per job -> share of jobs
    duration: DurationFit
    arrival_ks: float  # de-seasonalised gaps vs Exp(1) (ARRIVAL_TEST); NaN below 3 jobs
    arrival_ks_p: float
    notes: tuple[str, ...] = field(default=())
    start_h: float = 0.0  # hour of the week (0 = Monday 00:00) of the trace's hour 0
    gpus_mean_h: dict[int, float] = field(default_factory=dict)  # GPUs per job -> their mean run time (h)


MIN_WINDOW_H = 1.0  # the window is at least this long, so arrivals within minutes still give a finite rate


def window_of(submit_h: np.ndarray) -> float:
    """The observation window in hours: up to the last submit (at least ``MIN_WINDOW_H``)."""
    return max(float(np.max(submit_h)), MIN_WINDOW_H)


MIN_SPAN_H = 1.0  # arrivals over less than this are refused: their rate would be the window's floor's
# Fewer distinct submit times than this leave at most one gap between arrivals: a rate from a single
# interval, and an arrival KS check with nothing to compare.
MIN_INSTANTS = 3
# Why submit times hold no arrival rate (``NoRate.kind``), each a refusal ``costsim.present.fit`` words.
NO_JOB, ONE_INSTANT, SHORT_SPAN, FEW_INSTANTS = "no job", "one instant", "short span", "few instants"


@dataclass(frozen=True, kw_only=True)
class NoRate:
    """Why a trace's submit times hold no arrival rate (``no_rate``): ``kind`` (``NO_JOB``,
    ``ONE_INSTANT``, ``SHORT_SPAN`` or ``FEW_INSTANTS``), its ``jobs``, first and last submit
    (hours; NaN with no job), distinct submit times, and ``floor_per_day``: the rate a fit would
    make up from the ``MIN_WINDOW_H`` floor on the window (jobs a day; NaN with no job)."""

    kind: str
    jobs: int
    first_h: float = float("nan")
    last_h: float = float("nan")
    instants: int = 0
    floor_per_day: float = float("nan")

    @property
    def span_h(self) -> float:
        """Hours from the first submit to the last."""
        return self.last_h - self.first_h


class NoRateError(ValueError):
    """``fit_trace`` of submit times that hold no arrival rate; ``why`` says why in numbers
    (``costsim.present.fit.no_rate_words`` words it in full)."""

    def __init__(self, why: NoRate):
        self.why = why
        brief = {NO_JOB: "the trace has no job", ONE_INSTANT: "the trace spans no time",
                 SHORT_SPAN: f"its arrivals span less than the {MIN_SPAN_H:g}-hour minimum",
                 FEW_INSTANTS: f"its jobs are submitted at only {why.instants} distinct times (fewer than {MIN_INSTANTS})"}
        super().__init__(f"{brief[why.kind]}: it holds no arrival rate")


def no_rate(submit_h: np.ndarray) -> NoRate | None:
    """Why a trace's submit times (hours) hold no arrival rate, or None when they hold one: no job,
    every job submitted at the same time, arrivals spanning less than ``MIN_SPAN_H`` hours (first to
    last submit), or fewer than ``MIN_INSTANTS`` distinct submit times. Any rate fitted to such a
    trace would come from the window's floor (100 jobs at hour 0 over ``MIN_WINDOW_H``: 2,400 a
    day) or from a single gap, not from the trace."""
    t = np.asarray(submit_h, dtype=float)
    if len(t) == 0:
        return NoRate(kind=NO_JOB, jobs=0)
    instants = len(np.unique(t))
    kind = (ONE_INSTANT if t.min() == t.max() else SHORT_SPAN if float(t.max() - t.min()) < MIN_SPAN_H
            else FEW_INSTANTS if instants < MIN_INSTANTS else None)
    return None if kind is None else NoRate(kind=kind, jobs=len(t), first_h=float(t.min()), last_h=float(t.max()),
                                            instants=instants, floor_per_day=len(t) / window_of(t) * HOURS_PER_DAY)


def weak_spots(submit_h: np.ndarray) -> list[str]:
    """What makes a fit of these submit times (hours) rest on little: fewer than ``FEW_JOBS`` jobs.
    Empty for a trace with enough jobs (or one ``no_rate`` refuses)."""
    t = np.asarray(submit_h, dtype=float)
    if no_rate(t) is not None:
        return []
    out = []
    if len(t) < FEW_JOBS:
        out.append(f"only {len(t)} jobs (fewer than {FEW_JOBS}): the rate, the profiles and the KS checks rest "
                   "on few arrivals; fit a longer trace for figures that mean something")
    return out


def exposure(window_h: float, period: int, unit_h: float) -> np.ndarray:
    """Hours of [0, window_h) that fall in each of the ``period`` bins of width ``unit_h`` (the bins
    repeat every ``period · unit_h`` hours): 24 bins of 1 h for a day, 7 bins of 24 h for a week."""
    cycle = period * unit_h
    full, rest = divmod(window_h, cycle)
    covered = np.full(period, full * unit_h)
    starts = np.arange(period) * unit_h
    covered += np.clip(rest - starts, 0.0, unit_h)
    return covered


def hour_of_week(when) -> float:
    """Hours since the Monday 00:00 before ``when`` (a datetime), on its own clock."""
    return when.weekday() * HOURS_PER_DAY + when.hour + when.minute / 60 + when.second / 3600 + when.microsecond / 3.6e9


def profile(submit_h: np.ndarray, window_h: float, period: int, unit_h: float, start_h: float = 0.0) -> np.ndarray:
    """Multipliers (mean 1) of the arrival rate per bin: jobs per hour of exposure in the bin,
    relative to jobs per hour over the window. Bins the window never covers get 1. Bins are of the
    clock: hour 0 of the trace is ``start_h`` hours into the cycle."""
    bins = (np.floor((np.asarray(submit_h) + start_h) / unit_h).astype(np.int64)) % period
    counts = np.bincount(bins, minlength=period).astype(float)
    hours = exposure(start_h + window_h, period, unit_h) - exposure(start_h, period, unit_h)
    overall = len(submit_h) / window_h
    m = np.ones(period)
    seen = hours > 0
    m[seen] = counts[seen] / hours[seen] / overall
    return m / m.mean()


def intensity_integral(t: np.ndarray, per_h: float, hourly: np.ndarray, weekly: np.ndarray,
                       start_h: float = 0.0) -> np.ndarray:
    """Λ(t) = ∫₀ᵗ per_h · hourly[h(s)] · weekly[d(s)] ds, in expected jobs, for each time ``t`` (h)
    of a trace whose hour 0 is ``start_h`` hours into the week."""
    t = np.asarray(t, dtype=float)
    if start_h:
        return _integral(t + start_h, per_h, hourly, weekly) - _integral(np.array(start_h), per_h, hourly, weekly)
    return _integral(t, per_h, hourly, weekly)


def _integral(t: np.ndarray, per_h: float, hourly: np.ndarray, weekly: np.ndarray) -> np.ndarray:
    """Λ from the start of a week (Monday 00:00) (``costsim.models.profiles.week_integral``)."""
    return week_integral(t, week_rates(hourly, weekly) * per_h)


def arrival_check(submit_h: np.ndarray, per_h: float, hourly: np.ndarray, weekly: np.ndarray,
                  start_h: float = 0.0) -> tuple[float, float]:
    """(KS statistic, p-value) of the time-rescaled gaps between successive submits against Exp(1)
    (``ARRIVAL_TEST``); NaN for fewer than 3 jobs. Simultaneous submits (gap 0) count as gaps."""
    from scipy.stats import kstest

    t = np.sort(np.asarray(submit_h, dtype=float))
    if len(t) < 3:
        return float("nan"), float("nan")
    gaps = np.diff(intensity_integral(t, per_h, hourly, weekly, start_h))
    res = kstest(gaps, "expon")
    return float(res.statistic), float(res.pvalue)


def empirical_quantiles(duration_h: np.ndarray, bins: int = EMPIRICAL_BINS) -> np.ndarray:
    """Quantiles (hours) at 2k + 1 evenly spaced probabilities, k = min(n, ``bins``), of a law with
    the sample's mean, for an inverse CDF linear between them (the generator's empirical law).

    The sorted sample's step quantile function is cut into k bins of probability 1/k, and b_j is
    the mean of bin j. The quantile at probability (j + ½)/k is b_j, at j/k the midpoint of its
    neighbours (b_{j−1} + b_j)/2, and the two ends repeat b_0 and b_{k−1}. On each bin the linear
    inverse CDF then averages (e_j + 2 b_j + e_{j+1})/4 with e the edges, and summed over the bins
    the edges' halves add up to the b_j: the law's mean is the mean of the b_j, the sample mean.
    With n ≤ ``bins`` each bin is one job: every order statistic x_(j) is kept, at its ECDF step's
    midpoint (j + ½)/n. (Order statistics at j/(n − 1), linear in between, would lose (x_min +
    x_max)/2 − mean over n − 1 jobs: −14 % on the Alibaba PAI sample, whose longest job is long.)"""
    x = np.sort(np.asarray(duration_h, dtype=float))
    n = len(x)
    k = min(n, bins)
    cum = np.concatenate([[0.0], np.cumsum(x)])  # cum[i]: sum of the i shortest jobs

    def area(j: np.ndarray) -> np.ndarray:  # n × ∫ of the step quantile function from 0 to j/k
        whole, part = np.divmod(j * n, k)  # integers: exact, whatever n and k
        return cum[whole] + part / k * x[np.minimum(whole, n - 1)]

    j = np.arange(k + 1, dtype=np.int64)
    b = x if k == n else np.diff(area(j)) * k / n  # one job a bin: the order statistics themselves, exactly
    q = np.empty(2 * k + 1)
    q[1::2] = b
    q[2:-1:2] = (b[:-1] + b[1:]) / 2
    q[0], q[-1] = b[0], b[-1]
    return np.maximum.accumulate(q)  # rounding can break a tie by 1 ulp: keep it non-decreasing


def fit_durations(duration_h: np.ndarray, distribution: str = "lognormal") -> DurationFit:
    """Fit run times (hours, ≥ 0) by ``distribution`` (``DISTRIBUTIONS``), with the KS check. Both
    laws keep the sample mean (``mean_h``); ``cv`` is the sample's (1/n) standard deviation ÷ mean."""
    from scipy.stats import kstest

    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"distribution {distribution!r}: one of {', '.join(DISTRIBUTIONS)}")
    x = np.asarray(duration_h, dtype=float)
    mean, median = float(x.mean()), float(np.median(x))
    cv = float(x.std() / mean)
    if np.all(x == x[0]):
        return DurationFit("deterministic", mean_h=mean, cv=0.0, median_h=median)
    if distribution == "lognormal":
        mu, sigma = lognormal_params(mean, cv)  # by moments: the scenario's {mean_h, cv}
        res = kstest(x, "lognorm", args=(sigma, 0.0, np.exp(mu)))
        return DurationFit("lognormal", mean_h=mean, cv=cv, median_h=float(np.exp(mu)), mu=mu, sigma=sigma,
                           ks=float(res.statistic), ks_p=float(res.pvalue))
    q = empirical_quantiles(x)
    fit = DurationFit("empirical", mean_h=mean, cv=cv, median_h=median, quantiles=tuple(float(v) for v in q))
    res = kstest(x, fit.cdf)
    return DurationFit("empirical", mean_h=mean, cv=cv, median_h=median, quantiles=fit.quantiles,
                       ks=float(res.statistic), ks_p=float(res.pvalue))


def fit_class(name: str, submit_h: np.ndarray, gpus: np.ndarray, duration_h: np.ndarray, window_h: float,
              distribution: str = "lognormal", start_h: float = 0.0) -> ClassFit:
    """The model of one class's jobs over the window [0, window_h) hours of a trace whose hour 0 is
    ``start_h`` hours into the week (0 = Monday 00:00)."""
    submit_h = np.asarray(submit_h, dtype=float)
    n = len(submit_h)
    hourly = profile(submit_h, window_h, HOURS_PER_DAY, 1.0, start_h)
    weekly = profile(submit_h, window_h, DAYS_PER_WEEK, float(HOURS_PER_DAY), start_h)
    # The rate with these profiles puts n expected jobs in the window: over a window that is not
    # whole weeks the profiles' plain mean (1) is not their mean over the window, and n / window_h
    # would overstate the rate (by 10 % over 10 days of a weekday-heavy week).
    per_h = n / float(intensity_integral(np.array([window_h]), 1.0, hourly, weekly, start_h)[0])
    ks, p = arrival_check(submit_h, per_h, hourly, weekly, start_h)
    values, counts = np.unique(np.asarray(gpus, dtype=np.int64), return_counts=True)
    pmf = {int(v): float(c) / n for v, c in zip(values, counts, strict=True)}
    # Each count's own mean run time: a job class scales its law to it, so the GPU-hours keep the
    # tie between a job's size and its run time (drawn independently they lose it: -7 % to +46 %
    # of GPU-hours on the shipped samples).
    held = np.asarray(duration_h, dtype=float)
    gpus_mean = {int(v): float(held[np.asarray(gpus) == v].mean()) for v in values}
    notes = []
    if n < FEW_JOBS:
        notes.append(f"only {n} jobs: the KS checks and profiles mean little")
    return ClassFit(name=name, jobs=n, window_h=window_h, per_day=per_h * HOURS_PER_DAY,
                    hourly=tuple(float(v) for v in hourly), weekly=tuple(float(v) for v in weekly),
                    gpus_pmf=pmf, duration=fit_durations(duration_h, distribution), arrival_ks=ks,
                    arrival_ks_p=p, notes=tuple(notes), start_h=float(start_h), gpus_mean_h=gpus_mean)


def window_note(window_h: float) -> str | None:
    """What a window shorter than a week means for the weekly profile (None for a week or more)."""
    if window_h >= DAYS_PER_WEEK * HOURS_PER_DAY:
        return None
    return f"window of {window_h / 24:.1f} days, under a week: weekdays it does not cover are 1 (no data)"


BY = ("job_class_gpus", "job_class", "none")


def split_by_gpus(name: str, mask: np.ndarray, gpus: np.ndarray,
                  min_jobs: int = FEW_JOBS) -> list[tuple[str, np.ndarray]]:
    """The class ``name`` (rows ``mask``) as (name, rows) per GPU count with at least ``min_jobs``
    jobs (``<name>-<g>gpu``, ascending), then the other counts pooled (``<name>-other``); the
    class whole when that would leave one part."""
    values, counts = np.unique(gpus[mask], return_counts=True)
    own = values[counts >= min_jobs]
    rest = mask & ~np.isin(gpus, own)
    if len(own) + bool(rest.any()) <= 1:
        return [(name, mask)]
    parts = [(f"{name}-{int(g)}gpu", mask & (gpus == g)) for g in own]
    return parts + ([(f"{name}-other", rest)] if rest.any() else [])


def groups_of(trace: TraceTable, by: str = "job_class_gpus") -> list[tuple[str, np.ndarray]]:
    """(name, row mask) of each class ``fit_trace`` fits (``BY``): the trace's classes by
    decreasing job count then name, each split by ``split_by_gpus`` for job_class_gpus; one
    class "all" for none."""
    if by not in BY:
        raise ValueError(f"by {by!r}: one of {', '.join(BY)}")
    if by == "none":
        return [("all", np.ones(len(trace), dtype=bool))]
    labels = trace.job_class.astype(str)
    names, counts = np.unique(labels, return_counts=True)
    groups: list[tuple[str, np.ndarray]] = []
    for name, _ in sorted(zip(names, counts, strict=True), key=lambda nc: (-nc[1], nc[0])):
        mask = labels == name
        groups += split_by_gpus(str(name), mask, trace.gpus) if by == "job_class_gpus" else [(str(name), mask)]
    return groups


def fit_trace(trace: TraceTable, by: str = "job_class_gpus", distribution: str = "lognormal",
              window_h: float | None = None, start_h: float = 0.0) -> list[ClassFit]:
    """One ClassFit per class of ``groups_of(trace, by)``, in its order. ``window_h``: the
    observation window (default: up to the trace's last submit); ``start_h``: the hour of the week
    of the trace's hour 0. ``NoRateError`` (a ValueError; ``no_rate``) for submit times that hold no
    rate when no ``window_h`` is given."""
    from dataclasses import replace

    if window_h is None and (why := no_rate(trace.submit_h)) is not None:
        raise NoRateError(why)
    window = window_of(trace.submit_h) if window_h is None else float(window_h)
    fits = [fit_class(name, trace.submit_h[mask], trace.gpus[mask], trace.duration_h[mask], window, distribution,
                      start_h) for name, mask in groups_of(trace, by)]
    pooled = (f"GPU counts with fewer than {FEW_JOBS} jobs each, pooled; each keeps its mean run time")
    return [replace(f, notes=(*f.notes, pooled)) if by == "job_class_gpus" and len(f.gpus_pmf) > 1 else f
            for f in fits]
