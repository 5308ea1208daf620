"""Widgets for the scenario editor, generated from the scenario's JSON schema: one per field, by
type (numbers with the schema's bounds, enums as select boxes, booleans as checkboxes), nullable
fields with a "use default" toggle naming the catalog value, help text from the schema's field
descriptions, and an empty slot under each widget where the editor puts that field's error.

Widgets write their values into the working data in place, each run; keys are
``<editor key>:<generation>:<field path>`` so a structural change (a new generation) or a new
scenario (a new editor key) shows the data's own values.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import streamlit as st
from pydantic import BaseModel
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from costsim.dashboard import editor_schema as schema
from costsim.dashboard.editor_schema import Field, Loc
from costsim.present.formats import plain
from costsim.scenario import model as _model_mod
from costsim.scenario import options as _options_mod
from costsim.scenario.classes import (
    ClassCheckpoint,
    LengthSpread,
    Parallelism,
    Rollout,
    Scaling,
    ScalingCurve,
    Scoring,
    Spread,
    Update,
)
from costsim.scenario.io import yaml_dump

_MODELS: dict[str, type[BaseModel]] = {
    "Failures": _options_mod.Failures, "Stockout": _options_mod.Stockout, "Serving": _model_mod.Serving,
    "ServingGPUs": _model_mod.ServingGPUs, "TraceCheckpoint": _model_mod.TraceCheckpoint,
    "Parallelism": Parallelism, "Spread": Spread, "LengthSpread": LengthSpread, "Rollout": Rollout,
    "Scoring": Scoring, "Update": Update, "ClassCheckpoint": ClassCheckpoint, "Scaling": Scaling,
    "ScalingCurve": ScalingCurve,
}
# Required fields of a section switched on from null: a valid start the user then edits.
_STARTS = {"Stockout": {"probability": 0.1}, "Serving": {"gpus": {"base": 64.0}},
           "TraceCheckpoint": {"every_hours": 1.0}, "Spread": {"mean": 100.0},
           "LengthSpread": {"mean": 2000.0, "cv": 1.0},
           "Scaling": {"curve": {"a": 1.0, "b": 1.0, "c_mid_gpu_hours": 10000.0, "r0": 0.0}, "target": 0.5},
           "ScalingCurve": {"a": 1.0, "b": 1.0, "c_mid_gpu_hours": 10000.0, "r0": 0.0}}


def start_value(model_name: str) -> dict:
    """A valid mapping for a section switched on (defaults written out)."""
    raw = schema.failures_default() if model_name == "Failures" else copy.deepcopy(_STARTS.get(model_name, {}))
    return _MODELS[model_name].model_validate(raw).model_dump(mode="json")


@dataclass
class Ui:
    """One editor run: key prefix, the whole working data (for catalog defaults), and the slot
    under each rendered widget or section, by field path."""

    prefix: str
    data: dict
    slots: dict[Loc, Any] = field(default_factory=dict)

    def key(self, loc: Loc, suffix: str = "") -> str:
        return f"{self.prefix}:{'.'.join(str(p) for p in loc)}{suffix}"

    def slot(self, loc: Loc) -> None:
        self.slots[loc] = st.empty()


def fmt(value: Any) -> str:
    """A default as the toggle names it: 0.085, 225,000, fifo."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    return plain(value)


def _step(value: float, lo: float | None) -> float:
    """A float widget's +/- step: about a tenth of the value's order of magnitude."""
    mag = abs(value) or abs(lo or 0) or 1.0
    order = 10 ** int(f"{mag:e}".split("e")[1])
    return float(order) / 10 if order >= 1 else float(order)


def whole_number(label: str, value: Any, key: str, help: str, lo: int | None = None, hi: int | None = None) -> Any:
    """A whole-number widget within [lo, hi]; for a value a number widget cannot hold (beyond
    JavaScript's exact integers, ``MAX_SAFE_INT``, or not a whole number) a text box, whose text is
    returned as typed when it is not a number (the scenario's check then names the field)."""
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) > schema.MAX_SAFE_INT:
        text = st.text_input(label, str(value), key=key, help=help)
        try:
            return int(text)
        except ValueError:
            return text
    return st.number_input(label, min_value=lo, max_value=hi, value=value, step=1, key=key, help=help)


def number(ui: Ui, f: Field, spec: dict, loc: Loc, value: Any) -> Any:
    """A number input within the schema's bounds (widened to hold a value the data already has,
    so a bad value reaches validation and shows its error instead of breaking the widget)."""
    if spec.get("type") == "integer":
        least, most = schema.whole_bounds(spec)
        if isinstance(value, int) and not isinstance(value, bool):
            least = None if least is None else min(least, value)
            most = None if most is None else max(most, value)
        return whole_number(f.name, value, ui.key(loc), f.help, least, most)
    lo, hi = schema.bounds(spec)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        value = float(lo or 0.0)
    value = float(value)
    lo = None if lo is None else float(min(lo, value))
    hi = None if hi is None else float(max(hi, value))
    return st.number_input(f.name, min_value=lo, max_value=hi, value=value, step=_step(value, lo), format="%g",
                           key=ui.key(loc), help=f.help)


def scalar(ui: Ui, f: Field, spec: dict, loc: Loc, value: Any, **kw: Any) -> Any:
    """The widget for one scalar value of type ``spec``; returns its value."""
    if "const" in spec:
        st.caption(f"{f.name}: {fmt(spec['const'])} (fixed)")
        return spec["const"]
    options = schema.choices(spec)
    if options is not None:
        if value not in options:
            options = [*options, value]  # a bad value stays selectable and is reported
        return st.selectbox(f.name, options, index=options.index(value), key=ui.key(loc), help=f.help, **kw)
    kind = spec.get("type")
    if kind == "boolean":
        return st.checkbox(f.name, bool(value), key=ui.key(loc), help=f.help)
    if kind in ("integer", "number"):
        return number(ui, f, spec, loc, value)
    if kind == "array" and "$ref" in spec.get("items", {}):  # a list of mappings (tranches, a resale curve)
        return _mappings_text(ui, f, loc, value, **kw)
    if kind == "array":  # a list of words (decision.targets): one per line
        typed = st.text_area(f.name, "\n".join(map(str, value or ())), key=ui.key(loc),
                             help=f"{f.help} One per line.", **kw)
        return [line.strip() for line in typed.splitlines() if line.strip()]
    text = "" if value is None else str(value)
    if f.name == "description":
        return st.text_area(f.name, text, key=ui.key(loc), help=f.help, **kw)
    return st.text_input(f.name, text, key=ui.key(loc), help=f.help, **kw)


def _mappings_text(ui: Ui, f: Field, loc: Loc, value: Any, **kw: Any) -> Any:
    """A list of mappings as YAML text, one mapping a line (``{gpus: 8, order_day: 30}``). Text that
    is not a YAML list is kept as typed, so the check names the field."""
    if isinstance(value, str):  # what was typed last, not YAML
        shown = value
    else:
        shown = yaml_dump(list(value or ()), inline_leaves=True) if value else ""
    typed = st.text_area(f.name, shown, key=ui.key(loc), help=f"{f.help} YAML, one mapping a line.", **kw)
    # The pure parser: typed text means what the same text in a scenario file means.
    try:
        parsed = YAML(typ="safe", pure=True).load(typed) if typed.strip() else []
    except YAMLError:
        return typed
    return typed if not isinstance(parsed, list) else parsed


def _variant_of(f: Field, value: Any) -> int | None:
    """Which of the field's non-null branches ``value`` is (None: null)."""
    if value is None:
        return None
    for i, v in enumerate(f.variants):
        if "const" in v and value == v["const"]:
            return i
        if "$ref" in v and isinstance(value, dict):
            return i
        if "$ref" not in v and "const" not in v and not isinstance(value, dict):
            return i
    return 0


def _variant_label(v: dict) -> str:
    if "const" in v:
        return str(v["const"])
    if (ref := schema.ref_name(v)) is not None:
        return "{" + ", ".join(schema.model(ref)["properties"]) + "}"
    return "a number" if v.get("type") in ("integer", "number") else str(v.get("type", "value"))


def _convert(f: Field, old: Any, new_variant: int | None) -> Any:
    """The value carried into the branch the user switched to (a number into a spread's mean)."""
    if new_variant is None:
        return None
    v = f.variants[new_variant]
    if "const" in v:
        return v["const"]
    if (ref := schema.ref_name(v)) is not None:
        start = start_value(ref)
        if isinstance(old, (int, float)) and not isinstance(old, bool):
            start["mean"] = float(old)
            if "max" in start:
                start["max"] = max(start["max"], float(old))
        return start
    if isinstance(old, dict) and "mean" in old:
        mean = old["mean"]
        return max(1, round(mean)) if v.get("type") == "integer" else float(mean)
    lo, _ = schema.bounds(v)
    return lo if lo is not None else 0


def field_widget(ui: Ui, obj: dict, f: Field, loc: Loc, **kw: Any) -> None:
    """Render field ``f`` of ``obj`` (at ``loc``) and write its value back into ``obj``."""
    value = obj.get(f.name)
    floc = (*loc, f.name)
    if len(f.variants) > 1:  # a number or a mapping; a mapping or a word; maybe null
        labels = [_variant_label(v) for v in f.variants]
        picks: list[int | None] = list(range(len(f.variants))) + ([None] if f.nullable else [])
        none = "none" if f.null_means in ("none", "default") else f"none ({f.null_means})"
        names = labels + ([none] if f.nullable else [])
        current = _variant_of(f, value)
        chosen = st.selectbox(f.name, picks, index=picks.index(current), format_func=lambda i: names[picks.index(i)],
                              key=ui.key(floc, ":form"), help=f.help)
        if chosen != current:
            value = _convert(f, value, chosen)
        ui.slot(floc)
        if chosen is not None:
            v = f.variants[chosen]
            if (ref := schema.ref_name(v)) is not None:
                value = section(ui, ref, floc, value, title=None)
            elif "const" not in v:
                value = scalar(ui, f, v, (*floc, "value"), value)
        obj[f.name] = value
        return
    spec = f.variants[0]
    ref = schema.ref_name(spec)
    if ref is not None:
        if f.nullable:
            on = st.toggle(f"{f.name}: set", value is not None, key=ui.key(floc, ":on"),
                           help=f"{f.help} Off: {f.null_means}.")
            ui.slot(floc)
            if not on:
                obj[f.name] = None
                return
            if value is None:
                value = start_value(ref)
        else:
            ui.slot(floc)
        obj[f.name] = section(ui, ref, floc, value, title=f.name, help=None if f.nullable else f.help)
        return
    if f.nullable:
        default = schema.catalog_default(ui.data, floc)
        shown = fmt(default) if default is not None else f.null_means
        use_default = st.toggle(f"{f.name}: use default ({shown})", value is None, key=ui.key(floc, ":default"),
                                help=f.help)
        if use_default:
            ui.slot(floc)
            obj[f.name] = None
            return
        if value is None:  # start from the value null stood for, where there is one
            if spec.get("type") == "array" and isinstance(default, str):
                value = default.split(" and ")  # a list null stands for, said as "a and b"
            elif default is not None and (not isinstance(default, str) or schema.choices(spec)):
                value = default
            elif f.default is not None:
                value = f.default
            else:
                value = schema.bounds(spec)[0]
    obj[f.name] = scalar(ui, f, spec, floc, value, **kw)
    ui.slot(floc)


def section(ui: Ui, model_name: str, loc: Loc, obj: Any, title: str | None, help: str | None = None,
            skip: tuple[str, ...] = ()) -> dict:
    """A bordered box with every field of ``model_name`` for the mapping ``obj`` at ``loc``."""
    if not isinstance(obj, dict):
        obj = start_value(model_name)
    with st.container(border=True):
        if title:
            st.markdown(f"**{title}**", help=help)
        for f in schema.fields(model_name):
            if f.name in skip:
                continue
            if not schema.applies(f, obj) and obj.get(f.name) in (None, False):
                continue  # does not apply here and is not set: nothing to edit
            field_widget(ui, obj, f, loc)
    return obj
