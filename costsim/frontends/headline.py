"""What the CLI and the dashboard say first about a run: the verdict (``costsim.decide``), the
options that cannot keep up and why, and what each total means.

Pure text and tables from a ``Verdict`` and a summary; no printing, no Streamlit. Money in USD.
"""

from __future__ import annotations

import math

import pandas as pd

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
