"""The "Edit scenario" tab: the scenario editor mounted in the dashboard. What the editor holds
is what runs (cards equal ``costsim.simulate`` on the edited scenario, computed here
independently); an invalid edit keeps the last good results, marked stale; the knobs and the
editor edit one copy; the URL carries the edit. Short (30-day) scenarios, one replication.
"""

from __future__ import annotations

import pytest
from apptest_helpers import cards, key, short, upload
from paths import APP
from streamlit.testing.v1 import AppTest

import costsim
from costsim.dashboard import SCENARIO_DIR, decode_scenario, encode_scenario
from costsim.dashboard.sidebar import REPLICATIONS_KEY
from costsim.runs.sweepfile import replication_seed

pytestmark = pytest.mark.usefixtures("fresh_cache_data")


def opened() -> AppTest:
    """The short baseline uploaded, one replication, on the Edit scenario tab."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["s"] = encode_scenario(short())
    at = upload(at.run(), short())
    at.number_input(key=REPLICATIONS_KEY).set_value(1)
    at.button(key="FormSubmitter:knobs-Run").click().run()
    return at.radio(key="tab").set_value("Edit scenario").run()


def editor(field: str, gen: int = 0) -> str:
    """The editor widget key of a field path (``options.0.gpus``) for the uploaded short baseline."""
    return f"ed-{key(short())}:{gen}:{field}"


def shared(at: AppTest) -> costsim.Scenario:
    s = at.query_params["s"]
    text = decode_scenario(s[0] if isinstance(s, list) else s, 10**6)
    return costsim.load_scenario_text(text, "s.yaml", SCENARIO_DIR)


def expected(sc: costsim.Scenario) -> list[str]:
    """The amortised-cost cards of one replication, computed without the dashboard."""
    return [f"${v:,.0f}" for v in costsim.simulate(sc, seed=replication_seed(sc.seed, 0)).summary.total_cost_usd]


@pytest.mark.slow
def test_an_edit_is_what_runs_and_goes_into_the_url():
    at = opened()
    assert not at.exception and not at.error
    before = cards(at, "Amortised cost")
    at.number_input(key=editor("options.0.gpus")).set_value(320).run()
    assert not at.exception and not at.error
    sc = shared(at)
    assert sc.options[0].gpus == 320  # the URL carries the edited scenario
    shown = cards(at, "Amortised cost")
    assert shown != before and shown == expected(sc)
    at.text_input(key=editor("name")).set_value("renamed").run()  # a field no knob covers
    assert not at.exception and not at.error
    assert shared(at).name == "renamed" and at.subheader[0].value.startswith("renamed:")


def test_an_invalid_edit_keeps_the_last_results_marked_stale():
    at = opened()
    good = cards(at, "Amortised cost")
    link = at.query_params["s"]
    at.number_input(key=editor("options.0.gpus")).set_value(100).run()  # not whole 8-GPU nodes
    assert not at.exception
    assert cards(at, "Amortised cost") == good
    assert any(w.value.startswith("**Stale:**") and "Edit scenario" in w.value for w in at.warning)
    assert any("whole" in e.value for e in at.error)  # the problem, shown by the field
    assert at.query_params["s"] == link  # the link keeps the last scenario that ran


@pytest.mark.slow
def test_a_knob_edits_the_editors_copy():
    at = opened()
    at.number_input(key=f"{key(short())}:price:cloud-od").set_value(2.49)
    at.button(key="FormSubmitter:knobs-Run").click().run()
    assert not at.exception and not at.error
    at.run()  # the editor draws the copy the knob wrote
    i = [o.name for o in shared(at).options].index("cloud-od")
    at.selectbox(key=editor("pick:option", gen=1)).set_value(i).run()
    assert at.number_input(key=editor(f"options.{i}.price_per_gpu_hour", gen=1)).value == 2.49
    at.selectbox(key=editor("pick:option", gen=1)).set_value(0).run()
    at.number_input(key=editor("options.0.gpus", gen=1)).set_value(320).run()  # a later edit keeps the knob's
    sc = shared(at)
    assert sc.options[i].price_per_gpu_hour == 2.49 and sc.options[0].gpus == 320
    assert cards(at, "Amortised cost") == expected(sc)


def test_breakeven_month_is_the_mean_over_replications_that_reach_it():
    import pandas as pd

    from costsim.present.headline import breakeven_sentence
    from costsim.results.finance import breakeven_over

    # month numbers as finance.breakeven writes them (counted from 1)
    one = pd.DataFrame({"option": ["own"], "versus": ["od"], "breakeven_month": [5.0],
                        "breakeven_month_extrapolated": [5.0], "cheaper_until_month": [float("nan")]})
    never = one.assign(breakeven_month=[float("nan")], breakeven_month_extrapolated=[21.0])
    later = one.assign(breakeven_month=[8.0], breakeven_month_extrapolated=[8.0])
    table = breakeven_over([one, never, later])
    assert table.breakeven_month.iloc[0] == 6.5 and (table.found.iloc[0], table.n.iloc[0]) == (2, 3)
    # the mean of months 5 and 8 is 6.5, said rounded half up
    assert "from month 7 (mean of 2 of 3 replications)" in breakeven_sentence(table)
    assert "not within the horizon (about month 21" in breakeven_sentence(breakeven_over([never]))


def test_missing_phase_numbers_show_a_dash():
    from costsim.dashboard.phases import PHASE_VIEW, dash_or

    assert all(dash_or(fmt, 1234.5) for _, _, fmt, _ in PHASE_VIEW if fmt)  # every format is known
    assert dash_or("%,.0f", float("nan")) == "–" and dash_or("%,.0f", 12345.6) == "12,346"
    assert dash_or("%.0f%%", 42.4) == "42%" and dash_or("dollar", 3.14159) == "$3.14"


def test_a_run_that_fails_never_shows_another_scenarios_numbers(monkeypatch):
    """Stale results are only ever the same loaded scenario's: after a new upload that cannot run,
    no card of the scenario shown before stays on screen."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["s"] = encode_scenario(short())
    at.run()
    assert cards(at, "Amortised cost")
    monkeypatch.setenv("COSTSIM_RUN_SECONDS", "1")
    at = upload(at, short(**{"horizon_days: 30\n": "horizon_days: 3650\n"}), "long.yaml")  # ten years: ≫ 1 s
    assert not at.exception
    assert at.error and "did not finish" in at.error[0].value
    assert not at.metric
