"""The dashboard through Streamlit's AppTest: renders the baseline with no click, reacts to knobs,
shows an inline error for a bad upload. Edited scenarios download as YAML that loads back."""

from dataclasses import replace
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import costsim
from costsim.frontends.dashboard import SCENARIO_DIR, ClassKnobs, apply_knobs, current_knobs
from costsim.scenario import scenario_from_yaml

APP = str(Path(__file__).resolve().parent.parent / "app.py")


@pytest.fixture(autouse=True)
def _clear_caches():
    import streamlit as st

    st.cache_data.clear()
    yield


def phases_shown(at):
    """The phases table as the app shows it (the dataframe with a rollout_s column)."""
    (df,) = [d.value for d in at.dataframe if "rollout_s" in d.value.columns]
    return df.set_index(["option", "job_class"]).iteration_s


def test_first_load_shows_the_baseline_comparison():
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception
    assert not at.error
    base = costsim.simulate(SCENARIO_DIR / "baseline.yaml").summary
    shown = [m.value for m in at.metric if m.label == "Total cost (amortised)"]
    assert shown == [f"${v:,.0f}" for v in base.total_cost_usd]
    assert len(at.get("plotly_chart")) >= 5


def test_knob_changes_the_result():
    at = AppTest.from_file(APP, default_timeout=120).run()
    before = [m.value for m in at.metric if m.label == "Mean queue delay"]
    at.number_input(key="baseline:gpus:own-256").set_value(384)
    at.button[0].click().run()
    assert not at.exception and not at.error
    after = [m.value for m in at.metric if m.label == "Mean queue delay"]
    assert after[0] != before[0] and after[1:] == before[1:]


def test_class_knobs_change_iteration_time():
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert [m.label for m in at.metric].count("$ per RL iteration") == 4
    before = phases_shown(at)
    at.selectbox(key="baseline:ablation-7b:setup").select("disaggregated async")
    at.slider(key="baseline:mid-32b:cv").set_value(0.3)
    at.button[0].click().run()
    assert not at.exception and not at.error
    after = phases_shown(at)
    sc = costsim.load_scenario(SCENARIO_DIR / "baseline.yaml")
    k = current_knobs(sc)
    classes = {**k.classes, "ablation-7b": replace(k.classes["ablation-7b"], setup="disaggregated async"),
               "mid-32b": replace(k.classes["mid-32b"], response_cv=0.3)}
    edited = apply_knobs(sc, replace(k, classes=classes))
    expected = costsim.simulate(edited).phases.set_index(["option", "job_class"]).iteration_s
    for opt in ("own-256", "cloud-od"):
        # the app shows the edited scenario's own numbers; async (half the GPUs sampling, one
        # iteration ahead) overlaps the long-tailed rollout with training and beats colocated sync
        assert after[(opt, "ablation-7b")] == pytest.approx(expected[(opt, "ablation-7b")], rel=1e-12)
        assert after[(opt, "ablation-7b")] < before[(opt, "ablation-7b")]
        assert after[(opt, "mid-32b")] < before[(opt, "mid-32b")]  # a shorter tail releases sync iterations sooner
        assert after[(opt, "flagship-70b")] == before[(opt, "flagship-70b")]


@pytest.mark.parametrize("name", ["hybrid-burst", "train-and-serve", "reserved-vs-on-demand", "lab-trace",
                                  "failures-at-scale", "spot-rollouts"])
def test_every_shipped_scenario_renders(name):
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.sidebar.selectbox(key="scenario_choice").select(name).run()
    assert not at.exception and not at.error
    res = costsim.simulate(SCENARIO_DIR / f"{name}.yaml")
    shown = [m.value for m in at.metric if m.label == "Total cost (amortised)"]
    assert shown == [f"${v:,.0f}" for v in res.summary.total_cost_usd]
    hybrids = (res.summary.kind == "hybrid").sum()
    assert [m.label for m in at.metric].count("Jobs on burst") == hybrids
    assert [m.label for m in at.metric].count("Goodput") == len(res.summary)
    if len(res.advice):
        (advice,) = [d.value for d in at.dataframe if "optimal_interval_h" in d.value.columns]
        assert len(advice) == len(res.advice)
    if len(res.breakeven):
        (table,) = [d.value for d in at.dataframe if "breakeven_utilization" in d.value.columns]
        assert len(table) == len(res.breakeven)


def test_bad_upload_shows_an_inline_error():
    at = AppTest.from_file(APP, default_timeout=120).run()
    text = (SCENARIO_DIR / "baseline.yaml").read_text().replace("gpus: 256", "gpus: -256")
    at.sidebar.file_uploader[0].upload("mine.yaml", text.encode(), "application/yaml").run()
    assert not at.exception
    # the red box says what happened; the problems (user text) follow verbatim in a code block
    assert at.error and "cannot be used" in at.error[0].value
    assert "mine.yaml" in at.code[0].value and "options.0.gpus" in at.code[0].value


def test_good_upload_runs():
    at = AppTest.from_file(APP, default_timeout=120).run()
    text = (SCENARIO_DIR / "baseline.yaml").read_text().replace("name: baseline", "name: mine")
    at.sidebar.file_uploader[0].upload("mine.yaml", text.encode(), "application/yaml").run()
    assert not at.exception and not at.error
    assert any("mine" in s.value for s in at.subheader)


def test_edited_scenario_round_trips():
    sc = costsim.load_scenario(SCENARIO_DIR / "baseline.yaml")
    k = current_knobs(sc)
    classes = {**k.classes, "mid-32b": ClassKnobs(14, 4000, 1.5, "disaggregated async")}
    edited = apply_knobs(sc, type(k)({**k.owned_gpus, "own-512": 640}, {"cloud-od": 3.5}, 1.25, classes))
    again, _ = scenario_from_yaml(costsim.dump_scenario(edited), "download.yaml", SCENARIO_DIR)
    assert again == edited
    assert again.option("own-512").gpus == 640 and again.option("cloud-od").price_per_gpu_hour == 3.5
    mid = again.workload.classes[1]
    assert (mid.model_params_b, mid.placement, mid.mode, mid.rollout.lengths.cv) == (14, "disaggregated", "async", 1.5)


def test_knob_errors_are_scenario_errors():
    sc = costsim.load_scenario(SCENARIO_DIR / "baseline.yaml")
    k = current_knobs(sc)
    with pytest.raises(costsim.ScenarioError, match="never run"):
        apply_knobs(sc, type(k)({**k.owned_gpus, "own-256": 128}, k.cloud_price, 1.0, k.classes))


def test_an_edited_upload_of_the_same_name_shows_its_own_numbers():
    """An upload named like the scenario on screen must not inherit the old widget values, and
    values beyond a knob's usual range (valid in the schema) must not crash the widgets."""
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert at.slider(key="baseline:scale").value == 1.0
    text = (SCENARIO_DIR / "baseline.yaml").read_text()
    text = text.replace("horizon_days: 365", "horizon_days: 20").replace("workload:", "workload:\n  arrival_scale: 4", 1)
    text = text.replace("response_tokens: {mean: 2000, cv: 1.0", "response_tokens: {mean: 2000, cv: 4.0", 1)
    at.sidebar.file_uploader[0].upload("mine.yaml", text.encode(), "application/yaml").run()
    assert not at.exception and not at.error
    assert at.slider(key="baseline:scale").value == 4.0
    assert at.slider(key="baseline:ablation-7b:cv").value == 4.0


def test_iteration_speed_tab_shows_every_phase():
    """A sync and an async class (tests/test_phases_table.py): the phases table with readable
    headers for every new column, the phase and throughput figures, and the async caption."""
    import json

    from test_phases_table import SCENARIO

    at = AppTest.from_file(APP, default_timeout=120).run()
    at.sidebar.file_uploader[0].upload("phases.yaml", json.dumps(SCENARIO).encode(), "application/yaml").run()
    assert not at.exception and not at.error
    res = costsim.simulate(costsim.runs.api.scenario_from_data(SCENARIO, "test"))
    (table,) = [d for d in at.dataframe if "rollout_s" in d.value.columns]
    shown = table.value.set_index("job_class")
    for col in ("iteration_s", "logprobs_s", "overhead_s", "rollout_tokens_per_s_per_gpu"):
        assert list(shown[col]) == pytest.approx(list(res.phases[col]), rel=1e-12), col
    assert list(shown.straggler_share) == pytest.approx(list(res.phases.straggler_share * 100), rel=1e-12)  # per cent
    labels = {col: c.get("label") for col, c in json.loads(table.proto.columns).items()}
    new = ("logprobs_s", "sync_s", "overhead_s", "straggler_share", "rollout_tokens_per_s_per_gpu")
    assert [labels[c] for c in new] == ["log-probs (s)", "sync / reshard (s)", "async overhead (s)", "straggler share",
                                        "rollout tok/s per GPU"]
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert any(t.startswith("Where an iteration goes") and "async" in t for t in titles)
    assert any(t.startswith("Rollout throughput per GPU") for t in titles)
    assert any("Async classes overlap rollout with training" in c.value for c in at.caption)
