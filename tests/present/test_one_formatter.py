"""Numbers a user reads go through ``costsim.present.formats``: the tornado's sentence, the KS p-values of
a workload fit and the verdict's price of waiting read as every other surface writes them."""

from __future__ import annotations

import math

import pandas as pd
from helpers import cloud, owned, scenario

import costsim
from costsim.decisions.sensitivity import Tornado
from costsim.present.fit import ks_words
from costsim.present.tornado import sentence
from costsim.present.verdict import decide


def _row(**kw) -> dict:
    row = {"input": "lead time", "unit": "days", "low": 56.0, "high": 364.0, "flips": False, "flips_at": "",
           "low_difference_usd": -1.0, "high_difference_usd": -1.0, "swing_usd": 1.0}
    return {**row, **kw}


def _tornado(table: pd.DataFrame, build: str, rent: str, base_difference_usd: float) -> Tornado:
    return Tornado(table=table, build=build, rent=rent, base_difference_usd=base_difference_usd,
                   base_breakeven_month=math.nan, base_breakeven_month_extrapolated=math.nan, replications=1)


def test_the_tornado_sentence_says_money_as_formats_money():
    table = pd.DataFrame([_row(input="arrival scale", unit="× scenario", low=0.5, high=2.0, swing_usd=3_561_234.0),
                          _row(flips=True, flips_at="high", high_difference_usd=20_000.0, swing_usd=1_700_000.0)])
    s = sentence(_tornado(table, "own-256", "cloud-od", -1_634_567.0))
    # By hand, three figures and a space before the unit: $1.63 M, $3.56 M (not "$1.63M").
    assert s == ("Own-256 costs $1.63 M less than cloud-od (fair totals); the verdict flips if lead time is "
                 "364 days; the largest swing is arrival scale ($3.56 M).")
    # A value beyond %g's six figures is written out, never in scientific notation.
    big = pd.DataFrame([_row(flips=True, flips_at="low", low=1_234_567.0, high_difference_usd=5.0)])
    assert "lead time is 1,234,567 days" in sentence(_tornado(big, "own", "cloud", 12_000.0))
    assert "$12.0 k less than own" in sentence(_tornado(big, "own", "cloud", 12_000.0))


def test_a_fits_p_values_read_as_every_other_p_value():
    assert ks_words(0.2, 5e-5) == "KS 0.200 (p < 0.001)"  # was "< 0.0001": one threshold everywhere
    assert ks_words(0.2, 5e-4) == "KS 0.200 (p < 0.001)"
    assert ks_words(0.123, 0.0045) == "KS 0.123 (p 0.0045)"
    assert ks_words(math.nan, 0.5) == "not measurable"


def test_the_verdicts_price_of_waiting_reads_per_gpu_hour(tmp_path):
    rows = [(5.0 * k, 8, 3.0) for k in range(40)]
    sc = scenario(tmp_path, rows, [owned(gpus=8), cloud()], 10.0, decision={"waiting_usd_per_gpu_hour": 0.5})
    v = decide(costsim.simulate(sc))
    assert "waiting at $0.50/GPU-h" in v.sentence, v.sentence
