"""User text (scenario names, keys, option and class names, trace cells, paths) is printed by the
CLI literally: Rich markup in it such as ``[/]`` or ``[bold]`` neither crashes the CLI nor styles
anything. Each case asserts the exit status, the literal text and that no exception escaped."""

from __future__ import annotations

import io
import json

import pytest
from helpers import invoke_cli
from rich.console import Console

from costsim.cli import commands as cli

TRACE = "submit_h,gpus,duration_h\n0,8,1\n1,16,2\n"
SCENARIO = """\
name: {name}
horizon_days: 5
workload:
  trace: jobs.csv
options:
  - name: {option}
    kind: cloud
    gpu_type: H100
    provisioning_delay_h: 0
    startup_h: 0
"""
RL = """\
name: s
horizon_days: 5
workload:
  classes:
    - name: {klass}
      arrivals_per_day: 2
      gpus: 16
      iterations: {{mean: 100, cv: 0.5}}
      model_params_b: 7
options:
  - {{name: own, kind: owned, gpu_type: H100, gpus: 32}}
"""
MARKUP = "[/]x[bold]y[/bold][red]"


@pytest.fixture
def here(tmp_path, monkeypatch):
    (tmp_path / "jobs.csv").write_text(TRACE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def invoke(*args: str):
    return invoke_cli(*args)


def test_scenario_name_with_markup_prints_literally(here):
    (here / "s.yaml").write_text(SCENARIO.format(name=json.dumps(MARKUP), option="cloud"))
    result = invoke("validate", "s.yaml")
    assert result.exit_code == 0 and f"scenario {MARKUP!r}" in result.stdout, result.output
    result = invoke("run", "s.yaml")
    assert result.exit_code == 0, result.output
    assert f"{MARKUP}: 5 days, seed" in result.stdout  # the table's title, markup and all
    assert (here / "out" / "x_bold_y_bold_red" / "summary.csv").is_file()


def test_unknown_keys_with_markup_print_literally(here):
    text = SCENARIO.format(name="s", option="cloud").replace("horizon_days", '"[/]": 1\nhorizon_days')
    (here / "s.yaml").write_text(text + '    "[bold]x": 2\n')
    for command in ("validate", "run"):
        result = invoke(command, "s.yaml")
        assert result.exit_code == 2, result.output
        assert "s.yaml:2:1: [/]: unknown field" in result.stderr, result.stderr
        assert "options.0.[bold]x: unknown field" in result.stderr, result.stderr
    assert not (here / "out").exists()


def test_option_names_with_markup_print_literally(here):
    """A hybrid names its base and burst options in free text, which the error message quotes."""
    hybrid = f"  - {{name: h, kind: hybrid, base: {json.dumps(MARKUP)}, burst: {json.dumps('[bold]b')}}}\n"
    (here / "s.yaml").write_text(SCENARIO.format(name="s", option="cloud") + hybrid)
    result = invoke("run", "s.yaml")
    assert result.exit_code == 2, result.output
    assert f"base {MARKUP!r} is not an option of this scenario" in result.stderr, result.stderr


@pytest.mark.parametrize("text, field", [
    (SCENARIO.format(name="s", option=json.dumps(MARKUP)), "options.0.name"),
    (RL.format(klass=json.dumps(MARKUP)), "workload.classes.0.name"),
])
def test_option_and_class_names_cannot_hold_markup(here, text, field):
    """A guard rather than a regression test (the old code passed it too): option and class names
    are limited to letters, digits and '_.-', so markup never reaches a table through them."""
    (here / "s.yaml").write_text(text)
    result = invoke("run", "s.yaml")
    assert result.exit_code == 2, result.output
    assert f"{field}: String should match pattern" in result.stderr, result.stderr


def test_trace_job_ids_with_markup_print_literally(here):
    (here / "jobs.csv").write_text(f"submit_h,gpus,duration_h,job_id\n0,8,1,{MARKUP}\n1,16,2,{MARKUP}\n")
    (here / "s.yaml").write_text(SCENARIO.format(name="s", option="cloud"))
    result = invoke("run", "s.yaml")
    assert result.exit_code == 2, result.output
    assert f"jobs.csv:3: job_id: {MARKUP!r} appears more than once" in result.stderr, result.stderr


def test_paths_with_markup_print_literally(here):
    result = invoke("validate", f"{MARKUP}.yaml")
    assert result.exit_code == 2 and f"{MARKUP}.yaml" in result.stderr, result.stderr
    (here / "s.yaml").write_text(SCENARIO.format(name="s", option="cloud"))
    (here / "[bold]file").write_text("not a folder")
    result = invoke("run", "s.yaml", "--out", "[bold]file/sub")
    assert result.exit_code == 2 and "--out [bold]file/sub" in result.stderr, result.stderr


def test_progress_descriptions_print_literally(monkeypatch):
    """The progress bar shows option names; should one ever hold markup, it is shown as is."""
    screen = io.StringIO()
    monkeypatch.setattr(cli, "err_console", Console(file=screen, force_terminal=True, width=120))

    def simulate(sc, seed, on_option, **_):
        on_option(MARKUP, 0, 2)  # what api.simulate reports as it starts each option
        cli.err_console.file.flush()
        return "results"

    monkeypatch.setattr(cli.api, "simulate", simulate)

    class Scenario:
        options = ("a", "b")

    assert cli._simulate_with_progress(Scenario(), 0) == "results"
    assert f"simulating {MARKUP}" in screen.getvalue()
