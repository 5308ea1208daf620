"""One seed scheme and one number per quantity on every surface.

- ``costsim run`` (the scenario's seed), replication 0 of the dashboard (the app itself, run by
  Streamlit's AppTest, no browser), of ``costsim report`` and of a one-variant sweep are the same
  run: their summary tables are equal, value for value.
- Every number on the dashboard's first screen (the verdict sentence, the cards, the cash
  break-even sentence, computed by the functions the first screen calls) is the same quantity as
  in the CLI's tables and in the report's HTML, for one scenario and seed and one replication.
- The tornado of the report runs on the verdict's replications: its base difference is the
  verdict's, and both say who pays more.
"""

from __future__ import annotations

import html
import math
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import TINY_RL, invoke_cli
from paths import APP
from scipy import stats as scipy_stats

import costsim
from costsim.runs.sweepfile import replication_seed

# Most tests run the 400-day lab below through the dashboard (AppTest), the CLI, the report or a sweep.
pytestmark = pytest.mark.slow


# TINY_RL over 400 days, busy enough (about 60 % of 16 GPUs) and with capex low enough that owning
# breaks even with renting at $7/GPU-h within the horizon: a break-even month to compare.
LAB = (TINY_RL.replace("horizon_days: 3", "horizon_days: 400")
       .replace("arrivals_per_day: 6", "arrivals_per_day: 9")
       .replace("lead_time_days: 0}", "lead_time_days: 0, capex_usd_per_gpu: 12000}")
       .replace("{name: cloud, kind: cloud, gpu_type: H100}",
                "{name: cloud, kind: cloud, gpu_type: H100, price_per_gpu_hour: 7.0}"))
LABELS = ["variant", "replication", "seed"]


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("lab")
    (folder / "s.yaml").write_text(LAB)
    return folder


@pytest.fixture(scope="module")
def cli_run(lab) -> tuple[str, Path]:
    """``costsim run`` on the scenario's seed: its stdout and its output folder."""
    out = lab / "out"
    result = invoke_cli("run", lab / "s.yaml", "--out", out, columns="400")
    assert result.exit_code == 0, result.output
    return result.output, out


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """Equal summary tables: the same columns, options and values (exactly, no tolerance)."""
    a = a.drop(columns=[c for c in LABELS if c in a]).reset_index(drop=True)
    b = b.drop(columns=[c for c in LABELS if c in b]).reset_index(drop=True)
    assert list(a.columns) == list(b.columns)
    pd.testing.assert_frame_equal(a, b, check_exact=True, check_dtype=False, check_categorical=False)


# --- 1. four surfaces, one run ----------------------------------------------------------------------


def test_replication_zero_is_the_run_costsim_run_makes(lab, cli_run):
    from streamlit.testing.v1 import AppTest

    from costsim.dashboard import encode_scenario
    from costsim.report.build import replications_of
    from costsim.runs.sweep import sweep
    from costsim.runs.sweepfile import sweep_from_sets

    _, out = cli_run
    cli = pd.read_parquet(out / "summary.parquet")
    sc = costsim.load_scenario(lab / "s.yaml")
    assert sc.seed == 1 and "seed 1" in cli_run[0]

    # The dashboard: the app's own run (bounded child processes), replication 0 of its 3.
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params["s"] = encode_scenario(LAB)
    at.run()
    assert not at.exception and not at.error
    _, _, dashboard_runs = at.session_state["last_good"]
    assert [r.seed for r in dashboard_runs][:1] == [sc.seed]
    _same(dashboard_runs[0].summary, cli)

    # Its Cost tab: the break-even the first screen's sentence gives, and NPV means over the 3 runs.
    from costsim.present.headline import breakeven_view, npv_sentence

    (sentence,) = [c.value for c in at.caption if c.value.startswith("Cash break")]
    at = at.radio(key="tab").set_value("Cost").run()
    assert not at.exception and not at.error
    (table,) = [d.value for d in at.dataframe if "cash break-even" in d.value.columns]
    words = breakeven_view([r.breakeven for r in dashboard_runs])["cash break-even"].iloc[0]
    assert list(table["cash break-even"]) == [words] and f"own vs cloud: {words}" in sentence.replace("\\", "")
    captions = " ".join(c.value for c in at.caption).replace("\\", "")
    assert npv_sentence([r.summary for r in dashboard_runs]) in captions and "means of 3 replications" in captions

    # costsim report's runs (2 replications: the first is the CLI's run, the second another).
    report_runs = replications_of(sc, 2, sc.seed)
    _same(report_runs[0].summary, cli)
    assert report_runs[1].seed != sc.seed
    assert not report_runs[1].summary["total_cost_usd"].equals(cli["total_cost_usd"])

    # A one-variant sweep's replication 0 (and its replication 1 is the report's second run).
    spec = sweep_from_sets(lab / "s.yaml", ["options.own.gpus=16"], replications=2)
    runs = sweep(spec, executor="local").runs
    _same(runs[runs["replication"] == 0], cli)
    _same(runs[runs["replication"] == 1], report_runs[1].summary)
    assert set(runs.loc[runs["replication"] == 0, "seed"]) == {sc.seed}


# --- 2. every number on the first screen, in the CLI's tables and in the report ------------------


class _Tables(HTMLParser):
    """Every HTML table's rows of cell texts, by the id of the section it is in; the verdict."""

    def __init__(self):
        super().__init__()
        self.section, self.tables, self.row, self.cell, self.verdict, self._in_verdict = "", {}, None, None, "", False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section":
            self.section = attrs.get("id", "")
        elif tag == "table":
            self.tables.setdefault(self.section, []).append([])
        elif tag == "tr":
            self.row = []
        elif tag in ("td", "th") and self.row is not None:
            self.cell = ""
        elif tag == "p" and attrs.get("id") == "verdict-sentence":
            self._in_verdict = True

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            self.row.append(self.cell.strip())
            self.cell = None
        elif tag == "tr" and self.row is not None:
            self.tables[self.section][-1].append(self.row)
            self.row = None
        elif tag == "p":
            self._in_verdict = False

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data
        if self._in_verdict:
            self.verdict += data


def _report(path: Path) -> _Tables:
    parser = _Tables()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def _rows(tables: list[list[list[str]]]) -> dict[str, dict[str, str]]:
    """A table as {first cell (the option, ★ and notes removed): {header: cell}}."""
    (table,) = tables
    head, *body = table
    out = {}
    for row in body:
        option = re.sub(r"^★ | \(recommended\)$", "", row[0])
        out[option] = dict(zip(head, row, strict=True))
    return out


def _columns(tables: list[list[list[str]]]) -> dict[str, dict[str, str]]:
    """A table with one column per option (the report's options table for a few options) as
    {option (★ and notes removed): {row header: cell}}."""
    (table,) = tables
    (corner, *options), *body = table
    return {re.sub(r"^★ | \(recommended\)$", "", option): {corner: option, **{row[0]: row[1 + i] for row in body}}
            for i, option in enumerate(options)}


def _number(text: str) -> float:
    return float(text.replace("$", "").replace(",", "").replace("%", "").replace("h", "").strip().replace("−", "-"))


def test_every_number_on_the_first_screen_is_the_cli_and_the_report_number(lab, cli_run):
    from costsim.present.headline import (
        CARD_METRICS,
        breakeven_sentence,
        breakeven_versus,
        card_table,
        card_value,
        headline_markdown,
    )
    from costsim.results.finance import breakeven_over

    stdout, out = cli_run
    page = lab / "report.html"
    result = invoke_cli("report", lab / "s.yaml", "--replications", "1", "--no-tornado", "--out", page)
    assert result.exit_code == 0, result.output
    report = _report(page)
    cli = pd.read_parquet(out / "summary.parquet").set_index("option")
    cli_breakeven = pd.read_csv(out / "breakeven.csv")

    # The first screen on the dashboard's replication 0 (the run above: test 1), decided as app.py does.
    sc = costsim.load_scenario(lab / "s.yaml")
    res = costsim.simulate(sc, seed=replication_seed(sc.seed, 0))
    verdict = costsim.decide([res], flips=False)
    cards = card_table(verdict).set_index("option")

    # The verdict: the report's and the CLI's are one sentence; the first screen's is the same
    # sentence before the flip search it runs on request.
    said = " ".join(re.search(r"Verdict: (.*?)\n\n", stdout, re.S).group(1).split())  # the console wraps it
    assert html.unescape(report.verdict).strip() == said
    first = headline_markdown(verdict, lambda s: s).split("  \n")[0].removeprefix("**Verdict:** ")
    assert said.startswith(first.removesuffix(".")), (first, said)

    # The cards against the CLI's summary (the same floats) and the report's options table (the same text).
    options = _columns(report.tables["options"])
    headers = {"fair_total_usd": "fair total (USD) ¹", "total_cost_usd": "amortised total (USD)",
               "cash_spent_usd": "cash spent (USD)", "queue_delay_p95_h": "p95 queue delay (h)",
               "completion": "completion (% of finishable jobs)", "iterations_per_day": "RL iterations per day"}
    assert [c for c, *_ in CARD_METRICS] == list(headers)
    for option in cli.index:
        row, card = cli.loc[option], cards.loc[option]
        # Fair total by its definition, from the CLI's columns: amortised + unfinished work and
        # unmet serving at the cheapest rent (+ waiting, priced 0 here).
        assert sc.decision.waiting_usd_per_gpu_hour == 0
        fair = row.total_cost_usd + row.unfinished_rent_usd + row.serving_unmet_rent_usd
        assert card.fair_total_usd == pytest.approx(fair, rel=1e-12)
        for col in ("total_cost_usd", "cash_spent_usd", "queue_delay_p95_h", "iterations_per_day"):
            assert card[col] == row[col], (option, col)
        # Completion: jobs done over the jobs that could finish (every job can here: one
        # finishes within the horizon on either option).
        assert card.completion == pytest.approx(row.jobs_completed / row.jobs_submitted, abs=2e-3)
        shown = options[option]
        for col in ("fair_total_usd", "total_cost_usd", "cash_spent_usd", "iterations_per_day"):
            assert shown[headers[col]] == card_value(col, card[col]), (option, col)
        assert _number(shown[headers["queue_delay_p95_h"]]) == pytest.approx(card.queue_delay_p95_h, abs=0.005)
        assert _number(shown[headers["completion"]]) == pytest.approx(card.completion * 100, abs=0.05)
        assert card_value("completion", card.completion) == shown[headers["completion"]] + " %"  # the header says %

    # The cash break-even: one month everywhere. The CLI's table holds the month number counted
    # from 1 (docs/decisions.md), the number every sentence says.
    (month,) = cli_breakeven["breakeven_month"]
    assert month == month and month > 1, "the scenario must break even within the horizon"
    month = int(month)
    sentence = breakeven_sentence(breakeven_over([res.breakeven]),
                                  breakeven_versus(res.breakeven, cards.reset_index(), verdict.option))
    assert sentence == f"Cash break-even: own vs cloud: from month {month}."
    table = _rows(report.tables["breakeven"])
    assert table["own"]["cash break-even"] == f"from month {month}"
    assert table["own"]["break-even utilisation"] == f"{cli_breakeven['breakeven_utilization'].iloc[0] * 100:.1f} %"


def test_the_breakeven_csv_holds_the_month_the_first_screen_and_the_report_say(lab, cli_run):
    # costsim run --out writes breakeven.csv, cashflow.csv and report.html from one run; the first
    # screen's sentence is the dashboard's replication 0, that same run (test 1).
    from costsim.present.headline import breakeven_sentence
    from costsim.results.finance import breakeven_over

    _, out = cli_run
    (month,) = pd.read_csv(out / "breakeven.csv").query("option == 'own' and versus == 'cloud'")["breakeven_month"]
    # By hand from cashflow.csv: cash paid (book value credit left out) summed to each month's end;
    # the break-even is the first month N from whose end on own's is at or below cloud's; entry k
    # of the sums is the end of month k + 1, because month numbers count from 1.
    cf = pd.read_csv(out / "cashflow.csv")
    paid = {o: np.cumsum((g.capex_usd + g.opex_usd + g.rent_usd + g.commitment_owed_usd).to_numpy())
            for o, g in cf.groupby("option")}
    below = paid["own"] <= paid["cloud"]
    assert below[-1] and not below[0], "the scenario must break even inside the horizon, after month 1"
    by_hand = len(below) - int(np.argmin(below[::-1])) + 1  # the entry after the last dearer one, + 1
    assert month == by_hand
    sc = costsim.load_scenario(lab / "s.yaml")
    res = costsim.simulate(sc, seed=replication_seed(sc.seed, 0))
    assert breakeven_sentence(breakeven_over([res.breakeven]), "cloud") == f"Cash break-even: own vs cloud: from month {by_hand}."
    report = _report(out / "report.html")
    assert _rows(report.tables["breakeven"])["own"]["cash break-even"] == f"from month {by_hand}"


# --- 2 (b, c, d): NPV means, the tornado on the verdict's replications, who pays more --------------


def test_npv_is_the_mean_over_the_replications_with_its_interval():
    from costsim.present.headline import npv_sentence

    a = pd.DataFrame({"option": ["own", "cloud"], "npv_usd": [1_000_000.0, 600_000.0]})
    b = pd.DataFrame({"option": ["own", "cloud"], "npv_usd": [1_200_000.0, 600_000.0]})
    # By hand: own's mean 1,100,000; s = 141,421.36, half-width t(0.975, 1) · s / √2 = 12.7062 × 100,000.
    half = scipy_stats.t.ppf(0.975, 1) * 100_000
    assert round(half) == 1_270_620
    assert npv_sentence([a, b]) == ("Net present value of each option's cash flow, the book value credit included (means of 2 replications, ± "
                                    f"half-width of the 95 % interval): own $1,100,000 ± ${half:,.0f}, "
                                    "cloud $600,000 ± $0.")
    assert npv_sentence([a]) == "Net present value of each option's cash flow, the book value credit included: own $1,000,000, cloud $600,000."


def test_the_breakeven_table_says_the_sentence_month_for_the_same_replications():
    from costsim.present.headline import breakeven_sentence, breakeven_view
    from costsim.results.finance import breakeven_over, round_month

    def one(month, extra):
        return pd.DataFrame({"option": ["own"], "versus": ["od"], "breakeven_month": [month],
                             "breakeven_month_extrapolated": [extra], "cheaper_until_month": [math.nan],
                             "breakeven_utilization": [0.5], "own_usd_per_gpu_hour": [2.0],
                             "rent_usd_per_gpu_hour": [4.0], "life_months": [60.0]})

    reps = [one(5.0, 5.0), one(math.nan, 21.0), one(8.0, 8.0)]
    # By hand: found in 2 of 3 at months 5 and 8 (counted from 1), mean 6.5, rounded half up: 7.
    assert round_month(6.5) == 7 and round_month(1.0) == 1 and round_month(5.49) == 5
    view = breakeven_view(reps)
    assert view["cash break-even"].iloc[0] == "from month 7 (mean of 2 of 3 replications)"
    assert breakeven_sentence(breakeven_over(reps)) == "Cash break-even: own vs od: " + view["cash break-even"].iloc[0] + "."
    assert view["breakeven_utilization"].iloc[0] == 0.5


def test_the_report_tornado_runs_on_the_verdicts_replications(tmp_path):
    from costsim.decisions.sensitivity import tornado
    from costsim.present.formats import who_pays_more
    from costsim.report.build import replications_of
    from costsim.results.finance import breakeven_over

    (tmp_path / "s.yaml").write_text(TINY_RL)
    sc = costsim.load_scenario(tmp_path / "s.yaml")
    runs = replications_of(sc, 2, sc.seed)
    verdict = costsim.decide(runs, flips=False)
    t = tornado(sc, replications=2, seed=sc.seed, inputs=["electricity_usd_per_kwh"], executor="local")
    # The base variant is the verdict's two runs: the same paired differences, averaged.
    assert {verdict.option, verdict.versus} == {t.build, t.rent}
    sign = 1 if verdict.option == t.build else -1
    assert t.base_difference_usd == pytest.approx(sign * verdict.difference_usd, rel=1e-12, abs=1e-6)
    pairs = breakeven_over([r.breakeven for r in runs]).set_index(["option", "versus"])
    month = pairs.loc[(t.build, t.rent), "breakeven_month"]
    assert (math.isnan(month) and math.isnan(t.base_breakeven_month)) or month == t.base_breakeven_month

    # costsim report: the verdict's replications in its tornado, and both sentences name who pays more.
    page = tmp_path / "r.html"
    result = invoke_cli("report", tmp_path / "s.yaml", "--replications", "2", "--executor", "local", "--out", page)
    assert result.exit_code == 0, result.output
    text = html.unescape(re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8")))
    assert "the verdict's 2 replications, the same seeds, averaged" in text
    base = who_pays_more(t.build, t.rent, t.base_difference_usd)
    assert f"base: {base};" in text
    assert f"Fair totals: {who_pays_more(verdict.option, verdict.versus, verdict.difference_usd)} per replication" in text
    assert re.search(r"In cash spent within the horizon \(capex when paid\) \(the mean over 2 replications\), "
                     r"\S+ costs (\$[\d.,]+ [Mk]? ?(more|less) than|the same as) \S+\.", text)
    assert not np.isnan(verdict.cash_difference_usd)
