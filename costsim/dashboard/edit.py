"""The "Edit scenario" tab's state in the dashboard (Streamlit): one working copy of the scenario,
held by the scenario editor (``editor.scenario_editor``), which both the editor and the sidebar knobs edit.

- The editor is keyed by the *loaded* scenario (``editor_key``: its content key and the reset
  counter), never by the edited data, so its widgets survive its own edits and a new upload, a
  scenario switch or a reset starts a fresh copy.
- When the tab is not shown the working copy is read from the session (``peek``) and checked the
  same way the editor checks it, so what runs does not depend on which tab is open.
- A knob that changes the scenario writes the result into the working copy (``push``), so the
  editor shows it and a later edit in the editor does not undo it: one source of truth.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from costsim.dashboard import editor_ops
from costsim.dashboard.editor import editor_state, scenario_editor
from costsim.dashboard.sharing import content_key
from costsim.dashboard.uploads import dashboard_scenario
from costsim.scenario import Scenario

EDIT_TAB = "Edit scenario"


@dataclass(frozen=True)
class Edit:
    """The working copy: its plain data, the checked Scenario (None while it has problems) and
    each problem by field path."""

    data: dict
    scenario: Scenario | None
    errors: dict

    @property
    def ok(self) -> bool:
        return self.scenario is not None


def editor_key(base_key: str, generation: int) -> str:
    """The editor's key: the loaded scenario's content key and the reset counter (a reset draws a fresh editor)."""
    return f"ed-{base_key}.{generation}"


def data_key(data: dict) -> str:
    """A short name for plain scenario data (sorted JSON), for keying the knobs by the working copy."""
    return content_key(json.dumps(data, sort_keys=True, default=str).encode())


def checker(base: Scenario, root: Path) -> Callable[[dict], Scenario]:
    """How the working copy is checked: as ``costsim.scenario_from_data``, but reading only the
    files the dashboard may read (``uploads.check_file_fields``: ``base``'s upload and shipped
    files) and with no server path in a message (``uploads.dashboard_scenario``)."""
    return lambda data: dashboard_scenario(data, base, root)


def peek(key: str, base: Scenario, root: Path) -> Edit:
    """The working copy without drawing the editor: ``base`` itself until anything was edited.
    ``root``: the server's upload folder."""
    state = st.session_state.get(f"{key}:editor")
    if state is None or state["data"] == state["loaded"]:
        return Edit(base.model_dump(mode="json"), base, {})
    scenario, errors = editor_ops.validate(state["data"], base.base_dir, checker(base, root))
    return Edit(state["data"], scenario, errors)


def draw(key: str, base: Scenario, root: Path) -> Edit:
    """The editor, drawn where this is called, and its working copy after this run. ``root``: the
    server's upload folder."""
    st.caption("Every field of the scenario, with the schema's help. What you change here is what runs; "
               "the sidebar knobs change the same copy. While a field has a problem the results above stay, "
               "marked stale.")
    result = scenario_editor(base.model_dump(mode="json"), key, base_dir=base.base_dir, load=checker(base, root))
    return Edit(result.data, result.scenario, result.errors)


def push(key: str, base: Scenario, scenario: Scenario) -> bool:
    """Write ``scenario`` (the working copy with the knobs applied) into the editor's working copy
    when it differs, with a new widget generation so the editor's widgets show it; whether it did."""
    state = editor_state(base.model_dump(mode="json"), key)
    data = scenario.model_dump(mode="json")
    if data == state["data"]:
        return False
    state["data"] = data
    state["gen"] += 1
    return True
