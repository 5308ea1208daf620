"""The verdict laid out for a first screen: its lead (which option, its cost, how sure) is the
sentence's first clause, each further clause is a sentence of its own for the expander under it,
and each option set aside has one short line with its reason's numbers, the sentence's own."""

from __future__ import annotations

import math

from helpers import cloud, owned, scenario

import costsim
from costsim.decisions.fair import brief_why, why_not
from costsim.present.headline import card_value, details_markdown, headline_markdown, set_aside

H_DAYS = 10.0
BURST = [(0.0, 8, 6.0)] * 20  # 20 jobs of 8 GPUs × 6 h, all at hour 0


def burst(folder, **top):
    """8 owned GPUs (FIFO) against on-demand at $20 per GPU-hour for the burst above. By hand: the
    owned cluster runs the jobs one after another, job k from hour 6k, so the delays are 0, 6, …,
    114 h and their p95 (numpy's linear rule, index 0.95 × 19 = 18.05) is 108 + 0.05 × 6 = 108.3 h,
    4.5 days; on-demand starts every job at once."""
    top.setdefault("economics", {"setup_usd": 0})
    return scenario(folder, BURST, [owned(gpus=8, gpus_per_node=8, scheduler="fifo"),
                                    cloud(price_per_gpu_hour=20.0)], H_DAYS, **top)


def same_text(part: str, sentence: str) -> bool:
    """``part`` (a sentence of its own: first letter capitalised, a full stop) is said in ``sentence``."""
    body = part.removesuffix(".")
    return body in sentence or (body[:1].lower() + body[1:]) in sentence


def test_a_target_that_rules_out_the_cheaper_option_leaves_a_short_lead_and_one_line_for_it(tmp_path):
    v = costsim.decide(costsim.simulate(burst(tmp_path)), flips=False)
    assert v.option == "cloud" and v.binding_option == "own"
    assert v.lead.endswith(".") and v.sentence.startswith(v.lead.removesuffix("."))
    assert "(cloud)" in v.lead and "own would cost" not in v.lead
    # the rest, clause by clause: the cheaper option ruled out by the day-long p95 target
    assert len(v.details) == 1 and v.details[0].startswith("own would cost ")
    assert v.details[0].endswith("less but misses p95 queue delay ≤ 24 h (p95 queue delay 4.5 days).")
    assert v.sentence == f"{v.lead.removesuffix('.')}; {v.details[0]}"
    # one line for own with the target and its p95 (108.3 h by hand), written as its card writes it
    assert set_aside(v) == [("✗", "own", "misses p95 queue delay ≤ 24 h: 108 h")]
    assert headline_markdown(v, str).split("  \n") == [f"**Verdict:** {v.lead}",
                                                      "✗ **own** misses p95 queue delay ≤ 24 h: 108 h"]
    assert details_markdown(v, str) == f"- {v.details[0]}"


def test_a_pair_compared_says_the_delay_trade_and_flip_in_the_details_not_the_lead(tmp_path):
    v = costsim.decide(costsim.simulate(burst(tmp_path, decision={"targets": []})), flips=False)
    assert v.option == "own" and v.versus == "cloud" and set_aside(v) == []
    assert v.sentence.startswith(v.lead.removesuffix(".")) and "less than" in v.lead and "at p95" not in v.lead
    assert "At p95 a job waits 4.5 days on own against no time on cloud." in v.details
    assert all(same_text(d, v.sentence) for d in v.details)
    # what is said after the lead is the details, in order, and nothing else
    rest = v.sentence[len(v.lead) - 1:]
    for d in v.details:
        at = rest.lower().find(d.removesuffix(".").lower())
        assert at >= 0, (d, rest)
        rest = rest[at + len(d) - 1:]
    assert rest == "."
    assert headline_markdown(v, str) == f"**Verdict:** {v.lead}"  # nothing set aside: the lead alone


def test_an_option_that_cannot_keep_up_is_set_aside_with_the_first_words_of_its_reason(tmp_path):
    # 40 jobs of 8 GPUs × 8 h arriving every 4 h on 8 GPUs: twice the work the cluster can do
    rows = [(4.0 * k, 8, 8.0) for k in range(40)]
    res = costsim.simulate(scenario(tmp_path, rows, [owned(gpus=8, gpus_per_node=8, scheduler="fifo"),
                                                     cloud(price_per_gpu_hour=20.0)], H_DAYS))
    v = costsim.decide(res, flips=False)
    load = res.summary.set_index("option").loc["own", "offered_load"]
    assert load >= 1.0
    ((mark, option, what),) = set_aside(v)
    assert (mark, option) == ("⚠", "own") and what.startswith(f"cannot keep up: offered load {load * 100:.0f} % of its capacity")
    assert "⚠\ufe0f **own** cannot keep up: offered load" in headline_markdown(v, str)


def test_an_option_set_aside_for_its_queue_also_names_the_targets_it_misses(tmp_path):
    rows = [(4.0 * k, 8, 8.0) for k in range(40)]  # as above: twice the work 8 GPUs can do
    res = costsim.simulate(scenario(tmp_path, rows, [owned(gpus=8, gpus_per_node=8, scheduler="fifo"),
                                                     cloud(price_per_gpu_hour=20.0)], H_DAYS))
    v = costsim.decide(res, ["p95_delay_h<=1"], flips=False)
    p95 = res.summary.set_index("option").loc["own", "queue_delay_p95_h"]
    assert p95 > 1
    ((mark, option, what),) = set_aside(v)
    reason, misses = what.split("; misses ")
    assert (mark, option) == ("⚠", "own") and reason.startswith("cannot keep up: offered load")
    assert misses == f"p95 queue delay ≤ 1 h: {card_value('queue_delay_p95_h', p95)}"


def test_brief_why_keeps_each_reasons_numbers_and_drops_its_explanation():
    full = why_not(1.5, 0.2, 3)
    assert full.startswith("offered load 150 % of its capacity within the horizon") and "20 % of the jobs" in full
    assert brief_why(full) == "offered load 150 % of its capacity; 20 % of the jobs never started"
    assert brief_why(why_not(1.2, 0.0, 3)) == "offered load 120 % of its capacity"
    assert brief_why(why_not(math.nan, 0.05, 3)) == "5 % of the jobs never started"
    assert brief_why(why_not(1.5, 0.2, 0)) == ""


def test_a_set_aside_line_writes_its_value_as_the_card_does_and_never_as_its_limit():
    """The ✗ line sits above the option's card: the same number in the same unit and precision
    (155.3 h is "155 h" on both, never "6.5 days" above "155 h"); a value that rounds to its limit
    says which side it is on, since "≤ 24 h: 24.0 h" or "≥ 99 %: 99.0 %" would read as met."""
    from costsim.decisions.targets import Shortfall
    from costsim.present.headline import card_value
    from costsim.present.wording import misses_briefly
    from costsim.scenario.targets import Target

    p95, done = Target("p95_delay_h", "<=", 24.0), Target("completion", ">=", 0.99)
    assert misses_briefly(Shortfall(missed=((p95, 155.3),)), card_value) == ["p95 queue delay ≤ 24 h: 155 h"]
    assert card_value("queue_delay_p95_h", 155.3) == "155 h"
    assert misses_briefly(Shortfall(missed=((p95, 24.03),)), card_value) == ["p95 queue delay ≤ 24 h: > 24.0 h"]
    assert misses_briefly(Shortfall(missed=((done, 0.9896),)), card_value) == ["completion ≥ 99 %: < 99.0 %"]
    assert misses_briefly(Shortfall(missed=((done, 0.981),)), card_value) == ["completion ≥ 99 %: 98.1 %"]


def test_the_cards_are_drawn_from_the_runs_the_verdict_priced_not_priced_again(tmp_path):
    """One number, one place: the cards' means are over the verdict's own rows (``decide`` prices
    each run once); a row changed there moves the card, and nothing is priced again."""
    import dataclasses

    from costsim.present.headline import card_table

    runs = [costsim.simulate(burst(tmp_path), seed=s) for s in (1, 2)]
    v = costsim.decide(runs, flips=False)
    assert v.rows is not None and len(v.rows) == 2 * len(v.options)
    cards = card_table(v).set_index("option")
    means = v.options.set_index("option")
    for col in ("fair_total_usd", "total_cost_usd", "queue_delay_p95_h"):
        assert list(cards[col]) == list(means.loc[cards.index, col]), col
    rows = v.rows.copy()
    rows.loc[rows["option"] == "own", "fair_total_usd"] += 1000.0
    moved = card_table(dataclasses.replace(v, rows=rows)).set_index("option")
    assert moved.loc["own", "fair_total_usd"] == cards.loc["own", "fair_total_usd"] + 1000.0
    assert moved.loc["cloud", "fair_total_usd"] == cards.loc["cloud", "fair_total_usd"]
