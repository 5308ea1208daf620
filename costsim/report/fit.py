"""The HTML page of ``costsim fit-workload --report``: per class a QQ plot of durations, the hourly
and weekly arrival profiles and a table of fitted parameters with their KS statistics.

Self-contained (``report_html.page``: plotly.js inlined once, no URL); the same fit gives the same
file byte for byte (figure ids are hashes of the figures)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from costsim.calibration.fit import ARRIVAL_TEST, ClassFit, window_note
from costsim.calibration.fit_window import FitCheck, FitWindow
from costsim.plots.layout import literal
from costsim.present import formats
from costsim.present.fit import check_line, window_reason
from costsim.report.html import Column, bullets, esc, figure, fixed, page, para, section, table

QQ_POINTS = 200  # at most this many quantiles per QQ plot (a large class would bloat the page)


def qq_points(durations: np.ndarray, fit: ClassFit) -> tuple[np.ndarray, np.ndarray]:
    """(fitted, observed) duration quantiles in hours at plotting positions (i − ½)/n, thinned to
    at most ``QQ_POINTS`` evenly spaced order statistics."""
    x = np.sort(np.asarray(durations, dtype=float))
    n = len(x)
    idx = np.unique(np.linspace(0, n - 1, min(n, QQ_POINTS)).round().astype(int))
    p = (idx + 0.5) / n
    return fit.duration.ppf(p), x[idx]


def qq_figure(durations: np.ndarray, fit: ClassFit) -> go.Figure:
    """Observed vs fitted duration quantiles, log axes, with the line y = x."""
    fitted, observed = qq_points(durations, fit)
    lo = float(min(fitted.min(), observed.min()))
    hi = float(max(fitted.max(), observed.max()))
    fig = go.Figure([
        go.Scatter(x=fitted, y=observed, mode="markers", name="quantiles"),
        go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="y = x", line={"dash": "dot", "color": "gray"}),
    ])
    fig.update_layout(title=f"{literal(fit.name)}: durations, observed vs {fit.duration.law} (KS {fit.duration.ks:.3f})",
                      xaxis={"title": "fitted quantile (h)", "type": "log"},
                      yaxis={"title": "observed quantile (h)", "type": "log"}, showlegend=False)
    return fig


def profile_figure(fits: Sequence[ClassFit], weekly: bool) -> go.Figure:
    """The hourly (or weekly) multipliers of every class, one line each."""
    fig = go.Figure()
    for f in fits:
        values = f.weekly if weekly else f.hourly
        fig.add_trace(go.Scatter(x=list(range(len(values))), y=list(values), mode="lines+markers", name=literal(f.name)))
    clock = bool(fits) and fits[0].start_h != 0  # fit-workload --start: by the source's clock
    if weekly:
        unit = "day of the week (0: Monday)" if clock else "day of the week (0: the day of hour 0; no --start)"
    else:
        unit = "hour of the day (source clock)" if clock else "hour of the day (0: the hour of hour 0; no --start)"
    fig.update_layout(title="Weekly profile" if weekly else "Daily profile",
                      xaxis={"title": unit, "dtick": 1}, yaxis={"title": "rate multiplier (mean 1)"})
    return fig


def parameters_frame(fits: Sequence[ClassFit]) -> pd.DataFrame:
    """One row per class: jobs, rate, GPUs, duration law and parameters, KS statistics."""
    return pd.DataFrame([{
        "name": f.name, "jobs": f.jobs, "per_day": f.per_day,
        "gpus": ", ".join(f"{g}: {p:.0%}" for g, p in f.gpus_pmf.items()),
        "law": f.duration.law, "mean_h": f.duration.mean_h, "median_h": f.duration.median_h, "cv": f.duration.cv,
        "mu": f.duration.mu, "sigma": f.duration.sigma, "ks": f.duration.ks, "ks_p": f.duration.ks_p,
        "arrival_ks": f.arrival_ks, "arrival_ks_p": f.arrival_ks_p,
    } for f in fits])


_p = formats.p_value


COLUMNS: list[Column] = [
    ("class", "name", str, None), ("jobs", "jobs", fixed(0), None), ("jobs/day", "per_day", fixed(2), None),
    ("GPUs per job (share)", "gpus", str, None), ("duration law", "law", str, None),
    ("mean (h)", "mean_h", fixed(3), None), ("median (h)", "median_h", fixed(3), None), ("cv", "cv", fixed(2), None),
    ("μ (log h)", "mu", fixed(3), None), ("σ (log h)", "sigma", fixed(3), None),
    ("duration KS", "ks", fixed(3), None), ("duration KS p", "ks_p", _p, None),
    ("arrival KS", "arrival_ks", fixed(3), None), ("arrival KS p", "arrival_ks_p", _p, None),
]


def fit_page(fits: Sequence[ClassFit], durations: Sequence[np.ndarray], source: str, span: FitWindow | None = None,
             check: FitCheck | None = None, warnings: Sequence[str] = ()) -> str:
    """The whole HTML document for the fitted ``fits`` of ``source`` (``durations[i]``: the run
    times, hours, ``fits[i]`` was fitted to), with the window fitted, the drawn trace's check
    against the record and the warnings, when given."""
    window = window_note(fits[0].window_h)
    notes = ([window] if window else []) + [f"{f.name}: {n}" for f in fits for n in f.notes]
    body = [
        f"<h1>Workload fit: {esc(source)}</h1>",
        para(f"{len(fits)} class(es) over a window of {fits[0].window_h / 24:,.2f} days. Durations: "
             "one-sample Kolmogorov–Smirnov statistic against the fitted law. Arrivals: "
             f"{ARRIVAL_TEST} (time-rescaling theorem), after dividing out the daily and weekly profiles. "
             "p-values treat the fitted parameters as known, so they are optimistic; compare KS statistics. "
             "The lognormal has the sample's mean and cv; the empirical law is the sample itself (smoothed), "
             "so its KS is in-sample and near 0 by construction.",
             "sub"),
        section("Fitted parameters", table(parameters_frame(fits), COLUMNS), anchor="parameters"),
    ]
    against = ([window_reason(span)] if span is not None else []) + ([check_line(check)] if check is not None else [])
    if against or warnings:
        body.append(section("The fit against the record", bullets(against + [f"warning: {w}" for w in warnings]),
                            anchor="record"))
    if notes:
        body.append(section("Notes", bullets(notes), anchor="notes"))
    body.append(section("Arrival profiles", figure(profile_figure(fits, weekly=False), 380),
                        figure(profile_figure(fits, weekly=True), 380), anchor="profiles"))
    qq = (figure(qq_figure(d, f), 420) for f, d in zip(fits, durations, strict=True))
    body.append(section("Durations: QQ plots", *qq, anchor="qq"))
    return page(f"Workload fit: {source}", "".join(body))
