"""The CLI's tables (rich): the run's comparison in 80 columns (``narrow_table``) or whole
(``summary_table``, ``--wide``), the notes under it, the RL iterations' phases and a sweep's means.
They format numbers the results already hold, through ``costsim.present.formats`` (separators, no
scientific notation; each header names its unit, so cells carry the bare number); nothing is
computed here."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pandas as pd
from rich import box
from rich.table import Table
from rich.text import Text

from costsim.cli.console import visible
from costsim.present import formats
from costsim.present.headline import AMORTISED, CANNOT_KEEP_UP, CASH, FAIR, FLAG, flagged, missed_targets

if TYPE_CHECKING:
    from costsim.runs.sweep import SweepResults


def _or_dash(fmt: str):
    """Format a number by a ``format`` spec ("," and fixed decimals or "%" only: never "g" or
    "e"), or "–" where it is not one (NaN: no such figure for that option)."""
    assert fmt[-1] in "f%" and "e" not in fmt, fmt
    return lambda v: formats.MISSING if formats.missing(v) else format(v, fmt).replace("-", "−")


def _fixed(digits: int):
    """A bare number with ``digits`` decimals and separators (``formats.number``)."""
    return lambda v: formats.number(v, digits)


def _share(digits: int):
    """A share (0…1) as a bare percentage, for a column headed "%"."""
    return lambda v: formats.percent_number(v, digits)


_millions = formats.millions  # dollars in millions, two decimals, for a "$M" column


def _option_cell(row) -> Text:
    """The option's name, and under it why it is out of the running (never as markup: names are user text)."""
    cell = Text(visible(row.option))
    if not row.keeps_up:
        cell.append("\n" + CANNOT_KEEP_UP, style="bold yellow")
    elif not row.meets_targets:
        cell.append("\n✗ misses a target", style="yellow")
    return cell


# The 80-column run table: (header with its unit, column of ``with_verdict``'s rows, formatter).
# Headers of at most two short lines keep it within 80 columns with option names of up to 16
# characters (``cannot keep up`` is that wide); longer names fold, numbers never wrap.
NARROW_COLUMNS = [
    ("done\n%", "completion", _share(1)),
    ("p95\nh", "queue_delay_p95_h", _fixed(1)),
    ("util\n%", "utilization", _share(0)),
    ("it/day", "iterations_per_day", _fixed(0)),
    ("$/work\nGPU-h", "cost_per_work_gpu_hour_usd", _fixed(2)),
    ("amortised\n$M", "total_cost_usd", _millions),
    ("cash\n$M", "cash_spent_usd", _millions),
    ("fair\n$M", "fair_total_usd", _millions),
]


def narrow_table(rows, title: str) -> Table:
    """The run's comparison in 80 columns: per option the share of jobs done, p95 queue delay,
    utilisation, RL iterations per day, amortised cost per GPU-hour of work done, and the three
    totals (amortised, cash, fair), each named. ``rows``: ``headline.with_verdict``'s table."""
    columns = NARROW_COLUMNS
    if not (rows["iterations_per_day"] > 0).any():  # a trace-only scenario has no RL iterations
        columns = [c for c in columns if c[1] != "iterations_per_day"]
    # No padding: the box's blank divider alone separates the right-aligned columns, which leaves
    # the option column room for "⚠ cannot keep up" on one line beside 7-digit delays.
    table = Table(title=Text(visible(title)), title_justify="left", box=box.SIMPLE_HEAD, padding=0, show_edge=False)
    table.add_column("option", overflow="fold")
    for header, *_ in columns:
        table.add_column(header, justify="right", no_wrap=True)
    for row in rows.itertuples():
        table.add_row(_option_cell(row), *(fmt(getattr(row, key)) for _, key, fmt in columns))
    return table


def table_notes(verdict) -> list[Text]:
    """Under the run table: why each flagged option is out of the running, and what each total
    means (amortised and cash differ for owned hardware within its life)."""
    notes = [Text.assemble((f"{FLAG} {option} cannot keep up: ", "bold yellow"), why)
             for option, why in flagged(verdict)]
    notes += [Text.assemble((f"✗ {option} misses ", "yellow"), misses) for option, misses in missed_targets(verdict)]
    for column, what in (("serving_unmet_rent_usd", "unmet serving at the cheapest rent"),
                         ("waiting_cost_usd", "queued GPU-hours at the price of waiting")):
        held = verdict.options[verdict.options[column] > 0]
        if len(held):
            notes.append(Text(f"fair includes {what}: "
                              + ", ".join(f"{r.option} {formats.money_exact(r[column])}" for _, r in held.iterrows())))
    notes += [Text(f"{AMORTISED}; {CASH}; {FAIR}; $/work GPU-h: amortised total ÷ GPU-hours of work done."),
              Text("Every column: costsim run --wide.", style="dim")]
    return notes


def summary_table(summary, title: str) -> Table:
    """The wide run table (``--wide``): every figure of the summary per option. With the verdict's
    columns (``headline.with_verdict``) it also shows the cash and fair totals and the flag."""
    table = Table(title=Text(visible(title)), title_justify="left")  # Text: user names print literally
    columns = [
        ("option", "option", lambda v: Text(visible(v))),
        ("kind", "pricing", Text),
        ("jobs done/submitted", None, None),
        ("delay mean (h)", "queue_delay_mean_h", _fixed(2)),
        ("delay p95 (h)", "queue_delay_p95_h", _fixed(2)),
        ("utilisation (%)", "utilization", _share(1)),
        ("amortised total ($)", "total_cost_usd", formats.money_exact),
        ("$/GPU-h used", "cost_per_gpu_hour_used_usd", _fixed(2)),
        ("$/job", "cost_per_completed_job_usd", formats.money_exact),
        ("RL iter/day", "iterations_per_day", _fixed(0)),
        ("$/RL iter", "cost_per_iteration_usd", _fixed(2)),
    ]
    if not (summary["iterations_per_day"] > 0).any():  # a trace-only scenario has no RL iterations
        columns = columns[:-2]
    if (summary["restarts"] > 0).any():  # failures or preemptions interrupted something
        columns.append(("goodput (%)", "goodput", _share(1)))
    if "keeps_up" in summary:
        columns[7:7] = [("cash spent ($)", "cash_spent_usd", formats.money_exact), ("fair total ($)", "fair_total_usd", formats.money_exact),
                        ("$/work GPU-h", "cost_per_work_gpu_hour_usd", _fixed(2))]
        columns.append(("keeps up", "keeps_up", lambda v: "yes" if v else CANNOT_KEEP_UP))
    for header, *_ in columns:
        table.add_column(header, justify="left" if header in ("option", "kind", "keeps up") else "right")
    for _, row in summary.iterrows():
        cells = []
        for _header, key, fmt in columns:
            if key is None:
                cells.append(f"{formats.count(row.jobs_completed)}/{formats.count(row.jobs_submitted)}")
            else:
                cells.append(fmt(row[key]))
        table.add_row(*cells)
    return table


_seconds = formats.seconds  # 0.1 s; two decimals below that, so a short weight sync does not read as zero


# The phases table's columns: (header with its unit, phases column, formatter); shares print as
# bare percentages under a "%" header. Short headers of at most two lines keep the table within 160 columns with option and
# class names of up to about 20 characters each; longer names wrap, numbers never do.
PHASE_TABLE_COLUMNS = [
    ("rollout\ns", "rollout_s", _seconds),
    ("log- s\nprobs", "logprobs_s", _seconds),
    ("scoring\ns", "scoring_s", _seconds),
    ("update\ns", "update_s", _seconds),
    ("sync/ s\nreshard", "sync_s", _seconds),
    ("async s\noverhead", "overhead_s", _seconds),
    ("iteration\ns", "iteration_s", _seconds),
    ("rollout\nshare %", "rollout_share", _share(0)),
    ("straggler\nshare %", "straggler_share", _share(0)),
    ("tok/s\nper GPU", "rollout_tokens_per_s_per_gpu", _fixed(0)),
    ("capped\n%", "capped_share", _share(1)),
    ("iter/\nday", "iterations_per_day", _fixed(0)),
    ("$/iter", "cost_per_iteration_usd", _fixed(2)),
]


# The phases table in 80 columns: the phases that dominate, the whole iteration and what it buys.
NARROW_PHASE_COLUMNS = [c for c in PHASE_TABLE_COLUMNS
                        if c[1] in ("rollout_s", "update_s", "iteration_s", "rollout_share", "iterations_per_day",
                                    "cost_per_iteration_usd")]


def phase_table(phases, columns=PHASE_TABLE_COLUMNS) -> Table:
    """Where an RL iteration's time goes, per option and job class: mean seconds per phase and per
    iteration, the rollout's share of the iteration and the straggler's (the longest response
    alone) share of the rollout, rollout tokens/s per rollout GPU, the share of responses cut at
    the length cap, iterations per day and cost per iteration. ``columns``: which of them
    (``NARROW_PHASE_COLUMNS`` for 80 columns)."""
    table = Table(title="RL iterations: mean seconds per phase and per iteration (async: rollout overlaps "
                  "training, so its phases add up to more)", title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    table.add_column("option", overflow="fold")
    table.add_column("class", overflow="fold")
    for header, *_ in columns:
        table.add_column(header, justify="right", no_wrap=True)
    for _, r in phases.iterrows():
        if r.iterations_planned == 0:
            continue
        table.add_row(Text(visible(r.option)), Text(visible(r.job_class)), *(fmt(r[col]) for _, col, fmt in columns))
    return table


# The sweep's means table: (header with its unit, metric, formatter of a value); each cell is
# mean ± half-width. Listed from the most to the least needed: a narrow console drops from the end.
MEANS_TABLE_COLUMNS = [
    ("amortised total ($)", "total_cost_usd", formats.money_exact),
    ("delay p95 (h)", "queue_delay_p95_h", _fixed(2)),
    ("utilisation (%)", "utilization", _share(1)),
    ("RL iter/day", "iterations_per_day", _fixed(0)),
    ("cash spent ($)", "cash_spent_usd", formats.money_exact),  # shown when the sweep's means have it
    ("delay mean (h)", "queue_delay_mean_h", _fixed(2)),
]
MEANS_TABLE_KEPT = 1  # metrics a narrow console keeps whatever its width
MEANS_TABLE_ROWS = 60  # more rows than this: the first ones, and where the rest are


def _means_layout(results: SweepResults, title: str, columns, stacked: bool, squeezed: bool = False) -> Table:
    """The means table with ``columns``; ``squeezed``: its names folded as narrow as they may be
    (to measure the least width it needs: rich's own minimum ignores ``no_wrap``)."""
    table = Table(title=Text(visible(title)), title_justify="left", box=box.SIMPLE_HEAD)
    swept = {row["variant"]: ", ".join(f"{k}={row[k]}" for k in results.variants.columns[1:])
             for row in results.variants.to_dict("records")}
    shown = results.means.head(MEANS_TABLE_ROWS)
    # Names fold, but never narrower than this (a squeezed "v0/00" reads as two rows).
    labels = (("variant", shown["variant"], 12), ("swept values", pd.Series(list(swept.values()), dtype=object), 20),
              ("option", shown["option"], 16))
    for header, values, most in labels:
        narrowest = min(max([len(visible(v)) for v in values] + [6]), most)
        table.add_column(header, overflow="fold", min_width=narrowest, max_width=narrowest if squeezed else None)
    for header, *_ in columns:  # stacked: the header on two lines as well
        table.add_column(header.replace(" ", "\n", 1) if stacked else header, justify="right", no_wrap=True)
    table.add_column("n", justify="right")
    for r in shown.to_dict("records"):
        cells = [formats.with_interval(fmt, r[m], r[f"{m}_low"], r[f"{m}_high"], stacked) for _, m, fmt in columns]
        names = (Text(visible(r["variant"])), Text(visible(swept.get(r["variant"], ""))), Text(visible(r["option"])))
        table.add_row(*names, *cells, str(r["n"]))
    return table


def _least_width(table: Table) -> int:
    """The columns ``table`` takes when printed as wide as it likes."""
    from rich.console import Console

    with open(os.devnull, "w") as sink:
        console = Console(width=10_000, file=sink, record=True)
        console.print(table)
        return max((len(line.rstrip()) for line in console.export_text().splitlines()), default=0)


def fitted_means_table(results: SweepResults, title: str, width: int | None = None) -> tuple[Table, list[str]]:
    """``means_table`` and the headers of the metrics it left out to fit ``width``."""
    columns = [c for c in MEANS_TABLE_COLUMNS if c[1] in results.means]
    if width is None:
        return _means_layout(results, title, columns, False), []
    for stacked in (False, True):
        for keep in range(len(columns), MEANS_TABLE_KEPT - 1, -1):
            if _least_width(_means_layout(results, title, columns[:keep], stacked, squeezed=True)) <= width:
                return _means_layout(results, title, columns[:keep], stacked), [h for h, *_ in columns[keep:]]
            if not stacked:
                break  # one line per cell only with every column: else stack before leaving any out
    return _means_layout(results, title, columns[:MEANS_TABLE_KEPT], True), [h for h, *_ in columns[MEANS_TABLE_KEPT:]]


def means_table(results: SweepResults, title: str, width: int | None = None) -> Table:
    """One row per (variant, option): the swept values and each metric's mean ± the half-width of
    its 95 % confidence interval over the replications. ``width``: the columns the table must fit
    (None: as wide as it needs); to fit, the ± moves under the mean, then the least needed metrics
    are left out (``fitted_means_table`` says which), never a number cut short."""
    return fitted_means_table(results, title, width)[0]
