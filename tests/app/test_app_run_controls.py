"""The dashboard's run controls through Streamlit's AppTest: the replication count a user chose
is kept across an upload and a scenario switch; a run stopped at the time limit says what to
lower (with the values that ran) and offers a retry with one replication. Truth: the scenario in
the URL (what ran) and ``costsim.simulate`` of it with the first replication's seed.
"""

from __future__ import annotations

import pytest
from apptest_helpers import cards, knob, ran, short, start, submit, upload
from paths import APP
from streamlit.testing.v1 import AppTest

import costsim
from costsim.dashboard import encode_scenario
from costsim.dashboard.sidebar import REPLICATIONS_KEY
from costsim.runs.sweepfile import replication_seed

pytestmark = pytest.mark.usefixtures("fresh_cache_data")


def one_run_cards(at: AppTest) -> list[str]:
    """The amortised-cost cards one replication of the scenario in the URL gives, without the dashboard."""
    sc = ran(at)
    return [f"${v:,.0f}" for v in costsim.simulate(sc, seed=replication_seed(sc.seed, 0)).summary.total_cost_usd]


def one_replication_ran(at: AppTest) -> None:
    """The knob says 1 and the cards are one replication's numbers (no interval)."""
    assert not at.exception and not at.error
    assert knob(at, "replications").value == 1
    shown = cards(at, "Amortised cost")
    assert shown and all("±" not in c for c in shown)
    assert shown == one_run_cards(at)


@pytest.mark.slow
def test_replications_survive_an_upload():
    at = submit(start(), "replications", 1)  # chosen on the scenario in the link, before the upload
    one_replication_ran(at)
    one_replication_ran(upload(at, short()))


@pytest.mark.slow
def test_replications_survive_an_upload_that_cannot_be_used():
    """A run that draws no sidebar form (the upload is refused) does not forget the count."""
    at = submit(start(), "replications", 1)
    at = upload(at, "name: [unclosed", "broken.yaml")
    assert at.error and not at.exception
    one_replication_ran(upload(at, short(**{"name: short": "name: fixed"}), "fixed.yaml"))


@pytest.mark.slow
def test_timeout_names_what_to_lower_and_retries_with_one_replication(monkeypatch):
    # Its own scenario (25 days, arrivals × 0.9): no run of it is in the server's result cache.
    text = short(**{"horizon_days: 30\n": "horizon_days: 25\n", "\nworkload:\n": "\nworkload:\n  arrival_scale: 0.9\n"})
    monkeypatch.setenv("COSTSIM_RUN_SECONDS", "0.001")  # no run of every option ends that quickly
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["s"] = encode_scenario(text)
    at.run()
    assert not at.exception and not at.metric
    message = at.error[0].value
    assert "did not finish within the dashboard's limit of 0.001 s" in message
    for lower in ("replications (now 3)", "horizon (now 25 days)", "arrival scale (now 0.90 ×)", "COSTSIM_RUN_SECONDS"):
        assert lower in message, lower
    retry = at.button(key="retry_one")
    assert retry.label == "Retry with 1 replication"
    monkeypatch.setenv("COSTSIM_RUN_SECONDS", "120")
    at = retry.click().run()
    one_replication_ran(at)
    assert ran(at).horizon_days == 25 and ran(at).workload.arrival_scale == 0.9


def test_timeout_of_one_replication_offers_no_retry(monkeypatch):
    monkeypatch.setenv("COSTSIM_RUN_SECONDS", "0.001")
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["s"] = encode_scenario(short(**{"horizon_days: 30\n": "horizon_days: 26\n"}))
    at.session_state[REPLICATIONS_KEY] = 1
    at.run()
    assert "replications (now 1)" in at.error[0].value
    assert not [b for b in at.button if b.key == "retry_one"]
