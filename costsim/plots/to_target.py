"""Time to target: the score of a class's leading run against calendar day per option,
the target as a horizontal line, and a marker where each option reaches it, annotated with the
day and the option's cost by then. Over replications: the mean score per day with its 95 % band,
the mean day and cost over the replications that reach the target.

Options are told apart by dash and marker symbol as well as colour (``option_styles``); each
reach marker is in its option's symbol and its annotation names the option.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from costsim.decisions.targets import MAJORITY
from costsim.plots.layout import finish, literal, literals, new_figure, option_line
from costsim.plots.styles import BLACK, option_styles
from costsim.present.formats import plain

_NAME = "<b>%{fullData.name}</b>"


def _runs(source) -> list:
    runs = list(source) if isinstance(source, Sequence) else [source]
    if not runs or not all(hasattr(r, "reward_by_day") and hasattr(r, "to_target") for r in runs):
        raise ValueError("time_to_target(): needs a Results or a non-empty list of Results (replications of one "
                         "scenario)")
    return runs


def _reach_note(row) -> str:
    """An option's annotation: where and for how much it reaches the target."""
    n = f" ({row.reached} of {row.replications} runs)" if row.reached < row.replications else ""
    return f"{literal(row.option)}: day {row.day_mean:.1f}, ${row.cost_mean_usd:,.0f}{n}"


def _clusters(rows, gap_days: float) -> list[list]:
    """Rows sorted by ``day_mean`` in runs whose consecutive days are less than ``gap_days`` apart."""
    groups: list[list] = []
    for row in rows.itertuples():
        if groups and row.day_mean - groups[-1][-1].day_mean < gap_days:
            groups[-1].append(row)
        else:
            groups.append([row])
    return groups


def time_to_target(source, job_class: str | None = None) -> go.Figure:
    """Score (reward) of ``job_class``'s leading run vs calendar day per option (default: the first
    class with ``scaling``), from ``source``: a Results or a list of Results of one scenario (then
    the mean over them with a shaded 95 % band). Dotted black line: the target; a marker at the day
    each option reaches it, annotated "day 48.3, $221,899" (the option's cumulative cost by then)."""
    from costsim.decisions.time_to_target import reward_band, summarize  # scipy: only when this is drawn

    runs = _runs(source)
    band, summary = reward_band(runs), summarize(runs)
    fig = new_figure()
    if band.empty:
        return finish(fig, "Time to target<br><sup>no job class has a scaling curve (add `scaling:` to a class)</sup>",
                      "day of the horizon", "score")
    job_class = job_class if job_class in set(band["job_class"]) else band["job_class"].iloc[0]
    band, summary = band[band["job_class"] == job_class], summary[summary["job_class"] == job_class]
    styles = option_styles(runs[0])
    n_runs = len(runs)
    options = [o for o in styles if o in set(band["option"])]
    for k, option in enumerate(options):
        g, st = band[band["option"] == option], styles[option]
        if g["reward_low"].notna().any():
            fig.add_scatter(x=list(g["day"]) + list(g["day"])[::-1], y=list(g["reward_high"]) + list(g["reward_low"])[::-1],
                            fill="toself", fillcolor=st.color, opacity=0.18, line=dict(width=0),
                            name=literal(f"{option} 95% interval"), legendgroup=literal(option), showlegend=False,
                            hoverinfo="skip")
        option_line(fig, st, option, g["day"], g["reward"], k, len(options),
                    _NAME + " · day %{x:.0f} · score %{y:.3f} · %{customdata[0]:,.0f} reference GPU-hours"
                    + (f" (mean of {n_runs} runs)" if n_runs > 1 else "") + "<extra></extra>",
                    customdata=g[["gpu_hours"]].to_numpy())
    target = float(summary["target"].iloc[0])
    last_day = float(band["day"].max())
    fig.add_scatter(x=[0.0, last_day], y=[target, target], mode="lines", name=f"target {plain(target)}",
                    line=dict(color=BLACK, dash="dot", width=1.5), hoverinfo="skip")
    hit = summary[(summary["reached_share"] >= MAJORITY) & summary["option"].isin(options)]
    if len(hit):
        fig.add_scatter(x=hit["day_mean"], y=[target] * len(hit), mode="markers", name="reaches the target",
                        marker=dict(color=[styles[o].color for o in hit["option"]],
                                    symbol=[styles[o].symbol for o in hit["option"]], size=14,
                                    line=dict(color="white", width=1)),
                        text=literals(hit["option"]), customdata=hit[["cost_mean_usd"]].to_numpy(),
                        hovertemplate="<b>%{text}</b> reaches the target on day %{x:.1f} · "
                                      "$%{customdata[0]:,.0f} amortised by then<extra></extra>")
        for i, group in enumerate(_clusters(hit.sort_values("day_mean", kind="stable"), last_day / 8)):
            # one box per cluster of close days (their texts would overlap), above the first of them;
            # neighbouring boxes at alternating heights
            fig.add_annotation(x=group[0].day_mean, y=target, text="<br>".join(_reach_note(r) for r in group),
                               showarrow=True, arrowhead=0, ax=0, ay=-24 - 36 * (i % 2), yanchor="bottom",
                               align="left", font=dict(size=12), bgcolor="rgba(255,255,255,0.85)")
    missed = summary[(summary["reached_share"] < MAJORITY) & summary["option"].isin(options)]
    notes = [f"{literal(r.option)} ("
             + (f"reached in {r.reached} of {r.replications} runs; " if r.reached else "")
             + (f"projected day {r.projected_day_mean:.0f})" if r.projected_day_mean < float("inf") else "not at its pace)")
             for r in missed.itertuples()]
    sub = (f"mean of {n_runs} replications, shaded: 95 % interval; " if n_runs > 1 else "") + \
        f"dotted: target {plain(target)}; marker: the day reached and the cost by then"
    if notes:
        sub += "<br>not reached within the horizon: " + ", ".join(notes)
    return finish(fig, f"Time to target: score of {literal(job_class)}'s leading run<br><sup>{sub}</sup>",
                  "day of the horizon", "score (reward)")
