"""The knobs and the editor share one working copy (costsim.dashboard.state), step by step on a
plain dict as the session: which scenario the knobs start from and which key their widgets get."""

from __future__ import annotations

from helpers import TINY_RL

import costsim
from costsim.dashboard import state


def _scenarios(tmp_path):
    (tmp_path / "s.yaml").write_text(TINY_RL)
    loaded = costsim.load_scenario(tmp_path / "s.yaml")
    edited = costsim.scenario_from_data({**loaded.model_dump(mode="json"), "horizon_days": 4}, "s", tmp_path)
    return loaded, edited


def _key(data: dict) -> str:
    return f"k{data['horizon_days']}"


def test_untouched_knobs_start_from_the_loaded_scenario_under_its_key(tmp_path):
    loaded, _ = _scenarios(tmp_path)
    session: dict = {}
    base = state.knob_base(session, "ed-a.0", loaded, loaded)
    assert base is loaded
    assert state.knob_key(session, loaded_key="a", editor_key="ed-a.0", base=base, loaded=loaded,
                          data_key=_key) == "a.0"


def test_an_edit_keys_the_knobs_by_the_working_copy_and_a_broken_edit_keeps_the_last_good_one(tmp_path):
    loaded, edited = _scenarios(tmp_path)
    session: dict = {}
    assert state.knob_base(session, "ed-a.0", edited, loaded) is edited
    assert state.knob_key(session, loaded_key="a", editor_key="ed-a.0", base=edited, loaded=loaded,
                          data_key=_key) == "a.0.k4.0"
    # The editor's copy now has a problem: the knobs keep showing the last copy that had none ...
    assert state.knob_base(session, "ed-a.0", None, loaded) is edited
    # ... but never another editor's (another scenario, or after a reset).
    assert state.knob_base(session, "ed-b.0", None, loaded) is loaded


def test_a_copy_the_knobs_wrote_keeps_the_knobs_key(tmp_path):
    loaded, edited = _scenarios(tmp_path)
    session: dict = {}
    state.knobs_pushed(session, editor_key="ed-a.0", scenario=edited, key="a.0")
    assert state.knob_key(session, loaded_key="a", editor_key="ed-a.0", base=edited, loaded=loaded,
                          data_key=_key) == "a.0"
    # Pushed under another editor key: keyed by the copy, as any edit.
    assert state.knob_key(session, loaded_key="a", editor_key="ed-a.1", base=edited, loaded=loaded,
                          data_key=_key) == "a.0.k4.0"


def test_reset_starts_a_new_generation_of_keys(tmp_path):
    loaded, _ = _scenarios(tmp_path)
    session: dict = {}
    state.reset(session)
    state.reset(session)
    assert state.generation(session) == 2
    assert state.knob_key(session, loaded_key="a", editor_key="ed-a.2", base=loaded, loaded=loaded,
                          data_key=_key) == "a.2"
