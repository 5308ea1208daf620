"""AppTest harness for costsim.dashboard.editor: edits the scenario named by
``st.session_state["scenario"]`` (a shipped scenario's stem; default baseline) and keeps the
EditorResult in ``st.session_state["result"]`` for the test to read."""

import hashlib
import json

import streamlit as st

import costsim
from costsim.dashboard import SCENARIO_DIR
from costsim.dashboard.editor import scenario_editor

name = st.session_state.get("scenario", "baseline")
scenario = costsim.load_scenario(SCENARIO_DIR / f"{name}.yaml")
data = scenario.model_dump(mode="json")
key = "ed-" + hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:12]
st.session_state["input"] = data
st.session_state["result"] = scenario_editor(data, key, base_dir=scenario.base_dir)
