"""How the sidebar's knobs and the scenario editor share one working copy, kept in the session
(a ``MutableMapping``: Streamlit's ``st.session_state`` in the app, a dict in tests).

The editor holds the working copy; the knobs start from it and, when changed, write their result
back into it (``edit.push``). The knobs' widgets are keyed so that they always start from what the
editor holds — by the loaded scenario, and by the working copy once it differs from it — except
that a working copy the knobs themselves wrote keeps the knobs' key: otherwise the values typed
next (in widgets drawn under that key) would be dropped.

Session keys: ``generation`` (the reset counter), ``last_good_edit`` (the editor key and the last
working copy without problems), ``knobs_pushed`` (the editor key, the data the knobs wrote and the
knobs' key they were drawn under); and ``kept:<name>`` for what ``kept`` remembers.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any, TypeVar

from costsim.scenario import Scenario

T = TypeVar("T")

GENERATION = "generation"
LAST_GOOD_EDIT = "last_good_edit"
KNOBS_PUSHED = "knobs_pushed"


def generation(session: MutableMapping[str, Any]) -> int:
    """The reset counter: every widget key includes it, so a reset draws fresh widgets."""
    return int(session.get(GENERATION, 0))


def reset(session: MutableMapping[str, Any]) -> None:
    """Back to the scenario's own values, the editor's too: a new generation of widget keys."""
    session[GENERATION] = generation(session) + 1


def knob_base(session: MutableMapping[str, Any], editor_key: str, working: Scenario | None,
              loaded: Scenario) -> Scenario:
    """The scenario the knobs start from: the editor's working copy when it has no problems (and
    remembered as the last good one), else the last good copy of this editor, else the loaded
    scenario."""
    if working is not None:
        session[LAST_GOOD_EDIT] = (editor_key, working)
        return working
    saved = session.get(LAST_GOOD_EDIT)
    return saved[1] if saved is not None and saved[0] == editor_key else loaded


def knob_key(session: MutableMapping[str, Any], *, loaded_key: str, editor_key: str, base: Scenario,
             loaded: Scenario, data_key: Callable[[dict], str]) -> str:
    """The key of the knobs' widgets: the loaded scenario's content key and the generation; once
    the working copy ``base`` differs from the loaded scenario, its own content key too — unless
    the knobs wrote that very copy (``knobs_pushed``), which keeps the key they were drawn under."""
    key = f"{loaded_key}.{generation(session)}"
    if base == loaded:
        return key
    data = base.model_dump(mode="json")
    pushed = session.get(KNOBS_PUSHED)
    if pushed is not None and pushed[:2] == (editor_key, data):
        return str(pushed[2])
    return f"{key}.{data_key(data)}"


def knobs_pushed(session: MutableMapping[str, Any], *, editor_key: str, scenario: Scenario, key: str) -> None:
    """Remember that the knobs (drawn under ``key``) wrote ``scenario`` into the editor's copy."""
    session[KNOBS_PUSHED] = (editor_key, scenario.model_dump(mode="json"), key)


def kept(session: MutableMapping[str, Any], name: str, key: object, make: Callable[[], T]) -> T:
    """``make()``, or what it gave when ``name`` was last asked for with an equal ``key`` (one value
    kept per name, in the session). Streamlit runs the whole script for every click, so what a
    rerun would compute again unchanged is kept here: the check of an uploaded or shipped scenario,
    the knobs applied to it, the verdict on the same runs (on a 3-year lab with serving these took
    most of a tab switch). An error from ``make`` keeps nothing."""
    saved = session.get(f"kept:{name}")
    if saved is not None and saved[0] == key:
        return saved[1]
    value = make()
    session[f"kept:{name}"] = (key, value)
    return value
