"""Where an RL iteration goes: its phases per job class, one panel per option."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from costsim.plots.layout import legend_entries, literal, literals, new_subplots, title_layout
from costsim.plots.styles import BLACK, category_styles
from costsim.results.contract import Results

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
    title = "Where an iteration goes (mean seconds per iteration; ◆ the iteration)"
    if overlapping:
        title += ("<br><sup>async classes overlap rollout with training: their bars add up to more than the "
                  "iteration</sup>")
    looks = category_styles(PHASE_LABELS.values())
    options = list(dict.fromkeys(ph["option"]))
    cols = min(len(options), 3) or 1
    rows = max((len(options) + 2) // 3, 1)
    # One panel per option, three to a row, the first at the top left; every panel's axes match
    # (one scale for seconds and one order of job classes), as facets do.
    # The last row's empty cells get no axes.
    specs: list[list[dict | None]] = [[{} if 3 * r + c < len(options) else None for c in range(cols)]
                                      for r in range(rows)]
    fig = new_subplots(rows=rows, cols=cols, specs=specs, subplot_titles=literals(options), horizontal_spacing=0.02,
                       vertical_spacing=0.07 if rows > 1 else 0.0)
    fig.update_annotations(font_size=None)  # the panels' titles in the figure's font, not 16 px
    classes = literals(dict.fromkeys(ph["job_class"]))
    for k, option in enumerate(options):
        sub = ph[ph["option"] == option]
        at = dict(row=k // 3 + 1, col=k % 3 + 1)
        x = literals(sub["job_class"])
        notes = [_OVERLAP_NOTE if c in overlapping else _SYNC_NOTE for c in sub["job_class"]]
        for column, label in PHASE_LABELS.items():
            colour, pattern = looks[label]
            fig.add_bar(x=x, y=sub[column], name=label, legendgroup=label, showlegend=k == 0,
                        marker=dict(color=colour, pattern=dict(shape=pattern, fillmode="overlay", fgcolor="white")),
                        customdata=np.column_stack([sub[column] / sub["iteration_s"], sub["iteration_s"],
                                                    np.array(notes, dtype=object)]),
                        hovertemplate="<b>%{fullData.name}</b> · %{x} · %{y:,.2f} s per iteration "
                        "(%{customdata[0]:.0%} of the %{customdata[1]:,.1f} s iteration)<br>%{customdata[2]}"
                        "<extra></extra>", **at)
        fig.add_scatter(x=x, y=sub["iteration_s"], mode="markers", marker_symbol="diamond", marker_color=BLACK,
                        marker_size=10, name="iteration", showlegend=k == 0, **at,
                        hovertemplate=f"{literal(option)} · %{{x}} · iteration %{{y:,.1f}} s<extra></extra>")
        # A panel with none below it shows the job classes; the first column shows the seconds.
        below = k + 3 < len(options)
        fig.update_xaxes(matches="x" if k else None, categoryorder="array", categoryarray=classes, showticklabels=not below,
                         title_text=None if below else "job class", **at)
        fig.update_yaxes(matches="y" if k else None, showticklabels=k % 3 == 0,
                         title_text="seconds per iteration" if k % 3 == 0 else None, **at)
    fig.update_layout(barmode="relative")
    layout = title_layout(title, legend_entries(fig))
    # The panels' titles sit just above the plot area: lift the legend 26 px clear of them, which
    # needs the plot's height in pixels (300 per row of panels).
    plot_px = 300 * rows
    layout["margin"]["t"] += 26
    fig.update_layout(**layout, height=plot_px + layout["margin"]["t"] + 60, legend_y=1 + 26 / plot_px)
    return fig


__all__ = ["PHASE_LABELS", "phase_breakdown"]
