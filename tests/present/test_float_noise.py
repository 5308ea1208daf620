"""Float noise (a sum of zeros that comes out as −2.8e-16) reads as 0 wherever a user reads it:
no "-0.000000" in a dashboard table, no "−$0", no minus on a price that rounds to $0.00."""

from __future__ import annotations

import math

import pandas as pd
from helpers import TINY_RL

import costsim
from costsim.dashboard.decision_tabs import tornado_rows
from costsim.dashboard.views import table_view
from costsim.present import formats


def _printf(fmt: str, v: float) -> str:
    """What Streamlit's printf format shows for ``v`` (Python's %-format; the thousands flag is
    Streamlit's own and only adds separators)."""
    return fmt.replace(",", "") % v


def test_the_failures_table_of_a_run_without_interruptions_shows_no_negative_zero(tmp_path):
    (tmp_path / "t.yaml").write_text(TINY_RL)
    res = costsim.simulate(costsim.load_scenario(tmp_path / "t.yaml"))
    cols = ["option", "restarts", "preemptions", "lost_gpu_hours", "goodput", "lost_work_cost_usd",
            "interruption_delay_mean_h"]  # the Failures tab's columns
    delay = res.summary["interruption_delay_mean_h"]
    assert (delay.abs() < 1e-12).all() and (delay != 0).any()  # the premise: noise, not zeros
    view, config = table_view(res.summary[cols])
    assert list(view["interruption_delay_mean_h"]) == [0.0, 0.0]
    fmt = config["interruption_delay_mean_h"]["type_config"]["format"]
    assert {_printf(fmt, v) for v in view["interruption_delay_mean_h"]} == {"0"}  # was -0.000000


def test_noise_does_not_choose_a_columns_decimals_but_a_real_small_value_does():
    assert formats.decimals_for([-2.8e-16, 8.1e-16]) == 0
    assert formats.decimals_for([-2.8e-16, 12.5]) == 1  # 12.5 to three figures
    assert formats.decimals_for([-2.8e-16, 0.000317]) == 6  # 0.000317: three figures need six decimals
    view, config = table_view(pd.DataFrame({"option": ["a", "b"], "rate_per_h": [-2.8e-16, 0.000317]}))
    fmt = config["rate_per_h"]["type_config"]["format"]
    assert [_printf(fmt, v) for v in view["rate_per_h"]] == ["0.000000", "0.000317"]


def test_noise_reads_zero_in_words():
    assert formats.significant(-1e-17) == "0" and formats.significant(1e-17) == "0"
    assert formats.plain(-2.8e-16) == "0"
    assert formats.significant(3.17e-4) == "0.000317"  # a real small value keeps its figures
    assert formats.per_gpu_hour(-0.001) == "$0.00/GPU-h"
    assert formats.per_gpu_hour(-0.004) == "$0.00/GPU-h"
    assert formats.per_gpu_hour(-0.006) == "−$0.01/GPU-h"  # rounds to a cent: a real negative
    assert formats.per_gpu_hour(2.99) == "$2.99/GPU-h"


def test_a_tornado_difference_that_rounds_to_nothing_reads_zero_dollars():
    table = pd.DataFrame({"input": ["pue"], "flips": [False], "low": [1.1], "high": [1.8], "unit": [""],
                          "low_difference_usd": [-0.4], "high_difference_usd": [-1234.6], "swing_usd": [1234.2],
                          "path": ["economics.pue"], "note": [""]})
    row = tornado_rows(table, pd.DataFrame()).iloc[0]
    assert (row["low_difference"], row["high_difference"], row["swing"]) == ("$0", "−$1,235", "$1,234")
    assert row["low_breakeven"] == row["high_breakeven"] == "–"


def test_a_price_per_unit_keeps_its_cents_beside_a_large_one():
    """cloud's $2.99 per GPU-hour used beside own's $373 (the column's maximum ≥ $100): cents
    for both, where a total would be whole dollars."""
    frame = pd.DataFrame({"option": ["own", "cloud"], "cost_per_gpu_hour_used_usd": [373.2, 2.99],
                          "own_usd_per_gpu_hour": [2.4123, math.nan], "electricity_usd_per_kwh": [0.085, 0.085],
                          "total_cost_usd": [1_234_567.4, 345.6]})
    view, config = table_view(frame)
    fmt = config["cost_per_gpu_hour_used_usd"]["type_config"]["format"]
    assert [_printf(fmt, v) for v in view["cost_per_gpu_hour_used_usd"]] == ["$373.20", "$2.99"]  # not "$3"
    assert _printf(config["electricity_usd_per_kwh"]["type_config"]["format"], 0.085) == "$0.09"
    assert list(view["own_usd_per_gpu_hour"]) == ["$2.41", "–"]  # a missing value: text cells, same format
    total = config["total_cost_usd"]["type_config"]["format"]
    assert [_printf(total, v) for v in view["total_cost_usd"]] == ["$1234567", "$346"]  # totals: whole dollars
