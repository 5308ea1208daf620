"""Knob state across runs: every submission is applied, not every
second one; a knob turned with the editor open reaches the editor and the editor's next edit is
kept; a value the knob shows rounded is not rewritten unless it is edited; a seed beyond
JavaScript's exact integers does not break the page. Truth: the scenario in the URL (what ran) and
``costsim.simulate`` of it.
"""

from __future__ import annotations

import pytest
from apptest_helpers import cards, knob, ran, short, submit, upload
from paths import APP
from streamlit.testing.v1 import AppTest

import costsim
from costsim.dashboard import SCENARIO_DIR, bounded
from costsim.dashboard.edit import EDIT_TAB
from costsim.runs.memo import RunMemo
from costsim.runs.sweepfile import replication_seed

pytestmark = pytest.mark.usefixtures("fresh_cache_data")


def one_replication() -> AppTest:
    """The short baseline uploaded, replications set to 1 (fewer runs per step)."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at = upload(at, short())
    submit(at, "replications", 1)
    return at


def price(sc: costsim.Scenario, name: str = "cloud-od") -> float:
    return next(o for o in sc.options if o.name == name).price_per_gpu_hour


@pytest.mark.slow
def test_consecutive_knob_submissions_all_apply():
    at = one_replication()
    for value in (2.79, 2.59, 2.39, 2.19):  # no extra run between them, as a user clicks
        submit(at, "price:cloud-od", value)
        assert not at.exception and not at.error
        assert price(ran(at)) == value
        assert knob(at, "price:cloud-od").value == value
    sc = ran(at)
    want = costsim.simulate(sc, seed=replication_seed(sc.seed, 0)).summary.total_cost_usd
    assert cards(at, "Amortised cost") == [f"${v:,.0f}" for v in want]


@pytest.mark.slow
def test_different_knobs_one_after_another_all_apply():
    at = one_replication()
    submit(at, "price:cloud-od", 2.79)
    submit(at, "gpus:own-256", 320)  # renames own-256 to own-320
    submit(at, "econ:electricity_usd_per_kwh", 0.2)
    sc = ran(at)
    assert price(sc) == 2.79 and sc.economics.electricity_usd_per_kwh == 0.2
    owned = {o.name: o.gpus for o in sc.options if o.kind == "owned"}
    assert owned["own-320"] == 320 and "own-256" not in owned


def open_editor(at: AppTest) -> AppTest:
    at.radio(key="tab").set_value(EDIT_TAB).run()
    assert not at.exception
    return at


def editor_gpus(at: AppTest):
    found = [w for w in at.main.number_input if w.key.endswith(":options.0.gpus")]
    assert len(found) == 1
    return found[0]


@pytest.mark.slow
def test_a_knob_with_the_editor_open_reaches_it_and_the_next_edit_is_kept():
    at = open_editor(one_replication())
    submit(at, "capex:own-256", 31_000.0)  # option 0, the one the editor shows
    assert not at.exception and ran(at).options[0].capex_usd_per_gpu == 31_000.0
    capex = [w for w in at.main.number_input if w.key.endswith(":options.0.capex_usd_per_gpu")]
    assert [w.value for w in capex] == [31_000.0]  # the editor shows the knob's value
    editor_gpus(at).set_value(320).run()  # the next edit, in the editor
    assert not at.exception
    submit(at, "econ:electricity_usd_per_kwh", 0.2)
    sc = ran(at)
    assert sc.options[0].gpus == 320 and sc.options[0].capex_usd_per_gpu == 31_000.0
    assert sc.economics.electricity_usd_per_kwh == 0.2


@pytest.mark.slow
def test_a_value_shown_rounded_is_kept_unless_edited():
    text = short(**{"response_tokens: {mean: 2000": "response_tokens: {mean: 2000.5"})
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at = upload(at, text)
    submit(at, "replications", 1)
    assert not at.exception
    sc = ran(at)
    assert {c.rollout.lengths.mean for c in sc.workload.classes} >= {2000.5}
    assert costsim.dump_scenario(sc) == costsim.dump_scenario(costsim.load_scenario_text(text, "x.yaml", SCENARIO_DIR))


@pytest.mark.slow
def test_a_seed_beyond_javascripts_exact_integers_works():
    big = 2**53 + 1
    text = short(**{"seed: 0\n": f"seed: {big}\n"})
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at = upload(at, text)
    assert not at.exception
    seed_box = [w for w in at.sidebar.text_input if w.key.endswith(":seed")]
    assert len(seed_box) == 1 and seed_box[0].value == str(big)
    seed_box[0].set_value(str(big + 2))
    at.button(key="FormSubmitter:knobs-Run").click().run()
    assert not at.exception and ran(at).seed == big + 2
    seed_box = [w for w in at.sidebar.text_input if w.key.endswith(":seed")]
    seed_box[0].set_value("not a seed")
    at.button(key="FormSubmitter:knobs-Run").click().run()
    assert not at.exception
    assert any("Seed" in c.value for c in at.code)  # named as the knob, results kept
    assert ran(at).seed == big + 2


def test_out_of_memory_with_a_full_memo_is_retried_without_it(monkeypatch):
    calls = []

    def tight(scenario, seed=None, memo=None):
        calls.append(len(memo))
        if len(calls) == 1:
            raise MemoryError
        return "ran"

    memo = RunMemo()
    memo.get("jobs", "an earlier run", lambda: 1)
    monkeypatch.setattr(bounded.api, "simulate", tight)
    assert bounded.simulate_with_memo(None, 1, memo) == "ran" and calls == [1, 0]

    def always(scenario, seed=None, memo=None):
        raise MemoryError

    memo = RunMemo()  # nothing held: the run's own need
    monkeypatch.setattr(bounded.api, "simulate", always)
    with pytest.raises(MemoryError):
        bounded.simulate_with_memo(None, 1, memo)


def fitted_short() -> str:
    """scenarios/fitted-lab.yaml over 7 days (its eight fitted job classes)."""
    text = (SCENARIO_DIR / "fitted-lab.yaml").read_text()
    assert "horizon_days: 28\n" in text
    return text.replace("horizon_days: 28\n", "horizon_days: 7\n")


@pytest.mark.slow
def test_fitted_job_classes_are_edited_as_yaml_in_the_editor():
    """The Edit tab shows workload.job_classes as YAML text; an edit there is what runs, and text
    that is not YAML is named and keeps the last results, marked stale."""
    import yaml

    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at = upload(at, fitted_short(), "fitted.yaml")
    submit(at, "replications", 1)
    at = open_editor(at)
    box = [t for t in at.main.text_area if t.key.endswith(":workload.job_classes")]
    assert len(box) == 1 and box[0].help.startswith(costsim.scenario.model.Workload.model_fields["job_classes"].description[:30])
    classes = yaml.safe_load(box[0].value)
    assert [c["name"] for c in classes] == [c.name for c in ran(at).workload.job_classes]
    classes[0]["arrivals_per_day"] = 40.0
    box[0].set_value(yaml.safe_dump(classes)).run()
    assert not at.exception
    sc = ran(at)
    assert sc.workload.job_classes[0].arrivals_per_day == 40.0
    jobs = costsim.simulate(sc, seed=replication_seed(sc.seed, 0)).summary.jobs_submitted.iloc[0]
    assert any(f"{jobs:,} jobs" in h.value for h in at.subheader)  # the run on screen is the edited one
    box = [t for t in at.main.text_area if t.key.endswith(":workload.job_classes")]
    box[0].set_value("- name: [unclosed\n").run()
    assert not at.exception
    assert any("not YAML" in e.value for e in at.error)
    assert any(w.value.startswith("**Stale:**") for w in at.warning)
    assert ran(at).workload.job_classes[0].arrivals_per_day == 40.0  # the last good scenario stays
