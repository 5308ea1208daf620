"""The dashboard's headline is the verdict (``costsim.decide``), not "the lowest total cost": at
three times the baseline's arrival rate the owned clusters are cheapest only because they leave
most of the work undone; they are flagged "cannot keep up" and never recommended. Each card
shows the amortised total beside the cash spent."""

from __future__ import annotations

from dataclasses import replace

import pytest
from paths import APP
from streamlit.testing.v1 import AppTest

import costsim
from costsim.dashboard import SCENARIO_DIR, apply_knobs, content_key, current_knobs, encode_scenario, literal_markdown
from costsim.dashboard.sidebar import REPLICATIONS_KEY
from costsim.runs.sweepfile import replication_seed

pytestmark = pytest.mark.usefixtures("fresh_cache_data")

DAYS = 60  # the baseline over 60 days: each run about a second


def short_baseline() -> str:
    text = (SCENARIO_DIR / "baseline.yaml").read_text()
    assert "horizon_days: 365\n" in text and "name: baseline\n" in text
    return text.replace("horizon_days: 365\n", f"horizon_days: {DAYS}\n").replace("name: baseline\n", "name: short\n")


@pytest.mark.slow
def test_headline_is_the_verdict_and_never_a_flagged_option():
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["s"] = encode_scenario(short_baseline())  # opened on a link: no full-year run first
    at.run()
    assert not at.exception and not at.error
    linked = costsim.load_scenario_text(short_baseline(), "short.yaml", SCENARIO_DIR)
    k = f"{content_key(costsim.dump_scenario(linked).encode())}.0"  # a link's widgets: keyed by its YAML
    at.number_input(key=f"{k}:scale").set_value(3.0)  # the dashboard's own knob: arrivals × 3
    at.number_input(key=REPLICATIONS_KEY).set_value(1)  # one run: the cards are its numbers
    at.button(key="FormSubmitter:knobs-Run").click().run()
    assert not at.exception and not at.error

    # what the app ran: the upload with the knob applied
    base = costsim.load_scenario_text(short_baseline(), "short.yaml", SCENARIO_DIR)
    edited = apply_knobs(base, replace(current_knobs(base), arrival_scale=3.0))
    res = costsim.simulate(edited, seed=replication_seed(edited.seed, 0))
    s = res.summary.set_index("option")
    # Independent of the verdict code: on-demand (no capacity limit) finishes nearly every job, and
    # that work alone is more GPU-hours than even the 512 owned GPUs have in the horizon, so no owned
    # cluster can keep up; yet the cheapest amortised total is own-256, which left most jobs undone.
    assert s.loc["cloud-od", "jobs_completed"] >= 0.95 * s.loc["cloud-od", "jobs_submitted"]
    assert s.loc["cloud-od", "gpu_hours_used"] > 512 * DAYS * 24
    assert s["total_cost_usd"].idxmin() == "own-256"
    assert s.loc["own-256", "jobs_completed"] < 0.5 * s.loc["own-256", "jobs_submitted"]

    shown = [m.value for m in at.markdown]
    (headline,) = [m for m in shown if m.startswith("**Verdict:**")]
    assert "Lowest total cost" not in " ".join(shown)
    verdict, *flags = headline.split("  \n")
    assert verdict == f"**Verdict:** {literal_markdown(costsim.decide(res).sentence)}"
    # the recommendation (the sentence's first clause) names on-demand and no owned cluster
    first = verdict.split(";")[0]
    assert literal_markdown("(cloud-od)") in first
    assert not any(literal_markdown(o) in first for o in ("own-256", "own-384", "own-512"))
    for option in ("own-256", "own-384", "own-512"):
        (line,) = [f for f in flags if f.startswith(f"⚠\ufe0f **{literal_markdown(option)}: cannot keep up**")]
        assert "offered load" in line and "never recommended" in line
    assert not any("cloud" in f for f in flags)
    assert [m for m in shown if "cannot keep up" in m and m.startswith("**⚠")] == ["**⚠ cannot keep up**"] * 3
    assert sum("recommended" in m for m in shown if m.startswith("**cloud")) == 1
    # each card: the amortised total beside the cash spent, the app's numbers being the run's
    amortised = [m.value for m in at.metric if m.label.rstrip(" ★") == "Amortised cost"]
    cash = [m.value for m in at.metric if m.label.rstrip(" ★") == "Cash spent"]
    first = costsim.decide(res).option  # the recommended option's card comes first, the others in order
    cards = res.summary.set_index("option").loc[[first, *(o for o in res.summary.option if o != first)]]
    assert amortised == [f"${v:,.0f}" for v in cards.total_cost_usd]
    assert cash == [f"${v:,.0f}" for v in cards.cash_spent_usd]
