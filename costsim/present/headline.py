"""What the CLI and the dashboard say first about a run: the verdict (``costsim.decide``), the
options that cannot keep up and why, and what each total means.

Pure text and tables from a worded verdict (``verdict.WordedVerdict``) and a summary; no printing,
no Streamlit. Money in USD.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from costsim.decisions.fair import brief_why
from costsim.decisions.targets import shortfall
from costsim.present import formats
from costsim.present.formats import MISSING, money_exact
from costsim.present.wording import misses, misses_briefly
from costsim.results.finance import breakeven_over, round_month

FLAG = "⚠"
EMOJI = "\ufe0f"  # after FLAG: drawn as the emoji
NBSP = "\u00a0"
CANNOT_KEEP_UP = f"{FLAG} cannot keep up"

# What each total is; said wherever a total appears (both named, everywhere).
AMORTISED = "amortised: capital spread over the depreciation life, plus running costs and rent"
CASH = "cash: capex when paid, running costs, rent and commitments owed within the horizon"
FAIR = ("fair: the amortised total plus the work left unfinished and the serving left unmet, priced at the "
        "cheapest rental price, plus queued GPU-hours at the decision's price of waiting (0 unless stated)")

# The Verdict.options columns beside a summary row (``fair.fair_rows``, targets).
VERDICT_COLUMNS = ["keeps_up", "why", "completion", "fair_total_usd", "cost_per_work_gpu_hour_usd",
                   "meets_targets", "eligible"]


def with_verdict(summary: pd.DataFrame, verdict) -> pd.DataFrame:
    """The summary rows (one per option, in their order) with the verdict's per-option columns
    (``VERDICT_COLUMNS``) beside them."""
    extra = verdict.options[["option", *VERDICT_COLUMNS]]
    # The verdict's value wins where the summary has the column too (completion: its mean over runs).
    summary = summary.drop(columns=[c for c in VERDICT_COLUMNS if c in summary.columns])
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
        out.append((r.option, "; ".join(misses(shortfall(r, verdict.targets)))))
    return out


def headline_markdown(verdict, escape) -> str:
    """The dashboard's headline in Markdown, short enough to leave every option's card above the
    fold whatever the verdict says: the verdict's lead (which option, its cost, how sure), the
    time-to-target sentence when there is one, then one line a set-aside option (``set_aside``).
    The rest of the verdict is ``details_markdown``, for an expander under it.

    ``escape``: makes user text literal Markdown (``dashboard.literal_markdown``); the sentence
    holds option names and dollar signs, which Markdown would otherwise read as math."""
    lines = [f"**Verdict:** {escape(verdict.lead)}"]
    if verdict.time_to_target:
        lines.append(escape(verdict.time_to_target))
    # the warning sign as an emoji (U+FE0F), as the cards draw it; ✗ has no emoji form
    lines += [f"{mark}{EMOJI if mark == FLAG else ''} **{escape(option)}** {escape(what)}"
              for mark, option, what in set_aside(verdict)]
    return "  \n".join(lines)


DETAILS = "Why, and what would flip it"  # the expander under the headline that holds details_markdown


def details_markdown(verdict, escape) -> str:
    """The verdict after its lead, for the expander under the headline: a bullet a clause (the
    targets met, the delay trade, the cheaper option ruled out, the flips), then each option that
    cannot keep up with its whole reason; "" when the lead says it all."""
    lines = [escape(d) for d in verdict.details]
    # an option the clauses above already name as unable to keep up is not named twice
    lines += [f"{FLAG}{EMOJI} {escape(option)} cannot keep up ({escape(why)}): never recommended, its totals leave "
              "work undone." for option, why in flagged(verdict)
              if not any(d.startswith(f"{option} cannot keep up") for d in verdict.details)]
    return "\n".join(f"- {line}" for line in lines)


def set_aside(verdict) -> list[tuple[str, str, str]]:
    """(mark, option, why in a few words) for each option the verdict could not choose, in the
    table's order: ``FLAG`` "cannot keep up: offered load 112 % of its capacity" (then the targets it
    also misses, if any); ✗ "misses p95 queue delay ≤ 24 h: 3.4 days" for one that keeps up but
    misses a target."""
    out = []
    for _, r in verdict.options.iterrows():
        # written as the card below writes the same number (units, precision)
        misses = "" if r.meets_targets else f"misses {'; '.join(misses_briefly(shortfall(r, verdict.targets), card_value))}"
        if not r.keeps_up:
            out.append((FLAG, r.option, f"cannot keep up: {brief_why(r.why)}" + (f"; {misses}" if misses else "")))
        elif misses:
            out.append(("✗", r.option, misses))
    return out


def searchable_flip(verdict) -> bool:
    """Whether the verdict compares building with renting at different costs (a utilisation flip
    can then be searched for)."""
    if verdict.option is None or verdict.versus is None or verdict.same_cost:
        return False
    sides = verdict.options.set_index("option")["side"]
    return {sides[verdict.option], sides[verdict.versus]} == {"build", "rent"}


def flip_words(verdict) -> str:
    """The utilisation flip of a verdict decided with its search, in one sentence."""
    sides = verdict.options.set_index("option")["side"]
    build = verdict.option if sides[verdict.option] == "build" else verdict.versus
    rent = verdict.versus if build == verdict.option else verdict.option
    if math.isnan(verdict.utilization_flip):
        return f"No utilisation flips it: {verdict.utilization_flip_reason}."
    return (f"Utilisation flip: {build} and {rent} cost the same (fair totals) at {verdict.utilization_flip:.0%} "
            f"utilisation of {build}; re-simulated on both sides of it, the choice changes there.")


# --- Text a user wrote, shown in Markdown ---------------------------------------------------------

_ASCII_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
WORD_JOINER = "\u2060"  # invisible, no line break at it, neither a letter nor punctuation
# Where GFM's literal autolinks start: ``http://``, ``https://``, ``www.`` and ``user@domain``.
# Streamlit's renderer finds them in the text after escapes are resolved (mdast-util-gfm-autolink-
# literal), so escaping alone does not stop them; a word joiner inside each breaks the pattern.
_AUTOLINK_STARTS = re.compile(r"(?<=:)(?=//)|(?<=www)(?=\.)|(?<=@)", re.IGNORECASE)


def literal_markdown(text: str) -> str:
    """``text`` for a Streamlit Markdown string that shows it as typed: every ASCII punctuation
    character backslash-escaped (CommonMark: it is then a literal, so no emphasis, link, image,
    HTML tag, entity, ``$`` math or ``:color[...]`` directive can start), a ``WORD_JOINER`` after
    each ``:`` before ``//``, between ``www`` and ``.`` and after ``@`` (so no bare URL or address
    becomes a link), and line breaks made spaces so no line can become a heading, list or code
    block."""
    joined = _AUTOLINK_STARTS.sub(WORD_JOINER, " ".join(str(text).split()))
    return _ASCII_PUNCTUATION.sub(r"\\\1", joined)


# --- The first screen's cards -----------------------------------------------------------------------

# (column, label, lower is better, help): what each card shows, in order.
CARD_METRICS = [
    ("fair_total_usd", "Fair total", True, FAIR[0].upper() + FAIR[1:] + " — what the verdict ranks on."),
    ("total_cost_usd", "Amortised cost", True, AMORTISED),
    ("cash_spent_usd", "Cash spent", True, CASH),
    ("queue_delay_p95_h", "p95 queue delay", True, "95th percentile of the hours a job waits before it starts "
     "(jobs never started count with their wait so far)."),
    ("completion", "Completion", False, "Share of the jobs that could finish within the horizon (on any option) "
     "that finished on this one."),
    ("iterations_per_day", "RL iterations / day", False, "RL iterations completed per day over the horizon."),
]


def subtitle(kind: str, pricing: str) -> str:
    """What an option is, in two words at most: ``owned``, ``cloud, on-demand``, ``hybrid``."""
    pricing = str(pricing).replace("_", "-")
    return kind if pricing in ("", kind, "nan", "None") else f"{kind}, {pricing}"


def card_table(verdict) -> pd.DataFrame:
    """One row per option (in the verdict's order): for each ``CARD_METRICS`` column its mean over
    the replications the verdict was decided on (``Verdict.rows``, priced once, by ``decide``) and
    the half-width of its 95 % interval (``<col>_pm``, NaN with one run), then ``subtitle``,
    ``keeps_up`` and ``why`` from the verdict."""
    from costsim.runs import stats

    rows = verdict.rows
    if rows is None:
        raise ValueError("card_table(): the verdict holds no runs (decide it from runs, not from means alone)")
    out = []
    for option, group in rows.groupby("option", sort=False):
        rec: dict = {"option": option, "subtitle": subtitle(group["kind"].iloc[0], group["pricing"].iloc[0])}
        for col, *_ in CARD_METRICS:
            mean, low, high = stats.t_interval(group[col].to_numpy(dtype=float))
            rec[col], rec[f"{col}_pm"] = mean, (high - low) / 2
        out.append(rec)
    table = pd.DataFrame(out)
    return table.merge(verdict.options[["option", "keeps_up", "why", "eligible"]], on="option", how="left",
                       validate="one_to_one")


def recommended_first(table: pd.DataFrame, recommended: str | None) -> pd.DataFrame:
    """``card_table``'s rows with the recommended option's first, the others in their order."""
    first = table["option"] == recommended
    return pd.concat([table[first], table[~first]], ignore_index=True)


def best_options(table: pd.DataFrame) -> dict[str, set[str]]:
    """For each card metric, the options with the best value among those the verdict could
    recommend: they keep up and meet the targets (ties all marked; none when no option does or the
    values are all missing). A table without ``eligible`` falls back to ``keeps_up``."""
    ok = table[table["eligible" if "eligible" in table else "keeps_up"].fillna(False).astype(bool)]
    best: dict[str, set[str]] = {}
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
        return formats.MISSING
    if col.endswith("_usd"):
        main, extra = formats.money_exact(x), formats.money_exact(pm)
    elif col.endswith("_h"):
        main, extra = formats.number(x, 1 if abs(x) < 100 else 0, "h"), formats.number(pm, 1, "h")
    elif col == "completion":
        main, extra = formats.percent(x, 1), formats.percent(pm, 1)
    else:
        main, extra = formats.number(x, 0), formats.number(pm, 0)
    # no-break spaces inside "± half-width": a narrow card wraps the value only before the "±"
    return main if pm != pm else f"{main} ±{NBSP}{extra.replace(' ', NBSP)}"


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


def breakeven_versus(breakeven: pd.DataFrame, cards: pd.DataFrame, recommended: str | None) -> str | None:
    """The rental the first screen's break-even sentence is against: the recommended option if it
    is a rental, else the rental with the least cash spent among those that keep up (among all
    rentals if none does). ``cards``: ``card_table``'s rows. None when there is no pair."""
    rentals = list(dict.fromkeys(breakeven["versus"])) if len(breakeven) else []
    if not rentals or recommended in rentals:
        return recommended if rentals else None
    rows = cards[cards["option"].isin(rentals)]
    keeping = rows[rows["keeps_up"].fillna(False).astype(bool)]
    rows = keeping if len(keeping) else rows
    return rows.sort_values("cash_spent_usd", kind="stable")["option"].iloc[0] if len(rows) else rentals[0]


def _in_replications(k: int, n: int, varies: bool) -> str:
    """How many replications a month came from: nothing with one run, "mean of" when they differ."""
    if n <= 1:
        return ""
    return f", mean of {k} of {n} replications" if varies else f", in {k} of {n} replications"


def _listed(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _month(m: float) -> str:
    """A month number (counted from 1, or a mean of them) in words (``finance.round_month``)."""
    n = round_month(m)
    return "the first month" if n == 1 else f"month {n}"


def breakeven_when(r) -> str:
    """One pair's cash break-even in words, from a row of ``finance.breakeven`` (one run) or of
    ``finance.breakeven_over`` (with the replication counts); months counted from 1 (month 1 is
    the first). The dashboard's sentence and Cost tab and the report all say it this way."""
    n = getattr(r, "n", 1)
    found = getattr(r, "found", int(r.breakeven_month == r.breakeven_month))
    if found:
        when = "from the start" if round_month(r.breakeven_month) == 1 else f"from {_month(r.breakeven_month)}"
        counted = _in_replications(found, n, getattr(r, "breakeven_month_varies", False))
        return when + (f" ({counted[2:]})" if counted else "")
    cheaper = r.cheaper_until_month
    k = getattr(r, "cheaper_found", int(cheaper == cheaper))
    parts = []
    if k:  # cheaper first, dearer at the horizon's end: not a break-even
        parts.append(f"cheaper through {_month(cheaper)}, then dearer"
                     + _in_replications(k, n, getattr(r, "cheaper_until_month_varies", False)))
    e = r.breakeven_month_extrapolated
    k = getattr(r, "extrapolated_found", int(e == e))
    if k:
        parts.append(f"about {_month(e)} if it went on"
                     + _in_replications(k, n, getattr(r, "breakeven_month_extrapolated_varies", False)))
    # neither in any replication: dearer at every month's end (no estimate: the gap is not
    # closing, it closes only after the hardware's life, or the horizon is too short to tell)
    life = getattr(r, "life_months", math.nan)
    if not k and life == life:
        parts.append(f"no catch-up by month {life:.0f}, the end of its depreciation life counted from the order, at this pace")
    return f"not within the horizon ({'; '.join(parts) or 'dearer every month'})"


def tornado_breakeven(pairs: pd.DataFrame, input_label: str, end: str) -> str:
    """A tornado break-even cell in the words of ``breakeven_when``: ``pairs`` is a ``Tornado``'s
    ``breakeven`` (the pair's ``finance.breakeven_over`` row per variant), ``input_label`` the
    table's ``input`` ("" at base) and ``end`` "low", "high" or "base". "–" where there is no
    row: the input was skipped, or the pair is not one the break-even table compares."""
    if not len(pairs):
        return MISSING
    rows = pairs[(pairs["input"] == input_label) & (pairs["end"] == end)]
    return breakeven_when(next(rows.itertuples())) if len(rows) else MISSING


def breakeven_sentence(breakeven: pd.DataFrame, versus: str | None = None) -> str:
    """The cash break-even month of each owned or committed option against a rental, each pair
    named ("reserved-256 vs on-demand: from month 3"; options with the same outcome against the
    same rental in one clause); only the pairs against ``versus`` when it is given (the other
    rentals named as on the Cost tab). An empty string when there is no pair.
    With ``breakeven_over``'s counts a month is a mean over replications, and says over how many."""
    shown = breakeven if versus is None else breakeven[breakeven["versus"] == versus]
    if not len(shown):
        return ""
    same: dict[tuple[str, str], list[str]] = {}  # options with the same outcome share a clause
    for r in shown.itertuples():
        same.setdefault((r.versus, breakeven_when(r)), []).append(r.option)
    parts = [f"{_listed(options)} vs {rental}: {when}" for (rental, when), options in same.items()]
    others = [v for v in dict.fromkeys(breakeven["versus"]) if v != versus] if versus is not None else []
    tail = f" Against {_listed(others)}: see the Cost tab." if others else ""
    return "Cash break-even: " + "; ".join(parts) + "." + tail


# The break-even table of the Cost tab and the report: the sentence's words per pair, then the means.
BREAKEVEN_VIEW = ["option", "versus", "cash break-even", "breakeven_utilization", "own_usd_per_gpu_hour",
                  "rent_usd_per_gpu_hour"]


def breakeven_view(tables: list[pd.DataFrame]) -> pd.DataFrame:
    """The break-even table the Cost tab and the report show, one row per (option, versus) of
    ``finance.breakeven_over`` over the replications' ``breakeven`` tables: ``cash break-even`` in
    the words of ``breakeven_when`` (the month the first screen's sentence gives, counted from 1),
    then the mean break-even utilisation and USD per GPU-hour owned and rented."""
    pairs = breakeven_over(tables)
    words = [breakeven_when(r) for r in pairs.itertuples()]
    return pairs.assign(**{"cash break-even": words})[BREAKEVEN_VIEW].reset_index(drop=True)


def npv_sentence(summaries: list[pd.DataFrame]) -> str:
    """Each option's net present value of its cash flow (``npv_usd``), to the dollar: the mean over
    the replications with ± the half-width of its 95 % interval when there are several, as the
    first screen's cards give their totals."""
    from costsim.runs import stats

    runs = pd.concat([s[["option", "npv_usd"]] for s in summaries], ignore_index=True)
    parts = []
    for option, group in runs.groupby("option", sort=False):
        mean, low, high = stats.t_interval(group["npv_usd"].to_numpy(dtype=float))
        pm = (high - low) / 2
        parts.append(f"{option} {money_exact(mean)}" + (f" ± {money_exact(pm)}" if pm == pm else ""))
    n = len(summaries)
    which = (f" (means of {n} replications, ± half-width of the 95 % interval)" if n > 1 else "")
    return f"Net present value of each option's cash flow, the book value credit included{which}: {', '.join(parts)}."
