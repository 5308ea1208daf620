"""A session's first page: the tab under the first screen is drawn a moment after the cards, so a
browser draws the cards before loading plotly.js for the tab's figure (``costsim.dashboard.first_paint``;
the time it saves is measured in ``benchmarks/dashboard_timing.py``). The suite makes the pause's
sleep a no-op (tests/conftest.py); these tests record it instead."""

from types import SimpleNamespace

import streamlit as st
from apptest_helpers import start

from costsim.dashboard import first_paint


def test_the_pause_is_long_enough_and_taken_once_per_session():
    assert first_paint.FIRST_TAB_PAUSE_S > 0.2  # 0.2 s left the cards waiting for the figure (docs/performance.md)
    waits, session = [], {}
    first_paint.pause_before_first_tab(session, waits.append)
    first_paint.pause_before_first_tab(session, waits.append)
    assert waits == [first_paint.FIRST_TAB_PAUSE_S] and session[first_paint.FIRST_SCREEN_SENT]
    first_paint.pause_before_first_tab({}, waits.append)  # another session pauses too
    assert waits == [first_paint.FIRST_TAB_PAUSE_S] * 2


def test_the_app_pauses_after_its_first_screen_before_its_first_tab_only(monkeypatch):
    waits = []

    def sleep(seconds: float) -> None:
        # the first screen's runs are in (the cards are drawn from them), no figure of a tab yet
        waits.append((seconds, "last_good" in st.session_state))

    monkeypatch.setattr(first_paint, "time", SimpleNamespace(sleep=sleep))
    at = start()
    first = (first_paint.FIRST_TAB_PAUSE_S, True)
    assert not at.exception and at.metric and waits == [first]
    at = at.radio(key="tab").set_value("Cost").run()
    assert not at.exception and waits == [first]  # a tab later in the session: plotly.js is loaded
    assert start().metric and waits == [first, first]  # a new session (a page opened again)
