"""HTML pieces of the one-file report (``costsim.frontends.report``): the page, its CSS, tables,
figures and number formats (``costsim.formats``, the one formatter, under the names the sections use).

Everything a user wrote (scenario and option names, swept values, the scenario's YAML) passes
through ``esc`` before it reaches the page. Figures are plotly ``div``s drawn by the one copy of
plotly.js the page inlines (``page``), so the file opens with no network.
"""

from __future__ import annotations

import hashlib

import html
from collections.abc import Callable, Sequence

import pandas as pd
import plotly.graph_objects as go
import plotly.offline

from costsim import formats

# No logo (a link to plotly.com; plotly shows no "edit in Chart Studio" link by default): nothing points
# to the network. Responsive: figures follow the page's width from a laptop to 1600 px and more.
FIGURE_CONFIG = {"displaylogo": False, "responsive": True}

CSS = """
:root { --ink: #1d2330; --muted: #5b6475; --line: #d8dde6; --good: #146c2e; --bad: #a4262c; --band: #f5f7fa; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color: var(--ink); background: #fff; }
main { max-width: 1500px; margin: 0 auto; padding: 1.5rem clamp(0.75rem, 3vw, 2.5rem) 3rem; }
h1 { font-size: 1.6rem; margin: 0 0 0.25rem; }
h2 { font-size: 1.25rem; margin: 2.2rem 0 0.6rem; padding-top: 0.8rem; border-top: 1px solid var(--line); }
p, li { max-width: 75rem; }
.sub, .note { color: var(--muted); font-size: 0.9rem; }
.verdict { font-size: 1.2rem; font-weight: 600; padding: 0.9rem 1.1rem; margin: 1rem 0; background: var(--band);
           border-left: 5px solid var(--good); }
.verdict.close { border-left-color: #b7791f; }
.verdict.none { border-left-color: var(--bad); }
.badge { display: inline-block; padding: 0.05rem 0.5rem; border-radius: 0.7rem; font-size: 0.85rem;
         font-weight: 600; background: #fde8c8; color: #7a4a00; }
.warn { color: var(--bad); font-weight: 600; }
.table-wrap { overflow-x: auto; margin: 0.5rem 0 1rem; }
table { border-collapse: collapse; font-size: 0.9rem; }
th, td { padding: 0.3rem 0.7rem; border-bottom: 1px solid var(--line); text-align: right; white-space: nowrap; }
th { background: var(--band); vertical-align: bottom; white-space: normal; min-width: 6.5rem; max-width: 11rem; }
td.text, th.text { text-align: left; }
td.wrap { white-space: normal; min-width: 16rem; }
td.best { font-weight: 700; color: var(--good); }
tr.pick td:first-child { font-weight: 700; }
tr.behind td { background: #fff4f4; }
.figure { width: 100%; min-height: 420px; margin: 0.5rem 0 1.5rem; }
pre { background: var(--band); padding: 0.8rem 1rem; overflow-x: auto; font-size: 0.85rem; line-height: 1.4; }
footer { margin-top: 2.5rem; color: var(--muted); font-size: 0.85rem; }
"""


def esc(text: object) -> str:
    """Text as HTML: ``<``, ``>``, ``&`` and quotes escaped (user strings, never markup)."""
    return html.escape(str(text), quote=True)


_nan = formats.missing


def money(x: float) -> str:
    """USD, whole dollars with thousands separators ("$1,234,567"; "−$12" below zero); "–" for
    NaN (``formats.money_exact``)."""
    return formats.money_exact(x)


def fixed(digits: int, unit: str = "") -> Callable[[float], str]:
    """A number with ``digits`` decimals and thousands separators, then ``unit``; "–" for NaN
    (``formats.number``)."""
    return lambda x: formats.number(x, digits, unit)


def percent_number(x: float) -> str:
    """A share (0…1) as a bare percentage with one decimal, for a column headed "%"; "–" for NaN."""
    return formats.number(x * 100 if not formats.missing(x) else x, 1)


def share(x: float) -> str:
    """A share (0…1) in percent, one decimal; "–" for NaN (``formats.percent``)."""
    return formats.percent(x, 1)


# A column of an HTML table: (header, column of the frame, formatter, "low"/"high" best or None).
Column = tuple[str, str, Callable[[object], str], str | None]


def table(frame: pd.DataFrame, columns: Sequence[Column], *, best_among: pd.Series | None = None,
          row_class: Callable[[pd.Series], str] | None = None, wrap: Sequence[str] = ()) -> str:
    """``frame`` as an HTML table with ``columns`` (missing columns left out). Where a column has a
    best direction, its best value among the rows ``best_among`` selects (default all) is marked
    (class ``best``): the lowest cost or delay, the highest completion or speed."""
    columns = [c for c in columns if c[1] in frame.columns]
    among = frame if best_among is None else frame[best_among.to_numpy(dtype=bool)]
    best: dict[str, float] = {}
    for _, key, _, direction in columns:
        values = pd.to_numeric(among[key], errors="coerce").dropna() if direction else pd.Series(dtype=float)
        if len(values):
            best[key] = values.min() if direction == "low" else values.max()
    head = "".join(f'<th class="{"text" if fmt is str else ""}">{esc(h)}</th>' for h, _, fmt, _ in columns)
    rows = []
    for _, r in frame.iterrows():
        cells = []
        for _, key, fmt, _ in columns:
            v = r[key]
            classes = ["text"] if fmt is str else []
            if key in wrap:
                classes.append("wrap")
            if key in best and not _nan(v) and v == best[key] and (best_among is None or bool(best_among.loc[r.name])):
                classes.append("best")
            cells.append(f'<td class="{" ".join(classes)}">{esc(fmt(v))}</td>')
        cls = row_class(r) if row_class else ""
        rows.append(f'<tr class="{cls}">{"".join(cells)}</tr>')
    return f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'


def figure(fig: go.Figure, height: int = 460) -> str:
    """A figure's div and the script that draws it with the page's plotly.js (not included here)."""
    fig.update_layout(height=height)
    # The div's id from the figure itself (plotly's default is a random UUID): the same results
    # give the same file, byte for byte, as every other output of a run.
    ident = "fig-" + hashlib.sha256(fig.to_json().encode()).hexdigest()[:16]
    div = fig.to_html(full_html=False, include_plotlyjs=False, config=FIGURE_CONFIG, div_id=ident,
                      default_width="100%", default_height=f"{height}px")
    return f'<div class="figure">{div}</div>'


def section(title: str, *parts: str, anchor: str = "") -> str:
    """A titled section of the report."""
    ident = f' id="{esc(anchor)}"' if anchor else ""
    return f"<section{ident}><h2>{esc(title)}</h2>{''.join(parts)}</section>"


def para(text: str, cls: str = "") -> str:
    """A paragraph of plain text (escaped)."""
    return f'<p class="{cls}">{esc(text)}</p>' if cls else f"<p>{esc(text)}</p>"


def bullets(items: Sequence[str]) -> str:
    """A list of plain-text items (escaped)."""
    return "<ul>" + "".join(f"<li>{esc(i)}</li>" for i in items) + "</ul>"


def page(title: str, body: str) -> str:
    """The whole document: the CSS and plotly.js inlined once, then the body. No external URL."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><style>{CSS}</style>"
            f"<script type=\"text/javascript\">{plotly.offline.get_plotlyjs()}</script>"
            f"</head><body><main>{body}</main></body></html>\n")
