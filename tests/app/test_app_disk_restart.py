"""A dashboard server started again shows what an earlier one ran, from disk, without simulating."""

import pytest
from apptest_helpers import start

import costsim.dashboard as dashboard
from costsim.dashboard import bounded

pytestmark = pytest.mark.usefixtures("fresh_streamlit_caches")


def verdict_text(at) -> str:
    (line,) = [m.value for m in at.markdown if m.value.startswith("**Verdict:**")]
    return line


def test_a_server_started_again_shows_the_runs_an_earlier_one_kept_on_disk(tmp_path, monkeypatch):
    import streamlit as st

    monkeypatch.setenv("COSTSIM_CACHE_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("COSTSIM_DISK_CACHE_MB", "2048")
    first = start()
    assert not first.exception
    shown = verdict_text(first)
    assert len(list((tmp_path / "runs").glob("costsim-*.run"))) == 3  # the three replications

    st.cache_resource.clear()  # a new server: nothing in memory
    st.cache_data.clear()

    def no_simulation(*args, **kwargs):
        raise AssertionError("simulated again")

    monkeypatch.setattr(bounded, "simulate_many", no_simulation)
    monkeypatch.setattr(dashboard, "simulate_many", no_simulation)  # as app.py imports it
    again = start()
    assert not again.exception
    assert verdict_text(again) == shown

    monkeypatch.setenv("COSTSIM_DISK_CACHE_MB", "0")  # and without the disk it would have simulated
    st.cache_resource.clear()
    st.cache_data.clear()
    assert start().exception  # the run was asked for (and refused here)
