"""Plotly figures from result tables, shared by the dashboard and reports. No model logic here:
every number plotted is a column of ``costsim.Results``."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from costsim.results.costing import ALL_ITEMS
from costsim.results.finance import cash_paid
from costsim.results import Results

_LAYOUT = dict(template="plotly_white", legend_title_text="option", margin=dict(l=10, r=10, t=50, b=10))


def _daily(results: Results, columns: list[str]) -> pd.DataFrame:
    ts = results.timeseries.assign(day=lambda d: (d["hour"] // 24).astype(int))
    return ts.groupby(["option", "day"], sort=False, as_index=False)[columns].mean()


def cumulative_cost(results: Results) -> go.Figure:
    """Cumulative cost per option over the horizon (USD)."""
    ts = results.timeseries
    daily = ts[(ts["hour"] % 24 == 23) | (ts.groupby("option")["hour"].transform("max") == ts["hour"])]
    fig = px.line(
        daily.assign(day=(daily["hour"] + 1) / 24), x="day", y="cost_cum_usd", color="option",
        labels={"day": "day", "cost_cum_usd": "cumulative cost (USD)"}, title="Cumulative cost",
    )
    fig.update_layout(**_LAYOUT, yaxis_tickprefix="$", yaxis_tickformat=",.3s")
    return fig


def cost_breakdown(results: Results) -> go.Figure:
    """Total cost per option split into line items (USD)."""
    s = results.summary
    long = s.melt(id_vars="option", value_vars=[f"cost_{i}_usd" for i in ALL_ITEMS], var_name="item", value_name="usd")
    long = long[long["usd"] > 0].assign(item=lambda d: d["item"].str[5:-4])
    fig = px.bar(long, x="option", y="usd", color="item", title="Cost over the horizon by line item",
                 labels={"usd": "USD", "item": "line item"})
    fig.update_layout(**{**_LAYOUT, "legend_title_text": "line item"}, yaxis_tickprefix="$", yaxis_tickformat=",.3s")
    return fig


def delay_distribution(results: Results) -> go.Figure:
    """Empirical CDF of queue delay per option (hours; never-started jobs at their delay so far)."""
    warm = results.scenario.warmup_h
    jobs = results.jobs[results.jobs["submit_h"] >= warm]
    fig = px.ecdf(jobs, x="queue_delay_h", color="option", title="Queue delay distribution",
                  labels={"queue_delay_h": "queue delay (hours)"})
    fig.update_layout(**_LAYOUT, yaxis_title="share of jobs waiting at most x", yaxis_tickformat=".0%")
    return fig


def utilization_over_time(results: Results) -> go.Figure:
    """Daily utilisation: held GPUs ÷ capacity GPUs."""
    d = _daily(results, ["busy_gpus", "capacity_gpus"])
    d["utilization"] = (d["busy_gpus"] / d["capacity_gpus"]).where(d["capacity_gpus"] > 0)
    fig = px.line(d, x="day", y="utilization", color="option", title="Utilisation (daily mean)",
                  labels={"utilization": "held ÷ capacity"})
    fig.update_layout(**_LAYOUT, yaxis_tickformat=".0%")
    return fig


def queue_over_time(results: Results) -> go.Figure:
    """Daily mean number of GPUs asked for by queued jobs."""
    d = _daily(results, ["queued_gpus", "queued_jobs"])
    fig = px.line(d, x="day", y="queued_gpus", color="option", title="Queued demand (daily mean)",
                  labels={"queued_gpus": "GPUs requested by waiting jobs"}, hover_data=["queued_jobs"])
    fig.update_layout(**_LAYOUT)
    return fig


def capacity_over_time(results: Results) -> go.Figure:
    """Daily mean capacity (owned: installed; cloud: rented) and held GPUs."""
    d = _daily(results, ["capacity_gpus", "busy_gpus"])
    fig = go.Figure()
    for option, g in d.groupby("option", sort=False):
        fig.add_scatter(x=g["day"], y=g["capacity_gpus"], name=f"{option} capacity", mode="lines")
        fig.add_scatter(x=g["day"], y=g["busy_gpus"], name=f"{option} held", mode="lines", line_dash="dot")
    fig.update_layout(**_LAYOUT, title="Capacity and held GPUs (daily mean)", xaxis_title="day", yaxis_title="GPUs")
    return fig


def iterations_per_day(results: Results) -> go.Figure:
    """RL iterations completed per day, per job class and option."""
    ph = results.phases
    fig = px.bar(ph, x="job_class", y="iterations_per_day", color="option", barmode="group",
                 title="RL iterations per day (completed within the horizon)",
                 labels={"job_class": "job class", "iterations_per_day": "iterations per day"},
                 hover_data=["iteration_s", "cost_per_iteration_usd"])
    fig.update_layout(**_LAYOUT)
    return fig


# Phases of an iteration in the order they run, with the names the figures show.
PHASE_LABELS = {
    "rollout_s": "rollout",
    "logprobs_s": "log-probs",
    "scoring_s": "scoring",
    "update_s": "update",
    "sync_s": "weight sync / reshard",
    "overhead_s": "async overhead",
}
_OVERLAP_NOTE = "async: rollout overlaps training, so the phases add up to more than the iteration (◆)"
_SYNC_NOTE = "sync: the phases add up to the iteration"


def _async_classes(results: Results) -> set[str]:
    return {c.name for c in results.scenario.workload.classes if c.mode == "async"}


def phase_breakdown(results: Results) -> go.Figure:
    """Where an iteration goes: mean seconds per phase (rollout, log-probs, scoring, update, weight
    sync or reshard, async overhead), per job class, one panel per option; a diamond marks the
    iteration. Async iterations overlap rollout with training, so their bar is taller than the
    iteration: the hover and the title say so."""
    ph = results.phases
    overlapping = _async_classes(results)
    long = ph.melt(id_vars=["option", "job_class", "iteration_s"], value_vars=list(PHASE_LABELS),
                   var_name="phase", value_name="seconds")
    long = long.assign(
        phase=long["phase"].map(PHASE_LABELS),
        share=long["seconds"] / long["iteration_s"],
        note=long["job_class"].map(lambda c: _OVERLAP_NOTE if c in overlapping else _SYNC_NOTE),
    )
    title = "Where an iteration goes (mean seconds per iteration; ◆ the iteration)"
    if overlapping:
        title += ("<br><sup>async classes overlap rollout with training: their bars add up to more than the "
                  "iteration</sup>")
    fig = px.bar(long, x="job_class", y="seconds", color="phase", facet_col="option", facet_col_wrap=3, title=title,
                 labels={"job_class": "job class", "seconds": "seconds per iteration", "share": "of the iteration",
                         "iteration_s": "iteration (s)", "note": "mode"},
                 hover_data={"seconds": ":,.2f", "share": ":.0%", "iteration_s": ":,.1f", "note": True},
                 category_orders={"phase": list(PHASE_LABELS.values())})
    options = list(dict.fromkeys(ph["option"]))
    for k, option in enumerate(options):
        sub = ph[ph["option"] == option]
        fig.add_scatter(x=sub["job_class"], y=sub["iteration_s"], mode="markers", marker_symbol="diamond",
                        marker_color="black", name="iteration", showlegend=k == 0, row=(len(options) - 1) // 3 - k // 3 + 1,
                        col=k % 3 + 1, hovertemplate="iteration: %{y:,.1f} s<extra></extra>")
    fig.for_each_annotation(lambda a: a.update(text=a.text.split("=")[-1]))
    fig.update_layout(**{**_LAYOUT, "legend_title_text": "phase", "margin": dict(l=10, r=10, t=80, b=10)})
    return fig


def rollout_throughput(results: Results) -> go.Figure:
    """Rollout throughput per job class and option: response tokens ÷ rollout GPU-seconds over the
    class's planned iterations. Each bar is labelled with the straggler's share of rollout time
    (the longest response decoding alone), the part more rollout GPUs cannot shorten."""
    ph = results.phases.assign(label=lambda d: [f"{v:.0%}" if v == v else "" for v in d["straggler_share"]])
    fig = px.bar(ph, x="job_class", y="rollout_tokens_per_s_per_gpu", color="option", barmode="group", text="label",
                 title="Rollout throughput per GPU (on each bar: the straggler's share of rollout time)",
                 labels={"job_class": "job class", "rollout_tokens_per_s_per_gpu": "rollout tokens/s per GPU",
                         "straggler_share": "straggler share", "rollout_s": "rollout (s)"},
                 hover_data={"label": False, "rollout_tokens_per_s_per_gpu": ":,.0f", "straggler_share": ":.0%",
                             "rollout_s": ":,.1f"})
    fig.update_traces(textposition="outside", cliponaxis=False)
    fig.update_layout(**_LAYOUT, yaxis_tickformat=",.0f")
    return fig


def cumulative_cash(results: Results) -> go.Figure:
    """Cumulative cash paid out per option by month end (capex when bought; the horizon-end book
    value credit left out, commitment owed in the last month, as in the break-even), with each break-even month
    against renting marked (from its end on, the owned or committed option stays at or below the
    rental), and the last month an option that is dearer at the horizon's end was still cheaper."""
    cf = results.cashflow.assign(out=cash_paid)
    cf = cf.assign(paid=cf.groupby("option", sort=False)["out"].cumsum(), month_end=cf["month"] + 1)
    fig = px.line(cf, x="month_end", y="paid", color="option", markers=True,
                  title="Cumulative cash out (capex paid up front) and break-even months",
                  labels={"month_end": "month", "paid": "cumulative cash out (USD)"})
    be = results.breakeven
    marks = [(b["breakeven_month"], f"{b['option']} = {b['versus']}", "grey")
             for _, b in be.dropna(subset=["breakeven_month"]).iterrows()]
    marks += [(b["cheaper_until_month"], f"{b['option']} < {b['versus']} until here", "firebrick")
              for _, b in be.dropna(subset=["cheaper_until_month"]).iterrows()]
    for month, text, colour in marks:
        m = month + 1  # the end of that month
        fig.add_vline(x=m, line_dash="dot", line_color=colour)
        fig.add_annotation(x=m, y=1, yref="paper", text=text, showarrow=False,
                           textangle=-90, xanchor="right", yanchor="top", font_size=10)
    fig.update_layout(**_LAYOUT, yaxis_tickprefix="$", yaxis_tickformat=",.3s")
    return fig


def cash_flow(results: Results) -> go.Figure:
    """Cash per option and month: capex when bought, opex and bills as paid, in the last month the
    rest of a reservation's term owed and the book value of owned hardware credited (negative)."""
    fig = px.bar(results.cashflow, x="month", y="cash_usd", color="option", barmode="group",
                 title="Monthly cash flow", labels={"cash_usd": "cash (USD)", "month": "month"},
                 hover_data=["capex_usd", "opex_usd", "rent_usd", "commitment_owed_usd", "book_value_usd"])
    fig.update_layout(**_LAYOUT, yaxis_tickprefix="$", yaxis_tickformat=",.3s")
    return fig


def hybrid_parts(results: Results) -> go.Figure:
    """GPU-hours each hybrid option ran on its base and on its burst."""
    s = results.summary[results.summary["kind"] == "hybrid"]
    long = pd.DataFrame({
        "option": list(s["option"]) * 2,
        "part": ["base"] * len(s) + ["burst"] * len(s),
        "gpu_hours": list(s["gpu_hours_used"] - s["serving_gpu_hours"] - s["gpu_hours_burst"]) + list(s["gpu_hours_burst"]),
    })
    fig = px.bar(long, x="option", y="gpu_hours", color="part", title="Where hybrid options ran their jobs",
                 labels={"gpu_hours": "job GPU-hours"})
    fig.update_layout(**{**_LAYOUT, "legend_title_text": "part"})
    return fig


def lost_work(results: Results) -> go.Figure:
    """GPU-hours lost to failures and preemptions per option and job class, with goodput."""
    j = results.jobs.groupby(["option", "job_class"], sort=False, as_index=False)["lost_gpu_hours"].sum()
    fig = px.bar(j, x="option", y="lost_gpu_hours", color="job_class",
                 title="Work lost to failures and preemptions (GPU-hours since the last checkpoint)",
                 labels={"lost_gpu_hours": "lost GPU-hours", "job_class": "job class"})
    s = results.summary
    fig.add_scatter(x=s["option"], y=s["goodput"], mode="markers+text", name="goodput", yaxis="y2",
                    text=[f"{g:.1%}" for g in s["goodput"]], textposition="top center", marker_color="black")
    fig.update_layout(**{**_LAYOUT, "legend_title_text": "job class"},
                      yaxis2=dict(overlaying="y", side="right", range=[0, 1.05], tickformat=".0%", title="goodput"))
    return fig


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


def pareto_figure(frontier: pd.DataFrame, y: str = "queue_delay_p95_h") -> go.Figure:
    """Cost (x, USD: the fair total unless the frontier was computed on another cost) against ``y``
    (queue delay in hours, or RL iterations per day) for every row of a ``pareto.frontier`` table:
    the frontier's points joined by a step line (with the budget of a point, the best ``y`` there
    is until the next), the rest faded; hover names the option, the variant and its swept values.
    A table whose ``on_frontier`` was computed on other objectives is recomputed on ``y`` alone."""
    from costsim.decisions.pareto import frontier as pareto_frontier
    from costsim.decisions.targets import METRICS

    cost = frontier.attrs.get("cost") or ("fair_total_usd" if "fair_total_usd" in frontier else "total_cost_usd")
    sense = "max" if y == "iterations_per_day" else "min"
    if "on_frontier" not in frontier or [c for c, _ in frontier.attrs.get("objectives", [])] != [y]:
        frontier = pareto_frontier(frontier, cost, ((y, sense),))
    names = {column: (words.split(" (")[0], unit) for column, unit, words in METRICS.values()}
    words, unit = names.get(y, (y, None))
    y_title = {"h": f"{words} (hours)", "": f"{words} (share)", "USD": f"{words} (USD)"}.get(unit, words)
    x_title = {"fair_total_usd": "fair total cost (USD; unfinished work at the cheapest rent)",
               "total_cost_usd": "amortised total cost (USD)"}.get(cost, f"{cost} (USD)")
    hover = [c for c in ("option", "variant") if c in frontier] + [c for c in frontier.columns if "." in str(c)]
    on = frontier[frontier["on_frontier"]]
    off = frontier[~frontier["on_frontier"]]
    fig = go.Figure()

    def points(rows: pd.DataFrame, **kw) -> None:
        text = ["<br>".join([*(f"{c}: {r[c]}" for c in hover), f"cost: ${r[cost]:,.0f}"]) for _, r in rows.iterrows()]
        fig.add_scatter(x=rows[cost], y=rows[y], text=text,
                        hovertemplate="%{text}<br>" + words + ": %{y:,.3g}<extra></extra>", **kw)

    points(off, mode="markers", name="dominated", marker=dict(color="lightgray", size=8), opacity=0.5)
    points(on, mode="lines+markers", name="Pareto frontier", line_shape="hv",
           marker=dict(color="#1f77b4", size=10), line=dict(color="#1f77b4"))
    better = "lower" if sense == "min" else "higher"
    fig.update_layout(**{**_LAYOUT, "legend_title_text": ""},
                      title=f"Pareto frontier: {x_title.split(' (')[0]} vs {words} ({better} is better)",
                      xaxis_title=x_title, yaxis_title=y_title, xaxis_tickprefix="$", xaxis_tickformat=",.3s")
    return fig


def tornado_figure(table: pd.DataFrame) -> go.Figure:
    """The sensitivity tornado (``costsim.decisions.tornado``'s table): per input, bars from the
    base build − rent difference (fair totals, USD) to its value at the input's low and high,
    largest swing on top; an input that flips the verdict (the difference changes sign: crosses
    the zero line) is drawn in its own colours and labelled ⚑ flips. Inputs that did not apply
    are left out and named under the title."""
    ran = table[table["swing_usd"].notna()].sort_values("swing_usd", ascending=False, kind="stable")
    skipped = table.loc[table["swing_usd"].isna(), "input"].tolist()
    def at(v: float, unit: str) -> str:
        return f"×{v:g}" if unit.startswith("×") else f"{v:g} {unit}".strip()

    labels = [f"{'⚑ flips: ' if r.flips else ''}{r.input} ({at(r.low, r.unit)} … {at(r.high, r.unit)})"
              for r in ran.itertuples()]
    base = float(table["base_difference_usd"].iloc[0]) if len(table) else 0.0
    fig = go.Figure()
    colours = {("low", False): "#9ecae1", ("high", False): "#3182bd", ("low", True): "#fdae6b", ("high", True): "#e6550d"}
    for end in ("low", "high"):
        for flips in (False, True):
            rows = ran[ran["flips"] == flips]
            if rows.empty:
                continue
            ends = [at(v, u) for v, u in zip(rows[end], rows["unit"], strict=True)]
            fig.add_bar(y=[labels[ran.index.get_loc(i)] for i in rows.index], x=rows[f"{end}_difference_usd"] - base,
                        base=base, orientation="h", name=f"at its {end}" + (" (flips)" if flips else ""),
                        marker_color=colours[(end, flips)], customdata=list(zip(ends, rows[f"{end}_difference_usd"])),
                        hovertemplate="%{y} at %{customdata[0]}: build − rent $%{customdata[1]:,.0f}<extra></extra>")
    fig.add_vline(x=0, line_color="black", line_width=2)  # where the verdict flips
    fig.add_vline(x=base, line_dash="dot", line_color="gray", annotation_text="base", annotation_position="top")
    title = "Sensitivity: build − rent difference of fair totals at each input's low and high"
    if skipped:
        title += f"<br><sup>not applicable here: {', '.join(skipped)}</sup>"
    fig.update_layout(**{**_LAYOUT, "legend_title_text": ""}, title=title, barmode="overlay",
                      xaxis_title="build − rent (USD; below 0: building is cheaper)", xaxis_tickprefix="$",
                      xaxis_tickformat=",.3s", yaxis=dict(categoryorder="array", categoryarray=labels[::-1]),
                      height=max(300, 60 + 36 * len(ran)))
    return fig
