"""HTML pieces of the one-file report (``costsim.report.build``): the page, its CSS, tables,
figures and number formats (``costsim.present.formats``, the one formatter, under the names the sections use).

Everything a user wrote (scenario and option names, swept values, the scenario's YAML) passes
through ``esc`` before it reaches the page. Figures are plotly ``div``s drawn by the one copy of
plotly.js the page inlines (``page``), so the file opens with no network.
"""

from __future__ import annotations

import hashlib
import html
import json
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import pandas as pd
import plotly.graph_objects as go
import plotly.offline
from plotly.io.json import to_json_plotly

from costsim.present import formats

# No logo (a link to plotly.com; plotly shows no "edit in Chart Studio" link by default): nothing points
# to the network. Responsive: figures follow the page's width from a laptop to 1600 px and more.
FIGURE_CONFIG = {"displaylogo": False, "responsive": True}
FIGURE_CONFIG_JSON = json.dumps(FIGURE_CONFIG)

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
/* Tables fit the page column: headers and text wrap at word boundaries, numbers stay on one
   line; a table wider than the column anyway scrolls inside its own box, not the page. */
.table-wrap { overflow-x: auto; max-width: 100%; margin: 0.5rem 0 1rem; }
table { border-collapse: collapse; font-size: 0.9rem; }
th, td { padding: 0.3rem 0.6rem; border-bottom: 1px solid var(--line); text-align: right; white-space: nowrap; }
th { background: var(--band); vertical-align: bottom; white-space: normal; overflow-wrap: normal; }
thead th { max-width: 11rem; }
tbody th { text-align: left; font-weight: 600; vertical-align: top; max-width: 18rem; }
td.text, th.text { text-align: left; white-space: normal; overflow-wrap: normal; }
td.text { max-width: 24rem; }
td.wrap { white-space: normal; overflow-wrap: anywhere; min-width: 7rem; max-width: 32rem; }
td.keep { white-space: nowrap; }
td.best { font-weight: 700; color: var(--good); }
tr.pick td:first-child, th.pick { font-weight: 700; }
tr.behind td, td.behind, th.behind { background: #fff4f4; }
.figure { width: 100%; min-height: 420px; margin: 0.5rem 0 1.5rem; }
pre { background: var(--band); padding: 0.8rem 1rem; overflow-x: auto; font-size: 0.85rem; line-height: 1.4; }
footer { margin-top: 2.5rem; color: var(--muted); font-size: 0.85rem; }
@media print {
  main { max-width: none; padding: 0; }
  .table-wrap { overflow: visible; }
  table { font-size: 0.7rem; width: 100%; }
  th, td, td.text, td.wrap { padding: 0.15rem 0.3rem; white-space: normal; overflow-wrap: anywhere;
                             min-width: 0; max-width: none; }
  thead { display: table-header-group; }
  tr, .figure { break-inside: avoid; }
  .figure { overflow: hidden; }  /* plotly redraws at the paper's width only after a resize event */
  pre { white-space: pre-wrap; overflow-wrap: anywhere; }
}
"""


def esc(text: object) -> str:
    """Text as HTML: ``<``, ``>``, ``&`` and quotes escaped (user strings, never markup)."""
    return html.escape(str(text), quote=True)


_nan = formats.missing


def fixed(digits: int, unit: str = "") -> Callable[[float], str]:
    """A number with ``digits`` decimals and thousands separators, then ``unit``; "–" for NaN
    (``formats.number``)."""
    return lambda x: formats.number(x, digits, unit)


def percent_number(x: float) -> str:
    """A share (0…1) as a bare percentage with one decimal, for a column headed "%"; "–" for NaN."""
    return formats.percent_number(x, 1)


def share(x: float) -> str:
    """A share (0…1) in percent, one decimal; "–" for NaN (``formats.percent``)."""
    return formats.percent(x, 1)


# A column of an HTML table: (header, column of the frame, formatter, "low"/"high" best or None).
# The formatter takes a cell as pandas holds it (a float, an int, a str or a bool, by the column's
# dtype), so its argument is Any: each formatter is written for the one column it is given.
Column: TypeAlias = tuple[str, str, Callable[[Any], str], str | None]


def _best(frame: pd.DataFrame, columns: Sequence[Column], best_among: pd.Series | None) -> dict[str, float]:
    """Per column with a best direction, its best value among the rows ``best_among`` selects."""
    among = frame if best_among is None else frame[best_among.to_numpy(dtype=bool)]
    best: dict[str, float] = {}
    for _, key, _, direction in columns:
        values = pd.to_numeric(among[key], errors="coerce").dropna() if direction else pd.Series(dtype=float)
        if len(values):
            best[key] = values.min() if direction == "low" else values.max()
    return best


def _cell(r: pd.Series, key: str, fmt: Callable[[Any], str], best: dict[str, float],
          best_among: pd.Series | None, extra: Sequence[str] = ()) -> str:
    """One ``<td>``: text left-aligned (and free to wrap), numbers right-aligned on one line."""
    v = r[key]
    classes = ["text"] if fmt is str else []
    classes += [c for c in extra if c]
    if key in best and not _nan(v) and v == best[key] and (best_among is None or bool(best_among.loc[r.name])):
        classes.append("best")
    return f'<td class="{" ".join(classes)}">{esc(fmt(v))}</td>'


def _wrapped(head: str, rows: Sequence[str]) -> str:
    """A table in its own scroll box (``table-wrap``): too wide for the column, it scrolls there."""
    return f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'


def table(frame: pd.DataFrame, columns: Sequence[Column], *, best_among: pd.Series | None = None,
          row_class: Callable[[pd.Series], str] | None = None, wrap: Sequence[str] = (),
          nowrap: Sequence[str] = ()) -> str:
    """``frame`` as an HTML table with ``columns`` (missing columns left out). Where a column has a
    best direction, its best value among the rows ``best_among`` selects (default all) is marked
    (class ``best``): the lowest cost or delay, the highest completion or speed. Text wraps at
    word boundaries; the columns in ``wrap`` (long text: sources, notes) get room and break a
    word longer than their width, those in ``nowrap`` (dates) stay on one line as numbers do."""
    columns = [c for c in columns if c[1] in frame.columns]
    best = _best(frame, columns, best_among)
    head = "".join(f'<th class="{"text" if fmt is str else ""}">{esc(h)}</th>' for h, _, fmt, _ in columns)
    rows = []
    for _, r in frame.iterrows():
        cells = "".join(_cell(r, key, fmt, best, best_among,
                              ["wrap" if key in wrap else "", "keep" if key in nowrap else ""])
                        for _, key, fmt, _ in columns)
        cls = row_class(r) if row_class else ""
        rows.append(f'<tr class="{cls}">{cells}</tr>')
    return _wrapped(head, rows)


def transposed_table(frame: pd.DataFrame, columns: Sequence[Column], *, best_among: pd.Series | None = None,
                     column_class: Callable[[pd.Series], str] | None = None) -> str:
    """``frame`` turned a quarter: each row of ``frame`` a column, headed by its value of the first
    of ``columns``; each other column a row, headed by its header. The same cells and best marks
    as ``table`` (best among the rows, now along each line); ``column_class`` gives a row of
    ``frame`` the class of its header and cells. Few long-named rows with many metrics read
    better so, and fit the page."""
    columns = [c for c in columns if c[1] in frame.columns]
    (label, key0, fmt0, _), rest = columns[0], columns[1:]
    best = _best(frame, rest, best_among)
    classes = [column_class(r) if column_class else "" for _, r in frame.iterrows()]
    head = f'<th class="text">{esc(label)}</th>' + "".join(
        f'<th class="{c}">{esc(fmt0(r[key0]))}</th>' for c, (_, r) in zip(classes, frame.iterrows(), strict=True))
    rows = []
    for header, key, fmt, _ in rest:
        cells = "".join(_cell(r, key, fmt, best, best_among, [c])
                        for c, (_, r) in zip(classes, frame.iterrows(), strict=True))
        rows.append(f'<tr><th scope="row">{esc(header)}</th>{cells}</tr>')
    return _wrapped(head, rows)


def figure(fig: go.Figure, height: int = 460) -> str:
    """A figure's div and the script that draws it with the page's plotly.js (not included here);
    ``height`` in pixels."""
    fig.update_layout(height=height)
    # The figure turned into plain data once, then into JSON once (plotly's own escaping: no
    # ``</script>`` can close the script early); the id and the script both read that JSON.
    spec = fig.to_dict()
    data, layout = to_json_plotly(spec.get("data", [])), to_json_plotly(spec.get("layout", {}))
    # The div's id from the figure itself (plotly's default is a random UUID): the same results
    # give the same file, byte for byte, as every other output of a run.
    ident = "fig-" + hashlib.sha256(f"{data}{layout}".encode()).hexdigest()[:16]
    return (f'<div class="figure"><div style="height:{height}px; width:100%;">'
            f'<div id="{ident}" class="plotly-graph-div" style="height:100%; width:100%;"></div>'
            f'<script>if (document.getElementById("{ident}")) {{ Plotly.newPlot("{ident}", {data}, {layout}, '
            f'{FIGURE_CONFIG_JSON}) }};</script></div></div>')


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
