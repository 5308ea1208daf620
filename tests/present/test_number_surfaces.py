"""Numbers as every surface prints them: the CLI's tables (units in the headers, never scientific
notation, the sweep's means within ``COLUMNS``), the dashboard's tables (small rates keep their
significant figures), the report's cells, the verdict's words, the Gantt's labels and the
cash-flow figure's book value credit (a labelled line of its own, not cash paid)."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from helpers import invoke_cli, tiny_sweep_files
from rich.console import Console

import costsim

SCIENTIFIC = re.compile(r"\d[eE][+-]?\d")  # 2.62e+03, 1e-05, 3E6


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tiny_sweep_files(tmp_path_factory.mktemp("numbers"))
    return folder, costsim.simulate(folder / "s.yaml")


def rendered(renderable, width: int = 200) -> str:
    with open("/dev/null", "w") as sink:
        console = Console(width=width, record=True, file=sink)
        console.print(renderable)
        return console.export_text()


# --- the CLI ---------------------------------------------------------------------------------------

@pytest.mark.slow
def test_run_prints_no_scientific_notation_and_units_in_headers(tiny):
    folder, _ = tiny
    narrow = invoke_cli("run", folder / "s.yaml", "--out", folder / "o1", columns="80")
    wide = invoke_cli("run", folder / "s.yaml", "--out", folder / "o2", "--wide", columns="80")
    for result in (narrow, wide):
        assert result.exit_code == 0, result.output
        assert not SCIENTIFIC.search(result.stdout), SCIENTIFIC.search(result.stdout)
    head = narrow.stdout[narrow.stdout.index(" days, seed "):]
    for unit in ("%", "h", "$M", "GPU-h", "it/day"):
        assert unit in head.split("───")[0], unit  # in the header lines, above the rule
    for header in ("delay mean (h)", "delay p95 (h)", "utilisation (%)", "amortised total ($)", "cash spent ($)",
                   "fair total ($)", "$/GPU-h used", "$/RL iter"):
        assert header in wide.stdout, header
    # the phases table: the seconds columns say so in their headers
    phases = wide.stdout[wide.stdout.index("RL iterations"):]
    for header in ("log- s", "sync/ s", "async s"):
        assert header in phases, header


def test_tables_print_big_and_small_numbers_in_plain_decimals(tiny):
    """A delay beyond 1,000 hours and a total of tens of millions: separators, no exponent."""
    from costsim.cli.tables import narrow_table, summary_table
    from costsim.present.headline import with_verdict
    from costsim.present.verdict import decide

    _, res = tiny
    rows = with_verdict(res.summary, decide(res)).assign(queue_delay_p95_h=2620.44, queue_delay_mean_h=1234.5,
                                                         total_cost_usd=12_345_678.9, cost_per_iteration_usd=0.004)
    narrow, wide = rendered(narrow_table(rows, "t"), 80), rendered(summary_table(rows, "t"), 400)
    assert "2,620.4" in narrow.split() and "12.35" in narrow.split()
    assert "2,620.44" in wide.split() and "1,234.50" in wide.split() and "$12,345,679" in wide.split()
    assert not SCIENTIFIC.search(narrow + wide)


def test_sweep_means_fit_COLUMNS(tiny):
    folder, _ = tiny
    result = invoke_cli("sweep", folder / "sw.yaml", "--executor", "local", "--out", folder / "sw80", columns="80")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "Not shown in 80 columns:" in " ".join(result.stdout.split())
    assert "…" not in result.stdout  # no number cut short
    means = pd.read_csv(folder / "sw80" / "means.csv")
    for total in means["total_cost_usd"]:
        assert f"${total:,.0f}" in result.stdout  # each whole, wrapped or not
    # Wider: every metric, one line per row, still within the width
    wide = invoke_cli("sweep", folder / "sw.yaml", "--executor", "local", "--out", folder / "sw170", columns="170")
    assert max(len(line) for line in wide.stdout.splitlines()) <= 170
    assert "Not shown" not in wide.stdout and "delay mean (h)" in wide.stdout


# --- the dashboard's tables ------------------------------------------------------------------------

def test_dashboard_headers_name_units():
    from costsim.dashboard.views import readable

    assert readable("interruptions_per_h") == "interruptions (per h)"
    assert readable("interval_h") == "interval (h)"
    assert readable("own_usd_per_gpu_hour") == "own ($/GPU-h)"
    assert readable("lost_gpu_hours") == "lost (GPU-h)"
    assert readable("marginal_gain_per_1000_gpu_h") == "marginal gain (per 1,000 GPU-h)"
    assert readable("excess") == "job time over the optimal (%)"
    assert readable("book_value_usd").startswith("book value at the end ($") and "not cash" in readable("book_value_usd")


def test_dashboard_small_rates_keep_three_significant_figures():
    from costsim.dashboard.views import cell_text, column_format

    rate = pd.Series([0.00031666666666666665, 0.0125])
    fmt = column_format("interruptions_per_h", rate)
    assert fmt == "%,.6f"  # 0.000317 needs six decimals; the table's usual two would show 0.00
    assert cell_text(fmt, rate[0]) == "0.000317"
    assert column_format("interval_h", pd.Series([12.5, 1500.25])) == "%,.1f"
    assert column_format("restarts", pd.Series([3.0, 1200.0])) == "%,.0f"
    assert column_format("lost_work_cost_usd", pd.Series([12.5, 50.0])) == "$%,.2f"
    assert cell_text("$%,.0f", -1234.4) == "−$1,234"
    assert cell_text("%,.1f", math.nan) == "–" and cell_text("%,.1f", math.inf) == "∞"


# --- the report's cells and the verdict's words ----------------------------------------------------

def test_report_cells_are_the_one_formatter():
    from costsim.present.formats import money_exact
    from costsim.report import html as h
    from costsim.report import sections

    assert {fmt for _, column, fmt, _ in sections.OPTION_COLUMNS
            if column.endswith("_usd") and "per_" not in column} == {money_exact}  # dollars, not $/GPU-h
    assert money_exact(7_463_187.4) == "$7,463,187" and money_exact(-0.4) == "$0" and money_exact(math.nan) == "–"
    assert h.fixed(1)(2620.44) == "2,620.4" and h.fixed(2)(-3.14159) == "−3.14"
    assert h.share(0.975) == "97.5 %"


def test_wording_has_no_exponent():
    from costsim.decisions.targets import parse_target
    from costsim.present.formats import money
    from costsim.present.wording import pct, shown, target_text

    assert money(999_999) == "$1.00 M"  # "$1e+03 k" before
    assert money(-1_340_000) == "−$1.34 M"
    assert shown("rl_iterations_per_day", 2400.0) == "2,400/day"  # "2.4e+03/day" before
    assert target_text(parse_target("rl_iterations_per_day>=2000000")).endswith("≥ 2,000,000/day")
    assert pct(0.032) == "3.2 %" and shown("p95_delay_h", math.nan) == "–"


# --- figures ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def crowded():
    """Four options, one of them short of GPUs (many packed rows) beside roomy ones (few)."""
    data = {"name": "g", "horizon_days": 6, "seed": 2,
            "workload": {"classes": [{"name": "a", "arrivals_per_day": 30, "gpus": 8, "iterations": {"mean": 60, "cv": 0.5},
                                      "model_params_b": 7}]},
            "options": [{"name": "small", "kind": "owned", "gpu_type": "H100", "gpus": 16, "lead_time_days": 0},
                        {"name": "big", "kind": "owned", "gpu_type": "H100", "gpus": 512, "lead_time_days": 0},
                        {"name": "huge", "kind": "owned", "gpu_type": "H100", "gpus": 1024, "lead_time_days": 0},
                        {"name": "cloud", "kind": "cloud", "gpu_type": "H100"}]}
    return costsim.simulate(costsim.runs.api.scenario_from_data(data, "test"))


def test_gantt_labels_do_not_overlap(crowded):
    from costsim.plots.figures import gantt
    from costsim.plots.timeline import Y_TITLE

    fig = gantt(crowded)
    layout = fig.layout.to_plotly_json()
    titles = [layout[k].get("title", {}).get("text") for k in layout if k.startswith("yaxis")]
    assert [t for t in titles if t] == [Y_TITLE]  # once, not once per panel over its neighbours
    assert all(not getattr(t, "text", None) for t in fig.data)  # no text on bars: hover only
    # At the report's height every panel leaves room for its title (about 20 px of text) and the
    # panel titles stand apart.
    height = max(460, 220 * len(crowded.summary))
    plot_px = height - fig.layout.margin.t - fig.layout.margin.b
    domains = sorted((layout[k]["domain"] for k in layout if k.startswith("yaxis")), reverse=True)
    assert all((hi - lo) * plot_px >= 40 for lo, hi in domains), domains
    ys = sorted(a.y for a in fig.layout.annotations if a.text in set(crowded.summary["option"]))
    assert len(ys) == 4 and min(np.diff(ys)) * plot_px >= 40


def test_cash_flow_shows_the_book_value_as_a_credit_not_as_cash_paid(tiny):
    from costsim.plots.figures import BOOK_VALUE_CREDIT, book_value_note, cash_flow

    _, res = tiny
    cf = res.cashflow
    own = cf[cf["option"] == "own"]
    assert own["book_value_usd"].iloc[-1] > 0  # the owned option has hardware left at the end
    fig = cash_flow(res)
    bars = {t.name: t for t in fig.data if t.type == "bar"}
    for option, g in cf.groupby("option"):
        paid = g["capex_usd"] + g["opex_usd"] + g["rent_usd"] + g["commitment_owed_usd"]  # by hand
        np.testing.assert_allclose(bars[option].y, paid.to_numpy())
        assert (np.asarray(bars[option].y) >= 0).all()  # cash paid never nets the credit in
    (credit,) = [t for t in fig.data if t.type == "scatter"]
    assert credit.name == f"own: {BOOK_VALUE_CREDIT}" and "not cash" in credit.name
    assert list(credit.x) == [own["month"].iloc[-1] + 1]  # months counted from 1 on the axis, as break-even months are
    assert credit.y[0] == pytest.approx(-own["book_value_usd"].iloc[-1])
    assert "not cash" in fig.layout.title.text and "cash paid" in fig.layout.yaxis.title.text
    note = book_value_note(res.summary)
    assert "own" in note and costsim.present.formats.money(own["book_value_usd"].iloc[-1]) in note and "not" in note
    assert book_value_note(res.summary[res.summary["option"] == "cloud"]) == ""
