"""The dashboard's Sensitivity and Sweep tabs: Streamlit layout only; the work is in
``decision_runs`` (runs in a bounded child process), ``sweep_upload`` (uploads read safely) and ``costsim.decisions``.

``app.py`` mounts them inside its tabs::

    with sensitivity:
        sensitivity_tab(scenario, key, replications=replications, limits=limits)
    with sweep:
        sweep_tab(scenario, key, limits=limits)

``key`` prefixes every widget and session-state entry; results are also kept per scenario digest,
so a result is never shown for a scenario other than the one it was computed on.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence

import pandas as pd
import streamlit as st

from costsim.cli.tables import MEANS_TABLE_COLUMNS
from costsim.dashboard import Limits, RunStopped, Upload, public_text, run_key
from costsim.dashboard.decision_runs import (
    MAX_AXES,
    MAX_REPLICATIONS,
    MAX_VARIANTS,
    Job,
    grid_sweep,
    numeric_paths,
    run_bounded,
)
from costsim.dashboard.server import server_pool
from costsim.dashboard.sweep_upload import read_sweep_uploads
from costsim.decisions.pareto import frontier, sweep_table
from costsim.errors import CostsimError
from costsim.plan import facts
from costsim.plots import figures as plots
from costsim.present.formats import MISSING, money_exact, plain, who_pays_more, with_interval
from costsim.present.headline import CANNOT_KEEP_UP, FAIR, tornado_breakeven
from costsim.present.tornado import sentence as tornado_sentence
from costsim.present.verdict import decide
from costsim.scenario import Scenario

KEEP = 4  # results kept per tab and session (each a few tables)
Col = st.column_config


def _limits(limits: Limits | None) -> Limits:
    return limits if limits is not None else Limits.from_env(os.environ)


def digest(scenario: Scenario) -> str:
    """The scenario's identity for caching results: every exact value and its trace's stamp."""
    return hashlib.sha256(run_key(scenario).encode()).hexdigest()[:16]


def _kept(key: str) -> dict:
    """This tab's results in the session, oldest first (at most ``KEEP``)."""
    return st.session_state.setdefault(key, {})


def _keep(key: str, cache_key, value) -> None:
    store = _kept(key)
    store[cache_key] = value
    while len(store) > KEEP:
        store.pop(next(iter(store)))


def _show_error(title: str, err: Exception) -> None:
    """Our words in red, the problems verbatim in ``st.code`` (user text never renders as Markdown)."""
    st.error(f"**{title}**")
    st.code(public_text(str(err)), language=None, wrap_lines=True)  # no server path (every upload folder)


def _bar(what: str) -> Callable[[int, int, float], None]:
    bar = st.progress(0.0, text=f"{what}: starting...")

    def update(done: int, total: int, seconds: float) -> None:
        share = done / total if total else 0.0
        bar.progress(min(share, 1.0), text=f"{what}: {done} of {total or '?'} runs, {seconds:.0f} s "
                                           "(change a setting or press Stop to cancel)")
    return update


def _run(job: Job, limits: Limits, what: str):
    """``run_bounded`` with a progress bar; None (the error shown) when it did not finish."""
    update = _bar(what)
    try:
        return run_bounded(job, limits, update, pool=server_pool())
    except CostsimError as err:
        _show_error(f"The {what.lower()} cannot be run.", err)
    except RunStopped as err:
        st.error(public_text(str(err)))  # our own words only
    return None


# ------------------------------------------------------------------ Sensitivity


def tornado_rows(table: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """``Tornado.table`` in words: money as $, flips marked ⚑ (not by colour), break-even in the
    first screen's words (``headline.tornado_breakeven`` of ``pairs``, the Tornado's ``breakeven``)."""
    return pd.DataFrame({
        "input": table["input"],
        "flips": ["⚑ flips" if f else "" for f in table["flips"]],
        "low": [f"{plain(v)} {u}".strip() for v, u in zip(table["low"], table["unit"], strict=True)],
        "high": [f"{plain(v)} {u}".strip() for v, u in zip(table["high"], table["unit"], strict=True)],
        "low_difference": table["low_difference_usd"].map(money_exact),
        "high_difference": table["high_difference_usd"].map(money_exact),
        "swing": table["swing_usd"].map(money_exact),
        **{f"{end}_breakeven": [tornado_breakeven(pairs, label, end) for label in table["input"]]
           for end in ("low", "high")},
        "path": table["path"],
        "note": table["note"],
    })


TORNADO_COLUMNS = {
    "input": Col.TextColumn("Uncertain input", help="Each input set to its catalog low and high, all else as given"),
    "flips": Col.TextColumn("Flips?", help="⚑: at this end the build − rent difference changes sign: the verdict flips"),
    "low": Col.TextColumn("Low", help="The input's low value (× a scale: times the scenario's value)"),
    "high": Col.TextColumn("High"),
    "low_difference": Col.TextColumn("Build − rent at low (USD)", help="Fair totals; below 0: building is cheaper"),
    "high_difference": Col.TextColumn("Build − rent at high (USD)"),
    "swing": Col.TextColumn("Swing (USD)", help="|high − low| of the difference"),
    "low_breakeven": Col.TextColumn("Break-even at low (cash)", help="First month the build option's cumulative "
                                    "cash is at or below the rent option's"),
    "high_breakeven": Col.TextColumn("Break-even at high (cash)"),
    "path": Col.TextColumn("Scenario fields set"),
    "note": Col.TextColumn("Note"),
}


def sensitivity_tab(scenario: Scenario, key: str, replications: int = 1, limits: Limits | None = None):
    """The tornado of ``scenario`` (``costsim.decisions.tornado``): a button runs it (bounded, with
    progress), kept per (scenario, replications) in the session; then its sentence, figure and
    table. Returns the Tornado shown, or None."""
    st.subheader("Sensitivity: what would change the answer")
    st.caption("Each uncertain input (the catalog's ranges) at its low and its high value, everything else as in "
               "the scenario, on the same jobs (common random numbers). " + FAIR + ".")
    cache_key = (digest(scenario), replications)
    store = f"{key}:sensitivity"
    result = _kept(store).get(cache_key)
    if result is None:
        runs = "run" if replications == 1 else f"{replications} replications"
        if st.button(f"Run the sensitivity analysis ({runs} per variant)", key=f"{key}:sensitivity:run"):
            result = _run(Job("tornado", scenario=scenario, replications=replications), _limits(limits), "Sensitivity")
            if result is not None:
                _keep(store, cache_key, result)
    if result is None:
        st.info("Press the button to run the scenario once per input end (about twice the number of inputs).")
        return None
    st.markdown(f"**{_literal(tornado_sentence(result))}**")
    month = tornado_breakeven(result.breakeven, "", "base")
    st.caption(f"Pair compared: {_literal(result.build)} (build) against {_literal(result.rent)} (rent); "
               f"break-even in cash at base: {month}; {result.replications} replication(s) per variant.")
    st.plotly_chart(plots.tornado_figure(result.table), key=f"{key}:sensitivity:figure")
    st.dataframe(tornado_rows(result.table, result.breakeven), column_config=TORNADO_COLUMNS, hide_index=True,
                 key=f"{key}:sensitivity:table")
    return result


def _literal(text: str) -> str:
    from costsim.dashboard import literal_markdown

    return literal_markdown(text)


# ------------------------------------------------------------------ Sweep: showing results


def means_rows(results) -> pd.DataFrame:
    """Per (variant, option): its swept values, each metric's mean ± 95 % half-width (readable)."""
    swept = [c for c in results.variants.columns if c != "variant"]
    m = results.means.merge(results.variants, on="variant", how="left")
    out = m[["variant", *swept, "option"]].copy()
    for _, metric, fmt in MEANS_TABLE_COLUMNS:
        if metric in m:
            out[MEANS_KEYS[metric]] = [with_interval(fmt, r[metric], r[f"{metric}_low"], r[f"{metric}_high"])
                           for _, r in m.iterrows()]
    out["n"] = m["n"]
    return out


# The means frame's column per metric; MEANS_COLUMNS gives each its header with the unit.
MEANS_KEYS = {"total_cost_usd": "amortised total", "cash_spent_usd": "cash spent", "queue_delay_mean_h": "delay mean h",
              "queue_delay_p95_h": "delay p95 h", "utilization": "utilisation", "iterations_per_day": "RL iter/day"}
MEANS_COLUMNS = {
    "variant": Col.TextColumn("Variant"), "option": Col.TextColumn("Option"),
    "amortised total": Col.TextColumn("Amortised total (USD)", help="Mean ± half-width of the 95 % interval over "
                                      "replications. Amortised: capital spread over the depreciation life"),
    "cash spent": Col.TextColumn("Cash spent (USD)", help="Capex when paid, running costs, rent, commitments"),
    "delay mean h": Col.TextColumn("Mean queue delay (h)"), "delay p95 h": Col.TextColumn("p95 queue delay (h)"),
    "utilisation": Col.TextColumn("Utilisation (%)"), "RL iter/day": Col.TextColumn("RL iterations per day"),
    "n": Col.NumberColumn("Replications", format="%d"),
}


def verdict_rows(results) -> pd.DataFrame:
    """One row per variant: ``costsim.decide(results, variant=...)``'s choice, margin and sentence
    (without the utilisation flip: a search by re-simulation per variant, not for the page)."""
    rows = []
    for v in results.variants["variant"]:
        verdict = decide(results, variant=v, flips=False)
        low, high = verdict.difference_low_usd, verdict.difference_high_usd
        rows.append({"variant": v, "recommended": verdict.option or "none keeps up",
                     "versus": verdict.versus or MISSING,
                     "difference": MISSING if verdict.versus is None or verdict.option is None
                     else who_pays_more(verdict.option, verdict.versus, verdict.difference_usd),
                     "interval": MISSING if low != low else f"{money_exact(low)} … {money_exact(high)}",
                     "close": "the same cost" if verdict.same_cost else "",
                     "sentence": verdict.sentence})
    return results.variants.merge(pd.DataFrame(rows), on="variant")


VERDICT_COLUMNS = {
    "variant": Col.TextColumn("Variant"), "recommended": Col.TextColumn("Recommended"),
    "versus": Col.TextColumn("Against"),
    "difference": Col.TextColumn("Difference (fair totals)", help="Who pays more, recommended against the "
                                 "option it is compared with; mean of paired runs"),
    "interval": Col.TextColumn("95 % interval of recommended − against (USD)"),
    "close": Col.TextColumn("Close call?"),
    "sentence": Col.TextColumn("Verdict", width="large"),
}
FRONTIER_COLUMNS = {
    "variant": Col.TextColumn("Variant"), "option": Col.TextColumn("Option"),
    "fair_total_usd": Col.NumberColumn("Fair total (USD)", format="dollar", help=FAIR),
    "queue_delay_p95_h": Col.NumberColumn("p95 queue delay (h)", format="%.2f"),
    "keeps_up": Col.TextColumn("Keeps up?"),
}


def show_sweep(results, key: str, notes: Sequence[str] = ()) -> pd.DataFrame:
    """A sweep's means with intervals, the verdict per variant and the Pareto frontier (fair total
    against p95 queue delay). Returns the frontier table."""
    for note in notes:
        st.warning(_literal(note))
    st.markdown("**Means over replications** (± half-width of the 95 % confidence interval)")
    st.dataframe(means_rows(results), column_config=MEANS_COLUMNS, hide_index=True, key=f"{key}:means")
    st.markdown("**Verdict per variant**")
    st.dataframe(verdict_rows(results), column_config=VERDICT_COLUMNS, hide_index=True, key=f"{key}:verdicts")
    front = frontier(sweep_table(results))
    st.plotly_chart(plots.pareto_figure(front), key=f"{key}:pareto")
    swept = [c for c in results.variants.columns if c != "variant"]
    shown = front[front["on_frontier"]][["variant", *swept, "option", "fair_total_usd", "queue_delay_p95_h", "keeps_up"]]
    shown = shown.assign(keeps_up=["yes" if k else CANNOT_KEEP_UP for k in shown["keeps_up"]])
    st.markdown("**On the Pareto frontier** (no other configuration is cheaper and quicker at once)")
    st.dataframe(shown, column_config=FRONTIER_COLUMNS, hide_index=True, key=f"{key}:frontier")
    return front


# ------------------------------------------------------------------ Sweep: the two ways in


def _default_axes(paths: list[str], scenario: Scenario) -> list[str]:
    own = next((o.name for o in facts.owned_options(scenario)), None)
    rent = next((o.name for o in facts.cloud_options(scenario)), None)
    wanted = [f"options.{own}.gpus", f"options.{rent}.price_per_gpu_hour"]
    return [p for p in wanted if p in paths][:1]


def _grid(scenario: Scenario, key: str, limits: Limits):
    paths = numeric_paths(scenario)
    chosen = st.multiselect(f"Fields to vary (up to {MAX_AXES})", paths, default=_default_axes(paths, scenario),
                            max_selections=MAX_AXES, key=f"{key}:grid:paths",
                            help="Dotted paths into the scenario, as a sweep file names them")
    axes = {p: st.text_input(f"Values of {p} (comma-separated)", key=f"{key}:grid:values:{p}",
                             placeholder="e.g. 256, 384, 512") for p in chosen}
    left, right = st.columns(2)
    reps = left.number_input(f"Replications (1 … {MAX_REPLICATIONS})", 1, MAX_REPLICATIONS, 2, key=f"{key}:grid:reps",
                             help="Runs per variant with different seeds, the same in every variant")
    executor = right.selectbox("Run on", ["local", "processes"], key=f"{key}:grid:executor",
                               help="local: one process; processes: a pool of two worker processes")
    cache_key = (digest(scenario), tuple(axes.items()), int(reps))
    store = f"{key}:sweep:grid"
    results = _kept(store).get(cache_key)
    if results is None and st.button(f"Run the grid (at most {MAX_VARIANTS} variants)", key=f"{key}:grid:run"):
        try:
            spec = grid_sweep(scenario, {p: v for p, v in axes.items()}, int(reps))
        except CostsimError as err:
            _show_error("This grid cannot be run.", err)
            return None
        results = _run(Job("sweep", executor=executor, spec=spec), limits, "Sweep")
        if results is not None:
            _keep(store, cache_key, results)
    return results


def _uploaded(key: str, limits: Limits):
    files = st.file_uploader("Upload a sweep's output: its folder zipped, or its runs Parquet files",
                             type=["zip", "parquet"], accept_multiple_files=True, key=f"{key}:sweep:upload",
                             max_upload_size=max(1, int(limits.trace_upload_mb)),
                             help=f"From costsim sweep --out DIR: zip DIR, or pick runs/variant=*/replication=*.parquet. "
                                  f"At most {limits.trace_upload_mb:g} MiB each; nothing on the server is read.")
    if not files:
        return None, []
    uploads = [Upload(f.name, f.getvalue()) for f in files]
    cache_key = tuple((u.name, hashlib.sha256(u.data).hexdigest()) for u in uploads)
    store = f"{key}:sweep:uploaded"
    hit = _kept(store).get(cache_key)
    if hit is not None:
        return hit
    try:
        hit = read_sweep_uploads(uploads, limits, pool=server_pool())
    except CostsimError as err:
        _show_error("This upload cannot be read.", err)
        return None, []
    _keep(store, cache_key, hit)
    return hit


def sweep_tab(scenario: Scenario, key: str, limits: Limits | None = None):
    """A sweep's results: uploaded (its zipped ``--out`` folder or runs Parquet files) or run here
    on a small grid over the scenario's numeric fields. Returns the SweepResults shown, or None."""
    limits = _limits(limits)
    st.subheader("Sweep: vary the scenario, compare with confidence")
    how = st.radio("Source", ["Run a small grid on this scenario", "Load a sweep's output"], horizontal=True,
                   key=f"{key}:sweep:source")
    notes: list[str] = []
    if how.startswith("Run"):
        results = _grid(scenario, key, limits)
    else:
        results, notes = _uploaded(key, limits)
    if results is None:
        return None
    show_sweep(results, f"{key}:sweep", notes)
    return results


__all__ = ["means_rows", "sensitivity_tab", "show_sweep", "sweep_tab", "tornado_rows", "verdict_rows"]
