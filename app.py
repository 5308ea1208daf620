"""costsim dashboard: build or rent GPUs for RL training? (`make app`)

Thin by design: scenarios are loaded (uploads read no server file but shipped traces), edited
with knobs keyed by the scenario's content, and simulated (replications side by side in child
processes with a time and memory limit, cached on every exact value) by
``costsim.dashboard``; the first screen and tabs are drawn by ``dashboard_views`` and
``dashboard_tabs``. Text a user wrote is shown literally: in ``st.code`` or escaped Markdown.
The edited scenario lives in the URL (``?s=``), so a reload or a shared link restores it.
"""

from __future__ import annotations

import streamlit as st

from costsim.dashboard.server import start_workers

# The warm worker processes start importing costsim now, beside this script's own imports below
# rather than after them: on a cold server the first screen waits for them.
start_workers()

import os
import pickle
from dataclasses import dataclass
from pathlib import Path

import costsim
from costsim.dashboard import (
    LINK,
    Limits,
    ResultCache,
    RunStopped,
    Upload,
    apply_knobs,
    changed_knobs,
    content_key,
    decode_scenario,
    edit,
    encode_scenario,
    knob_paths,
    knob_problems,
    literal_markdown,
    load_upload,
    make_upload_root,
    public_text,
    run_key,
    shipped_scenarios,
    shipped_traces,
    simulate_bounded,
    simulate_many,
    state,
    tabs,
    waiting_note,
)
from costsim.dashboard.bounded import RunTimedOut, note_first_screen
from costsim.dashboard.disk_runs import server_disk
from costsim.dashboard.first_paint import pause_before_first_tab
from costsim.dashboard.server import imports_frozen, server_pool, top_up_spares
from costsim.dashboard.sidebar import knob_form, sidebar_slot, timed_out
from costsim.dashboard.views import first_screen, flip_control
from costsim.errors import CostsimError
from costsim.present.formats import plain
from costsim.runs.sweepfile import replication_seed
from costsim.scenario import ScenarioError

st.set_page_config(page_title="costsim: build or rent GPUs", layout="wide")


@st.cache_resource
def upload_root() -> Path:
    """One private folder per server for uploaded traces."""
    return make_upload_root()


@st.cache_resource
def result_cache() -> ResultCache:
    """Runs shared by every session, by exact scenario and seed (``run_key``), within the byte
    limit (``COSTSIM_CACHE_MB``; main() has checked the environment before the first call), and
    on disk for the next server start (``disk_runs``, within ``COSTSIM_DISK_CACHE_MB``)."""
    limits = Limits.from_env(os.environ)
    return ResultCache(max_entries=64, max_bytes=int(limits.cache_mb * 2**20), disk=server_disk(os.environ))


def show_error(title: str, err: Exception) -> None:
    """A red box with our own words, then the problems verbatim: user text (keys, names, values)
    in ``st.code`` can never render as Markdown or HTML."""
    st.error(f"**{title}**")
    st.code(public_text(str(err), upload_root()), language=None, wrap_lines=True)  # no server path


def run(scenario: costsim.Scenario, replications: int, limits: Limits) -> list[costsim.Results] | None:
    """The replications' results (seed ``replication_seed(scenario.seed, r)``, as ``costsim sweep``:
    replication 0 is ``costsim run`` on the scenario's seed),
    from the cache or bounded runs side by side; None (with a message) if they did not finish."""
    seeds = [replication_seed(scenario.seed, r) for r in range(replications)]
    keys = [run_key(scenario, s) for s in seeds]
    shown = st.session_state.get("shown_runs")
    if shown is not None and shown[0] == keys:  # a rerun of the same runs (a tab, a widget): not unpickled again
        return shown[1]
    found = {s: result_cache().get(k) for s, k in zip(seeds, keys, strict=True)}
    nbytes = {s: result_cache().size(k) for s, k in zip(seeds, keys, strict=True)}
    missing = [s for s in seeds if found[s] is None]
    if missing:
        status, drawn = st.empty(), [""]

        def say(text: str) -> None:
            # Called every quarter second; the words change once a second. Each caption drawn is a
            # message the browser renders, on the cores the runs need, so an unchanged one is not
            # sent (Streamlit then sees a rerun or Stop within a second, when the next one is).
            if text != drawn[0]:
                drawn[0] = text
                status.caption(text)

        def progress(seconds: float) -> None:
            say(f"Simulating every option on the same jobs, {len(missing)} replication(s)... "
                f"{seconds:.0f} s (limit {limits.run_seconds:g} s; change a setting or press Stop to cancel)")

        try:
            blobs = simulate_many(scenario, missing, limits, on_wait=progress, warm=True,
                                  on_queue=lambda seconds: say(f"{waiting_note(limits)} {seconds:.0f} s"),
                                  pool=server_pool())
        except CostsimError as err:
            status.empty()
            show_error("This scenario cannot be run.", err)
            return None
        except RunTimedOut:
            status.empty()
            timed_out(scenario, replications, limits.run_seconds, Limits.ENV["run_seconds"])
            return None
        except RunStopped as err:
            status.empty()
            st.error(public_text(str(err), upload_root()))  # our own words only
            return None
        status.empty()
        # A run of an upload is not kept on disk: its folder is this server's own, gone with it.
        lasting = not scenario.base_dir.is_relative_to(upload_root().resolve())
        key_of = dict(zip(seeds, keys, strict=True))  # stamped before the run read its files
        for s, blob in zip(missing, blobs, strict=True):
            result_cache().put(key_of[s], blob, on_disk=lasting)
            found[s], nbytes[s] = pickle.loads(blob), len(blob)
        note_first_screen(result_cache().disk, scenario)
    runs = [found[s] for s in seeds]
    # Kept for this session's reruns only while small beside the server's cache (every open
    # session may hold one such set, outside the cache's byte limit); tabs never modify them.
    if sum(n or 0 for n in nbytes.values()) <= limits.session_runs_bytes:
        st.session_state["shown_runs"] = (keys, runs)
    else:
        st.session_state.pop("shown_runs", None)
    return runs


@dataclass
class Base:
    """The scenario the knobs start from, and the key of its content (widgets are keyed by it)."""

    scenario: costsim.Scenario
    key: str


def from_link(limits: Limits) -> costsim.Scenario | None:
    """The scenario in the URL when the session started (``?s=``), or None."""
    if "link_text" not in st.session_state:
        st.session_state["link_text"] = st.query_params.get("s")
    text = st.session_state["link_text"]
    if not text:
        return None
    try:
        yaml = decode_scenario(text, int(limits.upload_mb * 2**20))
        return state.kept(st.session_state, "link", yaml,
                          lambda: load_upload(Upload(LINK, yaml.encode()), None, upload_root(), limits))
    except CostsimError as err:
        show_error("The scenario in this link cannot be used; showing a shipped scenario instead.", err)
        st.session_state["link_text"] = None
        return None


def load_base(limits: Limits) -> Base | None:
    """The chosen scenario: an upload (the selector then says so), the link's, or a shipped one."""
    shipped = shipped_scenarios()
    st.sidebar.header("Scenario")
    uploaded = st.session_state.get("upload")
    linked = None if uploaded is not None else from_link(limits)
    with sidebar_slot("scenario", "uploaded" if uploaded is not None else "choice"):
        if uploaded is not None:
            st.selectbox("Scenario", [f"uploaded: {uploaded.name}"], disabled=True, key="scenario_uploaded",
                         help="Remove the uploaded file (×) to choose a shipped scenario again.")
            choice = None
        else:
            names = ([f"{LINK}: {linked.name}"] if linked is not None else []) + list(shipped)
            choice = st.selectbox("Scenario", names, key="scenario_choice")
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
            data = upload.getvalue()
            extra = trace.getvalue() if trace is not None else b""
            key = content_key(data + b"\0" + extra)
            sc = state.kept(st.session_state, "upload", (key, upload.name, trace.name if trace is not None else None),
                            lambda: load_upload(Upload(upload.name, data),
                                                Upload(trace.name, extra) if trace is not None else None,
                                                upload_root(), limits))
            return Base(sc, key)
        if linked is not None and choice == f"{LINK}: {linked.name}":
            return Base(linked, content_key(costsim.dump_scenario(linked).encode()))
        path = shipped[choice]
        key = content_key(path.read_bytes())
        return Base(state.kept(st.session_state, "shipped", (str(path), key), lambda: costsim.load_scenario(path)), key)
    except CostsimError as err:
        show_error("This scenario cannot be used.", err)
        return None


def knob_errors(err: ScenarioError, base: costsim.Scenario, form) -> None:
    """Each problem under the knob that caused it (named as the knob), and one red box listing them."""
    by_knob, other = knob_problems(err, knob_paths(base), changed_knobs(base, form.knobs))
    lines = []
    for knob, messages in by_knob.items():
        text = public_text("; ".join(messages), upload_root())  # no server path
        form.slots[knob].error(literal_markdown(text))
        lines.append(f"{form.labels.get(knob, knob)}: {text}")
    st.error("**These settings cannot be used.** The knob at fault is marked in the sidebar.")
    st.code(public_text("\n".join(lines + other), upload_root()), language=None, wrap_lines=True)


def main() -> None:
    try:
        limits = Limits.from_env(os.environ)
    except CostsimError as err:
        show_error("The dashboard's limits are misconfigured.", err)
        return
    result_cache()
    imports_frozen()
    base = load_base(limits)
    if base is None:
        return
    if st.sidebar.button("Reset knobs", help="Back to the scenario's own values (the editor's too)."):
        state.reset(st.session_state)
    # The first screen is drawn last (it needs the runs) but sits above the tab bar and the tab.
    head, tab = st.container(), tabs.tab_bar()
    body = st.container()
    ekey = edit.editor_key(base.key, state.generation(st.session_state))
    if tab == edit.EDIT_TAB:
        with body:
            working = edit.draw(ekey, base.scenario, upload_root())
    else:
        working = edit.peek(ekey, base.scenario, upload_root())
    # The knobs start from the editor's working copy (state.py: how the two share it).
    knob_base = state.knob_base(st.session_state, ekey, working.scenario, base.scenario)
    knob_key = state.knob_key(st.session_state, loaded_key=base.key, editor_key=ekey, base=knob_base,
                              loaded=base.scenario, data_key=edit.data_key)
    form = knob_form(knob_base, knob_key)
    runs = scenario = None
    why = None
    if not working.ok:
        why = "the scenario in the Edit scenario tab has problems (marked there); fix them to update these results."
    else:
        try:
            scenario = state.kept(st.session_state, "knobbed", (working.scenario, form.knobs),
                                  lambda: apply_knobs(working.scenario, form.knobs))
        except CostsimError as err:
            with head:
                knob_errors(err, working.scenario, form)
            why = "fix the knob marked in the sidebar to update them."
    if scenario is not None:
        if edit.push(ekey, base.scenario, scenario):
            state.knobs_pushed(st.session_state, editor_key=ekey, scenario=scenario, key=knob_key)
            if tab == edit.EDIT_TAB:  # the editor was drawn before the knobs' change: draw it again with it
                st.rerun()
        packed = encode_scenario(costsim.dump_scenario(scenario))
        if st.query_params.get("s") != packed:
            st.query_params["s"] = packed
        with head:
            runs = run(scenario, form.replications, limits)
        if runs is not None:
            st.session_state["last_good"] = (base.key, scenario, runs)
    if runs is None:
        saved = st.session_state.get("last_good")
        if saved is None or saved[0] != base.key:  # never another loaded scenario's numbers
            return
        _, scenario, runs = saved
        why = why or "the last settings did not run."
    # The utilisation flip is a search by re-simulation: on request (flip_control), in the workers.
    verdict = state.kept(st.session_state, "verdict", [run_key(r.scenario, r.seed) for r in runs],
                         lambda: costsim.decide(runs, flips=False))
    with head:
        # The scenario's name first, as typed (escaped), so a user sees at once which scenario this is.
        st.subheader(f"{literal_markdown(scenario.name)}: {plain(scenario.horizon_days)} days, "
                     f"{runs[0].summary.jobs_submitted.iloc[0]:,} jobs — build or rent GPUs?")
        first_screen(verdict, runs, why)
        flip_control(verdict, runs,
                     lambda sc, seed: pickle.loads(simulate_bounded(sc, limits, seed=seed, warm=True, pool=server_pool())),
                     f"{run_key(scenario)}:{len(runs)}")
        if scenario.description:
            st.caption(literal_markdown(scenario.description))
    if tab != edit.EDIT_TAB:
        pause_before_first_tab(st.session_state)  # the first screen drawn before the tab's figures
        with body:
            tabs.render(tab, scenario, runs, limits, len(runs))


main()
top_up_spares()  # after the screen is sent
