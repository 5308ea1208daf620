"""The order a session's first page reaches the browser: the first screen drawn before the tab.

Streamlit's page loads plotly.js (a 4.7 MB module) when a session's first chart arrives, and what
arrives in the same moment is drawn only once that module is loaded: the first screen's cards
appeared in the same frame as the Overview tab's figure below them, though the script sends the
cards first. Sent a moment after the cards, the tab arrives once the browser has drawn them (how
much sooner the cards appear: docs/performance.md, measured by ``benchmarks/dashboard_timing.py``).
Later pages of the session find plotly.js loaded: no pause.
"""

from __future__ import annotations

import time
from collections.abc import Callable, MutableMapping
from typing import Any

FIRST_TAB_PAUSE_S = 0.4  # 0.2 s left the cards waiting in 2 of 3 pages; 0.4 s in none of 18
FIRST_SCREEN_SENT = "first_screen_sent"  # the session key set once the pause is taken


def pause_before_first_tab(session: MutableMapping[str, Any], sleep: Callable[[float], None] | None = None) -> None:
    """Before drawing the tab under a session's first screen (whose cards are sent): wait
    ``FIRST_TAB_PAUSE_S`` seconds (by ``sleep``, default ``time.sleep``), once per ``session``, for
    the browser to draw what it has."""
    if not session.get(FIRST_SCREEN_SENT):
        session[FIRST_SCREEN_SENT] = True
        (sleep or time.sleep)(FIRST_TAB_PAUSE_S)
