"""The decisions return numbers and ``costsim.present`` words them: the verdict of
``costsim.decisions`` carries no words, ``costsim.decide`` is that verdict worded, and each reason
the utilisation flip's search records reads as the sentence a user is shown."""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
from helpers import cloud, owned, scenario

import costsim
from costsim.decisions import flips
from costsim.decisions.flips import Flip
from costsim.decisions.targets import Shortfall, parse_target
from costsim.decisions.verdict import Verdict
from costsim.decisions.verdict import decide as decide_in_numbers
from costsim.present.verdict import WordedVerdict, worded
from costsim.present.wording import flip_reason


def test_the_verdict_in_numbers_and_in_words_agree(tmp_path):
    rows = [(5.0 * k, 8, 3.0) for k in range(40)]
    res = costsim.simulate(scenario(tmp_path, rows, [owned(gpus=8), cloud()], 10.0))
    numbers = decide_in_numbers(res, flips=False)
    said = costsim.decide(res, flips=False)
    assert type(numbers) is Verdict and not hasattr(numbers, "sentence")
    assert isinstance(said, WordedVerdict) and said.sentence == worded(numbers).sentence
    assert said.utilization_flip_reason == "not searched" and said.sentence.endswith(".")
    for field in dataclasses.fields(Verdict):  # every number beside the words, unchanged
        mine, theirs = getattr(said, field.name), getattr(numbers, field.name)
        if isinstance(mine, pd.DataFrame):
            pd.testing.assert_frame_equal(mine, theirs)
        else:
            assert mine == theirs or (mine != mine and theirs != theirs), field.name


def test_each_reason_without_a_flip_reads_as_before():
    target = parse_target("p95_delay_h<=24")
    missed = Shortfall(keeps_up=True, missed=((target, 34.0),), far=0.4)
    lost = Shortfall(keeps_up=False, why="offered load 120 % of its capacity", far=0.2)
    assert flip_reason(None) == "" and flip_reason(Flip(utilization=0.5)) == ""
    assert flip_reason(Flip(reason=flips.UNUSED)) == "the owned option is not used, or the two cost the same today"
    assert flip_reason(Flip(reason=flips.FULL, owned_utilization=0.995)) == (
        "the owned option is already 100 % used: no more work fits")
    assert flip_reason(Flip(reason=flips.UNCHANGED, less_work=True)) == (
        "with less work, down to 2.0 % of today's work, the order does not change")
    assert flip_reason(Flip(reason=flips.UNCHANGED)) == (
        "with more work, up to 100 % utilisation of the owned option, the order does not change")
    assert flip_reason(Flip(reason=flips.NOT_NARROWED)) == "not narrowed to 2.0 % of utilisation within 8 simulations"
    assert flip_reason(Flip(reason=flips.WINNER_MISSES, winner="own-384", owned="own-384", owned_utilization=0.65,
                            shortfall=missed)) == (
        "where own-384 would cost less (65 % utilisation of own-384) it misses p95 queue delay ≤ 24 h "
        "(p95 queue delay 34 h)")
    assert flip_reason(Flip(reason=flips.WINNER_MISSES, winner="cloud", owned="own", owned_utilization=math.nan,
                            shortfall=lost)) == (
        "where cloud would cost less (– utilisation of own) it cannot keep up (offered load 120 % of its capacity)")
    assert flip_reason(Flip(reason=flips.NO_SCENARIO)) == "the scenario is not known"
    assert flip_reason(Flip(reason=flips.ORDER_DIFFERS)) == "the first replication orders the two the other way"
