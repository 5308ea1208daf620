"""The sensitivity tornado (costsim.decisions.tornado) on a case computable by hand.

One owned node of 8 H100s against on-demand H100s over one 365-day year (12 model months of
730 h). Every 10 h an 8-GPU job of 5 h arrives, so nothing ever queues, every job finishes and each
month holds exactly 73 jobs (730 is a multiple of 10): 2,920 GPU-hours a month. The owned option's
only cost lines are capital (straight-line over one year, no residual: the whole capex within the
horizon) and energy; colocation, maintenance, staff and setup are zero. So, with price p, capex C,
electricity e, PUE u, depreciation n years and cost of capital r:

    cloud  = 12 × 2,920 × p
    energy = 12 × (idle_kw × 730 + (max_kw − idle_kw) / 8 × 2,920) × u × e
    owned  = capital(C, n, r) + energy,  capital = C / n × 1 year (r = 0) or the annuity C·r/(1 − (1+r)^−n)

and the cash break-even month is the first month number N (counted from 1: month N ends N months
in) with C ≤ N (monthly rent − monthly energy), if N ≤ 12.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest
from helpers import cloud, owned, scenario

from costsim.catalog.load import default_catalog
from costsim.decisions.sensitivity import COLUMNS, Tornado, tornado
from costsim.errors import ArgumentError
from costsim.present.tornado import sentence
from costsim.scenario import ScenarioError

PRICE = 2.99  # USD per GPU-hour
CAPEX_PER_GPU = 10_000.0
ELECTRICITY = 0.10
PUE = 1.3
MONTH_H = 730.0
MONTH_GPU_H = 73 * 5 * 8  # 2,920
ECONOMICS = {
    "electricity_usd_per_kwh": ELECTRICITY, "pue": PUE, "depreciation_years": 1.0, "cost_of_capital": 0.0,
    "colo_usd_per_kw_month": 0.0, "maintenance_frac_per_year": 0.0, "staff_usd_per_fte_year": 0.0,
    "setup_usd": 0.0, "residual_value_frac": 0.0,
}
ANALYTIC = ["cloud_price", "capex_per_gpu", "electricity_usd_per_kwh", "pue", "depreciation_years", "cost_of_capital"]
LABELS = {"cloud_price": "cloud price", "capex_per_gpu": "capex per GPU", "electricity_usd_per_kwh": "electricity",
          "pue": "PUE", "depreciation_years": "depreciation years", "cost_of_capital": "cost of capital"}
NOT_HERE = ["spot_discount", "node_failures_per_1000_node_days", "iterations_per_job"]


def _scenario(folder):
    rows = [(10.0 * k, 8, 5.0) for k in range(876)]  # submits 0 … 8,750 h; the last ends at 8,755 h
    options = [owned(gpus=8, capex_usd_per_gpu=CAPEX_PER_GPU), cloud(price_per_gpu_hour=PRICE)]
    return scenario(folder, rows, options, 365.0, economics=ECONOMICS)


def _by_hand(x: dict) -> tuple[float, float]:
    """(owned − cloud over the year, cash break-even month) for the inputs ``x``, by the formulas above."""
    h100 = default_catalog().gpus["H100"]
    kwh_month = h100.node_idle_kw * MONTH_H + (h100.node_max_kw - h100.node_idle_kw) / 8 * MONTH_GPU_H
    energy_month = kwh_month * x["pue"] * x["electricity"]
    rent_month = MONTH_GPU_H * x["price"]
    capex = 8 * x["capex_per_gpu"]
    n, r = x["years"], x["rate"]
    capital = capex / n if r == 0 else capex * r / (1 - (1 + r) ** -n)  # one year of an n-year life
    difference = capital + 12 * energy_month - 12 * rent_month
    months = math.ceil(capex / (rent_month - energy_month))  # first N: capex ≤ N (rent − energy)
    return difference, float(months) if months <= 12 else math.nan


BASE = {"price": PRICE, "capex_per_gpu": CAPEX_PER_GPU, "electricity": ELECTRICITY, "pue": PUE, "years": 1.0,
        "rate": 0.0}
# input -> (key in BASE, multiplies the base?)
SETS = {"cloud_price": ("price", True), "capex_per_gpu": ("capex_per_gpu", True),
        "electricity_usd_per_kwh": ("electricity", False), "pue": ("pue", False),
        "depreciation_years": ("years", False), "cost_of_capital": ("rate", False)}


def _expected(name: str, end: str) -> tuple[float, float]:
    r = default_catalog().ranges[name]
    key, scale = SETS[name]
    v = getattr(r, end)
    return _by_hand({**BASE, key: BASE[key] * v if scale else v})


@pytest.fixture(scope="module")
def result(tmp_path_factory) -> Tornado:
    return tornado(_scenario(tmp_path_factory.mktemp("tornado")), inputs=ANALYTIC + NOT_HERE, executor="local")


def test_the_pair_and_the_base_difference_by_hand(result):
    assert (result.build, result.rent) == ("own", "cloud")
    diff, month = _by_hand(BASE)
    assert result.base_difference_usd == pytest.approx(diff, rel=1e-6)
    assert diff < 0  # owning is cheaper at base: 80,000 + 7,402 against 104,770
    assert result.base_breakeven_month == month == 10.0


def test_each_inputs_low_and_high_difference_and_break_even_by_hand(result):
    table = result.table
    assert list(table.columns) == COLUMNS
    for name, label in LABELS.items():
        row = table[table["input"] == label].iloc[0]
        for end in ("low", "high"):
            diff, month = _expected(name, end)
            assert row[f"{end}_difference_usd"] == pytest.approx(diff, rel=1e-6), (name, end)
            got = row[f"{end}_breakeven_month"]
            assert (math.isnan(got) and math.isnan(month)) or got == month, (name, end, got, month)
        assert row["swing_usd"] == pytest.approx(abs(_expected(name, "high")[0] - _expected(name, "low")[0]), rel=1e-6)


def test_the_order_is_by_swing_as_computed_by_hand(result):
    swing = {LABELS[n]: abs(_expected(n, "high")[0] - _expected(n, "low")[0]) for n in ANALYTIC}
    by_hand = sorted(swing, key=swing.get, reverse=True)
    # By hand: cloud price 52,385 > capex 16,000 > depreciation 13,333 > electricity 9,556 >
    # cost of capital 6,400 > PUE 3,986 (USD): far enough apart that the order is no accident.
    assert by_hand == ["cloud price", "capex per GPU", "depreciation years", "electricity", "cost of capital", "PUE"]
    assert list(result.table["input"][: len(ANALYTIC)]) == by_hand


def test_only_the_input_whose_range_crosses_break_even_flips(result):
    # Owning and renting cost the same when the cloud price is owned ÷ (12 × 2,920) per GPU-hour:
    # ×0.834 of today's, inside the catalog's ×0.67 … ×1.17, so the low end flips the verdict.
    diff, _ = _by_hand(BASE)
    cloud_year = 12 * MONTH_GPU_H * PRICE
    crossing = (diff + cloud_year) / cloud_year
    r = default_catalog().ranges["cloud_price"]
    assert r.low < crossing < 1 < r.high
    table = result.table.set_index("input")
    assert table.loc["cloud price", "flips"]
    assert table.loc["cloud price", "low_difference_usd"] > 0 > table.loc["cloud price", "high_difference_usd"]
    # Every other input keeps the sign at both ends (by hand: each stays below the cloud's 104,770).
    others = [n for n in ANALYTIC if n != "cloud_price"]
    assert all(_expected(n, e)[0] < 0 for n in others for e in ("low", "high"))
    assert not table.drop(index="cloud price")["flips"].any()
    assert "flips if cloud price is ×0.67" in sentence(result)
    assert "largest swing is cloud price" in sentence(result)


def test_inputs_that_do_not_apply_are_listed_last_with_a_note(result):
    tail = result.table.iloc[len(ANALYTIC):]
    assert list(tail["input"]) == ["spot discount", "failure rate", "iterations per job"]
    assert tail["swing_usd"].isna().all() and not tail["flips"].any()
    assert list(tail["note"]) == ["skipped: no spot option", "skipped: no option models node failures",
                                  "skipped: trace workload: no RL classes to lengthen"]


def test_bad_arguments_are_refused_before_anything_runs(tmp_path):
    sc = _scenario(tmp_path)
    with pytest.raises(ArgumentError, match="unknown input"):
        tornado(sc, inputs=["electricity"])
    with pytest.raises(ArgumentError, match="low .* must be less than high"):
        tornado(sc, inputs={"pue": (1.5, 1.2)})
    rent_only = scenario(tmp_path, [(0.0, 8, 5.0)], [cloud(), cloud("cloud-2")], 1.0)
    with pytest.raises(ScenarioError, match="no owned option"):
        tornado(rent_only)


def test_the_figure_draws_largest_swing_on_top_and_marks_the_flip(result):
    from costsim.plots.figures import tornado_figure

    fig = tornado_figure(result.table)
    top_down = list(fig.layout.yaxis.categoryarray)[::-1]  # plotly lists categories bottom-up
    assert [label.split(" (")[0] for label in top_down] == [
        "⚑ flips: cloud price", "capex per GPU", "depreciation years", "electricity", "cost of capital", "PUE"]
    assert top_down[0] == "⚑ flips: cloud price (×0.67 … ×1.17)"
    # Each bar runs from the base difference to the difference at that end.
    for bar in fig.data:
        assert bar.base == pytest.approx(result.base_difference_usd)
        for _label, dx, (_, diff) in zip(bar.y, bar.x, bar.customdata, strict=True):
            assert dx == pytest.approx(diff - result.base_difference_usd)
    assert "spot discount" in fig.layout.title.text  # not applicable, named


def test_a_scenario_object_that_skipped_validation_is_a_scenario_error_naming_the_field():
    """``Scenario.model_construct`` skips validation: the tornado validates it again and names the
    missing fields, rather than failing on an attribute the object lacks."""
    from costsim.scenario import Scenario

    with pytest.raises(ScenarioError) as err:
        tornado(Scenario.model_construct(name="x"))
    assert "options: required field is missing" in str(err.value)
    assert "workload: required field is missing" in str(err.value)


# ------------------------------------------------------------------ break-even cells in the first screen's words

def _three_replications():
    """One pair over three hand-made replications: only the second breaks even (month 5); the
    other two would catch up at months 14 and 16 if they went on (an 18-month life)."""
    import pandas as pd

    from costsim.results.finance import BREAKEVEN_COLUMNS

    def one(month, extrapolated):
        return pd.DataFrame([["own", "cloud", month, extrapolated, math.nan, 0.8, 2.4, 2.99, 18.0]],
                            columns=BREAKEVEN_COLUMNS)
    return [one(math.nan, 14.0), one(5.0, 5.0), one(math.nan, 16.0)]


def _with_pairs(result, over_by_end):
    """``result`` with its break-even rows replaced: ``over_by_end`` maps (input label, end) to a
    ``breakeven_over`` frame, as ``tornado`` keeps them."""
    import dataclasses

    import pandas as pd

    rows = [over.assign(variant=f"{label}-{end}", input=label, end=end) for (label, end), over in over_by_end.items()]
    return dataclasses.replace(result, breakeven=pd.concat(rows, ignore_index=True))


def _cells(result) -> tuple[dict, dict, str]:
    """(dashboard cells, report cells, the dashboard's base month) per (input, end)."""
    import re
    from html import unescape

    from costsim.dashboard.decision_tabs import tornado_rows
    from costsim.present.headline import tornado_breakeven
    from costsim.report.sections import tornado_section

    rows = tornado_rows(result.table, result.breakeven).set_index("input")
    dash = {(i, e): rows.loc[i, f"{e}_breakeven"] for i in rows.index for e in ("low", "high")}
    html, _ = tornado_section(result)
    body = [[unescape(td) for td in re.findall(r"<td[^>]*>(.*?)</td>", tr)]
            for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", html.split("<tbody>")[1])]
    report = {(r[0], e): r[9 + k] for r in body for k, e in enumerate(("low", "high"))}  # after the "verdict" cell
    return dash, report, tornado_breakeven(result.breakeven, "", "base")


def test_a_tornado_break_even_cell_reads_as_the_first_screen_says_the_same_row(result):
    """The same ``breakeven_over`` row, said by the first screen's sentence and by the tornado's
    cells (dashboard and report): the same words, the count of replications and the
    extrapolated month."""
    from costsim.present.headline import breakeven_sentence
    from costsim.results.finance import breakeven_over

    tables = _three_replications()
    over = breakeven_over(tables)
    shown = _with_pairs(result, {("cloud price", "low"): over,
                                 ("cloud price", "high"): breakeven_over([tables[0], tables[2]])})
    dash, report, _ = _cells(shown)
    # By hand: 1 of 3 break even, in month 5; the other two (2 of 3) not within the horizon.
    assert dash["cloud price", "low"] == report["cloud price", "low"] == "from month 5 (in 1 of 3 replications)"
    assert breakeven_sentence(over) == f"Cash break-even: own vs cloud: {dash['cloud price', 'low']}."
    # Neither of two breaks even; the mean of 14 and 16 is month 15, said as a mean of 2 of 2.
    high = "not within the horizon (about month 15 if it went on, mean of 2 of 2 replications)"
    assert dash["cloud price", "high"] == report["cloud price", "high"] == high
    assert breakeven_sentence(breakeven_over([tables[0], tables[2]])) == f"Cash break-even: own vs cloud: {high}."
    # A pair the break-even table does not compare, or an input skipped: "–", never "never".
    for key in [("capex per GPU", "low"), ("spot discount", "high")]:
        assert dash[key] == report[key] == "–"
    assert "never" not in " ".join(report.values()) + " ".join(dash.values())


def test_the_tornados_base_break_even_is_the_first_screens_for_the_base_run(result, tmp_path):
    """The base variant's cell and the first screen's break-even table of the base run itself
    (``breakeven_view``): one text (month 10 by hand, the module docstring), at each end too."""
    import costsim
    from costsim.present.headline import breakeven_view

    first_screen = breakeven_view([costsim.simulate(_scenario(tmp_path)).breakeven])
    pair = first_screen[(first_screen["option"] == "own") & (first_screen["versus"] == "cloud")]
    dash, report, base = _cells(result)
    assert base == pair["cash break-even"].iloc[0] == "from month 10"
    assert dash == report
    assert dash["spot discount", "low"] == "–"  # skipped: no spot option
    assert all(dash["PUE", e].startswith("from month ") for e in ("low", "high"))  # by hand: both within 12 months


def test_base_runs_given_are_used_as_they_are_not_simulated_nor_decided_again(result, tmp_path, monkeypatch):
    """The report hands its replications and their verdict to the tornado: the base variant's
    tasks are those runs, so only the inputs' ends are simulated, no second ``decide`` names the
    pair, and every number is the one the tornado finds on its own (``result``)."""
    import costsim
    from costsim.decisions import sensitivity
    from costsim.runs import api
    from costsim.runs.sweepfile import replication_seed

    sc = _scenario(tmp_path)
    runs = [costsim.simulate(sc, seed=replication_seed(sc.seed, 0))]
    verdict = costsim.decide(runs, flips=False)
    summary = runs[0].summary.copy()
    simulated, decided = [], []
    simulate, decide = api.simulate, sensitivity.decide
    monkeypatch.setattr(api, "simulate", lambda *a, **k: simulated.append(1) or simulate(*a, **k))
    monkeypatch.setattr(sensitivity, "decide", lambda *a, **k: decided.append(1) or decide(*a, **k))
    told = []
    given = tornado(sc, inputs=ANALYTIC + NOT_HERE, executor="local", given=sensitivity.Given(runs=runs, verdict=verdict),
                    progress=lambda done, total: told.append((done, total)))
    assert len(simulated) == 2 * len(ANALYTIC) and decided == []  # each input's two ends; the base is given
    assert told[-1] == (2 * len(ANALYTIC), 2 * len(ANALYTIC))
    pd.testing.assert_frame_equal(given.table, result.table)
    pd.testing.assert_frame_equal(given.breakeven, result.breakeven)
    assert (given.build, given.rent, given.base_difference_usd, given.base_breakeven_month) == \
        (result.build, result.rent, result.base_difference_usd, result.base_breakeven_month)
    pd.testing.assert_frame_equal(runs[0].summary, summary)  # the caller's run is left as it was
    # Without the verdict, the tornado decides on the given runs itself: once.
    tornado(sc, inputs=["pue"], executor="local", given=sensitivity.Given(runs=runs))
    assert decided == [1]


def test_base_runs_that_are_not_the_base_variants_tasks_are_refused(tmp_path):
    import costsim
    from costsim.decisions.sensitivity import Given
    from costsim.runs.sweepfile import replication_seed

    sc = _scenario(tmp_path)
    run = costsim.simulate(sc, seed=replication_seed(sc.seed, 0))
    with pytest.raises(ArgumentError, match="base scenario's 2 run"):
        tornado(sc, replications=2, inputs=["pue"], given=Given(runs=[run]))  # one run for two replications
    with pytest.raises(ArgumentError, match="on the seeds"):
        tornado(sc, seed=sc.seed + 1, inputs=["pue"], given=Given(runs=[run]))
    other = costsim.simulate(sc.model_copy(update={"horizon_days": 300.0}), seed=replication_seed(sc.seed, 0))
    with pytest.raises(ArgumentError, match="base scenario"):
        tornado(sc, inputs=["pue"], given=Given(runs=[other]))
    verdict = costsim.decide([run], targets=["p95_delay_h<=1"], flips=False)
    with pytest.raises(ArgumentError, match="tornado's targets"):
        tornado(sc, inputs=["pue"], given=Given(runs=[run], verdict=verdict))
