"""The sections of the HTML report (``costsim.report.build``): the verdict and its
confidence, the options side by side, time to target, break-even, the Pareto frontier, the
tornado, the figures of one run and the scenario. Each returns HTML (user text escaped by ``report_html``) and, where it
draws figures, how many; the figures of one run come as one builder per section (``run_figure_sections``)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from costsim.plots import figures as plots
from costsim.present.formats import MISSING, money_exact, plain, significant, who_pays_more
from costsim.report import html as h
from costsim.results.contract import Results

TRANSPOSE_OPTIONS = 6  # up to this many options, the options table has one column per option
FRONTIER_ROWS = 200  # rows of a sweep's frontier table shown; the figure shows them all

OPTION_COLUMNS: list[h.Column] = [
    ("option", "shown", str, None),
    ("side", "side", str, None),
    ("keeps up", "keeps", str, None),
    ("fair total (USD) ¹", "fair_total_usd", money_exact, "low"),
    ("amortised total (USD)", "total_cost_usd", money_exact, "low"),
    ("cash spent (USD)", "cash_spent_usd", money_exact, "low"),
    ("book value at the end (USD; a credit, not cash)", "book_value_usd", money_exact, None),
    ("unfinished work at the cheapest rent (USD)", "unfinished_rent_usd", money_exact, "low"),
    ("unmet serving at the cheapest rent (USD)", "serving_unmet_rent_usd", money_exact, "low"),
    ("waiting: queued GPU-hours × its price (USD)", "waiting_cost_usd", money_exact, "low"),
    ("USD per GPU-hour of work done", "cost_per_work_gpu_hour_usd", h.fixed(2), "low"),
    ("p95 queue delay (h)", "queue_delay_p95_h", h.fixed(2), "low"),
    ("completion (% of finishable jobs)", "completion", h.percent_number, "high"),
    ("RL iterations per day", "iterations_per_day", h.fixed(0), "high"),
    ("utilisation (%)", "utilization", h.percent_number, None),
    ("meets targets", "meets", str, None),
]


def _option_rows(options: pd.DataFrame, pick: str | None) -> pd.DataFrame:
    t = options.copy()
    t["shown"] = [f"★ {o} (recommended)" if o == pick else o for o in t["option"]]
    t["keeps"] = ["yes" if k else "⚠ cannot keep up" for k in t["keeps_up"]]
    t["meets"] = ["yes" if m else "no" for m in t["meets_targets"]]
    return t


def verdict_parts(v, reps_label: str) -> list[str]:
    """The verdict sentence, its confidence and what would change it; options that cannot keep up."""
    cls = "verdict none" if v.option is None else ("verdict close" if v.same_cost else "verdict")
    parts = [f'<p class="{cls}" id="verdict-sentence">{h.esc(v.sentence)}</p>']
    facts = []
    if v.same_cost:
        parts.append('<p><span class="badge">the same cost</span></p>')
    if v.versus is not None:
        fair = who_pays_more(v.option, v.versus, v.difference_usd)
        if v.replications >= 2:
            facts.append(f"Fair totals: {fair} per replication on average (the mean over {v.replications} "
                         f"replications, paired with common random numbers); 95 % interval of {v.option} minus "
                         f"{v.versus}: {money_exact(v.difference_low_usd)} to {money_exact(v.difference_high_usd)}"
                         + ("; the interval spans zero." if v.close_call else "."))
        else:
            facts.append(f"Fair totals: {fair}, from a single run: no confidence interval (run replications for one).")
        over = f" (the mean over {v.replications} replications)" if v.replications >= 2 else ""
        facts.append(f"In cash spent within the horizon (capex when paid){over}, "
                     f"{who_pays_more(v.option, v.versus, v.cash_difference_usd)}.")
        if v.utilization_flip == v.utilization_flip:
            facts.append(f"The fair totals are equal at {v.utilization_flip * 100:.0f} % utilisation of the owned "
                         "option (the work scaled, re-simulated on both sides of that point).")
        elif v.utilization_flip_reason:
            facts.append(f"No utilisation flips it: {v.utilization_flip_reason}.")
        if v.electricity_flip_usd_per_kwh == v.electricity_flip_usd_per_kwh:
            facts.append(f"The difference is zero at an electricity price of ${v.electricity_flip_usd_per_kwh:.3f} per kWh.")
    facts.append(f"Based on {reps_label}.")
    facts.append("Targets: " + (", ".join(str(t) for t in v.targets) if v.targets else "none (cost alone decides)")
                 + f"; waiting priced at ${plain(v.waiting_usd_per_gpu_hour)} per queued GPU-hour.")
    parts.append(h.bullets(facts))
    behind = v.options[~v.options["keeps_up"]]
    partly = v.options[v.options["keeps_up"] & (v.options["why"] != "")]
    if len(behind):
        parts.append(h.para("Options that cannot keep up (never recommended):", "warn"))
        parts.append(h.bullets([f"{r.option}: {r.why}" for r in behind.itertuples()]))
    if len(partly):
        parts.append(h.para("Fell behind in some replications (at most half): "
                            + "; ".join(f"{r.option}: {r.why}" for r in partly.itertuples()), "note"))
    return parts


def options_section(v, mean_note: str) -> str:
    rows = _option_rows(v.options, v.option)
    note = h.para("Amortised total: capital spread over the depreciation life, plus running costs and rent. "
                  "Cash spent: capex when paid, opex, rent and commitments owed within the horizon. ¹ Fair total: "
                  "the amortised total plus the work left unfinished at the end and the serving left unmet, "
                  "each priced at the cheapest rental price available, plus the queued GPU-hours at the "
                  f"decision's price of waiting (${plain(v.waiting_usd_per_gpu_hour)} per GPU-hour), so every option "
                  f"pays for the same work. {mean_note} Bold: the best value "
                  "among the options that keep up and meet the targets; ★ the recommendation.", "note")
    def mark(r) -> str:
        return "pick" if r["option"] == v.option else ("behind" if not r["keeps_up"] else "")

    # Few options: one column each and the metrics down the side, so sixteen long headers do not
    # push the table past the page; many options: one row each (rows grow downwards, not across).
    body = h.transposed_table(rows, OPTION_COLUMNS, best_among=rows["eligible"], column_class=mark) \
        if len(rows) <= TRANSPOSE_OPTIONS else h.table(rows, OPTION_COLUMNS, best_among=rows["eligible"], row_class=mark)
    return h.section("Options side by side", note, body, anchor="options")


def _day(x) -> str:
    """A day from the start, one decimal; "never" for inf, "–" for NaN (not started by the horizon)."""
    return "never" if x == float("inf") else h.fixed(1)(x)


def _between(low: str, high: str, fmt):
    """A formatter of a row's interval ``low``..``high`` (a row, not a cell: see ``_target_rows``)."""
    return lambda r: MISSING if r[low] != r[low] else f"{fmt(r[low])} – {fmt(r[high])}"


TARGET_COLUMNS: list[h.Column] = [
    ("option", "option", str, None), ("job class", "job_class", str, None), ("target score", "target", h.fixed(3), None),
    ("reached (replications)", "reached_of", str, None),
    ("day reached (mean)", "day_mean", h.fixed(1), "low"), ("95 % interval of the day", "day_interval", str, None),
    ("cost until then (USD, mean)", "cost_mean_usd", money_exact, "low"),
    ("95 % interval of the cost", "cost_interval", str, None),
    ("projected day (not reached)", "projected_day_mean", _day, None),
    ("score at the horizon", "reward_at_horizon", h.fixed(3), None),
    ("gain per 1,000 GPU-hours at the horizon", "marginal_gain_per_1000_gpu_h", significant, None),
    ("distance to the asymptote", "distance_to_asymptote", h.fixed(3), None),
]


def _target_rows(runs: list[Results]) -> pd.DataFrame:
    """``time_to_target.summarize`` with the intervals as text and, per (option, class), the means
    over the replications of the score, marginal gain and distance to the asymptote at the horizon."""
    from costsim.decisions.time_to_target import summarize

    t = summarize(runs)
    at_horizon = (pd.concat([r.to_target for r in runs], ignore_index=True)
                  .groupby(["option", "job_class"], sort=False, as_index=False)
                  [["reward_at_horizon", "marginal_gain_per_1000_gpu_h", "distance_to_asymptote"]].mean())
    t = t.merge(at_horizon, on=["option", "job_class"], how="left")
    t["reached_of"] = [f"{r.reached} of {r.replications}" for r in t.itertuples()]
    t["day_interval"] = t.apply(_between("day_low", "day_high", h.fixed(1)), axis=1) if len(t) else []
    t["cost_interval"] = t.apply(_between("cost_low_usd", "cost_high_usd", money_exact), axis=1) if len(t) else []
    return t


def time_to_target_section(runs: list[Results], v) -> tuple[str, int]:
    """Reward against calendar day per option with the target and the cost at target, the table of
    days and costs with their intervals over the replications, and the verdict's time-to-target
    sentence; ("", 0) when no class has ``scaling``."""
    from costsim.decisions.time_to_target import has_scaling

    if not has_scaling(runs[0].scenario) or runs[0].to_target.empty:
        return "", 0
    reps = len(runs)
    fig = h.figure(plots.time_to_target(runs if reps > 1 else runs[0]))
    refs = ", ".join(f"{c}: {o}" for c, o in dict(zip(runs[0].to_target["job_class"],
                                                      runs[0].to_target["reference_option"], strict=True)).items())
    note = h.para("The score of each class's leading run (its compute-performance curve) as the work it gets through "
                  f"accumulates, in GPU-hours of its reference option ({refs}): work lost to failures or "
                  "preemptions, restarts, provisioning and queueing do not count, and slower GPUs get there later. "
                  "Cost until then: the option's cumulative amortised cost on the day the target is "
                  "reached. " + (f"Day and cost: mean and 95 % t-interval over the replications that reach the target "
                                 f"(of {reps}; no interval with fewer than 2). " if reps > 1 else
                                 "One run: no intervals (replications give them). ")
                  + "Not reached within the horizon: the day projected at the last 30 days' pace.", "note")
    parts = [h.para(v.time_to_target)] if getattr(v, "time_to_target", "") else []
    body = h.table(_target_rows(runs), TARGET_COLUMNS)
    return h.section("Time to target", *parts, note, fig, body, anchor="time-to-target"), 1


BREAKEVEN_COLUMNS: list[h.Column] = [
    ("owned or committed", "option", str, None), ("versus renting", "versus", str, None),
    ("cash break-even", "cash break-even", str, None),
    ("break-even utilisation", "breakeven_utilization", h.share, None),
    ("owned USD per GPU-hour", "own_usd_per_gpu_hour", h.fixed(2), None),
    ("rented USD per GPU-hour", "rent_usd_per_gpu_hour", h.fixed(2), None),
]


def breakeven_section(runs: list[Results]) -> tuple[str, int]:
    """The break-even of every pair over the replications (``headline.breakeven_view``: the words
    and month the dashboard gives) and the cumulative cash of the first replication."""
    from costsim.present.headline import breakeven_view

    first, reps = runs[0], len(runs)
    if first.breakeven.empty:
        return h.section("Break-even", h.para("No owned or committed option to set against a rented one."),
                         anchor="breakeven"), 0
    over = f" The months are the mean over the {reps} replications; the figure is replication 1 (seed {first.seed})." \
        if reps > 1 else ""
    note = h.para("The first month from which the owned or committed option's cumulative cash stays at or below the "
                  "rental's (months counted from 1); the break-even utilisation is where both cost the same per "
                  "GPU-hour." + over, "note")
    fig = h.figure(plots.cumulative_cash(first))
    table = h.table(breakeven_view([r.breakeven for r in runs]), BREAKEVEN_COLUMNS, wrap=("cash break-even",))
    return h.section("Break-even", note, table, fig, anchor="breakeven"), 1


def pareto_section(table, given: pd.DataFrame | None, label: str) -> tuple[str, int]:
    """The frontier of fair total vs p95 queue delay (and vs iterations per day) over ``table`` (a
    Verdict's options) or a sweep's variants × options; skipped when the Pareto module is not there."""
    try:
        from costsim.decisions.pareto import frontier, sweep_table
        from costsim.plots.figures import pareto_figure
    except ImportError:
        return h.section("Pareto frontier", h.para("Not available in this version of costsim.", "note"),
                         anchor="pareto"), 0
    if not isinstance(table, pd.DataFrame):
        table = sweep_table(table)
    delay = given if given is not None else frontier(table)
    speed = frontier(table, objectives=(("iterations_per_day", "max"),))
    cols: list[h.Column] = [("variant", "variant", str, None), ("option", "option", str, None),
                            ("on the frontier", "on_frontier", lambda x: "yes" if x else "", None),
                            ("fair total (USD)", "fair_total_usd", money_exact, None),
                            ("amortised total (USD)", "total_cost_usd", money_exact, None),
                            ("cash spent (USD)", "cash_spent_usd", money_exact, None),
                            ("p95 queue delay (h)", "queue_delay_p95_h", h.fixed(2), None),
                            ("RL iterations per day", "iterations_per_day", h.fixed(0), None)]
    shown = delay.head(FRONTIER_ROWS)
    more = h.para(f"… {len(delay) - FRONTIER_ROWS} more rows (the figure shows them all)", "note") \
        if len(delay) > FRONTIER_ROWS else ""
    figs = [h.figure(pareto_figure(delay, y="queue_delay_p95_h")), h.figure(pareto_figure(speed, y="iterations_per_day"))]
    note = h.para(f"{label}: no other is at least as cheap (fair total) and at least as good on delay, and strictly "
                  "better in one.", "note")
    return h.section("Pareto frontier: fair total vs p95 queue delay and vs iterations per day",
                     note, *figs, h.table(shown, cols), more, anchor="pareto"), len(figs)


def _flag(x) -> str:
    return "⚑ flips" if x is True or x == 1 else ""


TORNADO_COLUMNS: list[h.Column] = [
    ("input", "input", str, None), ("scenario path", "path", str, None), ("unit", "unit", str, None),
    ("low", "low", plain, None), ("high", "high", plain, None),
    ("difference at low (USD)", "low_difference_usd", money_exact, None),
    ("difference at high (USD)", "high_difference_usd", money_exact, None),
    ("swing (USD)", "swing_usd", money_exact, None), ("verdict", "flips", _flag, None),
    ("break-even at low", "low_breakeven", str, None), ("break-even at high", "high_breakeven", str, None),
    ("note", "note", str, None),
]


def tornado_section(tornado) -> tuple[str, int]:
    """The tornado's figure and table; a string in its place says why there is none."""
    if tornado is None:
        return "", 0
    if isinstance(tornado, str):
        return h.section("Sensitivity (tornado)", h.para(tornado, "note"), anchor="tornado"), 0
    runs = getattr(tornado, "replications", 1)
    seeds = (f"the verdict's {runs} replications, the same seeds, averaged" if runs > 1
             else "one run, the verdict's")
    note = h.para(f"Each uncertain input at the low and the high end of its catalog range, all else at the base "
                  f"({seeds}; common random numbers): the fair-total difference {tornado.build} − {tornado.rent} "
                  f"(base: {who_pays_more(tornado.build, tornado.rent, tornado.base_difference_usd)}; negative: "
                  f"building is cheaper) and the break-even month (counted from 1). ⚑: the verdict flips within "
                  f"the range.", "note")
    try:
        from costsim.plots.figures import tornado_figure
    except ImportError:
        fig, n = "", 0
    else:
        fig, n = h.figure(tornado_figure(tornado.table), height=max(420, 80 + 36 * len(tornado.table))), 1
    from costsim.present.headline import tornado_breakeven
    from costsim.present.tornado import sentence

    shown = tornado.table.assign(**{f"{end}_breakeven": [tornado_breakeven(tornado.breakeven, label, end) for label
                                                         in tornado.table["input"]] for end in ("low", "high")})
    parts = [h.para(sentence(tornado)), note, fig,
             h.table(shown, TORNADO_COLUMNS, wrap=("path", "note", "low_breakeven", "high_breakeven"))]
    return h.section("Sensitivity (tornado)", *parts, anchor="tornado"), n


GANTT_JOBS = 400  # jobs drawn per option in the report's timeline (earliest first; the figure says how many are left out)
GANTT_DAYS = 14  # the report's timeline shows two weeks from the middle of the horizon (past any warm-up)


def gantt_window(horizon_h: float) -> tuple[float, float]:
    """The report timeline's window, hours: ``GANTT_DAYS`` from the middle of the horizon (whole
    days), or the whole horizon when it is shorter."""
    span = GANTT_DAYS * 24.0
    if horizon_h <= span:
        return 0.0, horizon_h
    lo = float(int(horizon_h / 2 / 24) * 24)
    return lo, min(lo + span, horizon_h)


def run_figure_sections(first: Results, reps: int) -> list[Callable[[], str]]:
    """Cost breakdown, delays, iteration speed, reliability and the jobs over time (a Gantt view per
    option) from the first replication: one builder per section, in page order, so that the page
    can say how far it is while the figures are drawn (each builder draws its own, once)."""
    which = "" if reps == 1 else f" (replication 1 of {reps}, seed {first.seed})"
    out = [lambda: h.section("Cost breakdown" + which, h.figure(plots.cost_breakdown(first)), anchor="costs"),
           lambda: h.section("Queue delays" + which, h.figure(plots.delay_distribution(first)), anchor="delays")]
    if len(first.phases) and (first.phases["iterations_planned"] > 0).any():
        out.append(lambda: h.section("Iteration speed" + which, h.figure(plots.iterations_per_day(first)),
                                     h.figure(plots.phase_breakdown(first), height=520), anchor="iterations"))
    out.append(lambda: h.section("Reliability" + which, h.figure(plots.lost_work(first)), anchor="reliability"))
    out.append(lambda: _timeline_section(first, which))
    return out


def _timeline_section(first: Results, which: str) -> str:
    lo, hi = gantt_window(first.scenario.horizon_h)
    timeline = plots.gantt(first, start_h=lo, end_h=hi, max_jobs=GANTT_JOBS)
    return h.section(f"Jobs over time, days {plain(lo / 24)}–{plain(hi / 24)}" + which,
                     h.figure(timeline, height=max(460, 220 * len(first.summary))), anchor="timeline")


def footer(scenario, extra: str = "") -> str:
    import costsim
    from costsim.catalog.load import default_catalog

    yaml = f"<pre>{h.esc(costsim.dump_scenario(scenario))}</pre>" if scenario is not None else \
        h.para("The scenario is not available.", "note")
    versions = h.para(f"costsim {costsim.__version__}; catalog {default_catalog().version}.")
    return h.section("Scenario", extra, yaml, anchor="scenario") + f"<footer>{versions}</footer>"


