"""Jobs over time: a timeline (Gantt chart) of each option's jobs, waiting and running."""

from __future__ import annotations

import heapq
from typing import TypedDict

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from costsim.plots.layout import legend_entries, literal, literals, new_subplots, title_layout
from costsim.plots.styles import class_looks


class Outline(TypedDict):
    """A bar's outline: its colour and its width in pixels."""

    color: str
    width: int


WAITING = "#8C8C8C"  # grey (3.4:1 on white): queued, not yet holding GPUs
WAITING_WIDTH, HELD_WIDTH = 0.4, 0.8  # waiting bars thinner: told from held ones without colour
UNFINISHED: Outline = {"color": "#000000", "width": 2}  # outline of a job still running at the horizon
Y_TITLE = "jobs (packed rows)"
SMALLEST_PANEL = 0.15  # of the panels' summed heights: room for a panel's title above its bars


def lanes(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Row of each interval [start, end) so that intervals in a row never overlap, using as few
    rows as possible: in order of start, each takes the lowest-numbered row free by then (greedy
    interval partitioning, optimal for intervals)."""
    order = np.argsort(start, kind="stable")
    out = np.empty(len(start), dtype=int)
    busy: list[tuple[float, int]] = []  # (free from, row)
    free: list[int] = []
    for i in order:
        while busy and busy[0][0] <= start[i]:
            heapq.heappush(free, heapq.heappop(busy)[1])
        row = heapq.heappop(free) if free else len(busy) + len(free)
        out[i] = row
        heapq.heappush(busy, (end[i], row))
    return out


def held_marker(look: tuple[str, str], completed: np.ndarray) -> dict:
    """The marker of one job class's held bars: the class's colour and its own pattern (so classes
    differ without colour), and a black outline on each job not finished by the horizon. The
    outline's colour is one for all bars: a finished job's outline is 0 px wide (a colour per bar
    is validated one string at a time, most of a year's timeline's cost)."""
    colour, pattern = look
    return dict(color=colour, pattern=dict(shape=pattern, fillmode="overlay", fgcolor="white"),
                line=dict(color=UNFINISHED["color"], width=np.where(completed, 0, UNFINISHED["width"])))


def _window(results, option, start_h, end_h, max_jobs) -> tuple[pd.DataFrame, int, float, float]:
    jobs = results.jobs
    horizon = float(results.scenario.horizon_h)
    names = list(dict.fromkeys(results.summary["option"]))
    if option is not None and option not in names:
        raise ValueError(f"gantt(): option {option!r} is not one of {', '.join(map(repr, names))}")
    lo = 0.0 if start_h is None else float(start_h)
    hi = horizon if end_h is None else float(end_h)
    if not (0 <= lo < hi) or not np.isfinite(hi):
        raise ValueError(f"gantt(): the window start_h={start_h!r} … end_h={end_h!r} must satisfy 0 ≤ start_h < end_h")
    if not isinstance(max_jobs, (int, np.integer)) or max_jobs < 1:
        raise ValueError(f"gantt(): max_jobs must be a whole number ≥ 1 (got {max_jobs!r})")
    if option is not None:
        jobs = jobs[jobs["option"] == option]
    shown_end = jobs["end_h"].fillna(horizon)  # unfinished: still waiting or running at the horizon
    jobs = jobs[(jobs["submit_h"] < hi) & (shown_end > lo)]
    total = len(jobs)
    # The cap is per option: one option's many jobs never crowd out another's panel.
    jobs = jobs.sort_values(["submit_h", "job_id"], kind="stable").groupby("option", sort=False).head(max_jobs)
    return jobs, total, lo, hi


def gantt(results, option: str | None = None, start_h: float | None = None, end_h: float | None = None,
          max_jobs: int = 2000) -> go.Figure:
    """Timeline of jobs per option (one panel each, or only ``option``): each job a thin light grey
    bar while it waits (submit → start) and a bar in its job class's colour and pattern while it
    holds GPUs (start → end), outlined in black when it had not finished by the horizon
    (``held_marker``); rows packed so bars in a row never overlap. Only jobs overlapping
    [``start_h``, ``end_h``) hours (default: the whole horizon) are drawn, at most ``max_jobs``
    per option, earliest submitted first (the title says how many were left out). The x axis is
    in days."""
    jobs, total, lo, hi = _window(results, option, start_h, end_h, max_jobs)
    horizon = float(results.scenario.horizon_h)
    options = [option] if option is not None else list(dict.fromkeys(results.summary["option"]))
    looks = class_looks(results)
    rows_per = {}
    frames = {}
    for o in options:
        g = jobs[jobs["option"] == o]
        ran = g["start_h"].notna()
        shown_end = g["end_h"].fillna(horizon).to_numpy(dtype=float)
        lane = lanes(g["submit_h"].to_numpy(dtype=float), shown_end) if len(g) else np.array([], dtype=int)
        frames[o] = g.assign(lane=lane, ran=ran, shown_end=shown_end)
        rows_per[o] = max(int(lane.max()) + 1 if len(lane) else 1, 1)
    # A panel's height follows its rows, but never so thin that its title (the option) runs into
    # the panel above.
    heights = [rows_per[o] + 2.0 for o in options]
    heights = [max(x, SMALLEST_PANEL * sum(heights)) for x in heights] if len(options) > 1 else heights
    fig = new_subplots(rows=len(options), cols=1, shared_xaxes=True, vertical_spacing=0.06,
                       row_heights=heights, subplot_titles=literals(options))
    shown_classes: set[str] = set()
    for r, o in enumerate(options, start=1):
        g = frames[o]
        wait_end = g["start_h"].fillna(horizon)
        fig.add_bar(y=g["lane"], x=(wait_end - g["submit_h"]) / 24, base=g["submit_h"] / 24, orientation="h",
                    name="waiting", legendgroup="waiting", showlegend=r == 1, marker_color=WAITING,
                    width=WAITING_WIDTH,
                    customdata=np.c_[literals(g["job_id"]), literals(g["job_class"]), g["gpus"], g["queue_delay_h"],
                                     g["submit_h"] / 24],
                    hovertemplate="%{customdata[0]} (%{customdata[1]}) · %{customdata[2]} GPUs · waiting from day "
                    "%{customdata[4]:.1f} · %{customdata[3]:,.1f} h in the queue<extra>" + literal(o) + "</extra>",
                    row=r, col=1)
        held = g[g["ran"]]
        for job_class, h in held.groupby("job_class", sort=False):
            fig.add_bar(y=h["lane"], x=(h["shown_end"] - h["start_h"]) / 24, base=h["start_h"] / 24, orientation="h",
                        name=literal(job_class), legendgroup=literal(job_class), showlegend=job_class not in shown_classes,
                        width=HELD_WIDTH, marker=held_marker(looks[job_class], h["completed"].to_numpy(dtype=bool)),
                        customdata=np.c_[literals(h["job_id"]), h["gpus"], (h["shown_end"] - h["start_h"]),
                                         np.where(h["completed"], "finished", "still running at the horizon"),
                                         h["start_h"] / 24],
                        hovertemplate="%{customdata[0]} · %{customdata[1]} GPUs · ran from day %{customdata[4]:.1f} "
                        "for %{customdata[2]:,.1f} h · %{customdata[3]}<extra>" + literal(o) + "</extra>", row=r, col=1)
            shown_classes.add(job_class)
    # One y title, on the tallest panel: one per panel overlaps its neighbours' wherever a panel
    # is shorter than the words. Bars carry no text: what a job is shows on hover only.
    fig.update_yaxes(showticklabels=False, showgrid=False, autorange="reversed")
    fig.update_yaxes(title_text=Y_TITLE, row=int(np.argmax(heights)) + 1, col=1)
    fig.update_xaxes(range=[lo / 24, hi / 24])
    fig.update_xaxes(title_text="day of the horizon", row=len(options), col=1)
    left_out = total - len(jobs)
    title = ("Jobs over time (thin grey: waiting; its class's colour and pattern: holding GPUs; "
             "black outline: unfinished at the horizon)")
    if left_out:
        title += f"<br><sup>showing the first {len(jobs):,} of {total:,} jobs in the window: narrow it to see the rest</sup>"
    fig.update_layout(**title_layout(title, legend_entries(fig)), barmode="overlay", bargap=0.1,
                      height=int(min(1600, max(320, 120 + sum(min(rows_per[o], 60) * 9 + 50 for o in options)))))
    return fig

