"""The dashboard's sidebar knobs (Streamlit): one form whose widgets are keyed by the scenario's
content (``sharing.content_key``), so an upload, a scenario switch or a reset always shows that
scenario's values, and an empty slot under each knob where its validation error goes.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from costsim.dashboard.editor_widgets import whole_number
from costsim.dashboard.knobs import ECONOMY, SETUPS, ClassKnobs, Knobs, current_knobs
from costsim.plan import facts
from costsim.plan.resolve import resolve
from costsim.present.formats import count, number, significant
from costsim.scenario import Scenario

DEFAULT_REPLICATIONS = 3
MAX_REPLICATIONS = 10
REPLICATIONS_KEY = "run:replications"
"""The replications widget's key: one for the whole session, not keyed by the scenario's content
as the knobs are, so the count a user chose stays through an upload, a scenario switch, an edit
and a reset of the knobs (it is a setting of the session, not of the scenario)."""

ECONOMY_WIDGETS = {  # field -> (label, step, format, help)
    "depreciation_years": ("Depreciation (years)", 0.5, "%.1f", "Straight-line life of owned hardware; the "
                           "amortised cost spreads capex over it."),
    "electricity_usd_per_kwh": ("Electricity ($/kWh)", 0.01, "%.3f", "Price of a kWh at the facility (× PUE)."),
    "cost_of_capital": ("Cost of capital (per year)", 0.01, "%.3f", "0: straight-line depreciation; above 0: "
                        "capital paid back as an annuity at this annual rate (0.08 = 8 %)."),
}


@dataclass
class KnobForm:
    """What the form gave: the knobs, the replications (a session setting, not in the scenario),
    a slot under each knob by knob id (``knobs.knob_paths``) and each knob's label."""

    knobs: Knobs
    replications: int
    slots: dict
    labels: dict


def _widget(form: KnobForm, knob: str, label: str, widget, *args, **kwargs):
    """The widget ``widget(label, *args, **kwargs)`` (a Streamlit input), drawn now, with an empty
    slot below it for its error."""
    value = widget(label, *args, **kwargs)
    form.slots[knob] = st.empty()
    form.labels[knob] = label
    return value


def sidebar_slot(name: str, identity: str):
    """A place in the sidebar (a container, to draw in with ``with``) for widgets keyed by
    ``identity``: one of two places, the other one when the previous run drew ``name`` with
    another identity (that one is left empty).

    Why: while a script runs, the browser keeps a widget of the previous run whose key changed
    beside its successor at the same place, greyed and inert, until the run ends; during a run
    of several seconds every knob showed twice. A block drawn where the previous run had an
    empty element starts with no children, and an element that replaces a block takes the
    block's widgets with it, so no old widget stays. (Emptying the same place first does not
    work: Streamlit merges the two changes of one place before they reach the browser.)"""
    places = st.sidebar.empty(), st.sidebar.empty()
    drawn, place = st.session_state.get(f"sidebar_slot:{name}", (identity, 0))
    if drawn != identity:
        place = 1 - place
    st.session_state[f"sidebar_slot:{name}"] = (identity, place)
    return places[place].container()


def knob_form(scenario: Scenario, key: str) -> KnobForm:
    """The sidebar's knobs for ``scenario``, in a ``sidebar_slot`` of their own; ``key`` prefixes
    every widget key (the content key). The replications, a setting of the session, are kept
    under ``REPLICATIONS_KEY``."""
    # Set once, then the widget's own: no ``value=`` below, which would also reset it whenever
    # the widget changed. Kept while a run draws no form (a scenario that cannot be loaded).
    st.session_state.setdefault(REPLICATIONS_KEY, DEFAULT_REPLICATIONS)
    k = current_knobs(scenario)
    owned_plans = facts.owned_plans(resolve(scenario))  # a node's GPUs per owned option
    out = KnobForm(k, DEFAULT_REPLICATIONS, {}, {})
    owned, capex, lead, prices = {}, {}, {}, {}
    with sidebar_slot("knobs", key), st.form("knobs"):
        st.subheader("Service level")
        service = {
            "p95_delay_h": _widget(out, "target:p95", "Target: p95 queue delay (h)", st.number_input,
                min_value=0.0, value=_or(k.service["p95_delay_h"], 0.0), step=1.0, format="%.1f",
                key=f"{key}:target:p95",
                help="The longest wait at the 95th percentile an option may make jobs wait to be recommended "
                     "(0: no delay target). Default 24 h."),
            "completion": _percent(_widget(out, "target:completion", "Target: completion (%)", st.number_input,
                min_value=0.0, max_value=100.0, value=_or(k.service["completion"], 0.0) * 100, step=0.5,
                format="%.1f", key=f"{key}:target:completion",
                help="Share of the jobs that could finish within the horizon that must finish (0: no completion "
                     "target). Default 99 %.")),
        }
        waiting = _widget(out, "waiting", "Price of waiting ($/GPU-hour)", st.number_input,
            min_value=0.0, value=float(k.waiting_usd_per_gpu_hour or 0.0), step=0.5, format="%.2f",
            key=f"{key}:waiting",
            help="What an hour of a GPU job waiting in the queue costs the lab (researchers idle); queued GPU-hours "
                 "× this price is a line of every option's fair total. 0: waiting counts only through the targets.")
        st.subheader("Knobs")
        for name, gpus in k.owned_gpus.items():
            step = owned_plans[name].gpus_per_node
            owned[name] = _widget(out, f"gpus:{name}", f"{name}: owned GPUs", st.number_input,
                value=gpus, step=step, key=f"{key}:gpus:{name}",
                help="Whole nodes. An option named after its size is renamed with it (own-256 at 320 GPUs: own-320).")
        for name, price in k.cloud_price.items():
            prices[name] = _widget(out, f"price:{name}", f"{name}: $/GPU-hour", st.number_input,
                value=float(_known(price)), step=0.1, format="%.2f", key=f"{key}:price:{name}",
                help="Default: the catalog price for this GPU and tier.")
        scale = _widget(out, "scale", "Arrival scale (× the job arrival rate)", st.number_input,
            value=float(k.arrival_scale), step=0.05, format="%.2f", key=f"{key}:scale",
            help="Multiplies every class's arrivals per day; a trace is thinned below 1 and gets jittered copies "
                 "above 1.")
        if k.owned_gpus:
            with st.expander("Owned clusters: capex and lead time"):
                for name in k.owned_gpus:
                    capex[name] = _widget(out, f"capex:{name}", f"{name}: capex per GPU ($)", st.number_input,
                        value=float(k.capex_per_gpu[name]), step=1000.0, format="%.0f", key=f"{key}:capex:{name}",
                        help="All-in: server, fabric, storage and installation, per GPU. Default: the catalog's.")
                    lead[name] = _widget(out, f"lead:{name}", f"{name}: lead time (days)", st.number_input,
                        value=float(k.lead_time_days[name]), step=7.0, format="%.0f", key=f"{key}:lead:{name}",
                        help="Days from order to delivery; no jobs run and no capital is counted before.")
        with st.expander("Economics"):
            economy = {f: _widget(out, f"econ:{f}", ECONOMY_WIDGETS[f][0], st.number_input,
                value=float(k.economy[f]), step=ECONOMY_WIDGETS[f][1], format=ECONOMY_WIDGETS[f][2],
                key=f"{key}:econ:{f}", help=ECONOMY_WIDGETS[f][3]) for f in ECONOMY}
        classes = {}
        for name, ck in k.classes.items():
            with st.expander(f"RL class {name}"):
                classes[name] = ClassKnobs(
                    _widget(out, f"{name}:params", "Model size (B parameters)", st.number_input,
                        value=float(ck.model_params_b), step=1.0, format="%.1f", key=f"{key}:{name}:params",
                        help="Parameters of the policy model in billions; sets the FLOPs and memory of every phase."),
                    # A float widget: a mean of 2000.5 shown as 2000 stays 2000.5 unless it is edited.
                    _widget(out, f"{name}:len", "Mean response length (tokens)", st.number_input,
                        value=float(ck.response_mean), step=100.0, format="%.0f", key=f"{key}:{name}:len",
                        help="Mean tokens generated per response in rollout; the cap stays as the scenario sets it."),
                    _widget(out, f"{name}:cv", "Response length tail (cv)", st.number_input,
                        value=float(ck.response_cv), step=0.1, format="%.2f", key=f"{key}:{name}:cv",
                        help="0: every response equally long. Larger: longer stragglers, which hold a synchronous "
                             "iteration."),
                    _widget(out, f"{name}:setup", "Placement and mode", st.selectbox,
                        SETUPS, SETUPS.index(ck.setup), key=f"{key}:{name}:setup",
                        help="Colocated: every phase on all GPUs. Disaggregated: separate sampling and training GPUs. "
                             "Async: sampling runs ahead of training."),
                )
        with st.expander("Run: horizon, seed, replications"):
            horizon = _widget(out, "horizon", "Horizon (days)", st.number_input,
                value=float(_known(k.horizon_days)), step=30.0, format="%.0f", key=f"{key}:horizon",
                help="Days simulated; costs and break-even are counted over them.")
            root = k.seed  # current_knobs: the scenario's root seed, a whole number
            assert root is not None
            seed = _widget(out, "seed", "Seed", whole_number,
                int(root), key=f"{key}:seed",
                help="Root seed; replication r runs with a seed derived from it (as `costsim sweep --replications`).")
            out.replications = int(_widget(out, "replications", "Replications", st.number_input,
                min_value=1, max_value=MAX_REPLICATIONS, step=1, key=REPLICATIONS_KEY, persist_state="session",
                help="Runs with different random jobs; the verdict's interval and the ± on the cards come from them."))
        st.form_submit_button("Run", type="primary")
    service = {m: (v if v else None) for m, v in service.items()}  # 0: no such target
    service = {m: (k.service[m] if _same(v, k.service[m]) else v) for m, v in service.items()}
    out.knobs = Knobs(owned, prices, scale, classes, capex, lead, economy, horizon, seed, service, waiting)
    return out


def timeout_advice(scenario: Scenario, replications: int, limit_s: float, variable: str) -> str:
    """What to say when a run of ``replications`` of ``scenario`` passed the time limit
    (``limit_s`` seconds, raised with the environment ``variable``): what to lower in the sidebar,
    each with the value that ran. Markdown with no user text."""
    runs = "1 replication" if replications == 1 else f"{count(replications)} replications"
    return (f"**The simulation did not finish within the dashboard's limit of {limit_s:g} s and was stopped** "
            f"({runs} of {significant(scenario.horizon_days, 6, 'days')}). To make it quicker, lower in the "
            f"sidebar the replications (now {count(replications)}), the horizon (now "
            f"{significant(scenario.horizon_days, 6, 'days')}) or the arrival scale (now "
            f"{number(scenario.workload.arrival_scale, 2)} ×); or run it with the command line (`costsim run`), or "
            f"raise the limit (`{variable}`).")


def _retry_with_one() -> None:
    """The retry button's callback: runs before the next script run, so the widget shows 1."""
    st.session_state[REPLICATIONS_KEY] = 1


def timed_out(scenario: Scenario, replications: int, limit_s: float, variable: str) -> None:
    """The red box of a run stopped at the time limit (``timeout_advice``) and, when it ran more
    than one replication, a button that runs it again with one."""
    st.error(timeout_advice(scenario, replications, limit_s, variable))
    if replications > 1:
        st.button("Retry with 1 replication", key="retry_one", on_click=_retry_with_one,
                  help="Sets Replications in the sidebar to 1 and runs again: one run of every option, no intervals.")


def _known(x: float | None) -> float:
    """A number knob of ``current_knobs``, which sets each to the scenario's effective value:
    never None (None is how a form leaves a knob alone)."""
    assert x is not None
    return x


def _or(x: float | None, default: float) -> float:
    return float(x) if x is not None else default


def _percent(x: float) -> float:
    return x / 100


def _same(shown: float | None, kept: float | None) -> bool:
    """A target shown rounded (a completion of 99 % as 99.0) is the scenario's unless edited."""
    if shown is None or kept is None:
        return shown is kept
    return abs(shown - kept) < 1e-9
