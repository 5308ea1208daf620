"""A session's first page: the tab under the first screen is drawn a moment after the cards, so a
browser draws the cards before loading plotly.js for the tab's figure (``costsim.dashboard.first_paint``;
the time it saves is measured in ``benchmarks/dashboard_timing.py``). The suite sets the pause to 0
(tests/conftest.py); these tests put it back and record it instead of sleeping."""

from types import SimpleNamespace

from apptest_helpers import start

from costsim.dashboard import first_paint

PAUSE_S = 0.4


def test_the_pause_is_taken_once_per_session(monkeypatch):
    monkeypatch.setattr(first_paint, "FIRST_TAB_PAUSE_S", PAUSE_S)
    waits, session = [], {}
    first_paint.pause_before_first_tab(session, waits.append)
    first_paint.pause_before_first_tab(session, waits.append)
    assert waits == [PAUSE_S] and session[first_paint.FIRST_SCREEN_SENT]
    first_paint.pause_before_first_tab({}, waits.append)  # another session pauses too
    assert waits == [PAUSE_S, PAUSE_S]


def test_the_app_pauses_before_its_first_tab_only(monkeypatch):
    monkeypatch.setattr(first_paint, "FIRST_TAB_PAUSE_S", PAUSE_S)
    waits = []
    monkeypatch.setattr(first_paint, "time", SimpleNamespace(sleep=waits.append))
    at = start()
    assert not at.exception and at.metric and waits == [PAUSE_S]
    at = at.radio(key="tab").set_value("Cost").run()
    assert not at.exception and waits == [PAUSE_S]  # a tab later in the session: plotly.js is loaded
    assert start().metric and waits == [PAUSE_S, PAUSE_S]  # a new session (a page opened again)
