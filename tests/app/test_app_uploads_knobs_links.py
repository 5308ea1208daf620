"""The dashboard through Streamlit's AppTest: widgets keyed by the scenario's content
(a same-name upload shows its own numbers), option names follow their size, an invalid knob is
named next to itself while the last good results stay (marked stale), the scenario in the URL
restores the edit, every tab renders. Short uploads (30 days) keep each run well under a second.
"""

from __future__ import annotations

import statistics

import pytest
import yaml
from apptest_helpers import cards, key, short, start, upload
from paths import APP
from streamlit.testing.v1 import AppTest

import costsim
from costsim.dashboard import (
    LINK,
    SCENARIO_DIR,
    apply_knobs,
    content_key,
    current_knobs,
    decode_scenario,
    encode_scenario,
    sized_name,
)
from costsim.dashboard.sidebar import REPLICATIONS_KEY
from costsim.dashboard.tabs import TABS
from costsim.runs.sweepfile import replication_seed
from costsim.scenario import scenario_from_yaml

pytestmark = pytest.mark.usefixtures("fresh_cache_data")


def expected_amortised(text: str, reps: int = 3) -> list[str]:
    """What the cards must show, computed independently: the mean over the replications that
    ``costsim sweep --replications`` would run, of ``costsim.simulate`` on the file."""
    sc = costsim.load_scenario_text(text, "x.yaml", SCENARIO_DIR)
    runs = [costsim.simulate(sc, seed=replication_seed(sc.seed, r)).summary for r in range(reps)]
    means = [statistics.fmean(r.total_cost_usd.iloc[i] for r in runs) for i in range(len(runs[0]))]
    return [f"${m:,.0f}" for m in means]


EDITED = {"{name: own-256, kind: owned, gpu_type: H100, gpus: 256,": "{name: own-256, kind: owned, gpu_type: H100, gpus: 320,",
          "price_tier: neocloud ": "price_tier: neocloud\n    price_per_gpu_hour: 2.49 "}


@pytest.mark.slow
def test_same_name_upload_shows_the_new_numbers():
    """Issue 13 item 1: the edited file uploaded under the same name shows its own values."""
    at = upload(start(), short())
    assert not at.exception and not at.error
    first = cards(at, "Amortised cost")
    assert [c.split(" ±")[0] for c in first] == expected_amortised(short())
    assert at.number_input(key=f"{key(short())}:gpus:own-256").value == 256
    edited = short(**EDITED)
    at = upload(at, edited)  # the same file name, new content
    assert not at.exception and not at.error
    k = key(edited)
    assert at.number_input(key=f"{k}:gpus:own-256").value == 320  # the file names it; knob edits rename
    assert at.number_input(key=f"{k}:price:cloud-od").value == 2.49
    shown = [c.split(" ±")[0] for c in cards(at, "Amortised cost")]
    assert shown != [c.split(" ±")[0] for c in first]
    assert shown == expected_amortised(edited)


def test_resizing_an_option_renames_it_everywhere():
    at = upload(start(), short())
    at.number_input(key=f"{key(short())}:gpus:own-256").set_value(320)
    at.button(key="FormSubmitter:knobs-Run").click().run()
    assert not at.exception and not at.error
    names = [m.value for m in at.markdown if m.value.startswith("**own")]
    assert any(n.startswith("**own\\-320**") for n in names) and not any("own\\-256" in n for n in names)
    shared = yaml.safe_load(decode_scenario(at.query_params["s"][0] if isinstance(at.query_params["s"], list)
                                            else at.query_params["s"], 10**6))
    assert [o["name"] for o in shared["options"]][:3] == ["own-320", "own-384", "own-512"]
    assert shared["options"][0]["gpus"] == 320


def test_sized_name():
    assert sized_name("own-256", 256, 320) == "own-320"
    assert sized_name("h100x256", 256, 512) == "h100x512"
    assert sized_name("own-256", 128, 320) == "own-256"  # the number is not its size
    assert sized_name("lab", 256, 320) == "lab"


def test_rename_keeps_hybrids_pointing_at_their_parts_and_never_collides():
    sc = costsim.load_scenario(SCENARIO_DIR / "hybrid-burst.yaml")
    k = current_knobs(sc)
    owned = next(iter(k.owned_gpus))
    step = 8
    new = apply_knobs(sc, type(k)({**k.owned_gpus, owned: k.owned_gpus[owned] + step}, k.cloud_price, k.arrival_scale))
    renamed = sized_name(owned, k.owned_gpus[owned], k.owned_gpus[owned] + step)
    hybrids = [o for o in new.options if o.kind == "hybrid"]
    assert all(h.base != owned for h in hybrids)
    if renamed != owned:
        assert any(h.base == renamed for h in hybrids) or not hybrids
    base = costsim.load_scenario(SCENARIO_DIR / "baseline.yaml")
    kb = current_knobs(base)
    clash = apply_knobs(base, type(kb)({**kb.owned_gpus, "own-256": 384}, kb.cloud_price, kb.arrival_scale))
    assert [o.name for o in clash.options][:2] == ["own-256", "own-384"]  # own-384 is taken: no rename


def test_untouched_knobs_change_nothing():
    for name in ("baseline", "hybrid-burst", "reserved-vs-on-demand"):
        sc = costsim.load_scenario(SCENARIO_DIR / f"{name}.yaml")
        again = apply_knobs(sc, current_knobs(sc))
        assert costsim.dump_scenario(again) == costsim.dump_scenario(sc)  # catalog nulls stay null


@pytest.mark.slow
def test_invalid_knob_is_named_next_to_it_and_results_stay_stale():
    at = upload(start(), short())
    good = cards(at, "Amortised cost")
    at.number_input(key=f"{key(short())}:gpus:own-256").set_value(100)  # not whole 8-GPU nodes
    at.button(key="FormSubmitter:knobs-Run").click().run()
    assert not at.exception
    side = [e.value for e in at.sidebar.error]
    assert side and "not a whole number" in side[0]
    assert "own-256: owned GPUs: 100 GPUs is not a whole number" in at.code[0].value
    assert "options.0.gpus" not in at.code[0].value
    assert cards(at, "Amortised cost") == good  # the last good results, still on screen
    assert any(w.value.startswith("**Stale:**") for w in at.warning)


@pytest.mark.slow
def test_new_knobs_reach_the_scenario():
    at = upload(start(), short())
    k = key(short())
    at.number_input(key=f"{k}:econ:electricity_usd_per_kwh").set_value(0.5)
    at.number_input(key=f"{k}:horizon").set_value(20.0)
    at.number_input(key=REPLICATIONS_KEY).set_value(1)
    at.button(key="FormSubmitter:knobs-Run").click().run()
    assert not at.exception and not at.error
    shared = costsim.load_scenario_text(decode_scenario(at.query_params["s"][0] if isinstance(at.query_params["s"], list)
                                                        else at.query_params["s"], 10**6), "s.yaml", SCENARIO_DIR)
    assert shared.economics.electricity_usd_per_kwh == 0.5 and shared.horizon_days == 20
    assert shared.economics.depreciation_years is None  # untouched: still the catalog's
    assert all("±" not in c for c in cards(at, "Amortised cost"))  # one replication: no interval
    assert cards(at, "Amortised cost") == [f"${v:,.0f}" for v in costsim.simulate(
        shared, seed=replication_seed(shared.seed, 0)).summary.total_cost_usd]


@pytest.mark.slow
def test_url_restores_the_edit():
    at = upload(start(), short())
    at.number_input(key=f"{key(short())}:price:cloud-od").set_value(2.49)
    at.button(key="FormSubmitter:knobs-Run").click().run()
    s = at.query_params["s"]
    s = s[0] if isinstance(s, list) else s
    again = AppTest.from_file(APP, default_timeout=120)
    again.query_params["s"] = s
    again.run()
    assert not again.exception and not again.error
    assert again.sidebar.selectbox(key="scenario_choice").value == f"{LINK}: short"
    text = decode_scenario(s, 10**6)
    assert again.number_input(key=f"{content_key(text.encode())}.0:price:cloud-od").value == 2.49


@pytest.mark.slow
def test_damaged_link_falls_back_with_a_message():
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["s"] = "not-a-scenario"
    at.run()
    assert not at.exception
    assert at.error and "link" in at.error[0].value
    assert at.sidebar.selectbox(key="scenario_choice").value == "baseline"


def test_link_codec():
    text = short()
    assert decode_scenario(encode_scenario(text), 10**6) == text
    with pytest.raises(costsim.ScenarioError, match="larger than"):
        decode_scenario(encode_scenario("x" * 100_000), 1000)  # a zip bomb is refused before inflating it all
    with pytest.raises(costsim.ScenarioError, match="not a costsim scenario link"):
        decode_scenario("@@@", 1000)


def test_uploaded_file_is_named_in_the_selector():
    at = upload(start(), short())
    box = at.sidebar.selectbox(key="scenario_uploaded")
    assert box.value == "uploaded: short.yaml" and box.disabled


@pytest.mark.slow
def test_every_tab_renders_and_download_round_trips():
    at = upload(start(), short())
    at.number_input(key=REPLICATIONS_KEY).set_value(1)
    at.button(key="FormSubmitter:knobs-Run").click().run()
    for tab in TABS:
        if tab in ("Sensitivity", "Sweep"):
            continue  # their own tests (tests/app/test_decision_tabs.py) run them
        at.radio(key="tab").set_value(tab).run()
        assert not at.exception and not at.error, tab
        if tab not in ("Data", "Failures", "Edit scenario", "Time to target"):
            assert len(at.get("plotly_chart")) >= 1, tab
        if tab == "Time to target":  # the baseline has no scaling curve: how to add one
            assert any("scaling:" in i.value for i in at.info), tab
        if tab == "Edit scenario":  # the editor, keyed by the loaded scenario
            assert any(w.key.startswith(f"ed-{key(short())}:") for w in at.number_input), tab
        if tab == "Capacity":  # the job timeline of the option chosen
            gantts = len(at.get("plotly_chart"))
            at.selectbox(key="gantt_option").set_value("cloud-od").run()
            assert not at.exception and len(at.get("plotly_chart")) == gantts
            spec = at.get("plotly_chart")[-1].proto.spec
            assert "cloud-od" in spec and "own-384" not in spec  # that option's panel only
    sc = costsim.load_scenario_text(short(), "short.yaml", SCENARIO_DIR)
    again, _ = scenario_from_yaml(costsim.dump_scenario(sc), "download.yaml", SCENARIO_DIR)
    assert again == sc


def test_bad_upload_shows_an_inline_error():
    at = upload(start(), short(**{"gpus: 256,": "gpus: -256,"}), "mine.yaml")
    assert not at.exception
    assert at.error and "cannot be used" in at.error[0].value
    assert "mine.yaml" in at.code[0].value and "options.0.gpus" in at.code[0].value


def test_figures_are_built_once_per_scenario_seed_and_figure():
    from types import SimpleNamespace

    from costsim.dashboard.tabs import cached_figure

    sc = costsim.load_scenario_text(short(), "short.yaml", SCENARIO_DIR)
    built = []

    def fig_of(res, *args):
        built.append((res.seed, args))
        return object()

    one, other = SimpleNamespace(scenario=sc, seed=1), SimpleNamespace(scenario=sc, seed=2)
    first = cached_figure([one], fig_of, "own-256")
    assert cached_figure([SimpleNamespace(scenario=sc, seed=1)], fig_of, "own-256") is first  # same content
    cached_figure([other], fig_of, "own-256")  # another seed
    cached_figure([one], fig_of, "cloud-od")  # another argument
    edited = costsim.load_scenario_text(short(**EDITED), "short.yaml", SCENARIO_DIR)
    cached_figure([SimpleNamespace(scenario=edited, seed=1)], fig_of, "own-256")  # another scenario
    assert built == [(1, ("own-256",)), (2, ("own-256",)), (1, ("cloud-od",)), (1, ("own-256",))]
