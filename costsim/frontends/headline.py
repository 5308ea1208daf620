"""What the CLI and the dashboard say first about a run: the verdict (``costsim.decide``), the
options that cannot keep up and why, and what each total means.

Pure text and tables from a ``Verdict`` and a summary; no printing, no Streamlit. Money in USD.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from costsim.decisions.fair import fair_rows
from costsim.decisions.targets import value

FLAG = "⚠"
CANNOT_KEEP_UP = f"{FLAG} cannot keep up"

# What each total is; said wherever a total appears (issue 12: both named, everywhere).
AMORTISED = "amortised: capital spread over the depreciation life, plus running costs and rent"
CASH = "cash: capex when paid, running costs, rent and commitments owed within the horizon"
FAIR = "fair: the amortised total plus the work left unfinished priced at the cheapest rental price"

# The Verdict.options columns a summary row lacks (``fair.fair_rows``, targets).
VERDICT_COLUMNS = ["keeps_up", "why", "completion", "fair_total_usd", "cost_per_work_gpu_hour_usd",
                   "meets_targets", "eligible"]


def with_verdict(summary: pd.DataFrame, verdict) -> pd.DataFrame:
    """The summary rows (one per option, in their order) with the verdict's per-option columns
    (``VERDICT_COLUMNS``) beside them."""
    extra = verdict.options[["option", *VERDICT_COLUMNS]]
    return summary.merge(extra, on="option", how="left", validate="one_to_one")


def flagged(verdict) -> list[tuple[str, str]]:
    """(option, why in words) for each option that cannot keep up, in the table's order."""
    return [(r.option, r.why) for r in verdict.options.itertuples() if not r.keeps_up]


def missed_targets(verdict) -> list[tuple[str, str]]:
    """(option, the targets it misses with its value) for each option that keeps up but misses
    a target: it is not recommended either, for a different reason."""
    out = []
    for _, r in verdict.options.iterrows():
        if not r.keeps_up or r.meets_targets:
            continue
        misses = [f"{t} (it has {_number(value(r, t.metric))})" for t in verdict.targets
                  if not t.met(value(r, t.metric))]
        out.append((r.option, ", ".join(misses)))
    return out


def _number(x: float) -> str:
    return "none" if math.isnan(x) else f"{x:,.3g}"


def headline_markdown(verdict, escape) -> str:
    """The dashboard's headline in Markdown: the verdict sentence, then each option that cannot
    keep up with its reason (never recommended), then those that miss a target.

    ``escape``: makes user text literal Markdown (``dashboard.literal_markdown``); the sentence
    holds option names and dollar signs, which Markdown would otherwise read as math."""
    lines = [f"**Verdict:** {escape(verdict.sentence)}"]
    for option, why in flagged(verdict):
        lines.append(f"{FLAG}\ufe0f **{escape(option)}: cannot keep up** ({escape(why)}); never recommended, "
                     "its totals leave work undone.")
    for option, misses in missed_targets(verdict):
        lines.append(f"✗ **{escape(option)}** misses {escape(misses)}.")
    return "  \n".join(lines)


# --- Text a user wrote, shown in Markdown ---------------------------------------------------------

_ASCII_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")


def literal_markdown(text: str) -> str:
    """``text`` for a Streamlit Markdown string that shows it as typed: every ASCII punctuation
    character backslash-escaped (CommonMark: it is then a literal, so no emphasis, link, image,
    HTML tag, entity, ``$`` math or ``:color[...]`` directive can start), and line breaks made
    spaces so no line can become a heading, list or code block."""
    return _ASCII_PUNCTUATION.sub(r"\\\1", " ".join(str(text).split()))


# --- The first screen's cards -----------------------------------------------------------------------

# (column, label, lower is better, help): what each card shows, in order.
CARD_METRICS = [
    ("total_cost_usd", "Amortised cost", True, AMORTISED),
    ("cash_spent_usd", "Cash spent", True, CASH),
    ("queue_delay_p95_h", "p95 queue delay", True, "95th percentile of the hours a job waits before it starts "
     "(jobs never started count with their wait so far)."),
    ("completion", "Completion", False, "Share of submitted jobs completed within the horizon."),
    ("iterations_per_day", "RL iterations / day", False, "RL iterations completed per day over the horizon."),
]


def subtitle(kind: str, pricing: str) -> str:
    """What an option is, in two words at most: ``owned``, ``cloud, on-demand``, ``hybrid``."""
    pricing = str(pricing).replace("_", "-")
    return kind if pricing in ("", kind, "nan", "None") else f"{kind}, {pricing}"


def card_table(summaries: list[pd.DataFrame], verdict) -> pd.DataFrame:
    """One row per option (in the summaries' order): for each ``CARD_METRICS`` column its mean over
    the replications and the half-width of its 95 % interval (``<col>_pm``, NaN with one run),
    then ``subtitle``, ``keeps_up`` and ``why`` from the verdict."""
    from costsim.runs import stats  # scipy.stats: only when there are intervals to draw

    runs = pd.concat([s.assign(replication=i) for i, s in enumerate(summaries)], ignore_index=True)
    rows = fair_rows(runs)
    out = []
    for option, group in rows.groupby("option", sort=False):
        rec: dict = {"option": option, "subtitle": subtitle(group["kind"].iloc[0], group["pricing"].iloc[0])}
        for col, *_ in CARD_METRICS:
            mean, low, high = stats.t_interval(group[col].to_numpy(dtype=float))
            rec[col], rec[f"{col}_pm"] = mean, (high - low) / 2
        out.append(rec)
    table = pd.DataFrame(out)
    return table.merge(verdict.options[["option", "keeps_up", "why"]], on="option", how="left", validate="one_to_one")


def best_options(table: pd.DataFrame) -> dict[str, set[str]]:
    """For each card metric, the options with the best value among those that keep up (ties all
    marked; none when no option keeps up or the values are all missing)."""
    ok = table[table["keeps_up"].fillna(False).astype(bool)]
    best = {}
    for col, _, lower, _ in CARD_METRICS:
        values = ok[col].dropna()
        if values.empty:
            best[col] = set()
            continue
        target = values.min() if lower else values.max()
        best[col] = set(ok.loc[values.index[np.isclose(values, target, rtol=1e-12, atol=0)], "option"])
    return best


def card_value(col: str, x: float, pm: float = math.nan) -> str:
    """A card's number with its unit, and ± its interval's half-width when there is one."""
    if x != x:
        return "-"
    if col.endswith("_usd"):
        main, extra = f"${x:,.0f}", f"${pm:,.0f}"
    elif col.endswith("_h"):
        main, extra = f"{x:,.1f} h" if x < 100 else f"{x:,.0f} h", f"{pm:,.1f} h"
    elif col == "completion":
        main, extra = f"{x:.1%}", f"{pm:.1%}"
    else:
        main, extra = f"{x:,.0f}", f"{pm:,.0f}"
    return main if pm != pm else f"{main} ± {extra}"


def card_delta(col: str, x: float, ref: float) -> str | None:
    """The difference against the recommended option's value, signed, with its unit; None for
    the recommended option itself or a missing value."""
    if x != x or ref != ref or x == ref:
        return None
    d = x - ref
    if col.endswith("_usd"):
        text = f"{'+' if d > 0 else '-'}${abs(d):,.0f}"
    elif col.endswith("_h"):
        text = f"{d:+,.1f} h"
    elif col == "completion":
        text = f"{d * 100:+.1f} pp"
    else:
        text = f"{d:+,.0f}"
    return None if text.lstrip("+-$").strip("0., hp") == "" else text  # rounds to nothing: no delta


def breakeven_over(tables: list[pd.DataFrame]) -> pd.DataFrame:
    """The break-even tables of several replications as one: per (option, versus) the mean month
    over the replications where it falls within the horizon (NaN in none), ``found`` of ``n``
    replications, and the mean extrapolated and "cheaper until" months where they exist."""
    both = pd.concat([t.assign(replication=i) for i, t in enumerate(tables)], ignore_index=True)
    if both.empty:
        return tables[0]
    extra = "cheaper_until_month" if "cheaper_until_month" in both else None
    rows = []
    for (option, versus), g in both.groupby(["option", "versus"], sort=False):
        row = {"option": option, "versus": versus, "breakeven_month": g["breakeven_month"].mean(),  # NaN skipped
               "breakeven_month_extrapolated": g["breakeven_month_extrapolated"].mean(),
               "found": int(g["breakeven_month"].notna().sum()), "n": len(g)}
        if extra:
            row[extra] = g[extra].mean()
        rows.append(row)
    return pd.DataFrame(rows)


def breakeven_sentence(breakeven: pd.DataFrame) -> str:
    """The cash break-even month of each owned or committed option against the rental, in words
    (an empty string when the scenario has no such pair). With ``found``/``n`` columns
    (``breakeven_over``) the month is a mean over replications, and says so when some had none."""
    parts = []
    for r in breakeven.itertuples():
        if r.breakeven_month == r.breakeven_month:
            when = "from the start" if r.breakeven_month == 0 else f"from month {r.breakeven_month:.0f}"
        elif r.breakeven_month_extrapolated == r.breakeven_month_extrapolated:
            when = f"not within the horizon (about month {r.breakeven_month_extrapolated:.0f} if it went on)"
        else:
            when = "never"
        if not pd.isna(getattr(r, "cheaper_until_month", math.nan)):
            when += f", but only until month {r.cheaper_until_month:.0f}"
        n, found = getattr(r, "n", 1), getattr(r, "found", 1)
        if n > 1 and r.breakeven_month == r.breakeven_month:
            when += f" (mean of {found} of {n} replications)" if found < n else f" (mean of {n} replications)"
        parts.append(f"{r.option} {when}")
    return ("Cash break-even against " + ", ".join(dict.fromkeys(breakeven["versus"])) + ": " + "; ".join(parts) + ".") \
        if parts else ""
