"""What a rerun does not compute again: ``state.kept`` remembers one value per name in the session
for an equal key (an error remembers nothing); untouched knobs give back the checked scenario
itself; the server freezes its imports for the garbage collector once per process."""

from __future__ import annotations

import gc

import pytest
from helpers import TINY_RL

import costsim
from costsim.dashboard import state
from costsim.dashboard.knobs import apply_knobs, current_knobs
from costsim.scenario import ScenarioError


def test_kept_makes_once_per_equal_key_and_forgets_on_a_new_one():
    session: dict = {}
    calls = []

    def make(value):
        def go():
            calls.append(value)
            return value
        return go

    assert state.kept(session, "verdict", ["a", "b"], make(1)) == 1
    assert state.kept(session, "verdict", ["a", "b"], make(2)) == 1  # equal key: kept
    assert state.kept(session, "other", ["a", "b"], make(3)) == 3  # each name its own
    assert state.kept(session, "verdict", ["a", "c"], make(4)) == 4  # a new key: made again
    assert state.kept(session, "verdict", ["a", "b"], make(5)) == 5  # one kept per name
    assert calls == [1, 3, 4, 5]


def test_kept_keeps_nothing_from_an_error():
    session: dict = {}

    def fails():
        raise ScenarioError("s", [])

    with pytest.raises(ScenarioError):
        state.kept(session, "upload", "k", fails)
    assert state.kept(session, "upload", "k", lambda: "ok") == "ok"


def test_untouched_knobs_give_back_the_checked_scenario_itself(tmp_path):
    (tmp_path / "s.yaml").write_text(TINY_RL)
    sc = costsim.load_scenario(tmp_path / "s.yaml")
    assert apply_knobs(sc, current_knobs(sc)) is sc
    turned = apply_knobs(sc, type(current_knobs(sc))(**{**current_knobs(sc).__dict__, "arrival_scale": 2.0}))
    assert turned is not sc and turned.workload.arrival_scale == 2.0


def test_the_server_freezes_its_imports_once_per_process():
    from costsim.dashboard.server import imports_frozen

    imports_frozen.clear()
    assert imports_frozen() is True
    frozen = gc.get_freeze_count()
    assert frozen > 0
    made_since = [[] for _ in range(1000)]  # new objects the garbage collector tracks
    imports_frozen.clear()  # as a test process clearing Streamlit's caches does
    imports_frozen()
    assert gc.get_freeze_count() <= frozen and made_since  # nothing more frozen (a frozen object may be freed)
