"""The dashboard's Plan tab (costsim.dashboard.plan_tab) through AppTest (harness
tests/apps/plan_tab_app.py): the capacity figures of the scenario's run, then a plan search run in
a worker process whose sentence, runner-ups and trials are the library's for the same inputs
(``costsim.capacity_plan`` called here with ``executor="local"``: no pool in the test process).

The scenario is tiny (tests/app/test_decision_tabs.py's): one owned node of 8 H100s against
on-demand H100s over 120 days, an 8-GPU job of 5 h every 10 h."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import one_node_scenario_file
from paths import HARNESSES
from streamlit.testing.v1 import AppTest

import costsim
from costsim.dashboard import literal_markdown
from costsim.dashboard.plan_runs import MAX_RUNS, plan_of, plan_paths, vary_args

HARNESS = str(HARNESSES / "plan_tab_app.py")
VARY = {"options.own.gpus": "8..32"}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return one_node_scenario_file(tmp_path_factory.mktemp("tiny"), 120, jobs=120 * 24 // 10,
                                  own={"capex_usd_per_gpu": 10000.0}, rented={"price_per_gpu_hour": 2.99})


def app(monkeypatch, tiny: Path) -> AppTest:
    monkeypatch.setenv("COSTSIM_TABS_SCENARIO", str(tiny))
    return AppTest.from_file(HARNESS, default_timeout=120).run()


def test_the_fields_offered_are_the_options_numeric_ones(tiny):
    paths = plan_paths(costsim.load_scenario(tiny))
    assert "options.own.gpus" in paths and "options.cloud.price_per_gpu_hour" in paths
    assert all(p.startswith("options.") for p in paths)
    assert vary_args({"options.own.gpus": " 8..32 ", "options.cloud.max_gpus": " "}) == ["options.own.gpus=8..32"]


def test_the_plan_of_an_edited_scenario_reads_its_trace_where_it_was(tiny):
    """The worker writes the scenario to a folder of its own: its relative trace still reads."""
    sc = costsim.load_scenario(tiny)
    mine = plan_of(sc, vary_args(VARY), replications=1, trials=4)
    expected = costsim.capacity_plan(tiny, None, vary_args(VARY), replications=1, trials=4, batch=4,
                                     max_runs=MAX_RUNS, executor="local")
    assert mine.sentence == expected.sentence
    assert mine.trials.equals(expected.trials)


@pytest.mark.slow
def test_plan_tab_shows_the_capacity_figures_then_the_librarys_plan(monkeypatch, tiny):
    at = app(monkeypatch, tiny)
    assert not at.exception and not at.error
    assert len(at.get("plotly_chart")) == 3  # capacity against demand, purchases, cash by month
    at.multiselect(key="plan:paths").set_value(list(VARY)).run()
    at.text_input(key="plan:range:options.own.gpus").input(VARY["options.own.gpus"]).run()
    at.number_input(key="plan:trials").set_value(4).run()
    at.button(key="plan:run").click().run()
    assert not at.exception and not at.error
    expected = costsim.capacity_plan(tiny, None, vary_args(VARY), replications=1, trials=4, batch=4,
                                     max_runs=MAX_RUNS, executor="local")
    assert f"**{literal_markdown(expected.sentence)}**" in [m.value for m in at.markdown]
    assert len(at.get("plotly_chart")) == 4  # and the search's progress
    (trials,) = [d.value for d in at.dataframe if "fair_total_usd" in d.value.columns]
    assert list(trials["fair_total_usd"]) == list(expected.trials["fair_total_usd"])
    if expected.runner_up_steps:
        (ups,) = [d.value for d in at.dataframe if "plan" in d.value.columns]
        assert list(ups["plan"]) == list(expected.runner_up_steps)
