"""`costsim report` and `costsim optimize` tell each stage on stderr (what it does, how many
simulations, how long), keep stdout to their answer, and say nothing with --quiet. Truth: the
counts each stage names, recomputed here by calling the same library functions directly.
"""

from __future__ import annotations

import io
import re

import pytest
from helpers import TINY_RL, invoke_cli
from rich.console import Console

import costsim
from costsim.cli.stages import Stages, counting, ended
from costsim.decisions.sensitivity import tornado
from costsim.runs.sweepfile import replication_seed

STAGE = r"(?P<what>[^\n]+): (?:(?P<n>[\d,]+) (?P<unit>\w+) in )?(?P<s>[\d,.]+) s"


def stage_lines(stderr: str) -> dict[str, tuple[int | None, str | None]]:
    """The end line of each stage: what -> (count, unit)."""
    out = {}
    for m in re.finditer(STAGE, stderr):
        out[m["what"]] = (int(m["n"].replace(",", "")) if m["n"] else None, m["unit"])
    return out


@pytest.mark.slow
def test_report_tells_every_stage_on_stderr_and_keeps_stdout_clean(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(TINY_RL)
    out = tmp_path / "r.html"
    res = invoke_cli("report", path, "--out", out, "--executor", "local")
    assert res.exit_code == 0, res.output
    assert res.stdout == f"wrote {out}\n"
    # The counts, independently: the three replications, the flip search's runs, the tornado's runs.
    sc = costsim.load_scenario(path)
    runs = [costsim.simulate(sc, seed=replication_seed(sc.seed, r)) for r in range(3)]
    flips = [0]

    def simulate(s, seed):
        flips[0] += 1
        return costsim.simulate(s, seed=seed)

    costsim.decide(runs, simulate=simulate)
    told: list[tuple[int, int]] = []
    tornado(sc, replications=3, seed=sc.seed, executor="local", progress=lambda done, total: told.append((done, total)))  # the verdict's 3
    lines = stage_lines(res.stderr)
    assert list(lines) == ["simulating 3 replications",
                           "searching the utilisation flip",
                           "sensitivity tornado (inputs at both ends)",
                           "building the page (figures and tables)",
                           "writing the report"], res.stderr
    assert lines["simulating 3 replications"] == (3, "runs")
    assert lines["searching the utilisation flip"][0] == flips[0]
    # The tornado's base is the verdict's 3 replications, handed over, not simulated again.
    assert lines["sensitivity tornado (inputs at both ends)"] == (told[-1][1] - 3, "runs")
    assert told[-1][0] == told[-1][1] > 3
    # Every section of the page: verdict, options, time to target, break-even, capacity over time,
    # Pareto, tornado, the run's five figure sections (costs, delays, iterations, reliability,
    # timeline), assumptions, scenario (a section with nothing to show is built and left out).
    assert lines["building the page (figures and tables)"] == (14, "sections")
    assert lines["writing the report"] == (None, None)
    # Not a terminal: each stage also says when it starts, so a log shows what is running now.
    assert res.stderr.count(" …\n") == 5


def test_report_quiet_says_nothing_on_stderr(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(TINY_RL)
    res = invoke_cli("report", path, "--out", tmp_path / "r.html", "--no-tornado", "--replications", 1, "--quiet")
    assert res.exit_code == 0, res.output
    assert res.stderr == "" and res.stdout.startswith("wrote ")


def test_optimize_tells_its_simulations_on_stderr(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(TINY_RL)
    res = invoke_cli("optimize", path, "--vary", "options.own.gpus=8..24", "--replications", 1,
                     "--executor", "local", "--target", "p95_delay_h<=1000")
    assert res.exit_code == 0, res.output
    runs = int(re.search(r"frontier[^\n]*?, ([\d,]+) simulations", res.stdout)[1].replace(",", ""))
    lines = stage_lines(res.stderr)
    assert list(lines) == ["simulating candidate configurations (local)"], res.stderr
    assert lines["simulating candidate configurations (local)"] == (runs, "simulations")
    assert "simulating" not in res.stdout
    quiet = invoke_cli("optimize", path, "--vary", "options.own.gpus=8..24", "--replications", 1,
                       "--executor", "local", "--target", "p95_delay_h<=1000", "-q")
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_bad_optimize_flags_show_no_stage(tmp_path):
    """The stage starts with the first simulation: a refused flag prints only its error."""
    path = tmp_path / "s.yaml"
    path.write_text(TINY_RL)
    res = invoke_cli("optimize", path, "--vary", "options.own.gpus=24..8", "--executor", "local")
    assert res.exit_code == 2
    assert "…" not in res.stderr and "simulating" not in res.stderr and "--vary" in res.stderr


def test_on_a_terminal_a_bar_gives_way_to_one_line_per_stage():
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=100, color_system=None)
    stages = Stages(console)
    with stages.stage("simulating 2 replications", 2, "runs") as step:
        step(1)
        step(2)
    with stages.stage("searching", unit="simulations") as step:
        counted = counting(lambda x: x * 2, step)
        assert [counted(3), counted(4)] == [6, 8]
    text = buffer.getvalue()
    assert "simulating 2 replications: 2 runs in " in text and "searching: 2 simulations in " in text
    assert " …" not in text  # the bar says it while it runs


def test_a_stage_that_fails_leaves_no_done_line():
    buffer = io.StringIO()
    stages = Stages(Console(file=buffer, width=100))
    try:
        with stages.stage("simulating", 3) as step:
            step(1)
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    assert buffer.getvalue() == "simulating …\n"


def test_ended_counts_in_words():
    assert ended("simulating", 1, "runs", 0.04) == "simulating: 1 run in 0.0 s"
    assert ended("tornado", 1234, "simulations", 87.26) == "tornado: 1,234 simulations in 87.3 s"
    assert ended("writing", None, "simulations", 1234.5) == "writing: 1,234.5 s"


def test_a_long_piped_stage_says_now_and_then_how_far_it_is(monkeypatch):
    import costsim.cli.stages as stages_module

    clock = iter([0.0, 10.0, 31.0, 40.0, 70.0, 75.0])  # start, then one reading per step, then the end
    monkeypatch.setattr(stages_module.time, "monotonic", lambda: next(clock))
    buffer = io.StringIO()
    with Stages(Console(file=buffer, width=100)).stage("tornado", 63) as step:
        for done in (1, 2, 3, 4):
            step(done)
    lines = buffer.getvalue().splitlines()
    # 30 s after the start (step 2, at 31 s) and 30 s after that (step 4, at 70 s): two lines.
    assert lines == ["tornado …", "tornado: 2 of 63 simulations so far, 31 s",
                     "tornado: 4 of 63 simulations so far, 70 s", "tornado: 4 simulations in 75.0 s"]
