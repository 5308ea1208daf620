"""What the decision figures mark (costsim.plots.decisions): the tornado hatches only the end of
an input's bar where the verdict flips (``flips_at``), and the Pareto figure's value axis does not
magnify a spread of a fraction of a percent into the whole plot."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from costsim.decisions.pareto import frontier
from costsim.plots.figures import pareto_figure, tornado_figure

BASE = -1_000.0  # build − rent at base, USD: building is cheaper


def _row(name: str, low_diff: float, high_diff: float, flips_at: str) -> dict:
    return {"input": name, "path": f"x.{name}", "unit": "× arrivals", "base": 1.0, "low": 0.5, "high": 2.0,
            "base_difference_usd": BASE, "low_difference_usd": low_diff, "high_difference_usd": high_diff,
            "swing_usd": abs(high_diff - low_diff), "flips": bool(flips_at), "flips_at": flips_at, "note": ""}


def _hatched(fig) -> dict[tuple[str, str], bool]:
    """(input, end) → whether that bar is drawn with a pattern, read off the figure's traces."""
    out = {}
    for bar in fig.data:
        end = "low" if bar.name.startswith("at its low") else "high"
        for label in bar.y:
            name = label.removeprefix("⚑ flips: ").split(" (")[0]
            assert (name, end) not in out, "one bar per input and end"
            out[(name, end)] = bar.marker.pattern.shape == "/"
    return out


def test_only_the_end_that_flips_is_hatched():
    # arrival scale: ×0.5 makes building win by more (−3,000), ×2 makes renting win (+2,000):
    # it flips at its high end only. price flips at its low end only; pue at both; staff at neither.
    table = pd.DataFrame([_row("arrival scale", -3_000.0, 2_000.0, "high"),
                          _row("price", 500.0, -1_500.0, "low"),
                          _row("pue", 300.0, 400.0, "low,high"),
                          _row("staff", -1_200.0, -800.0, "")])
    hatched = _hatched(tornado_figure(table))
    assert hatched == {("arrival scale", "low"): False, ("arrival scale", "high"): True,
                       ("price", "low"): True, ("price", "high"): False,
                       ("pue", "low"): True, ("pue", "high"): True,
                       ("staff", "low"): False, ("staff", "high"): False}
    labels = list(tornado_figure(table).layout.yaxis.categoryarray)
    assert sum(label.startswith("⚑ flips: ") for label in labels) == 3  # the label says the input flips


def test_a_table_without_flips_at_hatches_both_ends_of_a_flipping_input():
    table = pd.DataFrame([_row("arrival scale", -3_000.0, 2_000.0, "high")]).drop(columns="flips_at")
    assert _hatched(tornado_figure(table)) == {("arrival scale", "low"): True, ("arrival scale", "high"): True}


def _speed_table(speeds: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"option": [f"o{i}" for i in range(len(speeds))],
                         "fair_total_usd": [1_000.0 * (i + 1) for i in range(len(speeds))],
                         "iterations_per_day": speeds})


def test_a_spread_under_one_percent_gets_an_axis_of_two_percent_around_the_mean():
    speeds = [1_638.9, 1_639.2, 1_639.6]  # 0.7 per day apart: 0.04 % of the mean
    fig = pareto_figure(frontier(_speed_table(speeds), objectives=(("iterations_per_day", "max"),)),
                        y="iterations_per_day")
    mean = sum(speeds) / 3
    lo, hi = fig.layout.yaxis.range
    assert lo == pytest.approx(mean * 0.99) and hi == pytest.approx(mean * 1.01)
    # The 0.7 a day then fills 0.7 / (0.02 × 1,639.2) ≈ 2 % of the axis, not all of it.
    assert (max(speeds) - min(speeds)) / (hi - lo) == pytest.approx(0.7 / (0.02 * mean))
    assert all(lo <= s <= hi for s in speeds)


def test_a_spread_over_one_percent_keeps_plotlys_own_axis():
    fig = pareto_figure(frontier(_speed_table([100.0, 150.0, 400.0]), objectives=(("iterations_per_day", "max"),)),
                        y="iterations_per_day")
    assert fig.layout.yaxis.range is None
    # All zero (no delay anywhere): nothing to centre a share of on, plotly's range.
    fig = pareto_figure(frontier(pd.DataFrame({"fair_total_usd": [1.0, 2.0], "queue_delay_p95_h": [0.0, 0.0]})))
    assert fig.layout.yaxis.range is None
    assert not math.isnan(fig.data[1].y[0])
