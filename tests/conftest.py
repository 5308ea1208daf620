"""Test-wide settings: a derandomised hypothesis profile, so CI runs are repeatable."""

from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=30)
settings.load_profile("ci")


import os  # noqa: E402

import pytest  # noqa: E402

# The dashboard keeps runs on disk between server starts (costsim.dashboard.disk_runs): never in the
# user's own cache from a test, and a test (or a server it starts) sees runs from disk only when it
# asks for a folder of its own.
os.environ["COSTSIM_DISK_CACHE_MB"] = "0"


@pytest.fixture(autouse=True)
def _fresh_trace_cache():
    """Each test reads its traces afresh: costsim keeps the last tables read (``read_trace``), and
    a test that rewrites a file within the file system's clock tick, or counts reads, must not see
    another test's table."""
    from costsim.scenario import trace

    trace._read_once.cache_clear()
    yield


@pytest.fixture(autouse=True)
def _main_module_restored():
    """Streamlit's AppTest runs its script as ``__main__`` and leaves it there; a process pool
    started later with "spawn" would then re-run that script in each worker (and an
    ``AppTest.from_function`` script dies there). Each test starts with this process's own."""
    import sys

    main = sys.modules.get("__main__")
    yield
    if main is not None and sys.modules.get("__main__") is not main:
        sys.modules["__main__"] = main


@pytest.fixture(autouse=True)
def _no_first_tab_pause(monkeypatch):
    """A dashboard session pauses before its first tab so that a browser draws the cards first
    (``costsim.dashboard.first_paint``); AppTest has no browser, and each of its sessions would
    wait: the pause's sleep is a no-op here. tests/app/test_first_paint.py records it instead; the
    browser tests' servers, processes of their own, take it."""
    from types import SimpleNamespace

    from costsim.dashboard import first_paint

    monkeypatch.setattr(first_paint, "time", SimpleNamespace(sleep=lambda seconds: None))
