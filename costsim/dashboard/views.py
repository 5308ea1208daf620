"""What the dashboard draws from results (Streamlit): the first screen (verdict, break-even,
option cards) and readable tables. The numbers come from ``headline``; nothing is computed here.
"""

from __future__ import annotations

import math
import re
from typing import Literal

import numpy as np
import pandas as pd
import streamlit as st

from costsim.present import formats
from costsim.present.formats import MISSING
from costsim.present.headline import (
    CANNOT_KEEP_UP,
    CARD_METRICS,
    DETAILS,
    best_options,
    breakeven_sentence,
    breakeven_versus,
    card_delta,
    card_table,
    card_value,
    details_markdown,
    flip_words,
    headline_markdown,
    literal_markdown,
    recommended_first,
    searchable_flip,
)
from costsim.results.finance import breakeven_over

CARDS_PER_ROW = 6  # six options in one row of narrower cards: all of them above the fold at 1600 × 1000

# Our own CSS (no user text): compact metrics so the verdict and the cards fit above the fold at
# 1600 × 1000 and values with their ± never truncate: in six narrow cards a value wraps before
# its "±" (``card_value``) instead of running past the card's border.
COMPACT = """<style>
[data-testid="stMetricValue"] {font-size: 1.05rem; line-height: 1.25;}
[data-testid="stMetricValue"] > div, [data-testid="stMetricValue"] p {overflow: visible; white-space: normal;}
[data-testid="stMetric"] {padding: 0; gap: 0;}
[data-testid="stMetricDelta"] {font-size: 0.8rem;}
[data-testid="stMainBlockContainer"] {padding-top: 2.5rem;}
[data-testid="stColumn"] [data-testid="stVerticalBlock"] {gap: 0.6rem;}
</style>"""


def first_screen(verdict, runs: list, stale: str | None) -> None:
    """The verdict's lead with its confidence, a line for each option set aside and the rest of the
    verdict in an expander, then one card per option, the recommended option's first, up to six
    in a row (the best value of each metric marked ★, deltas against the recommended option,
    flags), then the cash break-even against one rental (``breakeven_versus``). ``stale``: why
    these are an earlier run's results (None when they are this run's)."""
    st.html(COMPACT)
    if stale:
        st.warning(f"**Stale:** these are the results of the last settings that worked; {stale}")
    # The decision and a line per option set aside stay short whatever the verdict says, so every
    # card stays above the fold; the why and the flips are one click away, directly below.
    st.markdown(headline_markdown(verdict, literal_markdown))
    details = details_markdown(verdict, literal_markdown)
    if details:
        with st.expander(DETAILS):
            st.markdown(details)
    reps = len(runs)
    note = (f"Means of {reps} replications (± half-width of the 95 % interval)." if reps > 1
            else "One replication: no intervals (raise Replications in the sidebar).")
    table = card_table(verdict)
    pairs = breakeven_over([r.breakeven for r in runs])
    breakeven = breakeven_sentence(pairs, breakeven_versus(pairs, table, verdict.option))
    st.caption(" ".join([note, f"★ best among the options that keep up and meet the targets; deltas against "
                               f"{literal_markdown(verdict.option or 'nothing')}, the recommendation."]))
    best = best_options(table)
    ref = table.set_index("option").loc[verdict.option] if verdict.option in set(table["option"]) else None
    table = recommended_first(table, verdict.option)
    per_row = cards_per_row(len(table))
    for i in range(0, len(table), per_row):
        chunk = table.iloc[i:i + per_row]
        # only as many columns as cards: no empty bordered boxes in a last, shorter row
        for col, (_, row) in zip(st.columns(len(chunk), border=True, gap="small"), chunk.iterrows(), strict=True):
            with col:
                option_card(row, best, ref, row.option == verdict.option)
    # Under the cards: when owning pays back is read after which option and what each costs.
    if breakeven:
        st.caption(literal_markdown(breakeven))


def flip_control(verdict, runs: list, simulate, key: str) -> None:
    """Under the cards, on request: the owned option's utilisation at which the verdict flips
    (``costsim.decide`` with its search, each simulation by ``simulate(scenario, seed)`` in the
    bounded workers); kept per ``key`` (the runs' identity) for the session."""
    if not searchable_flip(verdict):
        return
    found = st.session_state.setdefault("flips", {})
    if key not in found and st.button("What utilisation would flip it?", key=f"flip:{hash(key)}",
                                      help="Scales the work and re-simulates the two options compared, on the "
                                           "first replication, until their fair totals cross (a few runs)."):
        from costsim.present.verdict import decide

        with st.spinner("Re-simulating the two options at other amounts of work…"):
            found[key] = flip_words(decide(runs, simulate=simulate))
    if key in found:
        st.caption(literal_markdown(found[key]))


def cards_per_row(n: int) -> int:
    """Cards in each row for ``n`` options: all in one row up to ``CARDS_PER_ROW``, beyond that
    as few rows as that allows, filled evenly (7 -> 4 + 3, not 6 + 1)."""
    rows = max(1, math.ceil(n / CARDS_PER_ROW))
    return max(1, math.ceil(n / rows))


def option_card(row, best: dict, ref, recommended: bool) -> None:
    """One option: its name (recommended or flagged in words, not colour alone) and the card metrics."""
    tag = " — recommended" if recommended else ""
    st.markdown(f"**{literal_markdown(row.option)}**{tag}  \n{literal_markdown(row.subtitle)}")
    if not row.keeps_up:
        # why is on the headline's line for this option, right above: a hover here would wrap the
        # flag onto two lines in a narrow card and push the card's last numbers below the fold
        st.markdown(f"**{CANNOT_KEEP_UP}**")
    # An option that misses a target or cannot keep up is not a better choice where it is cheaper:
    # its differences are shown in grey, not in the green of a gain.
    eligible = bool(getattr(row, "eligible", row.keeps_up))
    for col, label, lower, hint in CARD_METRICS:
        star = " ★" if row.option in best.get(col, ()) else ""
        delta = None if ref is None or recommended else card_delta(col, row[col], ref[col])
        st.metric(f"{label}{star}", card_value(col, row[col], row[f"{col}_pm"]), delta, help=hint,
                  delta_color=delta_color(lower, eligible))


def delta_color(lower_is_better: bool, eligible: bool) -> Literal["normal", "inverse", "off"]:
    """Streamlit's colour rule for a card's difference: green where it is better, red where worse
    (``inverse`` when lower is better), grey (``off``) for an option the verdict cannot choose."""
    if not eligible:
        return "off"
    return "inverse" if lower_is_better else "normal"


# --- Readable tables ------------------------------------------------------------------------------

_WORDS = {"usd": "$", "h": "h", "gpu": "GPU", "gpus": "GPUs", "npv": "NPV", "jct": "JCT", "p50": "p50", "p95": "p95",
          "p99": "p99", "rl": "RL", "kwh": "kWh"}
PERCENT = re.compile(r"(utilization|utilisation|goodput|share|completion|frac|offered_load|^excess$)")
# A column's name ends in its unit: (suffix, unit shown), the longest first.
UNITS = (("_usd_per_gpu_hour", "$/GPU-h"), ("_per_1000_gpu_h", "per 1,000 GPU-h"), ("_gpu_hours", "GPU-h"),
         ("_per_h", "per h"), ("_per_day", "per day"), ("_usd", "$"), ("_h", "h"), ("_s", "s"))


# Columns whose generic label would mislead or say too little: the cards call these totals
# amortised and cash; the checkpoint advice counts iterations and a share.
LABELS = {"total_cost_usd": "amortised total ($)", "cash_spent_usd": "cash spent ($)",
          "book_value_usd": "book value at the end ($, a credit, not cash)",
          "every_iterations": "checkpoint every (iterations)",
          "optimal_every_iterations": "optimal checkpoint every (iterations)",
          "excess": "job time over the optimal (%)"}


def readable(column: str) -> str:
    """``queue_delay_p95_h`` -> ``queue delay p95 (h)``; ``interruptions_per_h`` ->
    ``interruptions (per h)``; ``total_cost_usd`` -> ``amortised total ($)`` (``LABELS``)."""
    if column in LABELS:
        return LABELS[column]
    unit = None
    stem = column
    for suffix, shown in UNITS:
        if column.endswith(suffix) and len(column) > len(suffix):
            stem, unit = column[:-len(suffix)], shown
            break
    words = " ".join(_WORDS.get(p, p) for p in stem.split("_"))
    if PERCENT.search(column):
        unit = "%"
    return f"{words} ({unit})" if unit else words


def show_table(df: pd.DataFrame, key: str, pinned: str = "option") -> None:
    """``df`` as ``table_view`` makes it readable, in a Streamlit table."""
    view, config = table_view(df, pinned)
    st.dataframe(view, hide_index=True, key=key, column_config=config)


def table_view(df: pd.DataFrame, pinned: str = "option") -> tuple[pd.DataFrame, dict]:
    """``df`` with readable headers, units, few decimals and no "None", and its column config:
    shares in per cent, money whole dollars, small rates with enough decimals to keep three
    significant figures (``formats.decimals_for``: 0.000317, never 0.00); float noise below
    ``formats.NOISE`` shown as 0 (a printf format prints −2.8e-16 as "-0.00"); a column with
    missing values shows them as "–" (text, so no "None" cell)."""
    view = df.copy()
    config = {}
    for col in view.columns:
        label = readable(col)
        series = view[col]
        if pd.api.types.is_bool_dtype(series):
            view[col] = series.map({True: "yes", False: "no"})
            config[col] = st.column_config.TextColumn(label)
            continue
        if not pd.api.types.is_numeric_dtype(series):
            view[col] = series.astype(object).where(series.notna(), MISSING).astype(str).replace({"None": MISSING, "": MISSING})
            config[col] = st.column_config.TextColumn(label, pinned=col == pinned)
            continue
        x = series.astype(float) * (100 if PERCENT.search(col) else 1)
        x = x.mask(x.abs() < formats.NOISE, 0.0)  # NaN stays NaN (its comparison is False)
        fmt = column_format(col, x)
        if x.isna().any() or np.isinf(x).any():
            view[col] = [cell_text(fmt, v) for v in x]
            config[col] = st.column_config.TextColumn(label)
        else:
            view[col] = x
            config[col] = st.column_config.NumberColumn(label, format=fmt)
    return view, config


def column_format(col: str, x: pd.Series) -> str:
    """The printf format (Streamlit's ``NumberColumn`` subset) of a column of numbers: a price per
    unit (``per_unit_price``: cloud's $2.99 per GPU-hour beside own's $373.20) always to the cent,
    other money whole dollars (cents below $100), per cent to 0.1, whole counts, else two decimals
    (one from 100 on) or as many as three significant figures of the smallest value need."""
    finite = x[np.isfinite(x)]
    if per_unit_price(col):
        return "$%,.2f"
    if col.endswith("_usd"):
        return "$%,.0f" if finite.abs().max() >= 100 else "$%,.2f"
    if PERCENT.search(col):
        return "%.1f%%"
    if (finite == finite.round()).all():
        return "%,.0f"
    usual = 2 if finite.abs().max() < 100 else 1
    return f"%,.{max(usual, formats.decimals_for(finite, 3, 6))}f"


def per_unit_price(col: str) -> bool:
    """Whether a column is a price per unit (USD per GPU-hour, per kWh, per iteration, ...): its
    name's words hold both "usd" and "per" (``cost_per_gpu_hour_used_usd``, ``own_usd_per_gpu_hour``)."""
    words = col.split("_")
    return "usd" in words and "per" in words


def cell_text(fmt: str, v: float) -> str:
    """A number as ``fmt`` (``column_format``'s) would show it, through ``costsim.present.formats``;
    "–" when missing, "∞" when infinite."""
    if formats.missing(v) or np.isinf(v):
        return formats.number(v)
    precision = re.search(r"\.(\d+)f", fmt)
    assert precision is not None, fmt  # column_format always writes the decimals, as in "%,.2f"
    digits = int(precision.group(1))
    text = formats.number(v, digits)
    if fmt.startswith("$"):
        return text.replace("−", "−$", 1) if text.startswith("−") else "$" + text
    return text + "%" if fmt.endswith("%%") else text
