"""The Capacity tab's job timeline shows a window of days (a month at first) and a bounded number
of jobs: two bars a job, each a shape the browser draws."""

from __future__ import annotations

import pytest
from helpers import short_shipped as short

import costsim
from costsim.dashboard.tabs import TIMELINE_DAYS, TIMELINE_JOBS, window_hours
from costsim.plots.timeline import gantt


@pytest.mark.parametrize(("first", "last", "horizon", "hours"), [
    (0, 30, 365, (0, 720)),  # as the slider starts
    (5, 5, 365, (120, 144)),  # one day picked: that day
    (365, 365, 365, (8736, 8760)),  # the last day picked: the horizon's last day
    (0.5, 0.5, 0.5, (0, 12)),  # a horizon shorter than a day: all of it
])
def test_a_window_of_days_in_hours(first, last, horizon, hours):
    assert window_hours(first, last, horizon) == pytest.approx(hours)


def test_the_first_window_draws_a_bounded_timeline(tmp_path_factory):
    res = costsim.simulate(short(tmp_path_factory, "baseline", 60), seed=1)
    start, end = window_hours(0, TIMELINE_DAYS, 60)
    fig = gantt(res, "own-256", start, end, TIMELINE_JOBS)
    bars = sum(len(t.y) for t in fig.data)
    jobs = res.jobs[(res.jobs["option"] == "own-256") & (res.jobs["submit_h"] < end)]
    assert 0 < bars <= 2 * TIMELINE_JOBS and bars <= 2 * len(jobs)
    assert fig.layout.xaxis.range == (0, TIMELINE_DAYS)
