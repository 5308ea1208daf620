"""Which stretch of a trace ``costsim fit-workload`` fits, and where the fit misses the trace.

**The window.** A record whose jobs nearly all arrive in a few weeks of it (a pod list that
starts long before its cluster got busy) holds a rate only over those weeks: the record-wide
average spreads them over the idle months and is too low where the jobs are. The *active window*
is the shortest window of submit times holding ``ACTIVE_SHARE`` (90 %) of the jobs
(:func:`costsim.traces.shape.active_window`). ``auto`` fits it when it is shorter than
``CONCENTRATED`` (half) of the record's arrival window [0, last submit): there, the record-wide
rate would be at least 0.9 / 0.5 = 1.8× too low for 90 % of the jobs. A record of steady arrivals
has an active window of about 90 % of its span (a Poisson process's 90 % of arrivals take about
90 % of the time), so it is fitted whole. The jobs outside the window are left out of
the fit (their rate, profiles, GPUs and run times), and the window's first hour becomes the
fitted model's hour 0 (the profiles keep the source's clock).

**The checks** (:func:`check_fit`), of a trace drawn from the fitted classes against the trace's
jobs in the fitted window: the two-sample KS statistic (``scipy.stats.ks_2samp``) of the gaps
between successive arrivals and of the run times, and the GPU-hours per day. Each fitted class's
own run-time KS against its law (``scipy.stats.kstest``, ``ClassFit.duration``) is checked too.
A KS check warns when the statistic is above ``KS_WARN`` (the two distributions differ by more
than 10 percentage points somewhere) *and* its p-value below ``P_WARN`` (the difference is not
chance at 1 %): large traces then do not warn for a small, harmless difference, and small ones
not for noise. GPU-hours warn when the drawn trace's per day is off by more than
``GPU_HOURS_WARN`` (20 %) of the record's. These are warnings: the classes are still written.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from costsim.calibration.fit import FEW_JOBS, ClassFit, NoRate, no_rate, window_of
from costsim.scenario.trace import TraceTable
from costsim.traces.shape import active_window
from costsim.units import HOURS_PER_DAY

WINDOWS = ("auto", "active", "record")  # --window
CONCENTRATED = 0.5  # auto fits the active window when it is shorter than this share of the record's
KS_WARN = 0.1  # a KS statistic above this ...
P_WARN = 0.01  # ... with a p-value below this warns
GPU_HOURS_WARN = 0.2  # drawn GPU-hours per day off the record's by more than this share warns


@dataclass(frozen=True, kw_only=True)
class FitWindow:
    """The stretch of a trace a fit is over, submit hours [start_h, end_h] of the trace, and why
    (``costsim.present.fit.window_reason`` words it): the ``mode`` asked (``WINDOWS``), the record's
    active window (``active_start_h`` … ``active_end_h``, ``active_jobs`` within it) and, when that
    window was wanted but holds no rate, why (``refused``)."""

    start_h: float  # the trace's hour that is the fitted model's hour 0
    end_h: float
    jobs: int  # jobs submitted within it
    record_jobs: int
    record_h: float  # the trace's arrival window: hour 0 to its last submit (at least 1 h)
    active: bool  # True: the active window; False: the whole record
    mode: str
    active_start_h: float
    active_end_h: float
    active_jobs: int
    refused: NoRate | None = None

    @property
    def length_h(self) -> float:
        """Hours of the window."""
        return self.end_h - self.start_h

    @property
    def active_share(self) -> float:
        """The active window's length as a share of the record's arrival window (0–1)."""
        return (self.active_end_h - self.active_start_h) / self.record_h


def choose_window(submit_h: np.ndarray, mode: str = "auto") -> FitWindow:
    """The window to fit (``WINDOWS``): ``record`` the whole record, ``active`` its active
    window, ``auto`` the active window when it is shorter than ``CONCENTRATED`` of the record's
    arrival window. The active window is not taken (the record is, and ``refused`` says why) when
    its arrivals hold no rate (``costsim.calibration.fit.no_rate``: a batch at one instant)."""
    if mode not in WINDOWS:
        raise ValueError(f"window {mode!r}: one of {', '.join(WINDOWS)}")
    t = np.asarray(submit_h, dtype=float)
    n, record_h = len(t), window_of(t)
    start, end, jobs = active_window(t)
    whole = FitWindow(start_h=0.0, end_h=float(t.max()), jobs=n, record_jobs=n, record_h=record_h, active=False,
                      mode=mode, active_start_h=start, active_end_h=end, active_jobs=jobs)
    if mode == "record" or (mode == "auto" and whole.active_share >= CONCENTRATED):
        return whole
    why = no_rate(t[(t >= start) & (t <= end)] - start)
    if why is not None:
        return replace(whole, refused=why)
    return replace(whole, start_h=start, end_h=end, jobs=jobs, active=True)


def window_trace(trace: TraceTable, window: FitWindow) -> TraceTable:
    """The trace's jobs submitted within ``window``, in file order, their submit times from the
    window's start (its hour 0)."""
    keep = (trace.submit_h >= window.start_h) & (trace.submit_h <= window.end_h)
    return TraceTable(submit_h=trace.submit_h[keep] - window.start_h, gpus=trace.gpus[keep],
                      duration_h=trace.duration_h[keep], job_id=trace.job_id[keep],
                      job_class=trace.job_class[keep], priority=trace.priority[keep],
                      gpu_type=trace.gpu_type[keep])


@dataclass(frozen=True)
class FitCheck:
    """A drawn trace against the record's jobs in the fitted window. KS: two-sample statistic
    and p-value (NaN when either side has too few values); GPU-hours per day: GPUs × hours of the
    jobs submitted, per day of the window (record) or of the drawn horizon."""

    arrival_ks: float  # gaps between successive submits
    arrival_p: float
    duration_ks: float  # run times (hours)
    duration_p: float
    record_gpu_hours_per_day: float
    drawn_gpu_hours_per_day: float

    @property
    def gpu_hours_error(self) -> float:
        """(drawn − record) / record GPU-hours per day (0.1: the drawn trace holds 10 % more)."""
        return self.drawn_gpu_hours_per_day / self.record_gpu_hours_per_day - 1.0


def _ks(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    from scipy.stats import ks_2samp

    if len(a) < 2 or len(b) < 2:
        return float("nan"), float("nan")
    res = ks_2samp(a, b)
    return float(res.statistic), float(res.pvalue)


def check_fit(record: TraceTable, window_h: float, drawn: pd.DataFrame, drawn_days: float) -> FitCheck:
    """``drawn`` (``submit_h, gpus, duration_h``, over ``drawn_days``) against ``record`` (the
    trace's jobs in the fitted window, hour 0 its start; ``window_h`` hours long)."""
    gaps = np.diff(np.sort(record.submit_h))
    drawn_gaps = np.diff(np.sort(drawn["submit_h"].to_numpy(dtype=float)))
    a_ks, a_p = _ks(gaps, drawn_gaps)
    d_ks, d_p = _ks(record.duration_h, drawn["duration_h"].to_numpy(dtype=float))
    held = float(np.sum(record.gpus * record.duration_h)) / (max(window_h, 1.0) / HOURS_PER_DAY)
    drawn_held = float((drawn["gpus"] * drawn["duration_h"]).sum()) / drawn_days
    return FitCheck(a_ks, a_p, d_ks, d_p, held, drawn_held)


def misses(ks: float, p: float) -> bool:
    """Whether a KS check warns (``KS_WARN`` and ``P_WARN``; never for NaN)."""
    return bool(ks > KS_WARN and p < P_WARN)


def law_misses(fit: ClassFit) -> bool:
    """Whether a class's run times warn against its fitted law: a lognormal's KS check on a class of
    at least ``FEW_JOBS`` jobs (an empirical law's KS is in-sample; a smaller class is flagged on its
    own)."""
    d = fit.duration
    return d.law == "lognormal" and fit.jobs >= FEW_JOBS and misses(d.ks, d.ks_p)


def gpu_hours_miss(check: FitCheck) -> bool:
    """Whether the drawn trace's GPU-hours per day warn: off the record's by more than ``GPU_HOURS_WARN``."""
    return abs(check.gpu_hours_error) > GPU_HOURS_WARN
