"""costsim dashboard: build or rent GPUs for RL training? (`make app`)

Thin by design: scenarios are loaded (uploads read no server file but shipped traces), edited
and simulated (in a child process with a time and memory limit, cached on every exact value) by
``costsim.frontends.dashboard``, and drawn by ``costsim.plots``. Text a user wrote is shown literally: in
``st.code`` or escaped Markdown.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from pathlib import Path

import streamlit as st

import costsim
from costsim import plots
from costsim.catalog import default_catalog, resolve
from costsim.frontends.dashboard import (
    SETUPS, ClassKnobs, Knobs, Limits, ResultCache, RunStopped, Upload, apply_knobs, current_knobs,
    literal_markdown, load_upload, make_upload_root, run_key, shipped_scenarios, shipped_traces, simulate_bounded,
)
from costsim.frontends.headline import AMORTISED, CANNOT_KEEP_UP, CASH, FAIR, headline_markdown, with_verdict
from costsim.scenario import ScenarioError

st.set_page_config(page_title="costsim: build or rent GPUs", layout="wide")


@st.cache_resource
def upload_root() -> Path:
    """One private folder per server for uploaded traces."""
    return make_upload_root()


@st.cache_resource
def result_cache() -> ResultCache:
    """Runs shared by every session, by exact scenario (``run_key``)."""
    return ResultCache(max_entries=32)


def show_error(title: str, err: Exception) -> None:
    """A red box with our own words, then the problems verbatim: user text (keys, names, values)
    in ``st.code`` can never render as Markdown or HTML."""
    st.error(f"**{title}**")
    st.code(str(err), language=None, wrap_lines=True)


def run(scenario: costsim.Scenario, limits: Limits) -> costsim.Results | None:
    """The scenario's results from the cache or a bounded run; None (with a message) if it did not finish.

    While it runs, a caption is redrawn every quarter second: that is where Streamlit stops the
    script when a setting changes or Stop is pressed, and leaving ``simulate_bounded`` kills the run."""
    key = run_key(scenario)
    cached = result_cache().get(key)
    if cached is not None:
        return cached
    status = st.empty()

    def progress(seconds: float) -> None:
        status.caption(f"Simulating every option on the same jobs... {seconds:.0f} s (limit "
                       f"{limits.run_seconds:g} s; change a setting or press Stop to cancel)")

    try:
        blob = simulate_bounded(scenario, limits, on_wait=progress)
    except ScenarioError as err:
        status.empty()
        show_error("This scenario cannot be run.", err)
        return None
    except RunStopped as err:
        status.empty()
        st.error(str(err))  # our own words only
        return None
    status.empty()
    result_cache().put(key, blob)
    return pickle.loads(blob)


def load_base(limits: Limits) -> costsim.Scenario | None:
    shipped = shipped_scenarios()
    st.sidebar.header("Scenario")
    choice = st.sidebar.selectbox("Shipped scenario", list(shipped), key="scenario_choice")
    upload = st.sidebar.file_uploader(
        "...or upload a scenario (YAML)", type=["yaml", "yml"], key="upload",
        max_upload_size=max(1, int(limits.upload_mb)),
        help=f"At most {limits.upload_mb:g} MiB. It may read a trace you upload below or a shipped trace "
             f"({', '.join(shipped_traces())}), nothing else on the server.",
    )
    trace = st.sidebar.file_uploader(
        "...and the trace it names (CSV), if any", type=["csv"], key="trace_upload",
        max_upload_size=max(1, int(limits.trace_upload_mb)),
        help="Set `workload.trace` in the uploaded scenario to this file's name.",
    )
    try:
        if upload is not None:
            return load_upload(Upload(upload.name, upload.getvalue()),
                               Upload(trace.name, trace.getvalue()) if trace is not None else None,
                               upload_root(), limits)
        return costsim.load_scenario(shipped[choice])
    except ScenarioError as err:
        show_error("This scenario cannot be used.", err)
        return None


def fresh_widgets(key: str, scenario: costsim.Scenario) -> None:
    """Widgets are keyed by the scenario's name; when a different scenario of that name is loaded
    (an edited upload), forget the old widget values so the knobs show the file's numbers."""
    digest = hashlib.sha256(scenario.model_dump_json().encode()).hexdigest()
    if st.session_state.get(f"{key}:loaded") != digest:
        for k in [k for k in st.session_state if isinstance(k, str) and k.startswith(f"{key}:")]:
            del st.session_state[k]
        st.session_state[f"{key}:loaded"] = digest


def span(lo: float, hi: float, value: float) -> tuple[float, float]:
    """A widget's range, widened to hold a value the scenario already has (valid in the schema,
    beyond the usual knob range): a widget given a value outside its range raises."""
    return min(lo, value), max(hi, value)


def knob_widgets(scenario: costsim.Scenario) -> Knobs:
    knobs = current_knobs(scenario)
    plans = {p.name: p for p in resolve(scenario)}
    key = scenario.name
    fresh_widgets(key, scenario)
    with st.sidebar.form("knobs"):
        st.subheader("Knobs")
        owned = {}
        for name, gpus in knobs.owned_gpus.items():
            step = plans[name].gpus_per_node
            owned[name] = st.number_input(f"{name}: owned GPUs", min_value=step, value=gpus, step=step,
                                          key=f"{key}:gpus:{name}", help="Whole nodes; lead time and costs follow.")
        prices = {}
        for name in knobs.cloud_price:
            prices[name] = st.number_input(
                f"{name}: $/GPU-hour", min_value=0.0, value=float(plans[name].price_per_gpu_hour), step=0.1,
                format="%.2f", key=f"{key}:price:{name}", help="Default: the catalog price for this GPU and tier.",
            )
        scale = st.slider("Arrival scale (× the job arrival rate)", *span(0.25, 3.0, float(knobs.arrival_scale)),
                          float(knobs.arrival_scale), 0.05,
                          key=f"{key}:scale", help="Multiplies every class's arrivals per day; a trace is thinned "
                          "below 1 and gets jittered copies above 1.")
        classes = {}
        for name, ck in knobs.classes.items():
            with st.expander(f"RL class {name}"):
                classes[name] = ClassKnobs(
                    st.number_input("Model size (B parameters)", *span(0.1, 2000.0, float(ck.model_params_b)),
                                    float(ck.model_params_b), 1.0,
                                    key=f"{key}:{name}:params"),
                    st.number_input("Mean response length (tokens)", *span(1.0, 200_000.0, float(ck.response_mean)),
                                    float(ck.response_mean), 100.0,
                                    key=f"{key}:{name}:len"),
                    st.slider("Response length tail (cv)", *span(0.0, 3.0, float(ck.response_cv)), float(ck.response_cv),
                              0.1, key=f"{key}:{name}:cv",
                              help="0: every response equally long. Larger: longer stragglers, which hold a "
                              "synchronous iteration."),
                    st.selectbox("Placement and mode", SETUPS, SETUPS.index(ck.setup), key=f"{key}:{name}:setup",
                                 help="Colocated: every phase on all GPUs. Disaggregated: separate sampling and "
                                 "training GPUs. Async: sampling runs ahead of training."),
                )
        st.form_submit_button("Run", type="primary")
    return Knobs(owned, prices, scale, classes)


def kpi_cards(res: costsim.Results, verdict) -> None:
    """The verdict first (never an option that cannot keep up), then one card per option."""
    summary = with_verdict(res.summary, verdict)
    delays = summary["queue_delay_mean_h"]  # NaN everywhere when every job was submitted in the warm-up
    fastest = literal_markdown(summary.loc[delays.idxmin(), "option"]) if delays.notna().any() else "-"
    st.markdown(headline_markdown(verdict, literal_markdown))
    st.caption(f"Shortest mean queue delay: {fastest}. Totals: {literal_markdown(AMORTISED)}; "
               f"{literal_markdown(CASH)}; {literal_markdown(FAIR)}.")
    for col, (_, row) in zip(st.columns(len(summary)), summary.iterrows(), strict=True):
        with col:
            st.markdown(f"#### {literal_markdown(row.option)}  \n<small>{row.kind}, {row.pricing.replace('_', '-')}</small>",
                        unsafe_allow_html=True)
            if not row.keeps_up:
                st.markdown(f"**{CANNOT_KEEP_UP}**", help=literal_markdown(row.why))
            st.metric("Total cost (amortised)", f"${row.total_cost_usd:,.0f}",
                      help="Capital spread over the depreciation life, plus running costs and rent. With the "
                      f"unfinished work at the cheapest rental price: ${row.fair_total_usd:,.0f}.")
            st.metric("Cash spent", f"${row.cash_spent_usd:,.0f}",
                      help="Capex when paid, running costs, rent and commitments owed within the horizon; "
                      f"the hardware still owned is worth ${row.book_value_usd:,.0f} at its end.")
            st.metric("Mean queue delay", f"{row.queue_delay_mean_h:,.2f} h", help=f"p95 {row.queue_delay_p95_h:,.1f} h")
            st.metric("Utilisation", f"{row.utilization:.1%}")
            st.metric("$ per GPU-hour used", f"${row.cost_per_gpu_hour_used_usd:,.2f}")
            st.metric("Jobs completed", f"{row.jobs_completed:,} / {row.jobs_submitted:,}")
            st.metric("Goodput", "-" if row.goodput != row.goodput else f"{row.goodput:.1%}",
                      help=f"Useful share of GPU-hours held; {row.restarts:,} restarts ({row.preemptions:,} preemptions), "
                      f"lost work ${row.lost_work_cost_usd:,.0f}.")
            if row.kind == "hybrid":
                share = row.gpu_hours_burst / row.gpu_hours_used if row.gpu_hours_used else 0
                st.metric("Jobs on burst", f"{row.jobs_burst:,}", help=f"{share:.0%} of GPU-hours used")
            if row.iterations_per_day > 0:
                st.metric("RL iterations per day", f"{row.iterations_per_day:,.0f}")
                st.metric("$ per RL iteration", f"${row.cost_per_iteration_usd:,.2f}")


# The phases table on screen: (column, header, number format, help). Shares are shown in per cent
# (the data keep full precision for sorting and copying; only the display is rounded).
PHASE_VIEW = [
    ("option", "option", None, None),
    ("job_class", "job class", None, None),
    ("rollout_s", "rollout (s)", "%.1f", "Generating the responses (mean seconds per iteration)."),
    ("logprobs_s", "log-probs (s)", "%.1f", "Recomputing the old policy's log-probabilities."),
    ("scoring_s", "scoring (s)", "%.1f", "Reference model, reward model or verifier."),
    ("update_s", "update (s)", "%.1f", "Policy update: training compute, pipeline bubble, gradient all-reduce."),
    ("sync_s", "sync / reshard (s)", "%.2f", "Weights to the rollout engines: across the fabric "
     "(disaggregated) or resharded within the node (colocated)."),
    ("overhead_s", "async overhead (s)", "%.1f", "Async only: re-prefilling in-flight responses under new weights."),
    ("iteration_s", "iteration (s)", "%.1f", "The whole iteration; async overlaps rollout with training, "
     "so it is less than the sum of the phases there."),
    ("rollout_share", "rollout share", "%.0f%%", "Rollout ÷ iteration."),
    ("straggler_share", "straggler share", "%.0f%%", "Share of rollout time spent on the longest response "
     "alone, which more rollout GPUs cannot shorten."),
    ("rollout_tokens_per_s_per_gpu", "rollout tok/s per GPU", "%,.0f",
     "Response tokens ÷ (rollout seconds × rollout GPUs)."),
    ("capped_share", "capped", "%.1f%%", "Share of responses cut at the length cap."),
    ("iterations_per_day", "iterations per day", "%,.0f", "Completed within the horizon."),
    ("cost_per_iteration_usd", "$ per iteration", "dollar", None),
    ("gpu_type", "GPU", None, None),
    ("network", "network", None, None),
    ("jobs", "jobs", "%,d", None),
    ("iterations_planned", "iterations planned", "%,d", None),
    ("iterations_done", "iterations done", "%,d", None),
]


def phases_table(res: costsim.Results) -> None:
    """The phases table with readable headers and rounded numbers, and what async means for it."""
    if res.phases["job_class"].isin([c.name for c in res.scenario.workload.classes if c.mode == "async"]).any():
        st.caption("Async classes overlap rollout with training: their phases add up to more than the iteration.")
    names = ("option", "job_class")  # pinned while the numbers scroll sideways
    config = {col: st.column_config.NumberColumn(label, format=fmt, help=hint) if fmt else
              st.column_config.TextColumn(label, help=hint, pinned=col in names,
                                          width="medium" if col in names else None)
              for col, label, fmt, hint in PHASE_VIEW}
    shares = ["rollout_share", "straggler_share", "capped_share"]
    view = res.phases.assign(**{c: res.phases[c] * 100 for c in shares})
    st.dataframe(view, hide_index=True, key="phases_table", column_config=config,
                 column_order=[col for col, *_ in PHASE_VIEW])


def main() -> None:
    st.title("costsim: build or rent GPUs?")
    st.caption("The same jobs on every option: owned clusters queue, clouds bill. Cost, delay and "
               "utilisation come out of the simulation, not out of assumptions.")
    try:
        limits = Limits.from_env(os.environ)
    except ScenarioError as err:
        show_error("The dashboard's limits are misconfigured.", err)
        return
    base = load_base(limits)
    if base is None:
        return
    try:
        scenario = apply_knobs(base, knob_widgets(base))
    except ScenarioError as err:
        show_error("These settings cannot be used.", err)
        return
    res = run(scenario, limits)
    if res is None:
        return
    st.subheader(f"{literal_markdown(scenario.name)}: {scenario.horizon_days:g} days, "
                 f"{res.summary.jobs_submitted.iloc[0]:,} jobs")
    if scenario.description:
        st.caption(literal_markdown(scenario.description))
    kpi_cards(res, costsim.decide(res))
    overview, cost, capacity, speed, reliability, data = st.tabs(
        ["Overview", "Cost", "Capacity", "Iteration speed", "Failures", "Data"])
    with overview:
        st.plotly_chart(plots.cumulative_cost(res), width="stretch", theme=None, key="fig_cum_overview")
        st.dataframe(res.summary, hide_index=True, key="summary_table")
    with cost:
        st.plotly_chart(plots.cumulative_cash(res), width="stretch", theme=None, key="fig_cash_cum")
        if len(res.breakeven):
            st.caption("Break-even: the first month from which owning or committing stays at or below the rental "
                       "in cumulative cash out (0: cheaper from the start; blank: dearer at the horizon's end, with "
                       "the extrapolated month beside it; cheaper_until_month: cheaper first, dearer later), and the "
                       "utilisation above which owning or committing beats the rental price per used GPU-hour.")
            st.dataframe(res.breakeven, hide_index=True, key="breakeven_table")
        st.plotly_chart(plots.cumulative_cost(res), width="stretch", theme=None, key="fig_cum")
        st.plotly_chart(plots.cost_breakdown(res), width="stretch", theme=None, key="fig_breakdown")
        st.plotly_chart(plots.cash_flow(res), width="stretch", theme=None, key="fig_cashflow")
        npv = ", ".join(f"{literal_markdown(r.option)} \\${r.npv_usd:,.0f}" for r in res.summary.itertuples())
        st.caption(f"Net present value of each option's cash flow: {npv}.")
        if (res.summary["kind"] == "hybrid").any():
            st.plotly_chart(plots.hybrid_parts(res), width="stretch", theme=None, key="fig_hybrid")
    with capacity:
        st.plotly_chart(plots.delay_distribution(res), width="stretch", theme=None, key="fig_delay")
        st.plotly_chart(plots.utilization_over_time(res), width="stretch", theme=None, key="fig_util")
        st.plotly_chart(plots.queue_over_time(res), width="stretch", theme=None, key="fig_queue")
    with speed:
        if len(res.phases):
            st.plotly_chart(plots.iterations_per_day(res), width="stretch", theme=None, key="fig_iters")
            st.plotly_chart(plots.phase_breakdown(res), width="stretch", theme=None, key="fig_phases")
            st.plotly_chart(plots.rollout_throughput(res), width="stretch", theme=None, key="fig_rollout")
            phases_table(res)
        else:
            st.info("This scenario has no RL job classes (only a trace), so there are no iterations to time.")
    with reliability:
        st.plotly_chart(plots.lost_work(res), width="stretch", theme=None, key="fig_lost")
        cols = ["option", "restarts", "preemptions", "lost_gpu_hours", "goodput", "lost_work_cost_usd",
                "interruption_delay_mean_h"]
        st.dataframe(res.summary[cols], hide_index=True, key="reliability_table")
        if len(res.advice):
            st.markdown("**Checkpoint advice** (Young/Daly: interval √(2 · write ÷ interruption rate); "
                        "`excess` is how much longer the current interval makes a job than the optimal one)")
            st.dataframe(res.advice, hide_index=True, key="advice_table")
        else:
            st.info("No option in this scenario interrupts RL jobs (no failures or preemption).")
    with data:
        st.download_button("Summary (CSV)", res.summary.to_csv(index=False), "summary.csv", "text/csv",
                           key="dl_summary", on_click="ignore")
        st.download_button("Cash flow (CSV)", res.cashflow.to_csv(index=False), "cashflow.csv", "text/csv",
                           key="dl_cashflow", on_click="ignore")
        st.download_button("Phases (CSV)", res.phases.to_csv(index=False), "phases.csv", "text/csv",
                           key="dl_phases", on_click="ignore")
        st.download_button("Jobs (CSV)", lambda: res.jobs.to_csv(index=False), "jobs.csv", "text/csv",
                           key="dl_jobs", on_click="ignore")
        st.download_button("Edited scenario (YAML)", costsim.dump_scenario(scenario), f"{scenario.name}.yaml",
                           "application/yaml", key="dl_scenario", on_click="ignore")
        st.caption(f"Catalog {default_catalog().version}; `costsim catalog` lists every default with its source.")


main()
