"""The dashboard's Plan tab (Streamlit layout only): the current runs' capacity over time (capacity
against demand, purchases from order to delivery, cash paid by month), then a form that runs
``costsim plan`` over the fields the user picks, in a worker process within the dashboard's
limits (``decision_runs.run_bounded``, a Job of kind "plan"; the search: ``plan_runs.py``), and
its answer: the plan sentence, the runner-ups and the search's progress.

``tabs.render`` mounts it: ``plan_tab(scenario, runs, "plan", limits=limits)``. Results are kept
per (scenario digest, settings), so a plan is never shown for a scenario it was not run on."""

from __future__ import annotations

import os

import pandas as pd
import streamlit as st

from costsim.dashboard import Limits, RunStopped, literal_markdown, public_text
from costsim.dashboard.decision_runs import Job, run_bounded
from costsim.dashboard.decision_tabs import digest
from costsim.dashboard.plan_runs import MAX_REPLICATIONS, MAX_RUNS, MAX_TRIALS, plan_paths, vary_args
from costsim.dashboard.server import server_pool
from costsim.dashboard.tabs import first_replication_note, plot
from costsim.errors import CostsimError
from costsim.plots import capacity_plan as figures
from costsim.present.headline import FAIR
from costsim.scenario import Scenario

KEEP = 4  # plans kept per session (each a few small tables)


def _default_paths(paths: list[str]) -> list[str]:
    """The first owned option's size, if it can be varied: the question a plan answers first."""
    return [p for p in paths if p.endswith(".gpus")][:1]


def capacity_figures(runs: list, key: str) -> None:
    """Figures (a)–(c) of the first replication: capacity against demand, purchases, cash by month."""
    st.markdown("**Capacity over time** (demand: GPUs held plus GPUs asked for by queued jobs)")
    plot(runs[:1], figures.capacity_vs_demand, f"{key}:capacity")
    plot(runs[:1], figures.tranche_timeline, f"{key}:tranches")
    plot(runs[:1], figures.monthly_cash, f"{key}:cash")
    first_replication_note(runs)


def _form(scenario: Scenario, key: str) -> tuple[list[str], int, int, str]:
    paths = plan_paths(scenario)
    chosen = st.multiselect("Fields to vary", paths, default=_default_paths(paths), key=f"{key}:paths",
                            help="Dotted paths into the scenario, as costsim plan --vary names them")
    ranges = {p: st.text_input(f"Range of {p}", key=f"{key}:range:{p}", placeholder="e.g. 128..512 or 256, 384")
              for p in chosen}
    left, middle, right = st.columns(3)
    trials = left.number_input(f"Trials (1 … {MAX_TRIALS})", 1, MAX_TRIALS, 8, key=f"{key}:trials",
                               help="Configurations the sampler proposes, 4 at a time; a refinement adds its own")
    reps = middle.number_input(f"Replications (1 … {MAX_REPLICATIONS})", 1, MAX_REPLICATIONS, 1, key=f"{key}:reps",
                               help="Runs per configuration on common random numbers")
    executor = right.selectbox("Run on", ["local", "processes"], key=f"{key}:executor",
                               help="local: one process; processes: a pool of two worker processes")
    return vary_args(ranges), int(trials), int(reps), str(executor)


def _bar(key: str):
    bar = st.progress(0.0, text="Plan: starting...")

    def update(done: int, total: int, seconds: float) -> None:
        bar.progress(min(done / total, 1.0) if total else 0.0,
                     text=f"Plan: {done} of {total or '?'} runs, {seconds:.0f} s (change a setting or press Stop to cancel)")
    return update


def _run(job: Job, limits: Limits):
    """``run_bounded`` with progress; None (the error shown) when it did not finish."""
    try:
        return run_bounded(job, limits, _bar(job.kind), pool=server_pool())
    except CostsimError as err:
        st.error("**This plan cannot be run.**")
        st.code(public_text(str(err)), language=None, wrap_lines=True)
    except RunStopped as err:
        st.error(public_text(str(err)))
    return None


def show_plan(plan, key: str) -> None:
    """A plan's sentence, what limits it, its runner-ups and the search's progress."""
    st.markdown(f"**{literal_markdown(plan.sentence)}**")
    for note in plan.notes:
        st.caption(literal_markdown(note))
    if plan.runner_up_steps:
        st.markdown("**Runner-up plans**")
        st.dataframe(pd.DataFrame({"plan": list(plan.runner_up_steps)}), hide_index=True, key=f"{key}:runner_ups")
    st.plotly_chart(figures.plan_progress(plan), width="stretch", theme=None, key=f"{key}:progress")
    st.dataframe(plan.trials, hide_index=True, key=f"{key}:trials")


def plan_tab(scenario: Scenario, runs: list, key: str, limits: Limits | None = None):
    """Capacity over time for ``runs`` and the plan search of ``scenario``. Returns the plan shown, or None."""
    limits = limits if limits is not None else Limits.from_env(os.environ)
    st.subheader("Plan: capacity over time, and the cheapest plan that meets the targets")
    if runs:
        capacity_figures(runs, key)
    st.markdown("**Search for the cheapest plan** (costsim plan: a seeded search over the fields you pick)")
    st.caption("Each configuration runs every option on the same jobs; the answer is the cheapest that meets the "
               "scenario's targets. " + FAIR + f". At most {MAX_RUNS} runs here; more: costsim plan.")
    vary, trials, reps, executor = _form(scenario, key)
    cache_key = (digest(scenario), tuple(vary), trials, reps)
    store = st.session_state.setdefault(f"{key}:plans", {})
    plan = store.get(cache_key)
    if plan is None and st.button("Find the cheapest plan", key=f"{key}:run", disabled=not vary):
        plan = _run(Job("plan", executor=executor, scenario=scenario, replications=reps, vary=tuple(vary),
                        trials=trials, max_runs=MAX_RUNS), limits)
        if plan is not None:
            store[cache_key] = plan
            while len(store) > KEEP:
                store.pop(next(iter(store)))
    if plan is None:
        st.info("Pick the fields to vary and their ranges, then press the button.")
        return None
    show_plan(plan, key)
    return plan


__all__ = ["capacity_figures", "plan_tab", "show_plan"]
