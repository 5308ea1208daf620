"""The shared look of every figure: layout (legend above the plot area, where it cannot collide
with tick labels on either side), option lines that stay visible when they coincide, and bars
drawn in each option's style."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from costsim.plots.downsample import on_screen
from costsim.plots.styles import Style

# Legend: horizontal, above the plot area, left-aligned. A vertical legend on the right collided
# with the goodput axis's ticks. Plotly pushes the top margin to fit the legend but takes the
# larger of the legend's and the title's needs, not their sum, so the top margin is sized here:
# the title's lines plus two legend rows (a third row would reach the title).
LEGEND = dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0, title_text="", itemsizing="constant")
DRAWN = ("scatter", "bar")  # the trace types costsim's figures draw
UNDRAWN = ("polar", "ternary", "scene", "geo", "coloraxis")  # layout parts no costsim figure has
_WHITE = pio.templates["plotly_white"]
# plotly_white cut to the trace types drawn and the cartesian layout they are drawn on: the same
# look, applied in about a quarter of the time (plotly validates the defaults of every trace type
# and subplot kind a template carries, each time it is set, and imports a module per property on
# its first use: a report's first figure spent 0.1 s there).
TEMPLATE = go.layout.Template(layout={k: v for k, v in _WHITE.layout.to_plotly_json().items() if k not in UNDRAWN},
                              data={t: getattr(_WHITE.data, t) for t in DRAWN})
LAYOUT = dict(template=TEMPLATE, legend=LEGEND, margin=dict(l=10, r=10, t=90, b=10),
              hoverlabel=dict(namelength=-1), font=dict(size=13))
_TITLE_PAD_PX, _TITLE_LINE_PX, _SUB_LINE_PX, _LEGEND_ROWS_PX = 10, 24, 17, 52


_ROW_PX, _NOMINAL_WIDTH_PX = 22, 900


def legend_rows(names: list[str]) -> int:
    """Rows a horizontal legend of these entries takes in a plot about 900 px wide (each entry
    about 40 px of symbol and gap plus 7.5 px per character at font size 13): an estimate, since
    the width is the page's."""
    return int(np.ceil(sum(40 + 7.5 * len(n) for n in names) / _NOMINAL_WIDTH_PX)) if names else 0


def top_margin(title: str, legend: list[str] | None = None) -> int:
    """Top margin (px) for a title of that many lines (``<br>``) above the legend: two rows, or
    as many as ``legend_rows`` estimates for the entries ``legend`` names."""
    extra_rows = max(0, legend_rows(legend or []) - 2)
    return (_TITLE_PAD_PX + _TITLE_LINE_PX + 2 * _SUB_LINE_PX * title.count("<br>") + _LEGEND_ROWS_PX
            + _ROW_PX * extra_rows)


def legend_entries(fig: go.Figure) -> list[str]:
    """Names the figure's legend shows (one per legend group)."""
    seen: dict[str, str] = {}
    for t in fig.data:
        if t.showlegend is not False and t.name is not None:
            seen.setdefault(t.legendgroup or t.name, t.name)
    return list(seen.values())


def title_layout(title: str, legend: list[str] | None = None) -> dict:
    """Layout for a title at the top left, in pixels from the top (not a share of the height),
    with the top margin that keeps it clear of the legend."""
    # plotly anchors a multi-line title's top one line too high per extra line: pad it down
    pad = _TITLE_PAD_PX + _SUB_LINE_PX * title.count("<br>")
    return dict(title=dict(text=title, x=0, xanchor="left", y=1, yanchor="top", yref="container", pad=dict(t=pad)),
                margin=dict(l=10, r=10, t=top_margin(title, legend), b=10))


def plain(value):
    """A pandas column, index or table as the numpy array plotly would store for it (inside a dict
    too: a marker's colours); anything else as it is."""
    if isinstance(value, (pd.Series, pd.Index, pd.DataFrame)):
        return value.to_numpy()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


class Figure(go.Figure):
    """A plotly figure whose traces are handed numpy arrays, never pandas objects (``plain``):
    plotly 6 and later read every pandas value through narwhals, about 0.1 ms an array on top of
    storing the same numpy array, and the first one imports narwhals' pandas backend (10 ms), which
    a report of a dozen figures and some 400 arrays paid on every run."""

    def add_scatter(self, **props):  # keyword-only: every figure calls it so
        return super().add_scatter(**{k: plain(v) for k, v in props.items()})

    def add_bar(self, **props):
        return super().add_bar(**{k: plain(v) for k, v in props.items()})


def new_figure() -> go.Figure:
    """An empty figure in the shared layout (``LAYOUT``: template, legend, margins, font), given
    when the figure is made: plotly restyles every trace a figure holds when its template is set
    (about 20 ms for 48 bars), and a template set on a figure made without one first replaces
    plotly's default template, which costs twice what making the figure with it does."""
    return Figure(layout=LAYOUT)


def new_subplots(**grid) -> go.Figure:
    """An empty grid of panels (``plotly.subplots.make_subplots``'s arguments) in the shared layout
    (``new_figure``)."""
    return make_subplots(**grid, figure=new_figure())


def finish(fig: go.Figure, title: str, x_title: str | None, y_title: str | None, **layout) -> go.Figure:
    """A figure made by ``new_figure`` (or ``new_subplots``) with its title (left, in the top margin
    above the legend) and the axis titles (each names its unit)."""
    fig.update_layout(**title_layout(title, legend_entries(fig)), **layout)
    if x_title is not None:
        fig.update_xaxes(title_text=x_title)
    if y_title is not None:
        fig.update_yaxes(title_text=y_title, selector=dict(overlaying=None))
    return fig


def literal(text: object) -> str:
    """User text (an option, class or job name, a swept value, a trace's class) shown as is in a
    plotly figure, wherever it goes: a trace name (the legend), a category (axis ticks), hover
    text, customdata a hover shows, a title or an annotation. Plotly reads all of these as a subset
    of HTML (``<b>``, ``<a href>``, ``<br>``, entities), and inside a hovertemplate ``%{`` starts
    a variable: ``&``, ``<`` and ``>`` become the entities plotly shows as those characters, and
    ``%{`` gets a zero-width space. The one escape every figure applies to user text, once."""
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("%{", "%\u200b{"))


def literals(values) -> list[str]:
    """``literal`` of each value (a column of names for a categorical axis or a hover)."""
    return [literal(v) for v in values]


def widths(n: int, thin: float = 2.0, thick: float = 4.5) -> list[float]:
    """Line widths by drawing order: the first drawn is the widest, so where lines coincide each
    one drawn earlier still shows as a border around the later ones (and their dashes differ)."""
    return list(np.linspace(thick, thin, n)) if n > 1 else [thin + 0.5]


def marked_points(n_points: int, k: int, n_lines: int) -> np.ndarray:
    """Indices of the points of line ``k`` of ``n_lines`` that carry a marker: one every
    ``every`` points (about 8 per line, but at least ``n_lines`` apart), offset by the line's index
    so that coinciding lines show their markers at different x."""
    every = max(1, min(max(n_points // 8, n_lines), n_points))
    offset = (k * every) // max(n_lines, 1)
    return np.flatnonzero((np.arange(n_points) + offset) % every == 0)


def isolated(values: Sequence, at: np.ndarray) -> list:
    """``values`` at the indices ``at``, each followed by a gap (None), so a line drawn through
    them joins none of them: only their markers show."""
    out: list = []
    for i in at:
        out += [values[i], None]
    return out


MARKER_PX = 9.0  # a line's markers, px


def option_line(fig: go.Figure, style: Style, name: str, x: Iterable, y: Iterable, k: int, n: int,
                hovertemplate: str, customdata=None, **kw) -> None:
    """Add option ``name``'s line (k-th of n) in its style, markers at staggered intervals
    (``marked_points``; ``name`` is escaped here: ``literal``); ``x`` and ``y``: its points in any
    iterable (a column, an array, a list), in the axes' units, x ascending; more than a screen
    shows are thinned to each pixel column's extremes (``downsample.on_screen``, the hover data
    with them).

    Two traces in one legend group: the line with a hover on every point (``mode="lines"``, out of
    the legend), then the marked points alone (``isolated``: no line joins them) drawn in the
    line's style, which is the legend entry, so the legend shows the dash and the marker. A marker
    on every point, most of size 0, would cost the browser one SVG node per point: on a year of
    days that made drawing a figure several times slower."""
    xs, ys, custom = on_screen(list(x), list(y), customdata)
    line = {**style.line(widths(n)[k]), **kw.pop("line", {})}
    fig.add_scatter(x=xs, y=ys, name=literal(name), legendgroup=literal(name), showlegend=False, mode="lines",
                    line=line, customdata=custom, hovertemplate=hovertemplate, **kw)
    at = marked_points(len(xs), k, n)
    fig.add_scatter(x=isolated(xs, at), y=isolated(ys, at), name=literal(name), legendgroup=literal(name),
                    mode="lines+markers", line=line, marker=style.marker(MARKER_PX), hoverinfo="skip")


def option_bars(fig: go.Figure, style: Style, name: str, x: Sequence, y: Sequence, hovertemplate: str,
                customdata=None, **kw) -> None:
    """Add option ``name``'s bars in its colour with its kind's pattern (``name`` is escaped here;
    text categories in ``x`` are the caller's to escape: ``literals``)."""
    fig.add_bar(x=list(x), y=list(y), name=literal(name), legendgroup=literal(name), marker=style.bar_marker(),
                customdata=customdata, hovertemplate=hovertemplate, **kw)
