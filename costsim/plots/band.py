"""Cumulative cost over replications: the mean per option and month with its 95 % confidence
band, for the dashboard's replications control."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from costsim.plots.layout import finish, literal, new_figure, option_line
from costsim.plots.styles import option_styles
from costsim.units import HOURS_PER_MONTH


def _check(results_list: Sequence) -> list:
    runs = list(results_list) if isinstance(results_list, Sequence) else []
    if not runs or not all(hasattr(r, "costs") and hasattr(r, "summary") for r in runs):
        raise ValueError("cumulative_cost_band(): results_list must be a non-empty list of Results "
                         "(replications of one scenario: costsim.simulate(scenario, seed=s) for several s)")
    options = list(runs[0].summary["option"])
    horizon = runs[0].scenario.horizon_h
    for i, r in enumerate(runs[1:], start=1):
        if list(r.summary["option"]) != options or r.scenario.horizon_h != horizon:
            raise ValueError(f"cumulative_cost_band(): results_list[{i}] is not a replication of results_list[0] "
                             "(its options or horizon differ)")
    return runs


def cost_band_table(results_list: Sequence, level: float = 0.95) -> pd.DataFrame:
    """Per (option, month): ``month_end`` (months from the start, the last one cut at the horizon),
    ``mean_usd`` — the mean over replications of the cumulative amortised cost at that month's
    end (the monthly ``costs`` line items summed and accumulated) — with ``low_usd``/``high_usd``,
    the ``level`` t-interval of that mean (``costsim.runs.stats.t_interval``; NaN with one
    replication), and ``n`` replications."""
    from costsim.runs.stats import t_interval  # scipy: only when replications are plotted

    runs = _check(results_list)
    per_run = []
    for r, res in enumerate(runs):
        monthly = res.costs.groupby(["option", "month"], sort=False, as_index=False)["cost_usd"].sum()
        monthly["cum_usd"] = monthly.groupby("option", sort=False)["cost_usd"].cumsum()
        per_run.append(monthly.assign(replication=r))
    cum = pd.concat(per_run, ignore_index=True)
    rows = []
    for (option, month), g in cum.groupby(["option", "month"], sort=False):
        mean, low, high = t_interval(g["cum_usd"].to_numpy(), level)
        rows.append((option, int(month), mean, low, high, len(g)))
    out = pd.DataFrame(rows, columns=["option", "month", "mean_usd", "low_usd", "high_usd", "n"])
    horizon_months = runs[0].scenario.horizon_h / HOURS_PER_MONTH
    out.insert(2, "month_end", np.minimum(out["month"] + 1.0, horizon_months))
    return out


def cumulative_cost_band(results_list: Sequence, level: float = 0.95) -> go.Figure:
    """Mean cumulative amortised cost per option at each month's end over the replications in
    ``results_list`` (Results of one scenario, different seeds), with a shaded band: the 95 %
    t-interval of the mean per month (``cost_band_table``). One replication: the line alone."""
    table = cost_band_table(results_list, level)
    styles = option_styles(results_list[0])
    n_runs = int(table["n"].max())
    fig = new_figure()
    options = [o for o in styles if o in set(table["option"])]
    for k, option in enumerate(options):
        g = table[table["option"] == option]
        st = styles[option]
        if g["low_usd"].notna().any():
            x = list(g["month_end"]) + list(g["month_end"])[::-1]
            y = list(g["high_usd"]) + list(g["low_usd"])[::-1]
            fig.add_scatter(x=x, y=y, fill="toself", fillcolor=st.color, opacity=0.18, line=dict(width=0),
                            name=literal(f"{option} {level:.0%} interval"), legendgroup=literal(option), showlegend=False,
                            hoverinfo="skip")
        option_line(fig, st, option, g["month_end"], g["mean_usd"], k, len(options),
                    "<b>%{fullData.name}</b> · end of month %{x:,.4~r} · mean $%{y:,.0f}"
                    + (f" ({level:.0%} CI $%{{customdata[0]:,.0f}} – $%{{customdata[1]:,.0f}}, {n_runs} runs)"
                       if n_runs > 1 else " (1 run)") + "<extra></extra>",
                    customdata=g[["low_usd", "high_usd"]].to_numpy())
    band = f"shaded: {level:.0%} confidence interval of the mean" if n_runs > 1 else "one run: no interval"
    return finish(fig, f"Cumulative cost, mean of {n_runs} replication{'s' * (n_runs != 1)}<br><sup>{band}</sup>",
                  "month (end of)", "cumulative cost (USD, capital amortised)",
                  yaxis=dict(tickprefix="$", tickformat=",.3s"))
