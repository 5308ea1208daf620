"""The dashboard's headline is the verdict (``costsim.decide``), not "the lowest total cost": at
three times the baseline's arrival rate the owned clusters are cheapest only because they leave
most of the work undone; they are flagged "cannot keep up" and never recommended. Each card
shows the amortised total beside the cash spent."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from paths import APP
from streamlit.testing.v1 import AppTest

import costsim
from costsim.dashboard import SCENARIO_DIR, apply_knobs, content_key, current_knobs, encode_scenario, literal_markdown
from costsim.dashboard.sidebar import REPLICATIONS_KEY
from costsim.present.headline import DETAILS
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
    # the lead of the verdict, the sentence's first clause, leads the page; the sentence goes on from it
    worded = costsim.decide(res)
    assert verdict == f"**Verdict:** {literal_markdown(worded.lead)}"
    assert worded.sentence.startswith(worded.lead.removesuffix("."))
    # the recommendation names on-demand and no owned cluster
    assert literal_markdown("(cloud-od)") in verdict
    assert not any(literal_markdown(o) in verdict for o in ("own-256", "own-384", "own-512"))
    # a line each for the owned clusters, flagged, with the run's own offered load in a few words
    plain = [re.sub(r"\\(.)", r"\1", f) for f in flags]  # as shown: Markdown's escapes resolved
    for option in ("own-256", "own-384", "own-512"):
        (line,) = [f for f in plain if f.startswith(f"⚠\ufe0f **{option}** cannot keep up: ")]
        load = s.loc[option, "offered_load"] * 100
        assert f"cannot keep up: offered load {load:.0f} % of its capacity" in line and load >= 100
    assert not any("cloud" in f for f in flags)
    # the rest of the sentence, clause by clause, in the expander right under it
    (details,) = [e for e in at.expander if e.label == DETAILS]
    said = " ".join(m.value for m in details.markdown)
    assert all(f"- {literal_markdown(d)}" in said for d in worded.details) and worded.details
    assert [m for m in shown if "cannot keep up" in m and m.startswith("**⚠")] == ["**⚠ cannot keep up**"] * 3
    assert sum("recommended" in m for m in shown if m.startswith("**cloud")) == 1
    # each card: the amortised total beside the cash spent, the app's numbers being the run's
    amortised = [m.value for m in at.metric if m.label.rstrip(" ★") == "Amortised cost"]
    cash = [m.value for m in at.metric if m.label.rstrip(" ★") == "Cash spent"]
    first = costsim.decide(res).option  # the recommended option's card comes first, the others in order
    cards = res.summary.set_index("option").loc[[first, *(o for o in res.summary.option if o != first)]]
    assert amortised == [f"${v:,.0f}" for v in cards.total_cost_usd]
    assert cash == [f"${v:,.0f}" for v in cards.cash_spent_usd]
