"""The decision figures: the Pareto frontier of a sweep or a verdict's options, and the
sensitivity tornado. Re-exported by ``costsim.plots``."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from costsim.plots.layout import literal, new_figure
from costsim.plots.styles import BLUE, ORANGE, SKY_BLUE, VERMILLION
from costsim.present.formats import plain

CLOSE = 0.01  # values spread less than this share of their magnitude are drawn on an axis this wide around their mean


def steady_range(values: pd.Series, share: float = CLOSE) -> list[float] | None:
    """An axis range for ``values`` that keeps a tiny spread looking tiny: when max − min is below
    ``share`` × |mean|, the mean ± ``share`` × |mean| (every value inside it); otherwise None,
    plotly's own range. Same units as the values. None too for no finite value or a zero mean."""
    v = pd.to_numeric(values, errors="coerce")
    v = v[v.abs() != float("inf")].dropna()
    if v.empty:
        return None
    mean, spread = float(v.mean()), float(v.max() - v.min())
    half = share * abs(mean)
    if half == 0 or spread >= half:
        return None
    return [mean - half, mean + half]


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
    # unit None: y is not one of the target metrics, so its title is its name alone
    y_title = words if unit is None else \
        {"h": f"{words} (hours)", "": f"{words} (share)", "USD": f"{words} (USD)"}.get(unit, words)
    x_title = {"fair_total_usd": "fair total cost (USD; unfinished work at the cheapest rent)",
               "total_cost_usd": "amortised total cost (USD)"}.get(cost, f"{cost} (USD)")
    # d3's "r": significant figures in decimal notation (its "g" would print 2.62e+3)
    y_hover = "%{y:,.3~r}" if unit is None else \
        {"h": "%{y:,.3~r} h", "": "%{y:.1%}", "USD": "$%{y:,.0f}", "/day": "%{y:,.3~r} per day"}.get(unit, "%{y:,.3~r}")
    hover = [c for c in ("option", "variant") if c in frontier] + [c for c in frontier.columns if "." in str(c)]
    on = frontier[frontier["on_frontier"]]
    off = frontier[~frontier["on_frontier"]]
    fig = new_figure()

    def points(rows: pd.DataFrame, **kw) -> None:
        text = ["<br>".join([*(literal(f"{c}: {r[c]}") for c in hover), f"cost: ${r[cost]:,.0f}"])
                for _, r in rows.iterrows()]
        fig.add_scatter(x=rows[cost], y=rows[y], text=text,
                        hovertemplate="%{text}<br>" + words + ": " + y_hover + "<extra></extra>", **kw)

    # dominated: grey open circles; the frontier: blue filled diamonds on a line (shape, not colour alone)
    points(off, mode="markers", name="dominated", marker=dict(color="#8c8c8c", size=8, symbol="circle-open"),
           opacity=0.5)
    points(on, mode="lines+markers", name="Pareto frontier", line_shape="hv",
           marker=dict(color=BLUE, size=11, symbol="diamond"), line=dict(color=BLUE, width=2.5))
    better = "lower" if sense == "min" else "higher"
    # Without this, values 1,638.9 to 1,639.6 iterations a day fill the whole axis and a
    # difference under one iteration a day looks like a cliff.
    if (span := steady_range(frontier[y])) is not None:
        fig.update_yaxes(range=span)
    fig.update_layout(title=f"Pareto frontier: {x_title.split(' (')[0]} vs {words} ({better} is better)",
                      xaxis_title=x_title, yaxis_title=y_title, xaxis_tickprefix="$", xaxis_tickformat=",.3s")
    return fig


def _flip_ends(row: pd.Series) -> set[str]:
    """The ends ("low", "high") at which a tornado row's input flips the verdict: its ``flips_at``
    ("low,high", "high", …), or both ends when a table without that column says ``flips``."""
    if "flips_at" in row.index and isinstance(row["flips_at"], str):
        return {e for e in row["flips_at"].split(",") if e}
    return {"low", "high"} if bool(row["flips"]) else set()


def tornado_figure(table: pd.DataFrame) -> go.Figure:
    """The sensitivity tornado (``costsim.decisions.tornado``'s table): per input, bars from the
    base build − rent difference (fair totals, USD) to its value at the input's low and high,
    largest swing on top; an input that flips the verdict is labelled ⚑ flips, and the bar of the
    end where it flips (``flips_at``) is drawn in its own colours, hatched. Inputs that did not apply
    are left out and named under the title."""
    ran = table[table["swing_usd"].notna()].sort_values("swing_usd", ascending=False, kind="stable")
    skipped = table.loc[table["swing_usd"].isna(), "input"].tolist()
    def at(v: float, unit: str) -> str:
        return f"×{plain(v)}" if unit.startswith("×") else f"{plain(v)} {unit}".strip()

    labels = [literal(f"{'⚑ flips: ' if r.flips else ''}{r.input} ({at(r.low, r.unit)} … {at(r.high, r.unit)})")
              for r in ran.itertuples()]
    base = float(table["base_difference_usd"].iloc[0]) if len(table) else 0.0
    fig = new_figure()
    # Okabe–Ito: light / dark blue for an input's low / high end, orange / vermillion (and a hatch,
    # so not by colour alone) where the input flips the verdict.
    colours = {("low", False): SKY_BLUE, ("high", False): BLUE, ("low", True): ORANGE, ("high", True): VERMILLION}
    for end in ("low", "high"):
        # Only the end that flips is marked (``flips_at`` names it: "low", "high" or both): an
        # input whose low end makes the verdict's option win by more does not flip there.
        flipping = pd.Series([end in _flip_ends(r) for _, r in ran.iterrows()], index=ran.index, dtype=bool)
        for flips in (False, True):
            rows = ran[flipping == flips]
            if rows.empty:
                continue
            ends = [at(v, u) for v, u in zip(rows[end], rows["unit"], strict=True)]
            fig.add_bar(y=[labels[ran.index.get_loc(i)] for i in rows.index], x=rows[f"{end}_difference_usd"] - base,
                        base=base, orientation="h", name=f"at its {end}" + (" (flips)" if flips else ""),
                        marker=dict(color=colours[(end, flips)], pattern_shape="/" if flips else "",
                                    pattern_fillmode="overlay", pattern_fgcolor="white"),
                        customdata=list(zip(ends, rows[f"{end}_difference_usd"], strict=True)),
                        hovertemplate="%{y} at %{customdata[0]}: build − rent $%{customdata[1]:,.0f}<extra></extra>")
    fig.add_vline(x=0, line_color="black", line_width=2)  # where the verdict flips
    fig.add_vline(x=base, line_dash="dot", line_color="gray", annotation_text="base", annotation_position="top")
    title = "Sensitivity: build − rent difference of fair totals at each input's low and high"
    if skipped:
        title += f"<br><sup>not applicable here: {literal(', '.join(skipped))}</sup>"
    fig.update_layout(title=title, barmode="overlay",
                      xaxis_title="build − rent (USD; below 0: building is cheaper)", xaxis_tickprefix="$",
                      xaxis_tickformat=",.3s", yaxis=dict(categoryorder="array", categoryarray=labels[::-1]),
                      height=max(300, 60 + 36 * len(ran)))
    return fig
