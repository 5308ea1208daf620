"""Plotly figures from result tables, shared by the dashboard and reports. No model logic here:
every number plotted is a column of ``costsim.Results``. User text (option and class names, a
trace's classes) enters a figure only through ``costsim.plots.layout.literal``: plotly reads names,
categories, hovers and annotations as HTML.

Every option is drawn in its ``option_styles`` style (Okabe–Ito colour, a dash and marker per
kind: see ``costsim.plots.styles``), the same in every figure; hover labels read
"own-384 · day 236 · 412 GPUs busy"; every axis title names its unit; legends sit above the plot.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from costsim.plan.facts import hybrid, parts_of, pricing_label
from costsim.plots.band import cumulative_cost_band
from costsim.plots.decisions import pareto_figure, tornado_figure
from costsim.plots.downsample import on_screen, steps, thinned
from costsim.plots.layout import (
    finish,
    literal,
    literals,
    new_figure,
    option_bars,
    option_line,
    widths,
)
from costsim.plots.phases import PHASE_LABELS, phase_breakdown
from costsim.plots.styles import BLACK, OKABE_ITO, Style, category_styles, class_looks, option_styles
from costsim.plots.timeline import gantt
from costsim.plots.to_target import time_to_target
from costsim.present.formats import money
from costsim.results.contract import Results
from costsim.results.costing import ALL_ITEMS
from costsim.results.finance import cash_paid

__all__ = ["ALL_FIGURES", "BOOK_VALUE_CREDIT", "PHASE_LABELS", "Style", "book_value_note", "capacity_over_time", "cash_flow", "class_looks", "cost_breakdown",
           "cumulative_cash", "cumulative_cost", "cumulative_cost_band", "delay_distribution", "gantt", "hybrid_parts",
           "iterations_per_day", "lost_work", "option_styles", "pareto_figure", "phase_breakdown", "queue_over_time",
           "rollout_throughput", "time_to_target", "tornado_figure", "utilization_over_time"]

_NAME = "<b>%{fullData.name}</b>"  # the trace's name (the option), never pasted into the template
_USD_AXIS = dict(tickprefix="$", tickformat=",.3s")


def _daily(results: Results, columns: list[str]) -> pd.DataFrame:
    ts = results.timeseries.assign(day=lambda d: (d["hour"] // 24).astype(int))
    return ts.groupby(["option", "day"], sort=False, as_index=False)[columns].mean()


def _groups(frame: pd.DataFrame, styles: dict[str, Style]):
    """(k, n, option, rows) per option in the styles' order (the summary's), skipping absent ones."""
    names = set(frame["option"].unique())  # once: a set of the column per option cost seconds on long tables
    present = [o for o in styles if o in names]
    by = dict(tuple(frame.groupby("option", sort=False)))
    return [(k, len(present), o, by[o]) for k, o in enumerate(present)]


def cumulative_cost(results: Results) -> go.Figure:
    """Cumulative amortised cost per option at each day's end (USD)."""
    ts = results.timeseries
    daily = ts[(ts["hour"] % 24 == 23) | (ts.groupby("option")["hour"].transform("max") == ts["hour"])]
    daily = daily.assign(day=(daily["hour"] + 1) / 24)
    styles = option_styles(results)
    fig = new_figure()
    for k, n, option, g in _groups(daily, styles):
        option_line(fig, styles[option], option, g["day"], g["cost_cum_usd"], k, n,
                    _NAME + " · day %{x:.0f} · $%{y:,.0f} spent so far (amortised)<extra></extra>")
    return finish(fig, "Cumulative cost", "day of the horizon", "cumulative cost (USD, capital amortised)",
                  yaxis=_USD_AXIS)


class HasSummary(Protocol):
    """What ``cost_breakdown`` reads: a summary table, one row per option with its
    ``cost_<item>_usd`` columns (a Results, or a sweep variant's mean rows)."""

    @property
    def summary(self) -> pd.DataFrame: ...


def cost_breakdown(results: HasSummary) -> go.Figure:
    """Total cost per option split into line items (USD). Needs only ``results.summary``."""
    s = results.summary
    looks = category_styles(ALL_ITEMS)
    fig = new_figure()
    for item in ALL_ITEMS:
        usd = s[f"cost_{item}_usd"]
        if not (usd > 0).any():
            continue
        colour, pattern = looks[item]
        label = item.replace("_", " ")
        fig.add_bar(x=literals(s["option"]), y=usd, name=label, marker=dict(color=colour, pattern_shape=pattern,
                                                                  pattern_fillmode="overlay", pattern_fgcolor="white"),
                    hovertemplate="<b>%{x}</b> · " + label + " · $%{y:,.0f} over the horizon<extra></extra>")
    return finish(fig, "Cost over the horizon by line item", "option", "cost over the horizon (USD)",
                  barmode="stack", yaxis=_USD_AXIS)


def delay_distribution(results: Results) -> go.Figure:
    """Empirical CDF of queue delay per option (hours; never-started jobs at their delay so far),
    jobs submitted after the warm-up."""
    jobs = results.jobs[results.jobs["submit_h"] >= results.scenario.warmup_h]
    styles = option_styles(results)
    fig = new_figure()
    longest = float(jobs["queue_delay_h"].max()) if len(jobs) else 0.0
    for k, n, option, g in _groups(jobs, styles):
        delays = np.sort(g["queue_delay_h"].to_numpy(dtype=float))
        # one point per distinct delay: the share of jobs that waited at most that long (a step
        # curve), carried on at 100 % to the longest delay of any option, so an option whose jobs
        # never waited is a line along the top, not one point hidden under another's
        x = np.unique(delays)
        share = np.searchsorted(delays, x, side="right") / len(delays)
        if len(x) and x[-1] < longest:
            x, share = np.append(x, longest), np.append(share, 1.0)
        x, share = thinned(steps(share), x, share)  # thinned along the share: most jobs wait little
        option_line(fig, styles[option], option, x, share, k, n, _NAME + " · %{y:.0%} of jobs waited at most "
                    "%{x:,.2f} h<extra></extra>", line=dict(shape="hv"))
    return finish(fig, "Queue delay distribution", "queue delay (hours)", "share of jobs waiting at most x",
                  yaxis=dict(tickformat=".0%", range=[0, 1.02]))


def utilization_over_time(results: Results, window_days: int = 7) -> go.Figure:
    """Utilisation per option: a centred ``window_days`` rolling value as the line (held GPU-hours
    ÷ capacity GPU-hours over the window, so days without capacity do not count), each day's
    value thin and faint behind it in the same colour."""
    d = _daily(results, ["busy_gpus", "capacity_gpus"])
    styles = option_styles(results)
    fig = new_figure()
    for k, n, option, g in _groups(d, styles):
        st = styles[option]
        cap = g["capacity_gpus"].where(g["capacity_gpus"] > 0)
        daily = g["busy_gpus"] / cap
        roll = lambda c: c.rolling(window_days, center=True, min_periods=1).sum()  # noqa: E731
        weekly = roll(g["busy_gpus"].where(cap.notna())) / roll(cap)
        days, daily, held = on_screen(g["day"], daily, np.c_[g["busy_gpus"], cap])
        fig.add_scatter(x=days, y=daily, name=literal(option), legendgroup=literal(option), showlegend=False,
                        mode="lines", line=dict(color=st.color, width=1), opacity=0.3, customdata=held,
                        hovertemplate=_NAME + " · day %{x} · %{customdata[0]:,.0f} of %{customdata[1]:,.0f} GPUs "
                        "busy (%{y:.0%})<extra></extra>")
        option_line(fig, st, option, g["day"], weekly, k, n,
                    _NAME + f" · day %{{x}} · %{{y:.0%}} utilised ({window_days}-day mean)<extra></extra>")
    return finish(fig, f"Utilisation ({window_days}-day rolling mean; daily values faint)", "day of the horizon",
                  "utilisation (held ÷ capacity GPU-hours)", yaxis=dict(tickformat=".0%"))


def queue_over_time(results: Results) -> go.Figure:
    """Daily mean number of GPUs asked for by queued jobs."""
    d = _daily(results, ["queued_gpus", "queued_jobs"])
    styles = option_styles(results)
    fig = new_figure()
    for k, n, option, g in _groups(d, styles):
        option_line(fig, styles[option], option, g["day"], g["queued_gpus"], k, n,
                    _NAME + " · day %{x} · %{y:,.0f} GPUs requested by %{customdata:,.1f} waiting jobs"
                    "<extra></extra>", customdata=g["queued_jobs"])
    return finish(fig, "Queued demand (daily mean)", "day of the horizon", "GPUs requested by waiting jobs (GPUs)")


def capacity_over_time(results: Results) -> go.Figure:
    """Daily mean capacity (owned: installed; cloud: rented) as a thin line and held GPUs in the
    option's style."""
    d = _daily(results, ["capacity_gpus", "busy_gpus"])
    styles = option_styles(results)
    fig = new_figure()
    for k, n, option, g in _groups(d, styles):
        st = styles[option]
        days, capacity = on_screen(g["day"], g["capacity_gpus"])
        fig.add_scatter(x=days, y=capacity, name=literal(f"{option} capacity"), legendgroup=literal(option),
                        showlegend=False, mode="lines+markers",
                        line=dict(color=st.color, width=1.2, dash="dot" if st.dash != "dot" else "solid"),
                        # full colour (contrast) and the option's marker, open and sparse: whose capacity
                        # a line is does not rest on colour alone
                        marker=dict(symbol=st.symbol if st.symbol.endswith("-open") else f"{st.symbol}-open",
                                    color=st.color, size=6, maxdisplayed=12),
                        hovertemplate=_NAME + " · day %{x} · %{y:,.0f} GPUs<extra></extra>")
        option_line(fig, st, option, g["day"], g["busy_gpus"], k, n,
                    _NAME + " · day %{x} · %{y:,.0f} GPUs busy<extra></extra>")
    return finish(fig, "Capacity (thin dotted) and held GPUs (daily mean)", "day of the horizon", "GPUs")


def _option_bars(frame: pd.DataFrame, results: Results, x: str, y: str, hovertemplate: str, custom: list[str],
                 text: str | None = None) -> go.Figure:
    """Grouped bars of ``y`` per ``x``, one series per option in its style (a text ``x``, the job
    class, escaped)."""
    styles = option_styles(results)
    fig = new_figure()
    for _, _, option, g in _groups(frame, styles):
        xs = literals(g[x]) if g[x].dtype == object else g[x]
        option_bars(fig, styles[option], option, xs, g[y], hovertemplate,
                    customdata=g[custom].to_numpy() if custom else None, text=None if text is None else list(g[text]))
    fig.update_layout(barmode="group")
    return fig


def iterations_per_day(results: Results) -> go.Figure:
    """RL iterations completed per day, per job class and option."""
    fig = _option_bars(results.phases, results, "job_class", "iterations_per_day",
                       _NAME + " · %{x} · %{y:,.1f} iterations per day<br>iteration %{customdata[0]:,.1f} s · "
                       "$%{customdata[1]:,.2f} per iteration<extra></extra>", ["iteration_s", "cost_per_iteration_usd"])
    return finish(fig, "RL iterations per day (completed within the horizon)", "job class", "iterations per day")


def rollout_throughput(results: Results) -> go.Figure:
    """Rollout throughput per job class and option: response tokens ÷ rollout GPU-seconds over the
    class's planned iterations. Each bar is labelled with the straggler's share of rollout time
    (the longest response decoding alone), the part more rollout GPUs cannot shorten."""
    ph = results.phases.assign(label=lambda d: [f"{v:.0%}" if v == v else "" for v in d["straggler_share"]])
    fig = _option_bars(ph, results, "job_class", "rollout_tokens_per_s_per_gpu",
                       _NAME + " · %{x} · %{y:,.0f} rollout tokens/s per GPU<br>straggler %{customdata[0]:.0%} of "
                       "rollout time · rollout %{customdata[1]:,.1f} s<extra></extra>", ["straggler_share", "rollout_s"],
                       text="label")
    fig.update_traces(textposition="outside", cliponaxis=False)
    return finish(fig, "Rollout throughput per GPU (on each bar: the straggler's share of rollout time)",
                  "job class", "rollout tokens/s per GPU", yaxis_tickformat=",.0f")


def cumulative_cash(results: Results) -> go.Figure:
    """Cumulative cash paid out per option by month end (capex when bought; the horizon-end book
    value credit left out, commitment owed in the last month, as in the break-even), with each break-even month
    against renting marked (from its end on, the owned or committed option stays at or below the
    rental), and the last month an option that is dearer at the horizon's end was still cheaper."""
    cf = results.cashflow.assign(out=cash_paid)
    cf = cf.assign(paid=cf.groupby("option", sort=False)["out"].cumsum(), month_end=cf["month"] + 1)
    styles = option_styles(results)
    fig = new_figure()
    for k, n, option, g in _groups(cf, styles):
        st = styles[option]
        fig.add_scatter(x=g["month_end"], y=g["paid"], name=literal(option), legendgroup=literal(option),
                        mode="lines+markers",
                        line=st.line(widths(n)[k]), marker=st.marker(),
                        hovertemplate=_NAME + " · end of month %{x} · $%{y:,.0f} paid out so far<extra></extra>")
    be = results.breakeven
    marks = [(b["breakeven_month"], f"{literal(b['option'])} = {literal(b['versus'])}", "#595959")
             for _, b in be.dropna(subset=["breakeven_month"]).iterrows()]
    marks += [(b["cheaper_until_month"], f"{literal(b['option'])} &lt; {literal(b['versus'])} until here", "#D55E00")
              for _, b in be.dropna(subset=["cheaper_until_month"]).iterrows()]
    for month, text, colour in marks:  # month number N ends N months in: x = N on the month-end axis
        fig.add_vline(x=month, line_dash="dot", line_color=colour)
        fig.add_annotation(x=month, y=1, yref="paper", text=text, showarrow=False,
                           textangle=-90, xanchor="right", yanchor="top", font_size=11)
    return finish(fig, "Cumulative cash out (capex paid up front) and break-even months", "month (end of)",
                  "cumulative cash out (USD)", yaxis=_USD_AXIS)


BOOK_VALUE_CREDIT = "book value credit (not cash)"


def cash_flow(results: Results) -> go.Figure:
    """Cash paid per option and month (capex when bought, opex and bills as paid, in the last month
    the rest of a reservation's term owed), and apart from it, as its own labelled markers below
    zero, the book value of owned hardware credited at the horizon's end: an estimate of what the
    kept hardware is still worth, not cash received (nothing is sold), so it never nets into a
    month's bar."""
    # Months as users count them (1 is the first), as break-even months are; the table's ``month`` is
    # the 0-based index.
    cf = results.cashflow.assign(paid=cash_paid, month_number=results.cashflow["month"] + 1)
    parts = ["capex_usd", "opex_usd", "rent_usd", "commitment_owed_usd"]
    fig = _option_bars(cf, results, "month_number", "paid",
                       _NAME + " · month %{x} · $%{y:,.0f} cash paid<br>capex $%{customdata[0]:,.0f} · opex "
                       "$%{customdata[1]:,.0f} · rent $%{customdata[2]:,.0f}<br>commitment owed $%{customdata[3]:,.0f}"
                       "<extra></extra>", parts)
    styles = option_styles(results)
    credited = cf[cf["book_value_usd"] > 0]
    # The words once, under the lowest marker (the legend names each); stacked copies would overlap.
    lowest = credited.loc[credited["book_value_usd"].idxmax(), "option"] if len(credited) else None
    for _, _, option, g in _groups(credited, styles):
        st = styles[option]
        fig.add_scatter(x=g["month_number"], y=-g["book_value_usd"], mode="markers+text", name=f"{literal(option)}: "
                        f"{BOOK_VALUE_CREDIT}", legendgroup=literal(option),
                        text=[BOOK_VALUE_CREDIT if option == lowest else ""] * len(g),
                        textposition="bottom center", cliponaxis=False,
                        marker=dict(color=st.color, symbol="triangle-down", size=12, line=dict(color=BLACK, width=1)),
                        hovertemplate=_NAME + " · month %{x} · book value $%{customdata:,.0f} credited at the "
                        "horizon's end: the hardware is kept, not sold; an estimate, not cash<extra></extra>",
                        customdata=g["book_value_usd"])
    return finish(fig, "Monthly cash paid; ▼ the book value credited at the horizon's end (not cash)", "month (1 is the first)",
                  "cash paid in the month (USD); ▼ credit", yaxis=_USD_AXIS)


def book_value_note(summary: pd.DataFrame) -> str:
    """The book value credit in words, for under the cash-flow figure: each owned option's value
    credited at the horizon's end, and that it is not cash; "" when no option has one."""
    held = summary[summary["book_value_usd"] > 0]
    if not len(held):
        return ""
    each = ", ".join(f"{r.option} {money(r.book_value_usd)}" for r in held.itertuples())
    return (f"Book value credit at the horizon's end ({each}): what the owned hardware is still worth on the books "
            "(straight-line depreciation to its residual value). It is credited in the net cash flow and the NPV, "
            "never as cash paid or received: nothing is sold. The break-even and the cumulative cash leave it out.")


# A part's colour by how it is paid: owned warm orange, reserved green, rented blue (hatched, as
# rented bars are); a second pool of the same kind in one fleet takes the next pattern.
_PART_LOOKS = {"owned": (OKABE_ITO[0], ""), "reserved": (OKABE_ITO[2], ""), "on_demand": (OKABE_ITO[4], "/"),
               "spot": (OKABE_ITO[1], "/")}
_MORE_PATTERNS = ("x", ".", "+", "-", "|")


def _part_label(part: str, kind: str, burst: bool) -> str:
    """A hybrid's or fleet's part as the figure's legend names it: its option name and how it is
    paid (``facts.pricing_label``), the burst said so ("own-256 (owned)", "cloud-od (on demand, burst)")."""
    return f"{part} ({kind.replace('_', ' ')}{', burst' if burst else ''})"


def hybrid_parts(results: Results) -> go.Figure:
    """Job GPU-hours each hybrid or fleet option ran on each of its parts (the jobs' ``ran_on``), a
    bar segment per part named by its option and kind (``_part_label``)."""
    s = results.summary[hybrid(results.summary["kind"])]
    sc = results.scenario
    by_name = {o.name: o for o in sc.options}
    jobs = results.jobs[results.jobs["option"].isin(s["option"])]
    held = jobs.groupby(["option", "ran_on"])["gpu_hours"].sum()
    fig = new_figure()
    drawn: dict[str, int] = {}  # pool kind -> pools of it drawn so far in one option (for the pattern)
    listed: set[str] = set()  # labels already in the legend
    for option in s["option"]:
        names = parts_of(by_name[option]) if option in by_name else ()
        drawn.clear()
        for k, part in enumerate(names):
            burst = k == len(names) - 1
            kind = pricing_label(sc, by_name[part]) if part in by_name else "owned"
            colour, pattern = _PART_LOOKS.get(kind, (OKABE_ITO[6], ""))
            n = drawn.get(kind, 0)
            drawn[kind] = n + 1
            pattern = pattern if n == 0 else _MORE_PATTERNS[(n - 1) % len(_MORE_PATTERNS)]
            label = _part_label(part, kind, burst)
            fig.add_bar(x=literals([option]), y=[float(held.get((option, part), 0.0))], name=literal(label),
                        legendgroup=literal(label), showlegend=label not in listed,
                        marker=dict(color=colour, pattern_shape=pattern, pattern_fillmode="overlay",
                                    pattern_fgcolor="white"),
                        hovertemplate="<b>%{x}</b> · " + literal(label) + " · %{y:,.0f} job GPU-hours<extra></extra>")
            listed.add(label)
    return finish(fig, "Where hybrid and fleet options ran their jobs, by part", "hybrid or fleet option",
                  "job GPU-hours", barmode="stack")


def lost_work(results: Results) -> go.Figure:
    """GPU-hours lost to failures and preemptions per option and job class, with goodput."""
    j = results.jobs.groupby(["option", "job_class"], sort=False, as_index=False)["lost_gpu_hours"].sum()
    looks = class_looks(results)
    fig = new_figure()
    for job_class, g in j.groupby("job_class", sort=False):
        colour, pattern = looks[job_class]
        fig.add_bar(x=literals(g["option"]), y=g["lost_gpu_hours"], name=literal(job_class),
                    marker=dict(color=colour, pattern_shape=pattern, pattern_fillmode="overlay", pattern_fgcolor="white"),
                    hovertemplate="<b>%{x}</b> · " + literal(job_class) + " · %{y:,.0f} GPU-hours lost<extra></extra>")
    s = results.summary
    fig.add_scatter(x=literals(s["option"]), y=s["goodput"], mode="markers+text", name="goodput (right axis)", yaxis="y2",
                    text=[f"{g:.1%}" for g in s["goodput"]], textposition="top center",
                    marker=dict(color=BLACK, symbol="diamond", size=10),
                    hovertemplate="<b>%{x}</b> · goodput %{y:.1%} of held GPU-hours<extra></extra>")
    return finish(fig, "Work lost to failures and preemptions (GPU-hours since the last checkpoint)", "option",
                  "lost GPU-hours", barmode="stack",
                  yaxis2=dict(overlaying="y", side="right", range=[0, 1.15], tickformat=".0%", tickvals=[0, .2, .4, .6, .8, 1],
                              title="goodput (share of held GPU-hours)", showgrid=False))


ALL_FIGURES = {
    "cumulative_cost": cumulative_cost,
    "cost_breakdown": cost_breakdown,
    "delay_distribution": delay_distribution,
    "utilization_over_time": utilization_over_time,
    "queue_over_time": queue_over_time,
    "capacity_over_time": capacity_over_time,
    "iterations_per_day": iterations_per_day,
    "phase_breakdown": phase_breakdown,
    "rollout_throughput": rollout_throughput,
    "cumulative_cash": cumulative_cash,
    "cash_flow": cash_flow,
    "hybrid_parts": hybrid_parts,
    "lost_work": lost_work,
}
