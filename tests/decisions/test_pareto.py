"""Pareto frontiers (costsim.decisions.pareto, costsim.plots.pareto_figure): a hand-built table whose
frontier is known (ties, NaN), both directions, agreement with a brute-force definition, a
verdict's options table and a sweep's table, and the figure."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from helpers import cloud, owned, scenario

import costsim
from costsim.decisions.fair import fair_rows
from costsim.decisions.pareto import frontier, sweep_table
from costsim.plots.figures import pareto_figure
from costsim.present.verdict import decide
from costsim.runs.sweepfile import sweep_from_sets
from costsim.scenario import ScenarioError, dump_scenario


def brute_force(points: list[tuple[float, ...]]) -> list[bool]:
    """The definition, literally (every column minimised): on the frontier unless some other row is
    no worse everywhere and better somewhere; a row with a NaN is never on it and beats nothing."""
    known = [not any(math.isnan(x) for x in p) for p in points]
    out = []
    for i, p in enumerate(points):
        beaten = any(known[j] and j != i and all(a <= b for a, b in zip(q, p, strict=True)) and any(a < b for a, b in zip(q, p, strict=True))
                     for j, q in enumerate(points))
        out.append(known[i] and not beaten)
    return out


HAND = pd.DataFrame({
    "option": ["a", "b", "c", "d", "e", "f", "g", "h"],
    "fair_total_usd": [1.0, 2.0, 2.0, 3.0, 4.0, 4.0, 0.5, np.nan],
    "queue_delay_p95_h": [5.0, 3.0, 4.0, 3.0, 1.0, 1.0, np.nan, 0.0],
})
# a: cheapest; b: beats c (same cost, less delay) and d (less cost, same delay); e and f tie exactly
# (neither beats the other: both on); g has no delay (NaN) and h no cost: neither is on, and neither
# beats anything although g is cheapest and h has no delay at all.
HAND_ON = {"a", "b", "e", "f"}


def test_hand_built_frontier_with_ties_and_nan():
    out = frontier(HAND)
    assert set(out.loc[out["on_frontier"], "option"]) == HAND_ON
    assert list(out["option"]) == ["g", "a", "b", "c", "d", "e", "f", "h"]  # by cost, then delay; NaN cost last
    assert len(HAND) == 8 and "on_frontier" not in HAND  # the input is left alone
    assert out.attrs == {"cost": "fair_total_usd", "objectives": [("queue_delay_p95_h", "min")]}


def test_a_maximised_objective_is_the_mirror_image():
    t = HAND.assign(iterations_per_day=-HAND["queue_delay_p95_h"])
    out = frontier(t, objectives=(("iterations_per_day", "max"),))
    assert set(out.loc[out["on_frontier"], "option"]) == HAND_ON


@pytest.mark.parametrize("k", [1, 2])
def test_agrees_with_the_definition_on_random_tables_with_many_ties(k):
    rng = np.random.default_rng(7)
    for _ in range(30):
        n = int(rng.integers(1, 40))
        values = rng.integers(0, 5, size=(n, k + 1)).astype(float)  # few distinct values: many ties
        values[rng.random((n, k + 1)) < 0.05] = np.nan
        cols = ["cost"] + [f"o{i}" for i in range(k)]
        t = pd.DataFrame(values, columns=cols).assign(row=range(n))
        out = frontier(t, "cost", [(c, "min") for c in cols[1:]])
        expected = dict(zip(range(n), brute_force([tuple(r) for r in values]), strict=True))
        assert dict(zip(out["row"], out["on_frontier"], strict=True)) == expected


def test_bad_arguments_are_named():
    with pytest.raises(ScenarioError, match="no column 'nope'"):
        frontier(HAND, objectives=(("nope", "min"),))
    with pytest.raises(ScenarioError, match="'lowest' is not 'min' or 'max'"):
        frontier(HAND, objectives=(("queue_delay_p95_h", "lowest"),))
    with pytest.raises(ScenarioError, match="DataFrame"):
        frontier([1, 2])


def _small(tmp_path):
    rows = [(float(i) * 2, 4, 3.0) for i in range(60)]  # 720 GPU-hours over 5 days: a queue on 8 GPUs
    return scenario(tmp_path, rows, [owned(gpus=8), owned(name="big", gpus=16), cloud(price_per_gpu_hour=4.0)], 10.0)


def test_a_verdicts_options_table(tmp_path):
    v = decide([costsim.simulate(_small(tmp_path), seed=s) for s in (1, 2)])
    out = frontier(v.options)
    points = [tuple(r) for r in v.options[["fair_total_usd", "queue_delay_p95_h"]].to_numpy()]
    expected = dict(zip(v.options["option"], brute_force(points), strict=True))
    assert dict(zip(out["option"], out["on_frontier"], strict=True)) == expected
    assert out["on_frontier"].any()


@pytest.mark.slow
def test_a_sweeps_table_has_the_fair_means_per_variant_and_option(tmp_path):
    (tmp_path / "s.yaml").write_text(dump_scenario(_small(tmp_path)))
    spec = sweep_from_sets(tmp_path / "s.yaml", ["options.own.gpus=8,24"], replications=2, seed=3)
    res = costsim.sweep(spec, executor="local")
    table = sweep_table(res)
    assert len(table) == 2 * 3 and list(table.columns[:2]) == ["variant", "options.own.gpus"]
    fair = fair_rows(res.runs)
    for r in table.itertuples():
        mine = fair[(fair["variant"] == r.variant) & (fair["option"] == r.option)]
        assert r.fair_total_usd == pytest.approx(mine["fair_total_usd"].mean()) and r.n == 2
    out = frontier(table)
    points = [tuple(p) for p in table[["fair_total_usd", "queue_delay_p95_h"]].to_numpy()]
    expected = dict(zip(zip(table["variant"], table["option"], strict=True), brute_force(points), strict=True))
    assert dict(zip(zip(out["variant"], out["option"], strict=True), out["on_frontier"], strict=True)) == expected


def test_the_figure_steps_through_the_frontier_and_fades_the_rest():
    t = HAND.assign(variant="v0", **{"options.own.gpus": range(8)})
    fig = pareto_figure(frontier(t))
    dominated, front = fig.data
    assert front.name == "Pareto frontier" and front.line.shape == "hv" and front.mode == "lines+markers"
    assert list(front.x) == [1.0, 2.0, 4.0, 4.0] and list(front.y) == [5.0, 3.0, 1.0, 1.0]  # by cost
    assert dominated.opacity < 1 and len(dominated.x) == 4
    assert "option: b" in front.text[1] and "variant: v0" in front.text[1] and "options.own.gpus: 1" in front.text[1]
    assert "(hours)" in fig.layout.yaxis.title.text and "USD" in fig.layout.xaxis.title.text
    assert "Pareto frontier" in fig.layout.title.text
    # Asked for another objective, the figure's frontier is that objective's (here: more is better).
    fig = pareto_figure(frontier(t.assign(iterations_per_day=[1, 2, 9, 3, 8, 1, 5, 5])), y="iterations_per_day")
    # g ($0.5, 5/day) beats a, b, d and f; c ($2, 9/day) beats e ($4, 8/day); h has no cost.
    assert list(fig.data[1].x) == [0.5, 2.0] and list(fig.data[1].y) == [5, 9]
    assert "higher is better" in fig.layout.title.text


def test_every_pair_of_frontier_points_trades_cost_for_delay():
    # An invariant on a larger random table: along the frontier, cost rises and delay falls.
    rng = np.random.default_rng(3)
    t = pd.DataFrame({"fair_total_usd": rng.random(500), "queue_delay_p95_h": rng.random(500)})
    on = frontier(t).query("on_frontier")
    for (c1, d1), (c2, d2) in itertools.pairwise(on[["fair_total_usd", "queue_delay_p95_h"]].to_numpy()):
        assert c1 < c2 and d1 > d2
