"""The "RL iterations" table of ``costsim run``: every phase the iteration model has, the
straggler share and rollout tokens/s per GPU, readable at 160 columns."""

from __future__ import annotations

import json

import pytest
from helpers import PHASES_SCENARIO as SCENARIO
from helpers import phases_closed_form_scenario as closed_form_scenario
from rich.console import Console
from typer.testing import CliRunner

import costsim
from costsim.cli.commands import app
from costsim.cli.tables import phase_table

# Headers as printed, two lines at most: each word must appear in the table.
HEADERS = ["rollout", "log-", "probs", "scoring", "update", "sync/", "reshard", "async", "overhead", "iteration",
           "share", "straggler", "tok/s", "per GPU", "capped", "iter/", "day", "$/iter"]


def rendered(phases, width: int = 160) -> list[str]:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115 — closed with the console
    console.print(phase_table(phases))
    return console.export_text().splitlines()


@pytest.mark.slow
def test_run_prints_the_new_phases(tmp_path, monkeypatch):
    (tmp_path / "s.yaml").write_text(json.dumps(SCENARIO))  # JSON is YAML
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", "s.yaml", "--wide"])  # every phase; the default shows the main ones
    assert result.exit_code == 0, result.output
    table = result.stdout[result.stdout.index("RL iterations"):]
    for header in HEADERS:
        assert header in table, header
    assert "async: rollout overlaps training" in table
    assert "mean seconds per phase" in table
    assert "sync-colo" in table and "async" in table
    narrow = CliRunner().invoke(app, ["run", "s.yaml"], env={"COLUMNS": "80"})
    assert narrow.exit_code == 0, narrow.output
    table = narrow.stdout[narrow.stdout.index("RL iterations"):]
    assert "log-" not in table and "sync-colo" in table and "iteration" in table


def test_table_fits_160_columns_and_numbers_never_wrap():
    res = costsim.simulate(costsim.runs.api.scenario_from_data(SCENARIO, "test"))
    # names of 20 characters, longer than any shipped scenario's but one option's
    ph = res.phases.assign(option="on-prem-h100-xl-2026", job_class=res.phases.job_class.str.pad(20, fillchar="x"))
    lines = rendered(ph)
    assert max(len(line.rstrip()) for line in lines) <= 160
    for _, r in ph.iterrows():  # each row on one line, with its numbers whole
        (line,) = [line for line in lines if r.job_class in line]
        for cell in (f"{r.rollout_s:,.1f}", f"{r.iteration_s:,.1f}", f"{r.straggler_share * 100:.0f}",
                     f"{r.rollout_tokens_per_s_per_gpu:,.0f}", f"{r.cost_per_iteration_usd:,.2f}"):
            assert cell in line.split(), (cell, line)


def test_longer_names_wrap_but_numbers_stay_whole():
    res = costsim.simulate(costsim.runs.api.scenario_from_data(SCENARIO, "test"))
    ph = res.phases.assign(option="o" * 40, job_class=res.phases.job_class.str.pad(40, fillchar="x"))
    lines = rendered(ph)
    assert max(len(line.rstrip()) for line in lines) <= 160
    for _, r in ph.iterrows():
        assert any(f"{r.rollout_tokens_per_s_per_gpu:,.0f}" in line.split() for line in lines)


# The prompts' prefill before decoding: 2 · 7e9 · 64 · 512 / (8 × 989e12 × 0.5) = 0.116 s
# (tests/results/test_phases_table.py's PREFILL_S, at the catalog's prefill MFU 0.5).
PREFILL_S = 2 * 7e9 * 64 * 512 / (8 * 989e12 * 0.5)


@pytest.mark.parametrize(("sequence_per_s", "tok_s", "straggler"), [
    (1e6, f"{64_000 / ((4 + PREFILL_S) * 8):,.0f}", "0"),  # 1,944
    (50, f"{64_000 / ((20 + PREFILL_S) * 8):,.0f}", f"{100 * 20 / (20 + PREFILL_S):.0f}"),  # 398, 99
])
def test_row_shows_the_closed_form_rates(sequence_per_s, tok_s, straggler):
    """The closed forms of tests/results/test_phases_table.py as the CLI prints them: 2,000 tok/s/GPU
    while decoding with no straggler when the full batch bounds rollout, 64,000 / ((4 s + prefill) × 8)
    over the rollout; 64,000 / ((20 s + prefill) × 8) when the 20-second straggler does."""
    res = costsim.simulate(closed_form_scenario(2000, sequence_per_s))
    (line,) = [line for line in rendered(res.phases) if "flat" in line]
    cells = line.split()
    assert cells[cells.index("flat") + 9] == straggler  # after the 7 seconds columns and the rollout share
    assert cells[cells.index("flat") + 10] == tok_s
