"""A workload fit in words (``costsim fit-workload`` and its report): why a trace holds no arrival
rate, which window was fitted and why, the drawn trace against the record and its warnings. From
the records of ``costsim.calibration.fit`` and ``fit_window``; rates in jobs a day, times in hours."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from costsim.calibration.fit import (
    MIN_INSTANTS,
    MIN_SPAN_H,
    MIN_WINDOW_H,
    NO_JOB,
    ONE_INSTANT,
    SHORT_SPAN,
    ClassFit,
    NoRate,
)
from costsim.calibration.fit_window import (
    CONCENTRATED,
    GPU_HOURS_WARN,
    KS_WARN,
    P_WARN,
    FitCheck,
    FitWindow,
    gpu_hours_miss,
    law_misses,
    misses,
)
from costsim.present import formats
from costsim.traces.shape import ACTIVE_SHARE
from costsim.units import HOURS_PER_DAY


def no_rate_words(why: NoRate) -> str:
    """Why submit times hold no arrival rate, with what a fit would make up instead and what to
    fit: "all 100 jobs are submitted at hour 0: the trace spans no time, so it holds no arrival
    rate (fitting it would make one up from the 1-hour floor on the window: 2,400 a day); …"."""
    if why.kind == NO_JOB:
        return "the trace has no job"
    made_up = (f"(fitting it would make one up from the {MIN_WINDOW_H:g}-hour floor on the window: "
               f"{why.floor_per_day:,.0f} a day)")
    if why.kind == ONE_INSTANT:
        what = "its one job is" if why.jobs == 1 else f"all {why.jobs:,} jobs are"
        return (f"{what} submitted at hour {formats.plain(why.first_h)}: the trace spans no time, so it holds no "
                f"arrival rate {made_up}; fit a trace whose jobs arrive over time")
    if why.kind == SHORT_SPAN:
        return (f"the {why.jobs:,} jobs arrive within {formats.significant(why.span_h * 60)} minutes (hours "
                f"{formats.plain(why.first_h)} to {formats.plain(why.last_h)}), less than the {MIN_SPAN_H:g}-hour "
                f"minimum span, so the trace holds no arrival rate {made_up}; fit a trace whose jobs arrive over "
                f"at least {MIN_SPAN_H:g} hour")
    return (f"the {why.jobs:,} jobs are submitted at only {why.instants} distinct times (fewer than {MIN_INSTANTS}): "
            "at most one gap between arrivals, so the rate would rest on a single interval and the arrival "
            f"check would have nothing to compare; fit a trace with at least {MIN_INSTANTS} distinct submit times")


def _rate(jobs: int, hours: float) -> str:
    return formats.significant(jobs / hours * HOURS_PER_DAY, 3, "jobs/day")


def window_reason(w: FitWindow) -> str:
    """Which window was fitted and why, in words: "fitted over the active window: 90 % of the jobs
    arrive within 18 % of the record (7.5 days, hours 800.0 to 979.0), 24.1 jobs/day there against
    the record-wide 4.9 jobs/day; the 20 jobs outside it are left out"."""
    start, end = w.active_start_h, w.active_end_h
    described = (f"{formats.percent(ACTIVE_SHARE)} of the jobs arrive within {formats.percent(w.active_share)} of the "
                 f"record ({formats.duration(end - start)}, hours {formats.number(start, 1)} to "
                 f"{formats.number(end, 1)})")
    if w.mode == "record":
        return f"fitted over the whole record (--window record); {described}"
    if w.refused is not None:
        return (f"fitted over the whole record: {described}, but that window holds no arrival rate "
                f"({no_rate_words(w.refused)})")
    if not w.active:
        return (f"fitted over the whole record: {described}, not concentrated (the active window is fitted below "
                f"{formats.percent(CONCENTRATED)})")
    n, jobs, outside = w.record_jobs, w.jobs, w.record_jobs - w.jobs
    return (f"fitted over the active window: {described}, {_rate(jobs, end - start)} there against the "
            f"record-wide {_rate(n, w.record_h)}; the {formats.count(outside, 'job' if outside == 1 else 'jobs')} "
            "outside it are left out")


def ks_words(ks: float, p: float) -> str:
    """``KS 0.123 (p 0.0045)``; "not measurable" for NaN."""
    if not (np.isfinite(ks) and np.isfinite(p)):
        return "not measurable"
    return f"KS {formats.number(ks, 3)} (p {formats.p_value(p)})"


def check_line(check: FitCheck) -> str:
    """The drawn trace against the record in one line."""
    sign = "+" if check.gpu_hours_error >= 0 else ""
    return (f"drawn trace vs the record: arrival gaps {ks_words(check.arrival_ks, check.arrival_p)}, durations "
            f"{ks_words(check.duration_ks, check.duration_p)}, GPU-hours per day "
            f"{formats.number(check.drawn_gpu_hours_per_day, 0)} drawn vs {formats.number(check.record_gpu_hours_per_day, 0)} "
            f"recorded ({sign}{formats.percent(check.gpu_hours_error, 1)})")


def check_warnings(check: FitCheck, fits: Sequence[ClassFit]) -> list[str]:
    """Where the fit misses the record (``costsim.calibration.fit_window``'s thresholds): the drawn
    trace's arrival gaps, run times and GPU-hours per day, and each class's run times against its
    lognormal (``fit_window.law_misses``)."""
    out = []
    rule = f"KS above {formats.number(KS_WARN, 2)} with p below {formats.significant(P_WARN, 2)}"
    if misses(check.arrival_ks, check.arrival_p):
        out.append(f"arrivals: the gaps between the drawn trace's arrivals differ from the record's "
                   f"({ks_words(check.arrival_ks, check.arrival_p)}; {rule}): the record's arrivals are burstier or more "
                   "regular than Poisson arrivals at the fitted rate and profiles")
    if misses(check.duration_ks, check.duration_p):
        out.append(f"durations: the drawn trace's run times differ from the record's "
                   f"({ks_words(check.duration_ks, check.duration_p)}; {rule}); try --distribution empirical")
    for f in fits:
        if law_misses(f):
            out.append(f"class {f.name}: its run times are not lognormal ({ks_words(f.duration.ks, f.duration.ks_p)}; "
                       f"{rule}); try --distribution empirical")
    if gpu_hours_miss(check):
        out.append(f"GPU-hours: the drawn trace holds {formats.number(check.drawn_gpu_hours_per_day, 0)} GPU-hours "
                   f"a day against the record's {formats.number(check.record_gpu_hours_per_day, 0)} "
                   f"({'+' if check.gpu_hours_error >= 0 else ''}{formats.percent(check.gpu_hours_error, 1)}; "
                   f"warned beyond ±{formats.percent(GPU_HOURS_WARN)}): a few long jobs carry the record, "
                   "or too few jobs were drawn to average them out")
    return out
