"""Capacity over time: what each option holds against the demand it meets, when an owned option's
purchases (tranches) are ordered, delivered and paid, the cash it pays month by month, and how a
``costsim plan`` search got to its answer. Every number drawn is a column of ``costsim.Results``
(or of ``CapacityPlan.trials``), or an owned option's purchases as the plan resolves them
(``OwnedPlan.purchases``: an option bought at once, a pool of node groups too, is one tranche)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from costsim.plan.facts import bought_plans
from costsim.plan.resolve import resolve
from costsim.plots.layout import finish, legend_entries, literal, new_figure, new_subplots, option_line, title_layout
from costsim.plots.styles import BLACK, category_styles, option_styles
from costsim.results.finance import cash_paid
from costsim.units import HOURS_PER_DAY

_NAME = "<b>%{fullData.name}</b>"
_USD_AXIS = dict(tickprefix="$", tickformat=",.3s")
DEMAND = "demand (held + queued GPUs)"
PAYMENTS = {"order": "paid on order", "delivery": "paid on delivery", "lease": "leased"}


def purchases(results) -> pd.DataFrame:
    """One row per purchase of each owned option (``option``, ``tranche`` from 1, ``gpus``,
    ``order_day``, ``delivery_day``, ``payment``, ``returned_day``: a lease ending within the
    horizon, its nodes back to the lessor; inf: kept), in the scenario's option order."""
    rows = [{"option": p.name, "tranche": k, "gpus": t.gpus, "order_day": t.order_h / HOURS_PER_DAY,
             "delivery_day": t.delivery_h / HOURS_PER_DAY, "payment": t.payment,
             "returned_day": t.returned_h / HOURS_PER_DAY}
            for p in bought_plans(resolve(results.scenario)).values()
            for k, t in enumerate(p.purchases, start=1)]
    return pd.DataFrame(rows, columns=["option", "tranche", "gpus", "order_day", "delivery_day", "payment",
                                       "returned_day"])


def daily_demand(results) -> pd.DataFrame:
    """Per option and day: the mean capacity (``capacity_gpus``) and demand (``demand_gpus``: GPUs
    held plus GPUs asked for by queued jobs) over the day's hours."""
    ts = results.timeseries
    d = ts.assign(day=(ts["hour"] // HOURS_PER_DAY).astype(int), demand_gpus=ts["busy_gpus"] + ts["queued_gpus"])
    return d.groupby(["option", "day"], sort=False, as_index=False)[["capacity_gpus", "demand_gpus"]].mean()


def installed(schedule: pd.DataFrame, days: np.ndarray) -> dict[int, np.ndarray]:
    """GPUs of each tranche in service on each day (from the day of its delivery to the day of its
    return to the lessor, if any: a day's mean counts a tranche delivered during it only from the
    next day and one returned during it no more, so the stack is a whole-day step)."""
    return {int(t.tranche): np.where((days >= np.ceil(t.delivery_day)) & (days < np.floor(t.returned_day)),
                                     float(t.gpus), 0.0)
            for t in schedule.itertuples()}


def capacity_vs_demand(results) -> go.Figure:
    """One panel per option: its daily mean capacity (owned: installed and working; rented: held)
    as a line in its style, its demand (held + queued GPUs) in black, and for an owned option
    bought in more than one tranche its tranches stacked by delivery beneath."""
    daily = daily_demand(results)
    styles = option_styles(results)
    buys = purchases(results)
    options = [o for o in styles if o in set(daily["option"])]
    fig = new_subplots(rows=len(options), cols=1, shared_xaxes=True, vertical_spacing=0.05,
                       subplot_titles=[literal(o) for o in options])
    looks = category_styles([f"tranche {k}" for k in sorted(set(buys["tranche"]))] or ["tranche 1"])
    shown: set[str] = set()
    for r, option in enumerate(options, start=1):
        g = daily[daily["option"] == option]
        days = g["day"].to_numpy()
        mine = buys[buys["option"] == option]
        if len(mine) > 1:
            for k, gpus in installed(mine, days).items():
                colour, _ = looks[f"tranche {k}"]
                row = mine[mine["tranche"] == k].iloc[0]
                name = f"tranche {k}"
                fig.add_scatter(x=days, y=gpus, stackgroup=f"s{r}", mode="lines", line=dict(width=0, color=colour),
                                fillcolor=colour, opacity=0.35, name=name, legendgroup=name, showlegend=name not in shown,
                                hovertemplate=f"{literal(option)} · tranche {k} · %{{y:,.0f}} GPUs (ordered day "
                                f"{row.order_day:g}, delivered day {row.delivery_day:g})<extra></extra>", row=r, col=1)
                shown.add(name)
        st = styles[option]
        fig.add_scatter(x=days, y=g["capacity_gpus"], mode="lines", name=literal(option), legendgroup=literal(option),
                        line=st.line(2.0), hovertemplate=_NAME + " · day %{x} · %{y:,.0f} GPUs of capacity<extra></extra>",
                        row=r, col=1)
        fig.add_scatter(x=days, y=g["demand_gpus"], mode="lines", name=DEMAND, legendgroup=DEMAND,
                        showlegend=DEMAND not in shown, line=dict(color=BLACK, width=1.2),
                        hovertemplate=literal(option) + " · day %{x} · %{y:,.0f} GPUs held or asked for<extra></extra>",
                        row=r, col=1)
        shown.add(DEMAND)
    fig.update_yaxes(title_text="GPUs (daily mean)")
    fig.update_xaxes(title_text="day of the horizon", row=len(options), col=1)
    title = "Capacity against demand (held + queued GPUs), daily mean; shaded: an owned option's tranches"
    fig.update_layout(**title_layout(title, legend_entries(fig)), height=int(160 + 190 * len(options)))
    return fig


def tranche_timeline(results) -> go.Figure:
    """Each owned option's purchases: a bar from order to delivery (the lead time) per tranche,
    coloured and patterned by how it is paid, labelled with its GPUs; a dotted line at the
    horizon's end (a tranche delivered after it never runs)."""
    buys = purchases(results)
    looks = category_styles(PAYMENTS.values())
    fig = new_figure()
    labels = [f"{literal(b.option)} · {b.tranche}" for b in buys.itertuples()]
    for payment, words in PAYMENTS.items():
        mine = buys["payment"] == payment
        if not mine.any():
            continue
        b = buys[mine]
        colour, pattern = looks[words]
        fig.add_bar(y=[lab for lab, m in zip(labels, mine, strict=True) if m], x=b["delivery_day"] - b["order_day"],
                    base=b["order_day"], orientation="h", name=words,
                    marker=dict(color=colour, pattern=dict(shape=pattern, fillmode="overlay", fgcolor="white")),
                    text=[f"{g:,} GPUs" for g in b["gpus"]], textposition="inside",
                    customdata=np.c_[b["gpus"], b["order_day"], b["delivery_day"]],
                    hovertemplate="%{y} · %{customdata[0]:,} GPUs ordered day %{customdata[1]:.0f}, delivered day "
                    "%{customdata[2]:.0f} · " + words + "<extra></extra>")
    horizon_days = float(results.scenario.horizon_days)
    fig.add_vline(x=horizon_days, line_dash="dot", line_color=BLACK)
    fig.update_yaxes(autorange="reversed", categoryorder="array", categoryarray=labels)
    title = "Purchases: order to delivery per tranche (option · tranche), by how it is paid"
    if buys.empty:
        title += "<br><sup>no owned option</sup>"
    return finish(fig, title, "day of the horizon (dotted: its end)", "option · tranche", barmode="overlay",
                  height=int(200 + 36 * max(len(buys), 1)))


def monthly_cash(results) -> go.Figure:
    """Cash paid per option and month (capex when paid, opex and bills as incurred, a commitment
    still owed in the last month; the book value credited at the end left out: it is not cash)."""
    cf = results.cashflow.assign(paid=cash_paid, month_number=results.cashflow["month"] + 1)
    styles = option_styles(results)
    present = [o for o in styles if o in set(cf["option"])]
    fig = new_figure()
    for k, option in enumerate(present):
        g = cf[cf["option"] == option]
        option_line(fig, styles[option], option, g["month_number"], g["paid"], k, len(present),
                    _NAME + " · month %{x} · $%{y:,.0f} paid<extra></extra>", line=dict(shape="hv"))
    return finish(fig, "Cash paid by month (capex in the month it is paid; no book value credit)",
                  "month (1 is the first)", "cash paid in the month (USD)", yaxis=_USD_AXIS)


def running_best(trials: pd.DataFrame) -> pd.Series:
    """After each trial, the lowest fair total among the trials so far that meet the targets (NaN
    until one does)."""
    # cummin leaves a missing trial missing: carried forward, the best so far holds through it
    return trials["fair_total_usd"].where(trials["meets"].astype(bool)).cummin().ffill()


def plan_progress(plan) -> go.Figure:
    """A ``costsim plan`` search trial by trial (``CapacityPlan.trials``): each configuration's fair
    total (filled: meets every target; open grey: the closest option there misses), the sampler's
    trials as circles and the refinement's as diamonds, and the running best of those that meet."""
    trials = plan.trials
    fig = new_figure()
    for stage, symbol in (("search", "circle"), ("refinement", "diamond")):
        for meets, name in ((True, "meets"), (False, "misses a target")):
            t = trials[(trials["stage"] == stage) & (trials["meets"].astype(bool) == meets)]
            if t.empty:
                continue
            fig.add_scatter(x=t["trial"], y=t["fair_total_usd"], mode="markers", name=f"{stage}: {name}",
                            marker=dict(symbol=symbol if meets else f"{symbol}-open", size=10,
                                        color="#0072B2" if meets else "#8C8C8C", line=dict(width=1)),
                            text=[literal(o) for o in t["option"]],
                            hovertemplate="trial %{x} · %{text} · $%{y:,.0f} fair total · " + name + "<extra></extra>")
    best = running_best(trials)
    fig.add_scatter(x=trials["trial"], y=best, mode="lines", name="best that meets so far",
                    line=dict(color=BLACK, width=2, shape="hv"),
                    hovertemplate="after trial %{x} · best $%{y:,.0f}<extra></extra>")
    return finish(fig, "Plan search: fair total per configuration tried, and the best that meets so far",
                  "trial (in the order run)", "fair total (USD)", yaxis=_USD_AXIS)


CAPACITY_FIGURES = {"capacity_vs_demand": capacity_vs_demand, "tranche_timeline": tranche_timeline,
                    "monthly_cash": monthly_cash}

__all__ = ["CAPACITY_FIGURES", "DEMAND", "PAYMENTS", "capacity_vs_demand", "daily_demand", "installed", "monthly_cash",
           "plan_progress", "purchases", "running_best", "tranche_timeline"]
