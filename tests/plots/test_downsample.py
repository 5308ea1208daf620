"""Figures thinned to the screen: a long series keeps each bucket's highest and lowest value and
its gaps, at most SCREEN_POINTS points a line; a short one is drawn whole; the tables a figure is
drawn from are not touched."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from helpers import short_shipped as short
from hypothesis import given, settings
from hypothesis import strategies as hs

import costsim
from costsim.plots import figures as plots
from costsim.plots.downsample import SCREEN_POINTS, envelope, on_screen, steps
from costsim.plots.layout import option_line
from costsim.plots.styles import option_styles


def buckets_of(x: np.ndarray, max_points: int) -> np.ndarray:
    """The bucket of each point, restated from the rule: (max_points - 2) // 3 of equal width."""
    n = (max_points - 2) // 3
    return np.minimum(((x - x[0]) / (x[-1] - x[0]) * n).astype(int), n - 1)


def check_envelope(x: np.ndarray, y: np.ndarray, max_points: int) -> None:
    at = envelope(x, y, max_points)
    assert len(at) <= max_points and np.all(np.diff(at) > 0)  # bounded, in x order, no repeats
    assert at[0] == 0 and at[-1] == len(x) - 1
    if len(x) <= max_points:
        assert len(at) == len(x)
        return
    bucket = buckets_of(x, max_points)
    for b in np.unique(bucket):
        inside = bucket == b
        kept = np.isin(np.flatnonzero(inside), at)
        values, kept_values = y[inside], y[inside][kept]
        if np.isfinite(values).any():  # the bucket's extremes are drawn
            assert np.nanmax(kept_values) == np.nanmax(values) and np.nanmin(kept_values) == np.nanmin(values)
        assert np.isnan(values).any() == np.isnan(kept_values).any()  # a gap stays a gap


def test_an_hourly_year_keeps_every_buckets_extremes_within_the_bound():
    rng = np.random.default_rng(1)
    hours = np.arange(8760, dtype=float)
    busy = np.clip(0.7 + 0.2 * np.sin(hours / 24 * 2 * np.pi) + rng.normal(0, 0.1, 8760), 0, 1)
    busy[rng.integers(0, 8760, 5)] = 1.0  # lone spikes: one hour each, the eye must still see them
    busy[4000:4030] = np.nan  # no capacity for a day and a bit: a gap in the line
    check_envelope(hours, busy, SCREEN_POINTS)
    at = envelope(hours, busy)
    assert SCREEN_POINTS // 2 < len(at) <= SCREEN_POINTS
    assert np.sum(busy[at] == 1.0) >= 5


@settings(max_examples=60, deadline=None)
@given(n=hs.integers(1, 3000), max_points=hs.integers(5, 400), seed=hs.integers(0, 2**16),
       gaps=hs.floats(0, 0.3), ties=hs.booleans())
def test_envelope_keeps_extremes_and_gaps_of_any_series(n, max_points, seed, gaps, ties):
    rng = np.random.default_rng(seed)
    x = np.cumsum(rng.exponential(1.0, n))  # uneven spacing: buckets hold different counts
    y = rng.integers(0, 4, n).astype(float) if ties else rng.normal(0, 1, n)
    y[rng.random(n) < gaps] = np.nan
    if n > 1 and x[-1] == x[0]:
        return
    check_envelope(x, y, max_points)


def test_short_series_and_their_hover_data_are_drawn_whole():
    x, y, custom = on_screen([1, 2, 3], [0.5, np.nan, 0.25], np.array([[1, 2], [3, 4], [5, 6]]))
    assert list(x) == [1, 2, 3] and y[0] == 0.5 and np.isnan(y[1]) and custom.tolist() == [[1, 2], [3, 4], [5, 6]]
    assert on_screen([1, 2], [3, 4], None)[2] is None
    with pytest.raises(ValueError, match="x has 2 points and y 1"):
        envelope([1, 2], [1])


def test_an_option_line_keeps_each_point_with_its_hover_data():
    days = np.arange(3650)
    y = np.sin(days / 50.0)
    custom = np.c_[days * 10, -days]
    fig = go.Figure()
    option_line(fig, option_styles({"own": "owned"})["own"], "own", days, y, 0, 1, "%{x}", customdata=custom)
    line = fig.data[0]
    assert len(line.x) <= SCREEN_POINTS and len(fig.data[1].x) <= 2 * 9
    for x, value, (c0, c1) in zip(line.x, line.y, line.customdata, strict=True):
        assert value == y[x] and (c0, c1) == (x * 10, -x)  # each kept point with its own hover data


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return costsim.simulate(short(tmp_path_factory, "baseline", 20), seed=1)


def ten_years_hourly(res) -> pd.DataFrame:
    """``res``'s hourly table stretched over ten years (each option's hours repeated with a
    noise that makes every day differ), as a long horizon's run would give."""
    rng = np.random.default_rng(0)
    hours = np.arange(10 * 8760)
    parts = []
    for option, g in res.timeseries.groupby("option", sort=False):
        row = g.iloc[len(g) // 2]
        busy = np.clip(row["capacity_gpus"] * rng.uniform(0.2, 1.0, len(hours)), 0, None)
        parts.append(pd.DataFrame({"option": option, "hour": hours, "capacity_gpus": row["capacity_gpus"],
                                   "busy_gpus": busy, "queued_gpus": rng.integers(0, 500, len(hours)),
                                   "queued_jobs": rng.integers(0, 20, len(hours)),
                                   "cost_cum_usd": np.cumsum(rng.uniform(0, 100, len(hours)))}))
    return pd.concat(parts, ignore_index=True)


def test_figures_of_a_long_horizon_draw_a_bounded_number_of_points_and_tables_are_untouched(run):
    long = dataclasses.replace(run, timeseries=ten_years_hourly(run))
    before = long.timeseries.copy()
    for make in (plots.cumulative_cost, plots.utilization_over_time, plots.queue_over_time, plots.capacity_over_time):
        fig = make(long)
        options = set(long.summary["option"])
        for trace in fig.data:
            assert len(trace.x) <= SCREEN_POINTS, (make.__name__, trace.name, len(trace.x))
        assert sum(len(t.x) for t in fig.data) <= 2 * SCREEN_POINTS * len(options) + 20 * len(options)
    pd.testing.assert_frame_equal(long.timeseries, before)
    # the daily queue's busiest and quietest days are on the figure, per option
    daily = long.timeseries.assign(day=long.timeseries["hour"] // 24).groupby(["option", "day"])["queued_gpus"].mean()
    fig = plots.queue_over_time(long)
    for option in options:
        line = next(t for t in fig.data if t.name == option and t.mode == "lines")
        assert max(line.y) == daily[option].max() and min(line.y) == daily[option].min()


def drawn_as_steps(x_kept, y_kept, x):
    """The value a step curve through the kept points draws at each ``x`` (held to the next point)."""
    return np.asarray(y_kept)[np.searchsorted(x_kept, x, side="right") - 1]


@settings(max_examples=40, deadline=None)
@given(hs.integers(2_001, 30_000), hs.integers(0, 2**32 - 1), hs.floats(0.01, 0.5))
def test_a_long_tailed_delay_distribution_is_drawn_within_one_step_of_its_share(n, seed, tail):
    """Most jobs wait minutes and a few wait weeks: cut along x, the first buckets would hold most
    jobs and draw the curve flat at its first value (0 % at 1 h where 36 % waited at most 1 h);
    cut along the share, every x is drawn within one level of the true share."""
    rng = np.random.default_rng(seed)
    delays = np.sort(np.where(rng.random(n) < tail, rng.uniform(100, 2000, n), rng.exponential(2.0, n)))
    x = np.unique(delays)
    share = np.searchsorted(delays, x, side="right") / n
    at = steps(share)
    assert len(at) <= SCREEN_POINTS and at[0] == 0 and at[-1] == len(x) - 1
    error = np.abs(drawn_as_steps(x[at], share[at], x) - share)
    assert error.max() <= 1 / (SCREEN_POINTS - 3) + 1 / n


def test_the_delay_figure_is_thinned_along_its_share(run):
    """The figure itself, on 20,000 jobs of one option, most waiting about 2 h and a tenth 100 to
    2,000 h: at every delay the line draws within one level of the share that waited at most it."""
    rng = np.random.default_rng(5)
    one = run.jobs[run.jobs["option"] == run.jobs["option"].iloc[0]]
    jobs = one.sample(20_000, replace=True, random_state=5).reset_index(drop=True)
    jobs["submit_h"] = run.scenario.warmup_h
    jobs["queue_delay_h"] = np.where(rng.random(len(jobs)) < 0.1, rng.uniform(100, 2000, len(jobs)),
                                     rng.exponential(2.0, len(jobs)))
    fig = plots.delay_distribution(dataclasses.replace(run, jobs=jobs))
    line = fig.data[0]
    delays = np.sort(jobs["queue_delay_h"].to_numpy())
    x = np.unique(delays)
    share = np.searchsorted(delays, x, side="right") / len(delays)
    assert len(line.x) <= SCREEN_POINTS
    error = np.abs(drawn_as_steps(np.asarray(line.x), np.asarray(line.y), x) - share)
    assert error.max() <= 1 / (SCREEN_POINTS - 3) + 1 / len(delays)
