"""User text that would be markup somewhere else: HTML in plotly figures, formulas in a spreadsheet
opening a CSV, escape sequences in a terminal. Each output is checked against an independent
reading of what it holds (``html.unescape`` for plotly's entities, Python's csv module for the
cells, the raw bytes of the terminal output)."""

from __future__ import annotations

import csv
import html
import io
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from helpers import cloud, owned, scenario
from rich.console import Console
from rich.text import Text
from typer.testing import CliRunner

import costsim
from costsim.calibration.fit import fit_trace
from costsim.cli import commands as cli
from costsim.cli.commands import app
from costsim.cli.console import SafeConsole, visible
from costsim.plots import figures as plots
from costsim.report.fit import profile_figure, qq_figure
from costsim.scenario.trace import read_trace
from costsim.traces.csvcells import csv_text, guarded

# What a trace's job_class or job_id may hold: plotly would render the link and the bold text.
HOSTILE_CLASS = '<a href="http://evil.example/">link</a><b>bold</b> R&D'
HOSTILE_ID = "<i>id</i>"
FORMULAS = ["=1+1", "+2", "-3x", "@SUM(A1)"]  # text cells a spreadsheet would evaluate


def _strings(node) -> list[str]:
    """Every string anywhere in a figure's (or any JSON value's) tree."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for v in node.values() for s in _strings(v)]
    if isinstance(node, (list, tuple)):
        return [s for v in node for s in _strings(v)]
    if isinstance(node, np.ndarray):
        return [s for v in node.tolist() for s in _strings(v)]
    return []


def _no_user_html(strings: list[str]) -> None:
    """No string holds the user's tags raw; plotly would show the escaped ones as the text itself."""
    for s in strings:
        assert "<a " not in s and "<b>bold" not in s and "<i>" not in s, s


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    rows = [(float(i), 8, 3.0, f"{HOSTILE_ID}{i}", HOSTILE_CLASS if i % 2 else "plain") for i in range(12)]
    sc = scenario(folder, rows, [owned(gpus=16, failures={"node_failures_per_1000_node_days": 50}), cloud()],
                  columns=("submit_h", "gpus", "duration_h", "job_id", "job_class"))
    return costsim.simulate(sc)


# -- plotly -----------------------------------------------------------------------------------------

def test_trace_classes_in_figures_are_text_not_html(hostile_run):
    """The Failures tab's lost work and the Capacity tab's timeline (and report.html's) name each
    job class in the legend; the timeline's hover shows job ids and classes."""
    for make in (plots.lost_work, plots.gantt):
        fig = make(hostile_run)
        _no_user_html(_strings(fig.to_dict()))
        names = {html.unescape(t.name) for t in fig.data if t.name}
        assert HOSTILE_CLASS in names, names  # shown as the very text the trace holds
    held = [t for t in plots.gantt(hostile_run).data if t.name and html.unescape(t.name) == HOSTILE_CLASS]
    ids = {html.unescape(row[0]) for t in held for row in t.customdata}
    assert f"{HOSTILE_ID}1" in ids


def test_every_run_figure_holds_no_user_html(hostile_run):
    for name, make in plots.ALL_FIGURES.items():
        if name in ("iterations_per_day", "phase_breakdown", "rollout_throughput", "hybrid_parts"):
            continue  # no RL class or hybrid option in this trace scenario
        _no_user_html(_strings(make(hostile_run).to_dict()))


def test_literal_escapes_once_and_plotly_shows_the_text():
    from costsim.plots.layout import literal

    text = 'a<b>&amp;"%{x}'
    shown = literal(text)
    assert "<" not in shown and ">" not in shown and "%{" not in shown
    assert html.unescape(shown).replace("\u200b", "") == text  # the entities plotly reads back


def test_fitted_class_names_in_the_fit_report_are_text(tmp_path):
    path = tmp_path / "t.csv"
    pd.DataFrame({"submit_h": np.arange(40.0), "gpus": 8, "duration_h": np.linspace(1, 3, 40),
                  "job_class": HOSTILE_CLASS}).to_csv(path, index=False)
    table = read_trace(path)
    fits = fit_trace(table, by="job_class")
    for fig in (profile_figure(fits, weekly=False), qq_figure(table.duration_h, fits[0])):
        _no_user_html(_strings(fig.to_dict()))
    assert html.unescape(profile_figure(fits, weekly=True).data[0].name) == HOSTILE_CLASS


def _newplot_strings(page: str) -> list[str]:
    """The strings of every figure a report draws (the arguments of its Plotly.newPlot calls)."""
    decoder = json.JSONDecoder()
    out, pos = [], 0
    while (at := page.find("Plotly.newPlot(", pos)) >= 0:
        pos = page.index(",", at) + 1  # past the div id
        for _ in range(2):  # data, layout
            while page[pos] in " ,\n":
                pos += 1
            value, pos = decoder.raw_decode(page, pos)
            out += _strings(value)
    return out


def test_report_html_figures_hold_no_user_html(tmp_path, monkeypatch):
    rows = [(float(i), 8, 3.0, HOSTILE_CLASS if i % 2 else "plain") for i in range(12)]
    sc = scenario(tmp_path, rows, [owned(gpus=16), cloud()], columns=("submit_h", "gpus", "duration_h", "job_class"))
    (tmp_path / "s.yaml").write_text(costsim.dump_scenario(sc))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", "s.yaml", "--out", "o"])
    assert result.exit_code == 0, result.output
    strings = _newplot_strings((tmp_path / "o" / "report.html").read_text())
    assert strings, "no figure found"
    _no_user_html(strings)
    assert HOSTILE_CLASS in {html.unescape(s) for s in strings}


# -- CSV cells --------------------------------------------------------------------------------------

def _cells(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def _no_formula(rows: list[list[str]], numeric_ok: bool = True) -> None:
    """No cell starts like a formula, except numbers (a spreadsheet reads -3.5 as the number)."""
    for row in rows:
        for c in row:
            if c[:1] in ("=", "+", "-", "@", "\t", "\r"):
                assert numeric_ok and _is_number(c), repr(c)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_guard_rule_on_text_numbers_categories_and_names():
    frame = pd.DataFrame({"t": ["=1", "x", "-2", None, 3.0, "@x", "\tq", "\rz"], "n": [-1, 2, 3, 4, 5, 6, 7, 8],
                          "c": pd.Categorical(["+a"] + ["b"] * 7), "=h": list(range(8))})
    rows = list(csv.reader(io.StringIO(csv_text(frame))))
    assert rows[0] == ["t", "n", "c", "'=h"]
    assert [r[0] for r in rows[1:]] == ["'=1", "x", "'-2", "", "3.0", "'@x", "'\tq", "'\rz"]
    assert [r[1] for r in rows[1:]] == ["-1", "2", "3", "4", "5", "6", "7", "8"]  # numbers stay numbers
    assert rows[1][2] == "'+a"
    again = guarded(pd.DataFrame({"t": ["'=1"]}))
    assert list(again["t"]) == ["'=1"]  # guarded once: a guarded cell starts with '
    plain = pd.DataFrame({"t": ["a", "b"], "n": [-1.5, 2.0]})
    assert guarded(plain) is plain


def test_run_tables_guard_trace_text(tmp_path, monkeypatch):
    rows = [(float(i), 8, 2.0, f, f) for i, f in enumerate(FORMULAS)]
    sc = scenario(tmp_path, rows, [owned(gpus=16), cloud()], columns=("submit_h", "gpus", "duration_h", "job_id",
                                                                       "job_class"))
    (tmp_path / "s.yaml").write_text(costsim.dump_scenario(sc))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", "s.yaml", "--out", "o"])
    assert result.exit_code == 0, result.output
    for table in (tmp_path / "o").glob("*.csv"):
        _no_formula(_cells(table))
    jobs = _cells(tmp_path / "o" / "jobs.csv")
    header = jobs[0]
    ids = {r[header.index("job_id")] for r in jobs[1:]}
    classes = {r[header.index("job_class")] for r in jobs[1:]}
    assert ids == classes == {"'" + f for f in FORMULAS}
    parquet = pd.read_parquet(tmp_path / "o" / "jobs.parquet")
    assert set(parquet["job_id"]) == set(FORMULAS)  # Parquet is typed: no guard needed, none written


def test_sweep_tables_guard_swept_text_and_keep_negative_numbers(tmp_path):
    (tmp_path / "s.yaml").write_text("name: s\nhorizon_days: 2\nworkload:\n  classes:\n    - {name: a, "
                                     "arrivals_per_day: 2, gpus: 8, iterations: {mean: 20, cv: 0.5}, "
                                     "model_params_b: 7}\noptions:\n  - {name: own, kind: owned, gpu_type: H100, "
                                     "gpus: 16, lead_time_days: 0}\n  - {name: cloud, kind: cloud, gpu_type: H100}\n")
    (tmp_path / "sw.yaml").write_text('base: s.yaml\nreplications: 1\ngrid:\n  description: ["=1+1", "@SUM(A1)"]\n')
    costsim.sweep(tmp_path / "sw.yaml", out=tmp_path / "o", executor="local")
    for name in ("variants", "means", "differences"):
        _no_formula(_cells(tmp_path / "o" / f"{name}.csv"))
    variants = _cells(tmp_path / "o" / "variants.csv")
    assert sorted(r[variants[0].index("description")] for r in variants[1:]) == ["'=1+1", "'@SUM(A1)"]
    differences = _cells(tmp_path / "o" / "differences.csv")
    negative = [c for r in differences[1:] for c in r if c.startswith("-")]
    assert negative and all(float(c) < 0 for c in negative)  # option − versus < 0: written as a number


def test_optimize_tables_are_guarded(tmp_path):
    from costsim.cli.optimize import _write

    frame = pd.DataFrame({"option": ["=cmd"], "note": ["@x"], "total_cost_usd": [-5.0]})
    _write(SimpleNamespace(evaluated=frame, frontier=frame), tmp_path)
    for name in ("evaluated.csv", "frontier.csv"):
        assert _cells(tmp_path / name)[1] == ["'=cmd", "'@x", "-5.0"]


def test_imported_trace_is_guarded_and_reads_back_with_the_guard(tmp_path):
    from trace_import_helpers import cli as import_cli

    source = tmp_path / "pods.csv"
    source.write_text("name,num_gpu,gpu_milli,creation_time,scheduled_time,deletion_time,pod_phase,qos\n"
                      "=HYPERLINK(1),1,0,0,10,3600,Succeeded,@SUM(A1)\n+p2,1,0,5,10,3600,Succeeded,-x\n")
    result = import_cli("k8s-pods", str(source), "--out", str(tmp_path / "t.csv"))
    assert result.exit_code == 0, result.output
    rows = _cells(tmp_path / "t.csv")
    _no_formula(rows)
    header = rows[0]
    assert [r[header.index("job_id")] for r in rows[1:]] == ["'=HYPERLINK(1)", "'+p2"]
    assert [r[header.index("job_class")] for r in rows[1:]] == ["'@SUM(A1)", "'-x"]
    table = read_trace(tmp_path / "t.csv")  # the guard is part of the value the trace holds
    assert list(table.job_id) == ["'=HYPERLINK(1)", "'+p2"] and list(table.job_class) == ["'@SUM(A1)", "'-x"]


def test_fit_workload_trace_out_is_guarded(tmp_path, monkeypatch):
    """Fitted class names are made safe names (letters first), so a drawn trace has no formula of
    its own; the writer guards whatever the generator gives it all the same."""
    from costsim.calibration import fit_classes

    trace = tmp_path / "t.csv"
    pd.DataFrame({"submit_h": np.arange(40.0), "gpus": 8, "duration_h": np.linspace(1, 3, 40),
                  "job_class": "=cmd"}).to_csv(trace, index=False)
    real = fit_classes.trace_of
    monkeypatch.setattr(fit_classes, "trace_of", lambda *a: real(*a).assign(job_id=lambda d: "=" + d["job_id"]))
    runner = CliRunner()
    result = runner.invoke(app, ["fit-workload", str(trace), "--out", str(tmp_path / "c.yaml"),
                                 "--trace-out", str(tmp_path / "drawn.csv")])
    assert result.exit_code == 0, result.output
    rows = _cells(tmp_path / "drawn.csv")
    _no_formula(rows)
    header = rows[0]
    assert all(r[header.index("job_id")].startswith("'=") for r in rows[1:])
    assert {r[header.index("job_class")] for r in rows[1:]} == {"c_cmd"}


# -- terminal ---------------------------------------------------------------------------------------

ESCAPES = "\x1b[31mRED\x00\x1b]8;;http://evil.example\x1b\\\u202e"
SHOWN = "\\x1b[31mRED\\x00\\x1b]8;;http://evil.example\\x1b\\\\u202e"


def test_visible_escapes_controls_and_keeps_tab_and_newline():
    assert visible(ESCAPES) == SHOWN
    assert visible("a\tb\nc") == "a\tb\nc"
    assert visible(visible(ESCAPES)) == SHOWN  # idempotent: the result holds no control character


def test_safe_console_keeps_its_own_styles_and_escapes_user_text():
    screen = io.StringIO()
    console = SafeConsole(file=screen, force_terminal=True, color_system="standard", width=200)
    console.print(Text.assemble(("error", "bold red"), ": ", ESCAPES))
    out = screen.getvalue()
    assert "\x1b[1;31merror" in out  # rich's own style
    assert SHOWN in out and "\x1b[31mRED" not in out and "\x00" not in out and "\u202e" not in out


def _scenario_yaml(name: str) -> str:
    return (f"name: {json.dumps(name)}\nhorizon_days: 5\nworkload:\n  trace: jobs.csv\noptions:\n"
            "  - {name: cloud, kind: cloud, gpu_type: H100, provisioning_delay_h: 0, startup_h: 0}\n")


def _raw_output(result) -> str:
    return result.stdout + result.stderr


@pytest.mark.slow
def test_run_prints_a_scenario_name_and_trace_classes_escaped(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "jobs.csv").write_text(f"submit_h,gpus,duration_h,job_class\n0,8,1,\"{ESCAPES}\"\n1,16,2,b\n")
    (tmp_path / "s.yaml").write_text(_scenario_yaml(ESCAPES))
    for args in (["run", "s.yaml", "--out", "o"], ["run", "s.yaml", "--out", "o2", "--wide"], ["validate", "s.yaml"]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        out = _raw_output(result)
        assert "\x1b" not in out and "\x00" not in out and "\u202e" not in out, repr(out)
    result = CliRunner().invoke(app, ["run", "s.yaml", "--out", "o3"])
    title = "".join(line.strip() for line in result.stdout.splitlines())  # the title wraps at the table's width
    assert f"{SHOWN}: 5 days" in title


def test_fit_workload_prints_trace_classes_escaped(tmp_path):
    trace = tmp_path / "t.csv"
    pd.DataFrame({"submit_h": np.arange(40.0), "gpus": 8, "duration_h": 1.0,
                  "job_class": "\x1b]0;pwned\x1b\\x"}).to_csv(trace, index=False)
    result = CliRunner().invoke(app, ["fit-workload", str(trace), "--out", str(tmp_path / "c.yaml"), "--by",
                                      "job_class"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    out = _raw_output(result)
    assert "\x1b" not in out and "\\x1b]0;pwned\\x1b\\x: 40 jobs" in out, repr(out)


def test_error_messages_print_paths_escaped(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["validate", "\x1b[2Jgone.yaml"])
    assert result.exit_code == 2
    assert "\x1b" not in _raw_output(result) and "\\x1b[2Jgone.yaml" in result.stderr


def test_run_shows_a_writing_tables_step(tmp_path, monkeypatch):
    """After the tables are printed, writing them (tens of seconds for a million jobs) has its
    own progress step."""
    screen = io.StringIO()
    monkeypatch.setattr(cli, "err_console", Console(file=screen, force_terminal=True, width=120))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "jobs.csv").write_text("submit_h,gpus,duration_h\n0,8,1\n1,16,2\n")
    (tmp_path / "s.yaml").write_text(_scenario_yaml("s"))
    result = CliRunner().invoke(app, ["run", "s.yaml", "--out", "o"])
    assert result.exit_code == 0, result.output
    assert "writing tables" in screen.getvalue()
