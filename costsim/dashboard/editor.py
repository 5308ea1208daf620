"""The dashboard's scenario editor: every field of a scenario, and its options and workload
classes added, removed, duplicated and renamed, on plain data (``scenario.model_dump(mode="json")``).

``scenario_editor(data, key)`` renders the editor where it is called and returns an
``EditorResult``: the edited data, the checked Scenario (or None) and each problem by field path.
Problems are shown under the widget of the field that caused them. The working copy lives in
``st.session_state[f"{key}:editor"]``; every widget key starts with ``key``, so a caller passing
a hash of the *loaded* scenario (not of the edited one) gets fresh widgets for each new scenario.

Layout: four tabs (scenario and workload, options, workload classes, economics and serving); one
option and one class are edited at a time (a picker chooses which), which keeps a rerun fast.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from costsim.dashboard import editor_ops as ops
from costsim.dashboard import editor_schema as schema
from costsim.dashboard import literal_markdown
from costsim.dashboard.editor_schema import Loc
from costsim.dashboard.editor_widgets import Ui, field_widget, section
from costsim.plan import facts
from costsim.scenario import Scenario
from costsim.scenario.io import yaml_dump

KIND_LABELS = {"owned": "owned cluster", "on_demand": "cloud, on demand", "reserved": "cloud, reserved",
               "spot": "cloud, spot", "hybrid": "hybrid (base + burst)", "fleet": "fleet (pools, then a burst)"}
SHOWN_KINDS = {**KIND_LABELS, "cloud": "cloud"}  # an option's kind as its heading says it (its pricing is a field)
_OPTION_MODELS = {"owned": "OwnedOption", "cloud": "CloudOption", "hybrid": "HybridOption", "fleet": "FleetOption"}


@dataclass(frozen=True)
class EditorResult:
    """What the editor holds after this run.

    ``data``: the edited scenario as plain data (a copy; equal to the input when nothing was edited);
    ``scenario``: the checked Scenario (``costsim.scenario_from_data``), None while it has problems;
    ``errors``: field path (a Problem's ``loc``, e.g. ``("options", 0, "gpus")``) -> message."""

    data: dict
    scenario: Scenario | None
    errors: dict[Loc, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.scenario is not None


def editor_state(data: dict, key: str) -> dict:
    """The editor's working state for ``key``, created from ``data`` the first time."""
    sk = f"{key}:editor"
    if sk not in st.session_state:
        st.session_state[sk] = {"data": copy.deepcopy(data), "loaded": copy.deepcopy(data), "gen": 0,
                                "option": 0, "cls": 0, "note": None}
    return st.session_state[sk]


def _restructure(state: dict, change: Callable[[dict], tuple[dict, int | None]], pick: str | None = None,
                 note: str | None = None) -> None:
    """Apply a structural change (a callback, so the rerun renders it): new data, a new widget
    generation (every widget is recreated from the data), and the picker on the changed item."""
    data, index = change(state["data"])
    state["data"] = data
    state["gen"] += 1
    if pick is not None and index is not None:
        state[pick] = index
    state["note"] = note


def describe(data: dict, loc: Loc) -> str:
    """A field path in words: ``option cloud-od › price_per_gpu_hour``."""
    parts: list[str] = []
    i = 0
    while i < len(loc):
        if loc[i] == "options" and i + 1 < len(loc) and isinstance(j := loc[i + 1], int):
            names = [o.get("name") for o in data.get("options", [])]
            parts.append(f"option {names[j] if j < len(names) else j}")
            i += 2
            continue
        if loc[i:i + 2] == ("workload", "classes") and i + 2 < len(loc) and isinstance(k := loc[i + 2], int):
            names = [c.get("name") for c in data.get("workload", {}).get("classes", [])]
            parts.append(f"class {names[k] if k < len(names) else k}")
            i += 3
            continue
        parts.append(str(loc[i]))
        i += 1
    return " › ".join(parts) or "scenario"


def _rename_callback(state: dict, widget_key: str, rename: Callable[[dict, int, str], dict], i: int) -> None:
    new = st.session_state.get(widget_key, "")
    _restructure(state, lambda d: (rename(d, i, new), None))


def _name_widget(ui: Ui, state: dict, loc: Loc, obj: dict, f: schema.Field, rename) -> None:
    """An option's or class's name: renaming follows through (hybrids' base and burst)."""
    wk = ui.key((*loc, "name"))
    st.text_input("name", obj.get("name", ""), key=wk, help=f.help + " Renaming updates every hybrid that uses it.",
                  on_change=_rename_callback, args=(state, wk, rename, loc[-1]))
    ui.slot((*loc, "name"))


def _picker(ui: Ui, state: dict, what: str, items: list[dict], label: Callable[[dict], str]) -> int | None:
    if not items:
        return None
    idx = min(state[what], len(items) - 1)
    chosen = st.selectbox(f"Edit {'option' if what == 'option' else 'class'}", list(range(len(items))), index=idx,
                          format_func=lambda i: label(items[i]), key=f"{ui.prefix}:pick:{what}")
    state[what] = chosen
    return chosen


def _option_label(o: dict) -> str:
    """The picker's label: name and kind (not the pricing, which the form below changes: a label
    that changed under a picker would confuse its selection)."""
    return f"{o.get('name')} ({o.get('kind')})"


def _options_tab(ui: Ui, state: dict) -> None:
    data = ui.data
    opts = data.get("options", [])
    add_col, add_btn = st.columns([3, 1], vertical_alignment="bottom")
    kind = add_col.selectbox("New option", list(KIND_LABELS), format_func=lambda k: KIND_LABELS[k],
                             key=f"{ui.prefix}:newkind",
                             help="A hybrid uses an existing owned or reserved base and an on-demand or spot burst; "
                             "any it lacks are added with it.")
    add_btn.button("Add option", key=f"{ui.prefix}:add_option", on_click=_restructure,
                   args=(state, lambda d: ops.add_option(d, kind), "option"))
    i = _picker(ui, state, "option", opts, _option_label)
    if i is None:
        ui.slot(("options",))
        return
    deps = ops.dependents(data, i)
    dup_col, rm_col = st.columns(2)
    dup_col.button("Duplicate", key=f"{ui.prefix}:dup_option", on_click=_restructure,
                   args=(state, lambda d: ops.duplicate_option(d, i), "option"), use_container_width=True)
    gone = f" and the hybrids built on it ({', '.join(deps)})" if deps else ""
    rm_col.button("Remove", key=f"{ui.prefix}:rm_option", disabled=len(opts) <= 1 or len(deps) >= len(opts) - 1,
                  help=f"Removes {opts[i].get('name')}{gone}." if len(opts) > 1 else "A scenario needs an option.",
                  on_click=_restructure, use_container_width=True,
                  args=(state, lambda d: (ops.remove_option(d, i), max(0, i - 1)), "option",
                        f"Removed {opts[i].get('name')}{gone}."))
    ui.slot(("options",))
    opt = opts[i]
    loc: Loc = ("options", i)
    name = _OPTION_MODELS.get(opt.get("kind"))
    if name is None:
        st.error(f"kind: {literal_markdown(str(opt.get('kind')))} is not owned, cloud, hybrid or fleet")
        ui.slot(loc)
        return
    with st.container(border=True):
        st.markdown(f"**{literal_markdown(str(opt.get('name')))}**: {SHOWN_KINDS.get(opt.get('kind'), '')}")
        ui.slot(loc)
        others = [o.get("name") for j, o in enumerate(opts) if j != i]
        for f in schema.fields(name):
            if f.name == "kind":
                continue
            if f.name == "name":
                _name_widget(ui, state, loc, opt, f, ops.rename_option)
            elif f.name in ("base", "burst"):
                fit = facts.can_be_base if f.name == "base" else facts.pay_as_you_go  # a burst is rented per use
                names = [n for n in others if fit(next(o for o in opts if o.get("name") == n))] or others
                if opt.get(f.name) not in names:
                    names = [opt.get(f.name), *names]  # a dangling reference stays visible, with its error
                opt[f.name] = st.selectbox(f.name, names, index=names.index(opt.get(f.name)),
                                           key=ui.key((*loc, f.name)), help=f.help)
                ui.slot((*loc, f.name))
            elif schema.applies(f, opt) or opt.get(f.name) not in (None, False):
                before = opt.get("pricing")
                field_widget(ui, opt, f, loc)
                if f.name == "pricing" and opt.get("pricing") != before:
                    _repriced(opt)


def _repriced(opt: dict) -> None:
    """After a cloud option's pricing changed: settings of the old pricing cleared (they would be
    refused), and a reservation given a committed size to start from."""
    for f in schema.fields("CloudOption"):
        if not schema.applies(f, opt):
            opt[f.name] = False if f.name == "renew" else None
    if facts.is_reserved(opt) and opt.get("reserved_gpus") is None:
        opt["reserved_gpus"] = ops.NEW_OPTION_GPUS


def _classes_tab(ui: Ui, state: dict) -> None:
    data = ui.data
    classes = data.get("workload", {}).get("classes", [])
    st.button("Add class", key=f"{ui.prefix}:add_class", on_click=_restructure,
              args=(state, ops.add_class, "cls"))
    k = _picker(ui, state, "cls", classes, lambda c: str(c.get("name")))
    ui.slot(("workload", "classes"))
    if k is None:
        st.caption("No RL job classes: the workload is the trace and fitted job classes alone.")
        return
    dup_col, rm_col = st.columns(2)
    dup_col.button("Duplicate class", key=f"{ui.prefix}:dup_class", on_click=_restructure,
                   args=(state, lambda d: ops.duplicate_class(d, k), "cls"), use_container_width=True)
    last = len(classes) <= 1 and not data.get("workload", {}).get("trace") and not data.get("workload", {}).get("job_classes")
    rm_col.button("Remove class", key=f"{ui.prefix}:rm_class", disabled=last, use_container_width=True,
                  help="A workload needs a trace or a class." if last else f"Removes {classes[k].get('name')}.",
                  on_click=_restructure, args=(state, lambda d: (ops.remove_class(d, k), max(0, k - 1)), "cls",
                                               f"Removed class {classes[k].get('name')}."))
    loc: Loc = ("workload", "classes", k)
    cls = classes[k]
    with st.container(border=True):
        st.markdown(f"**{literal_markdown(str(cls.get('name')))}**: RL job class")
        ui.slot(loc)
        for f in schema.fields("RLClass"):
            if f.name == "name":
                _name_widget(ui, state, loc, cls, f, ops.rename_class)
            elif schema.applies(f, cls) or cls.get(f.name) not in (None, False):
                field_widget(ui, cls, f, loc)


def _show_errors(ui: Ui, errors: dict[Loc, str], summary) -> None:
    """Each problem under the widget of its field (or the nearest shown section); the rest, and
    a count, in the summary box at the top."""
    placed: dict[Loc, list[str]] = {}
    elsewhere: list[str] = []
    shown = set(ui.slots)
    at: dict[Loc, Loc] = {}
    for loc, message in errors.items():
        target = at[loc] = ops.place(loc, message, ui.data, shown)
        if target == () and () not in shown:
            elsewhere.append(f"{describe(ui.data, loc)}: {message}")
            continue
        placed.setdefault(target, []).append(message)
    for target, messages in placed.items():
        name = next((str(p) for p in reversed(target) if isinstance(p, str)), "scenario")
        ui.slots[target].error("\n\n".join(f"{literal_markdown(name)}: {literal_markdown(m)}" for m in messages))
    if errors:
        where = "; ".join(literal_markdown(describe(ui.data, at[loc] or loc)) for loc in errors)
        summary.warning(f"{len(errors)} problem{'s' * (len(errors) > 1)} to fix before this scenario can run: {where}.")
        for line in elsewhere:
            summary.error(literal_markdown(line))


def _job_classes_text(ui: Ui) -> None:
    """``workload.job_classes`` (fitted plain jobs, as ``costsim fit-workload`` writes them) as YAML
    text: a list of classes, each with its profiles, GPU pmf and run-time law, too many numbers for
    a form. Text that is not YAML is kept as typed, so the check names the field and the last
    results stay, marked stale."""
    loc = ("workload", "job_classes")
    f = next(x for x in schema.fields("Workload") if x.name == "job_classes")
    current = ui.data["workload"].get("job_classes") or []
    if isinstance(current, str):  # what was typed last, not YAML
        shown = current
    else:
        shown = yaml_dump(current, inline_leaves=True) if current else ""  # profiles on one line each
    text = st.text_area("job_classes (YAML list; empty: none)", shown, key=ui.key(loc), help=f.help,
                        height=220 if current else 68)
    ui.slot(loc)
    # The pure parser: typed text means what the same text in a scenario file means.
    try:
        parsed = YAML(typ="safe", pure=True).load(text) if text.strip() else []
    except YAMLError as exc:
        st.error(literal_markdown(f"job_classes: not YAML: {str(exc).splitlines()[0]}"))
        parsed = text
    ui.data["workload"]["job_classes"] = [] if parsed is None else parsed


def scenario_editor(data: dict, key: str, base_dir: Path | str | None = None,
                    load: Callable[[dict], Scenario] | None = None) -> EditorResult:
    """Render the editor for ``data`` (``scenario.model_dump(mode="json")``) and return the result.

    ``key``: a prefix for every widget and the session state, different for each loaded scenario
    (a hash of its content), the same across reruns. ``base_dir``: where a relative trace path is
    read from (the loaded scenario's ``base_dir``; default the working folder). ``load``: how the
    data is checked, in place of ``costsim.scenario_from_data`` (``editor_ops.validate``)."""
    state = editor_state(data, key)
    ui = Ui(f"{key}:{state['gen']}", state["data"])
    top = st.container()
    if state["note"]:
        top.info(literal_markdown(state["note"]))
        state["note"] = None  # said once
    t_general, t_options, t_classes, t_econ = st.tabs(
        ["Scenario and workload", "Options", "Workload classes", "Economics and serving"])
    with t_general:
        ui.slot(())
        for f in schema.fields("Scenario"):
            if f.name not in ("economics", "workload", "serving", "options"):
                field_widget(ui, ui.data, f, ())
        section(ui, "Workload", ("workload",), ui.data.setdefault("workload", {}), "workload",
                skip=("classes", "job_classes"))
        _job_classes_text(ui)
    with t_options:
        _options_tab(ui, state)
    with t_classes:
        _classes_tab(ui, state)
    with t_econ:
        section(ui, "Economics", ("economics",), ui.data.setdefault("economics", {}), "economics",
                help=schema.model("Economics").get("description"))
        serving = next(f for f in schema.fields("Scenario") if f.name == "serving")
        field_widget(ui, ui.data, serving, ())
    st.button("Reset to the loaded scenario", key=f"{key}:reset", on_click=_restructure,
              args=(state, lambda d: (copy.deepcopy(state["loaded"]), None), None, "Reset to the loaded scenario."))
    scenario, errors = ops.validate(ui.data, base_dir if base_dir is not None else Path.cwd(), load)
    _show_errors(ui, errors, top)
    return EditorResult(copy.deepcopy(ui.data), scenario, errors)
