"""An owned option of node groups (``node_groups``) and classes asking for a GPU type (``gpu_type``)
from a YAML file through the CLI: run end to end with a capex checked by hand, and each misuse one
clear message (file, field, line), exit status 2, no traceback."""

from __future__ import annotations

import pandas as pd
import pytest
from helpers import MIXED_POOL
from typer.testing import CliRunner

from costsim.catalog.load import default_catalog
from costsim.cli.commands import app
from costsim.models import economics as eco
from costsim.units import HOURS_PER_YEAR

# Two 8-GPU H100 nodes and one 8-GPU A100 node, owned, against on-demand A100s; a trace of 8-GPU jobs
# (any type) and a job class asking for A100s.
GROUPED = """\
name: mixed
horizon_days: 10
workload:
  trace: jobs.csv
  job_classes:
    - name: a100-jobs
      arrivals_per_day: 4
      gpus: 8
      gpu_type: A100
      duration: {law: lognormal, mean_h: 2, cv: 0.5}
options:
""" + MIXED_POOL + """    failures: null
  - {name: rent, kind: cloud, gpu_type: A100}
"""
GROUPS = MIXED_POOL[MIXED_POOL.index("    node_groups:"):MIXED_POOL.index("    lead_time_days")]
TRACE = "submit_h,gpus,duration_h\n0,8,5\n0,8,5\n0,8,5\n1,16,3\n"


def write(folder, text: str) -> None:
    (folder / "s.yaml").write_text(text)
    (folder / "jobs.csv").write_text(TRACE)


def test_a_two_type_pool_runs_end_to_end_with_each_type_priced_at_its_own(tmp_path, monkeypatch):
    write(tmp_path, GROUPED)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", "s.yaml", "--out", "out"])
    assert result.exit_code == 0, result.output
    summary = pd.read_csv(tmp_path / "out" / "summary.csv").set_index("option")
    cash = pd.read_csv(tmp_path / "out" / "cashflow.csv")
    jobs = pd.read_csv(tmp_path / "out" / "jobs.csv")
    cat = default_catalog()
    h, a = cat.gpus["H100"], cat.gpus["A100"]
    shares = 1 + cat.fabrics["infiniband"]["capex_frac"] + cat.economics["storage_capex_frac"] \
        + cat.economics["install_capex_frac"]
    # By hand: 16 H100s and 8 A100s, each at its server's price per GPU plus the shares.
    capex = (16 * h.server_price_usd / h.gpus_per_node + 8 * a.server_price_usd / a.gpus_per_node) * shares
    assert cash[cash.option == "own"].capex_usd.sum() == pytest.approx(capex, rel=1e-12)
    life, coc = cat.economics["depreciation_years"], cat.economics["cost_of_capital"]
    annual = eco.annual_capital_cost_usd(capex, cat.economics["residual_value_frac"], life, coc)
    assert summary.loc["own", "cost_capital_usd"] == pytest.approx(annual * 240 / HOURS_PER_YEAR, rel=1e-9)
    assert summary.loc["own", "capacity_gpu_hours"] == pytest.approx(24 * 240)
    # The book value at the end: the whole capex, 10 days into its straight line to the residual.
    residual = cat.economics["residual_value_frac"]
    book = capex * (1 - (1 - residual) * 240 / HOURS_PER_YEAR / life)
    assert summary.loc["own", "book_value_usd"] == pytest.approx(book, rel=1e-12)
    # Staff and setup once for the pool (a pool of one group pays the same: tests/results).
    assert summary.loc["own", "cost_setup_usd"] == pytest.approx(cat.economics["setup_usd"])
    # Nothing bursts from a pool of groups; every A100 job ran on the A100 group, the 16-GPU trace job
    # on the H100 group (the only one that holds it); the three 8-GPU trace jobs on the first group
    # free at hour 0 (two on the H100 nodes, one on the A100 node).
    assert summary.loc["own", "jobs_burst"] == 0
    own = jobs[jobs.option == "own"]
    started = own[own.start_h.notna()]
    assert set(started[started.job_class == "a100-jobs"].ran_on) == {"own:A100x8"}
    assert set(started[started.gpus == 16].ran_on) == {"own:H100x8"}
    assert sorted(started[started.submit_h == 0].ran_on) == ["own:A100x8", "own:H100x8", "own:H100x8"]
    phases = pd.read_csv(tmp_path / "out" / "phases.csv")
    assert phases.empty  # no RL classes
    # The resolved scenario loads back and leaves each group's type and size to the group.
    resolved = (tmp_path / "out" / "scenario.resolved.yaml").read_text()
    assert "node_groups" in resolved and "gpus_per_node: 8" in resolved
    assert CliRunner().invoke(app, ["validate", "out/scenario.resolved.yaml"]).exit_code == 0


BAD = [
    ("type-no-group-has", GROUPED.replace("gpu_type: A100\n      duration", "gpu_type: B200\n      duration"),
     ["s.yaml:9:7", "workload.job_classes.0.gpu_type", "asks for B200 GPUs but option 'own' has node groups of H100, "
      "A100 only"]),
    ("type-the-rented-option-lacks", GROUPED.replace("{name: rent, kind: cloud, gpu_type: A100}",
                                                     "{name: rent, kind: cloud, gpu_type: H100}"),
     ["s.yaml:9:7", "workload.job_classes.0.gpu_type", "option 'rent' has H100 GPUs"]),
    ("gpu-type-beside-groups", GROUPED.replace("    kind: owned\n", "    kind: owned\n    gpu_type: H100\n"),
     ["s.yaml:12:5", "options.0", "gpu_type is each node group's: leave it out"]),
    ("gpus-not-the-total", GROUPED.replace("    kind: owned\n", "    kind: owned\n    gpus: 16\n"),
     ["s.yaml:12:5", "options.0", "gpus (16) is not the node groups' total (24)"]),
    ("with-tranches", GROUPED.replace("    kind: owned\n", "    kind: owned\n    tranches: [{gpus: 24}]\n"),
     ["options.0", "tranches do not apply with node_groups"]),
    ("rollout-pool", GROUPED.replace("    failures: null\n", "    failures: null\n    rollout_pool: rent\n"),
     ["s.yaml:12:5", "options.0", "rollout_pool does not apply with node_groups"]),
    ("groups-not-a-list", GROUPED.replace(GROUPS, "    node_groups: x\n"),
     ["s.yaml:14:5", "options.0.node_groups: Input should be a valid tuple"]),
    ("a-group-of-no-nodes", GROUPED.replace("H100, nodes: 2", "H100, nodes: 0"),
     ["s.yaml:15:26", "options.0.node_groups.0.nodes: Input should be greater than or equal to 1"]),
    ("unknown-field-in-a-group", GROUPED.replace("nodes: 1, gpus_per_node: 8}", "nodes: 1, gpus_per_node: 8, x: 1}"),
     ["s.yaml:16:54", "options.0.node_groups.1.x"]),
    ("no-group-holds-the-job", GROUPED.replace("      gpus: 8\n      gpu_type", "      gpus: 16\n      gpu_type"),
     ["s.yaml:8:7", "workload.job_classes.0.gpus", "none of option 'own''s node groups of A100 holds it",
      "'own:A100x8' (8 GPUs)"]),
    ("serving", GROUPED + "serving: {gpus: {base: 8}}\n",
     ["s.yaml:14:5", "options.0.node_groups", "serving does not run on a pool of node groups"]),
    ("hybrid-base", GROUPED + "  - {name: hy, kind: hybrid, base: own, burst: rent}\n",
     ["s.yaml:20:30", "options.2.base", "'own' has node_groups; a hybrid's base is one gpu_type"]),
    ("fleet-part", GROUPED + "  - {name: fl, kind: fleet, parts: [{option: own}, {option: rent}]}\n",
     ["s.yaml:20:38", "options.2.parts.0.option", "'own' has node_groups; a fleet's parts are one gpu_type each"]),
]


@pytest.mark.parametrize("case, text, expect", BAD, ids=[c[0] for c in BAD])
def test_each_misuse_is_one_clear_message(tmp_path, monkeypatch, case, text, expect):
    write(tmp_path, text)
    monkeypatch.chdir(tmp_path)
    for command in (["validate", "s.yaml"], ["run", "s.yaml", "--out", "out"]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 2, (case, result.output)
        assert "Traceback" not in result.output and result.output.count("error:") == 1, result.output
        for needle in expect:
            assert needle in result.output, (case, needle, result.output)
    assert not (tmp_path / "out").exists()


def test_a_trace_job_no_group_holds_is_named_at_the_node_groups(tmp_path, monkeypatch):
    # The pool has 24 GPUs, but a job never spans groups: the largest holds 16.
    write(tmp_path, GROUPED)
    (tmp_path / "jobs.csv").write_text(TRACE + "2,24,1\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["validate", "s.yaml"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert ("s.yaml:14:5: options.0.node_groups: job 'trace-4' needs 24 GPUs but none of option 'own''s node groups "
            "holds it: 'own:H100x8' (16 GPUs); 'own:A100x8' (8 GPUs): it could never run") in result.output


@pytest.mark.parametrize("cell, says", [
    ("a100", "jobs.csv:3: gpu_type: 'a100' is not a catalog GPU type (H100, H200, B200, A100, L40S, H20, H800, "
             "GB200, MI300X); leave it empty for any"),
    ("B200", "jobs.csv:3: gpu_type: job 'trace-1' asks for B200 GPUs but option 'own' has node groups of H100, A100 "
             "only: trace jobs run only on the GPU type they ask for (leave the cell empty for any)"),
])
def test_a_trace_job_asking_for_a_type_it_cannot_have_is_one_message_at_its_line(tmp_path, monkeypatch, cell, says):
    write(tmp_path, GROUPED)
    (tmp_path / "jobs.csv").write_text(f"submit_h,gpus,duration_h,gpu_type\n0,8,5,A100\n0,8,5,{cell}\n1,8,3,\n")
    monkeypatch.chdir(tmp_path)
    for command in (["validate", "s.yaml"], ["run", "s.yaml", "--out", "out"]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output
        assert result.output.count("error:") == 1 and says in result.output, result.output
    assert not (tmp_path / "out").exists()
