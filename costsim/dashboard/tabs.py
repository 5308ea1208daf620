"""The dashboard's tabs (Streamlit). A radio is the tab bar and only the chosen tab is drawn:
``st.tabs`` would build every tab's figures on every rerun (most of a rerun's time on the
baseline). Figures are from the first replication unless a figure takes them all.
"""

from __future__ import annotations

from collections import OrderedDict

import streamlit as st

import costsim
from costsim.catalog.load import default_catalog
from costsim.dashboard.bounded import run_key
from costsim.dashboard.views import show_table
from costsim.plan.facts import hybrid
from costsim.plots import figures as plots
from costsim.plots.figures import book_value_note
from costsim.present import formats
from costsim.present.headline import breakeven_view, literal_markdown, npv_sentence
from costsim.traces.csvcells import csv_text

TABS = ["Overview", "Cost", "Capacity", "Iteration speed", "Time to target", "Failures", "Sensitivity", "Sweep",
        "Plan", "Edit scenario", "Data"]


FIGURES_KEPT = 256  # about 40 scenario/seed pairs of every figure; a baseline figure is ~0.1–1 MB


@st.cache_resource
def _figures() -> OrderedDict:
    """Built figures shared by every session, least recently used dropped first."""
    return OrderedDict()


def figure_key(runs: list, name: str, *args) -> tuple:
    """What a figure depends on: the exact scenario and seed of each run it draws (``run_key``),
    the figure's name and its arguments."""
    return (tuple(run_key(r.scenario, r.seed) for r in runs), name, args)


def cached_figure(runs: list, make, *args):
    """``make(runs_or_first_run, *args)``, built once per (scenario content, seeds, figure):
    a rerun after switching tabs, or back to settings seen before, draws without rebuilding."""
    cache = _figures()
    key = figure_key(runs, make.__name__, *args)
    if key in cache:
        cache.move_to_end(key)
        return cache[key]
    fig = make(runs if len(runs) > 1 else runs[0], *args)
    cache[key] = fig
    while len(cache) > FIGURES_KEPT:
        cache.popitem(last=False)
    return fig


def chart(fig, key: str) -> None:
    st.plotly_chart(fig, width="stretch", theme=None, key=key)


def plot(runs: list, make, key: str, *args) -> None:
    """Draw ``make``'s figure of ``runs`` (a list: a figure over replications; else the first run)."""
    chart(cached_figure(runs, make, *args), key)


def tab_bar() -> str:
    """The chosen tab's name (a labelled radio, kept across reruns by its key)."""
    return st.radio("View", TABS, horizontal=True, key="tab") or TABS[0]


def render(tab: str, scenario: costsim.Scenario, runs: list, limits, replications: int) -> None:
    res = runs[0]
    {"Overview": overview, "Cost": cost, "Capacity": capacity, "Iteration speed": speed, "Time to target": to_target,
     "Failures": failures, "Data": data}.get(tab, lambda *_: None)(res, runs, scenario)
    # The decision tabs and the plan tab import their own machinery only when chosen.
    if tab == "Sensitivity":
        from costsim.dashboard.decision_tabs import sensitivity_tab

        sensitivity_tab(scenario, "sens", replications=replications, limits=limits)
    if tab == "Sweep":
        from costsim.dashboard.decision_tabs import sweep_tab

        sweep_tab(scenario, "sweep", limits=limits)
    if tab == "Plan":
        from costsim.dashboard.plan_tab import plan_tab

        plan_tab(scenario, runs, "plan", limits=limits)


FIRST_REPLICATION = "First replication; the cards above are means over all replications."


def first_replication_note(runs: list) -> None:
    """Under a table of ``runs[0]``: with several replications its numbers differ from the cards'."""
    if len(runs) > 1:
        st.caption(FIRST_REPLICATION)


def overview(res, runs, scenario) -> None:
    if len(runs) > 1:
        plot(runs, plots.cumulative_cost_band, "fig_cum_band")
    else:
        plot([res], plots.cumulative_cost, "fig_cum_overview")
    first_replication_note(runs)
    show_table(res.summary, "summary_table")


def cost(res, runs, scenario) -> None:
    one = [res]
    reps = len(runs)
    first = " (replication 1)" if reps > 1 else ""
    plot(one, plots.cumulative_cash, "fig_cash_cum")
    if len(res.breakeven):
        st.caption(f"Cumulative cash above{first}. Break-even: the first month from which owning or committing stays "
                   "at or below the rental in cumulative cash out (months counted from 1; \"from the start\": "
                   "cheaper from the first month; not within the horizon: the extrapolated month, or cheaper first "
                   "and dearer later), and the utilisation above which owning or committing beats the rental price "
                   "per used GPU-hour. "
                   + (f"The mean over the {reps} replications, as the sentence at the top." if reps > 1 else ""))
        show_table(breakeven_view([r.breakeven for r in runs]), "breakeven_table")
    if reps > 1:  # the mean over replications with its 95 % band
        plot(runs, plots.cumulative_cost_band, "fig_cum")
    else:
        plot(one, plots.cumulative_cost, "fig_cum")
    plot(one, plots.cost_breakdown, "fig_breakdown")
    plot(one, plots.cash_flow, "fig_cashflow")
    st.caption(literal_markdown(book_value_note(res.summary)))
    st.caption(literal_markdown((f"Cost breakdown and cash flow above: replication 1 of {reps}. " if reps > 1 else "")
                                + npv_sentence([r.summary for r in runs])))
    if hybrid(res.summary["kind"]).any():
        plot(one, plots.hybrid_parts, "fig_hybrid")


# The job timeline draws two bars per job, each a shape the browser draws and hovers: a window of
# a month (a few hundred jobs on the shipped scenarios) draws in well under a second, where a whole
# year's 2,000 first jobs took seconds and squeezed them into a sliver of the axis.
TIMELINE_DAYS = 30  # the window first shown, days from the start
TIMELINE_JOBS = 600  # at most this many jobs in it (the figure says how many were left out)


def timeline_window(horizon_days: float) -> tuple[float, float]:
    """The job timeline's window, in hours from the start, as its slider sets it in days: at first
    the first ``TIMELINE_DAYS`` days (the whole horizon when shorter); a window of no days is
    widened to one (``window_hours``)."""
    end = float(horizon_days)
    first, last = st.slider("Job timeline window (days)", 0.0, end, (0.0, min(end, float(TIMELINE_DAYS))), step=1.0,
                            key="gantt_window", help=f"Days of the horizon the timeline shows; at most "
                            f"{TIMELINE_JOBS:,} jobs, the earliest submitted first (the title says how many were left out).")
    return window_hours(first, last, end)


def window_hours(first_day: float, last_day: float, horizon_days: float) -> tuple[float, float]:
    """(start, end) in hours of the days [first_day, last_day] of a horizon of ``horizon_days``;
    when they are one day, the day after it (or the horizon's last day, or the whole of a horizon
    shorter than a day)."""
    if last_day <= first_day:
        last_day = min(first_day + 1.0, horizon_days)
        first_day = max(0.0, min(first_day, last_day - 1.0))
    return first_day * 24, last_day * 24


def capacity(res, runs, scenario) -> None:
    one = [res]
    plot(one, plots.delay_distribution, "fig_delay")
    plot(one, plots.utilization_over_time, "fig_util")
    plot(one, plots.queue_over_time, "fig_queue")
    options = list(res.summary["option"])
    option = st.selectbox("Job timeline of option", options, key="gantt_option",
                          help="Each job waiting (thin grey bar) and holding GPUs (its class's colour and "
                          "pattern; black outline: unfinished at the horizon); first replication.")
    start_h, end_h = timeline_window(scenario.horizon_days)
    plot(one, plots.gantt, "fig_gantt", option if option in options else options[0], start_h, end_h, TIMELINE_JOBS)


def speed(res, runs, scenario) -> None:
    from costsim.dashboard.phases import phases_table

    if len(res.phases):
        one = [res]
        plot(one, plots.iterations_per_day, "fig_iters")
        plot(one, plots.phase_breakdown, "fig_phases")
        plot(one, plots.rollout_throughput, "fig_rollout")
        first_replication_note(runs)
        phases_table(res)
    else:
        st.info("This scenario has no RL job classes (only a trace), so there are no iterations to time.")


NO_SCALING = ("No job class has a compute-performance curve, so there is no target to reach. Give an RL class "
              "one in **Edit scenario** (its YAML) or the scenario file, e.g.\n\n"
              "```yaml\nscaling:\n  curve: {a: 0.72, b: 1.4, c_mid_gpu_hours: 24000, r0: 0.31}\n  target: 0.65\n```\n\n"
              "or `fit: points.csv` (columns `gpu_hours,score`) instead of `curve`; a `count: 1` class is one "
              "flagship run.")


def _small(x: float) -> str:
    """A score or a marginal gain, 3 significant figures (the tables' two decimals would show 0.00)."""
    return formats.significant(x, 3)


def _never(x: float) -> str:
    """A day from the start, one decimal; "never" for inf, "–" for NaN."""
    return "never" if x == float("inf") else formats.number(x, 1)


def to_target(res, runs, scenario) -> None:
    from costsim.decisions.time_to_target import has_scaling, summarize

    if not has_scaling(scenario) or res.to_target.empty:
        st.info(NO_SCALING)
        return
    classes = list(dict.fromkeys(res.to_target["job_class"]))
    job_class = classes[0] if len(classes) == 1 else st.selectbox("Job class", classes, key="target_class")
    plot(runs, plots.time_to_target, "fig_to_target", job_class)
    ref = res.to_target.loc[res.to_target["job_class"] == job_class, "reference_option"].iloc[0]
    st.caption(f"The score of the class's leading run as the work it gets through accumulates, in GPU-hours of the "
               f"reference option ({ref}; scaling.reference_option): work lost to failures or preemptions, "
               "restarts and queueing do not count, and slower GPUs get there later. Each option's cumulative "
               "cost on the day it reaches the target. Not reached within the horizon: the day projected at its "
               "last 30 days' pace (never: too slow or too short; –: not started by the horizon).")
    if len(runs) > 1:
        summary = summarize(runs)
        view = summary.assign(projected_day_mean=summary["projected_day_mean"].map(_never))
        st.markdown(f"**Over {len(runs)} replications**: day reached and cost by then, mean and 95 % interval "
                    "over the replications that reach the target (no interval with fewer than 2).")
        show_table(view, "to_target_intervals")
    t = res.to_target
    view = t.assign(projected_day=t["projected_day"].map(_never), target=t["target"].map(_small),
                    reward_at_horizon=t["reward_at_horizon"].map(_small),
                    distance_to_asymptote=t["distance_to_asymptote"].map(_small),
                    marginal_gain_per_1000_gpu_h=t["marginal_gain_per_1000_gpu_h"].map(_small))
    view = view.rename(columns={"marginal_gain_per_1000_gpu_h": "gain_per_1000_gpu_hours_at_horizon"})
    first_replication_note(runs)
    show_table(view, "to_target_table")


def failures(res, runs, scenario) -> None:
    plot([res], plots.lost_work, "fig_lost")
    cols = ["option", "restarts", "preemptions", "lost_gpu_hours", "goodput", "lost_work_cost_usd",
            "interruption_delay_mean_h"]
    first_replication_note(runs)
    show_table(res.summary[cols], "reliability_table")
    if len(res.advice):
        st.markdown("**Checkpoint advice** (Young/Daly: interval √(2 · write ÷ interruption rate); "
                    "`excess` is how much longer the current interval makes a job than the optimal one)")
        show_table(res.advice, "advice_table")
    else:
        st.info("No option in this scenario interrupts RL jobs (no failures or preemption).")


def data(res, runs, scenario) -> None:
    st.download_button("Edited scenario (YAML)", costsim.dump_scenario(scenario), f"{scenario.name}.yaml",
                       "application/yaml", key="dl_scenario", on_click="ignore")
    # csv_text: text cells a spreadsheet would run as formulas are guarded (costsim.traces.csvcells)
    st.download_button("Summary (CSV)", csv_text(res.summary), "summary.csv", "text/csv",
                       key="dl_summary", on_click="ignore")
    st.download_button("Cash flow (CSV)", csv_text(res.cashflow), "cashflow.csv", "text/csv",
                       key="dl_cashflow", on_click="ignore")
    st.download_button("Phases (CSV)", csv_text(res.phases), "phases.csv", "text/csv",
                       key="dl_phases", on_click="ignore")
    st.download_button("Jobs (CSV)", lambda: csv_text(res.jobs), "jobs.csv", "text/csv",
                       key="dl_jobs", on_click="ignore")
    st.caption(f"Tables of the first replication. Catalog {default_catalog().version}; `costsim catalog` lists every "
               "default with its source.")
    assumptions_table(res.scenario)


def assumptions_table(scenario) -> None:
    """Every value the run's numbers rest on, with its source and date (costsim.results.assumptions)."""
    from costsim.present.assumptions import shown
    from costsim.results.assumptions import assumptions

    table = assumptions(scenario, default_catalog())
    st.subheader("Assumptions")
    st.caption("What the numbers rest on: set by the scenario, from the catalog (with its source and date) or a "
               "costsim default. Each value is in the unit beside it.")
    st.dataframe(shown(table).rename(columns={"value": "value (in unit)"}), hide_index=True, key="assumptions_table")
    st.download_button("Assumptions (CSV)", csv_text(table), "assumptions.csv", "text/csv",
                       key="dl_assumptions", on_click="ignore")
