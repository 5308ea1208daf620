"""Time to target in the tables, the verdict, the figure, the report and the dashboard, with
their intervals.

Independent truths: t-intervals worked by hand (scipy's t quantile) on fabricated ``to_target``
tables; the sentence's wording for each case written out; the curve R(C) of the GPU-hours the
``to_target`` table reports at the horizon; that compute never decreases; and the numbers the
dashboard shows against the run computed outside it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from paths import APP
from scipy import stats

import costsim
from costsim.decisions import time_to_target as T
from costsim.models import scaling
from costsim.plots import figures as plots
from costsim.present.to_target import target_sentence
from costsim.report.build import build_report
from costsim.results import to_target
from costsim.runs.export import TABLES, write_tables
from costsim.scenario import scenario_from_data

# The README's flagship: one 64-GPU run, a 0.72, b 1.4, c_mid 24,000 GPU-hours, r0 0.31, target
# 0.65 (74,214 GPU-hours: day 48.3 on 64 GPUs from day 0); 60 days so it runs in well under a second.
CURVE = {"a": 0.72, "b": 1.4, "c_mid_gpu_hours": 24_000, "r0": 0.31}
FLAG = {"name": "flag", "arrivals_per_day": 10_000, "count": 1, "gpus": 64, "iterations": 100_000,
        "model_params_b": 7, "scaling": {"curve": CURVE, "target": 0.65}}
OWNED = {"name": "own", "kind": "owned", "gpu_type": "H100", "gpus": 128, "lead_time_days": 0, "failures": None}
OD = {"name": "od", "kind": "cloud", "gpu_type": "H100", "provisioning_delay_h": 0, "startup_h": 0,
      "billing_granularity_s": 1, "minimum_billing_s": 0}
SPOT = {**OD, "name": "spot", "pricing": "spot", "preemptions_per_instance_day": 0.1}


def flagship(horizon_days: float = 60, scaled: bool = True, options=(OD, OWNED, SPOT)) -> costsim.Scenario:
    cls = FLAG if scaled else {**FLAG, "scaling": None}
    data = {"name": "flagship", "horizon_days": horizon_days, "workload": {"classes": [cls]}, "options": list(options)}
    return scenario_from_data(data, "flagship", ".")


@pytest.fixture(scope="module")
def runs() -> list[costsim.Results]:
    sc = flagship()
    return [costsim.simulate(sc, seed=s) for s in (1, 2, 3)]


# -- the reward_by_day table ----------------------------------------------------------------------

def test_reward_by_day_is_the_curve_of_the_compute_received(runs):
    res = runs[0]
    by_day = res.reward_by_day
    assert list(by_day.columns) == to_target.REWARD_BY_DAY_COLUMNS
    for option, g in by_day.groupby("option", sort=False):
        np.testing.assert_array_equal(g["day"], np.arange(61.0))  # whole days 0..60 (the horizon is one)
        assert (np.diff(g["gpu_hours"]) >= 0).all() and (np.diff(g["reward"]) >= 0).all()
        row = res.to_target.set_index("option").loc[option]
        last = g.iloc[-1]
        assert last.gpu_hours == pytest.approx(row.gpu_hours, rel=1e-12)
        assert last.reward == pytest.approx(scaling.reward(row.gpu_hours, 0.72, 1.4, 24_000, 0.31), rel=1e-12)
        assert g["reward"].iloc[0] == pytest.approx(0.31)  # R(0) = r0
    # the horizon is not a whole day: it is added after the last whole day
    short = costsim.simulate(flagship(horizon_days=2.5), seed=1).reward_by_day
    np.testing.assert_array_equal(short[short["option"] == "od"]["day"], [0.0, 1.0, 2.0, 2.5])


def test_reward_by_day_is_empty_with_its_columns_without_scaling(tmp_path):
    res = costsim.simulate(flagship(horizon_days=2, scaled=False, options=(OD,)), seed=1)
    assert res.reward_by_day.empty and list(res.reward_by_day.columns) == to_target.REWARD_BY_DAY_COLUMNS
    assert "reward_by_day" in TABLES
    write_tables(res, tmp_path)
    assert list(pd.read_csv(tmp_path / "reward_by_day.csv").columns) == to_target.REWARD_BY_DAY_COLUMNS


# -- intervals over replications ------------------------------------------------------------------

def fabricated(reached: list[bool], day: list[float], cost: list[float], projected: list[float],
               option: str = "a") -> list[pd.DataFrame]:
    """One ``to_target`` table per replication with one row each (only the columns read)."""
    return [pd.DataFrame([{"option": option, "job_class": "flag", "target": 0.65, "reached": r,
                           "day": d if r else math.nan, "cost_usd": c if r else math.nan,
                           "projected_day": d if r else p}])
            for r, d, c, p in zip(reached, day, cost, projected, strict=True)]


def test_intervals_by_hand():
    # a: reached in all three, days 40, 42, 47: mean 43, s² = (9 + 1 + 16)/2 = 13,
    # half-width t(0.975, 2)·√13/√3; costs 100, 110, 130: mean 113.3, s² = (177.8 + 11.1 + 277.8)/2
    a = fabricated([True] * 3, [40, 42, 47], [100, 110, 130], [0, 0, 0])
    # b: reached in one of three (day 50, $200), projected 70 and never in the others
    b = fabricated([True, False, False], [50, 0, 0], [200, 0, 0], [0, 70, math.inf], "b")
    # c: never reached, projected 80, 90, 100
    c = fabricated([False] * 3, [0] * 3, [0] * 3, [80, 90, 100], "c")
    tables = [pd.concat(three, ignore_index=True) for three in zip(a, b, c, strict=True)]
    t = T.interval_table(tables).set_index("option")
    q = stats.t.ppf(0.975, 2)
    ra = t.loc["a"]
    assert (ra.replications, ra.reached, ra.reached_share) == (3, 3, 1.0)
    assert ra.day_mean == pytest.approx(43.0)
    assert (ra.day_low, ra.day_high) == pytest.approx((43 - q * math.sqrt(13 / 3), 43 + q * math.sqrt(13 / 3)))
    s_cost = math.sqrt(((100 - 340 / 3) ** 2 + (110 - 340 / 3) ** 2 + (130 - 340 / 3) ** 2) / 2)
    assert (ra.cost_mean_usd, ra.cost_low_usd, ra.cost_high_usd) == pytest.approx(
        (340 / 3, 340 / 3 - q * s_cost / math.sqrt(3), 340 / 3 + q * s_cost / math.sqrt(3)))
    assert math.isnan(ra.projected_day_mean)  # all reached
    rb = t.loc["b"]
    assert (rb.reached, rb.reached_share, rb.day_mean, rb.cost_mean_usd) == (1, pytest.approx(1 / 3), 50.0, 200.0)
    assert math.isnan(rb.day_low) and math.isnan(rb.cost_high_usd)  # fewer than 2 reached: no interval
    assert rb.projected_day_mean == math.inf  # one of them never gets there
    rc = t.loc["c"]
    assert rc.reached == 0 and math.isnan(rc.day_mean) and rc.projected_day_mean == pytest.approx(90.0)
    assert list(T.interval_table([]).columns) == T.SUMMARY_COLUMNS


def test_band_by_hand(runs):
    band = T.reward_band(runs)
    one = band[(band["option"] == "spot") & (band["day"] == 30.0)].iloc[0]
    x = np.array([r.reward_by_day.query("option == 'spot' and day == 30.0")["reward"].iloc[0] for r in runs])
    half = stats.t.ppf(0.975, 2) * x.std(ddof=1) / math.sqrt(3)
    assert one.n == 3 and x.std() > 0  # spot preemptions differ between seeds
    assert (one.reward, one.reward_low, one.reward_high) == pytest.approx((x.mean(), x.mean() - half, x.mean() + half))


# -- the sentence ---------------------------------------------------------------------------------

def summary(*rows) -> pd.DataFrame:
    """Fabricated ``interval_table`` rows: (option, reached, replications, day, cost, projected)."""
    return pd.DataFrame([{"option": o, "job_class": "flag", "target": 0.65, "replications": n, "reached": k,
                          "reached_share": k / n, "day_mean": d, "cost_mean_usd": c, "projected_day_mean": p}
                         for o, k, n, d, c, p in rows])


NAN = math.nan


@pytest.mark.parametrize("rows, expected", [
    ([("own", 3, 3, 48.3, 291_211, NAN), ("od", 3, 3, 54.2, 221_899, NAN)],
     "Time to target: own reaches the target score 0.65 (flag) on day 48.3, 5.9 days earlier than od (day 54.2), "
     "for $69,312 more ($291,211 against $221,899 amortised cost until then)."),
    ([("own", 3, 3, 60.0, 200_000, NAN), ("od", 2, 3, 50.0, 250_000, NAN)],
     "Time to target: own reaches the target score 0.65 (flag) on day 60.0, 10.0 days later than od (day 50.0 "
     "(in 2 of 3 replications)), and $50,000 cheaper ($200,000 against $250,000 amortised cost until then)."),
    ([("own", 1, 1, 48.3, 100.0, NAN), ("od", 1, 1, 48.32, 100.0, NAN)],
     "Time to target: own reaches the target score 0.65 (flag) on day 48.3, the same day as od (day 48.3), "
     "for the same amortised cost ($100 against $100 amortised cost until then)."),
    ([("own", 2, 2, 40.0, 1_000, NAN), ("od", 0, 2, NAN, NAN, 75.04)],
     "Time to target: only own reaches the target score 0.65 (flag) within the horizon, on day 40.0 for $1,000 amortised; "
     "od does not (projected: day 75.0)."),
    ([("own", 0, 2, NAN, NAN, math.inf), ("od", 2, 2, 30.0, 5_000, NAN)],
     "Time to target: own does not reach the target score 0.65 (flag) within the horizon (projected: never at "
     "its pace); only od does, on day 30.0 for $5,000 amortised."),
    ([("own", 1, 3, 20.0, 9.0, 90.0), ("od", 0, 3, NAN, NAN, math.inf)],
     "Time to target: neither own nor od reaches the target score 0.65 (flag) within the horizon (projected "
     "day: 90.0 and never at its pace)."),
])
def test_sentence_wording(rows, expected):
    assert target_sentence(summary(*rows), "own", "od") == expected


def test_what_the_sentence_compares_with():
    s = summary(("a", 1, 1, 50.0, 1.0, NAN), ("b", 1, 1, 40.0, 2.0, NAN), ("c", 0, 1, NAN, NAN, 45.0))
    assert T.compared_with(s, "a", "c") == "b"  # b gets there first
    assert T.compared_with(s, "b", "c") == "c"  # b is first: against the verdict's versus
    assert T.compared_with(s, "b", None) == "c"  # else the next to get there (c, projected day 45)
    assert T.compared_with(s, "z", None) is None and T.compared_with(s.iloc[:1], "a", None) is None
    assert target_sentence(s, "a", "z") == ""


@pytest.mark.slow
def test_the_verdict_adds_the_sentence_only_with_scaling(runs):
    plain = [costsim.simulate(flagship(scaled=False), seed=s) for s in (1, 2, 3)]
    v, w = costsim.decide(runs), costsim.decide(plain)
    assert w.time_to_target == "" and "Time to target" not in w.sentence
    # scaling only reads the runs: the rest of the sentence is the same, byte for byte
    assert v.time_to_target and v.sentence == f"{w.sentence} {v.time_to_target}"
    s = T.summarize(runs)
    assert v.time_to_target == target_sentence(s, v.option, T.compared_with(s, v.option, v.versus))
    # a single run too
    assert costsim.decide(runs[0]).time_to_target.startswith(f"Time to target: {costsim.decide(runs[0]).option} ")


# -- the figure -----------------------------------------------------------------------------------

def test_figure_one_line_per_option_the_target_and_the_reach_markers(runs):
    res = runs[0]
    fig = plots.time_to_target(res)
    lines = [t for t in fig.data if t.mode == "lines+markers"]
    assert [t.name for t in lines] == ["od", "own", "spot"]
    assert len({(t.line.dash, t.line.color) for t in lines}) == 3  # not by colour alone
    target = [t for t in fig.data if t.name == "target 0.65"]
    assert len(target) == 1 and list(target[0].y) == [0.65, 0.65]
    rows = res.to_target.set_index("option")
    notes = {line for a in fig.layout.annotations for line in a.text.split("<br>")}
    assert notes == {f"{o}: day {rows.loc[o, 'day']:.1f}, ${rows.loc[o, 'cost_usd']:,.0f}" for o in rows.index}
    # reach days 48.3, 48.3 and 51.4 are closer than an eighth of the 60 days: one box (texts apart)
    assert len(fig.layout.annotations) == 1 and fig.layout.annotations[0].x == pytest.approx(rows["day"].min())
    assert len(fig.data) == 2 * 3 + 1 + 1  # each option's line and its marked points, target, reach markers (no bands: one run)
    band = plots.time_to_target(runs)
    assert sum(t.fill == "toself" for t in band.data) == 3 and "mean of 3 replications" in band.layout.title.text


def test_figure_without_scaling_says_so():
    fig = plots.time_to_target(costsim.simulate(flagship(horizon_days=1, scaled=False, options=(OD,)), seed=1))
    assert not fig.data and "scaling" in fig.layout.title.text


# -- the report -----------------------------------------------------------------------------------

@pytest.mark.slow
def test_report_has_the_section_only_with_scaling(runs):
    page = build_report(runs)
    assert 'id="time-to-target"' in page
    assert page.index('id="options"') < page.index('id="time-to-target"') < page.index('id="breakeven"')
    v = costsim.decide(runs)
    import html

    assert html.escape(v.time_to_target) in page
    s = T.summarize(runs).set_index("option")
    assert f"{s.loc['spot', 'day_low']:.1f} – {s.loc['spot', 'day_high']:.1f}" in page  # the interval shown
    plain = build_report(costsim.simulate(flagship(horizon_days=2, scaled=False, options=(OD, OWNED)), seed=1))
    assert 'id="time-to-target"' not in plain and "Time to target" not in plain


# -- the dashboard --------------------------------------------------------------------------------

APP_YAML = """\
name: flagship
horizon_days: 60
workload:
  classes:
    - name: flag
      arrivals_per_day: 10000
      count: 1
      gpus: 64
      iterations: 100000
      model_params_b: 7
      scaling:
        curve: {a: 0.72, b: 1.4, c_mid_gpu_hours: 24000, r0: 0.31}
        target: 0.65
options:
  - {name: od, kind: cloud, gpu_type: H100, provisioning_delay_h: 0, startup_h: 0}
  - {name: spot, kind: cloud, gpu_type: H100, pricing: spot, provisioning_delay_h: 0, startup_h: 0,
     preemptions_per_instance_day: 0.1}
"""


@pytest.mark.slow
def test_dashboard_tab_shows_the_figure_and_the_numbers_of_the_run():
    from streamlit.testing.v1 import AppTest

    from costsim.dashboard import SCENARIO_DIR, encode_scenario
    from costsim.dashboard.tabs import TABS
    from costsim.runs.sweepfile import replication_seed

    assert "Time to target" in TABS
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["s"] = encode_scenario(APP_YAML)
    at.run()
    assert not at.exception and not at.error
    at.radio(key="tab").set_value("Time to target").run()
    assert not at.exception and not at.error
    charts = at.get("plotly_chart")
    assert len(charts) == 1 and "target 0.65" in charts[0].proto.spec
    # the same replications run here, outside the dashboard (3: the sidebar's default)
    sc = costsim.load_scenario_text(APP_YAML, "f.yaml", SCENARIO_DIR)
    mine = [costsim.simulate(sc, seed=replication_seed(sc.seed, r)) for r in range(3)]
    tables = {tuple(d.value.columns): d.value for d in at.dataframe}
    first = next(v for cols, v in tables.items() if "needed_gpu_hours" in cols).set_index("option")
    truth = mine[0].to_target.set_index("option")
    for option in ("od", "spot"):  # the first replication's day and cost, as computed here
        assert first.loc[option, "day"] == pytest.approx(truth.loc[option, "day"], rel=1e-12)
        assert first.loc[option, "cost_usd"] == pytest.approx(truth.loc[option, "cost_usd"], rel=1e-12)
    spans = next(v for cols, v in tables.items() if "day_low" in cols).set_index("option")
    days = np.array([r.to_target.set_index("option").loc["spot", "day"] for r in mine])  # all reach it by day 54
    half = stats.t.ppf(0.975, 2) * days.std(ddof=1) / math.sqrt(3)
    assert spans.loc["spot", "day_mean"] == pytest.approx(days.mean())
    assert spans.loc["spot", "day_high"] == pytest.approx(days.mean() + half)
    # the verdict at the top carries the sentence decide() gives on the same replications
    from costsim.present.headline import literal_markdown

    sentence = costsim.decide(mine).time_to_target
    assert sentence.startswith("Time to target: spot reaches") and literal_markdown(sentence) in at.markdown[0].value


@pytest.mark.slow
def test_dashboard_tab_without_scaling_says_how_to_add_it():
    from streamlit.testing.v1 import AppTest

    from costsim.dashboard import encode_scenario

    plain = APP_YAML.replace("      scaling:\n        curve: {a: 0.72, b: 1.4, c_mid_gpu_hours: 24000, r0: 0.31}\n"
                             "        target: 0.65\n", "").replace("horizon_days: 60", "horizon_days: 5")
    assert "scaling" not in plain
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["s"] = encode_scenario(plain)
    at.run()
    at.radio(key="tab").set_value("Time to target").run()
    assert not at.exception and not at.error and not at.get("plotly_chart")
    assert any("scaling:" in i.value and "target:" in i.value for i in at.info)
