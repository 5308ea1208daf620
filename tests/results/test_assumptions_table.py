"""The assumptions table (costsim.results.assumptions): every value the numbers rest on, with its
source and date, checked row by row against the catalog file read here independently."""

from __future__ import annotations

from importlib import resources

import pandas as pd
import pytest
from helpers import TINY_RL
from ruamel.yaml import YAML

import costsim
from costsim.dashboard import SCENARIO_DIR
from costsim.plan.resolved import resolve_scenario
from costsim.present.assumptions import shown
from costsim.results.assumptions import COLUMNS, assumptions
from costsim.runs.export import ASSUMPTIONS, write_results
from costsim.scenario import scenario_from_yaml


@pytest.fixture(scope="module")
def catalog_file() -> dict:
    """The shipped catalog as plain YAML (not through costsim.catalog)."""
    return YAML(typ="safe").load(resources.files("costsim.catalog").joinpath("catalog.yaml").read_text(encoding="utf-8"))


def leaf(catalog: dict, dotted: str) -> dict:
    node = catalog
    for key in dotted.split("."):
        node = node[key]
    return node


def row(table: pd.DataFrame, what: str) -> pd.Series:
    hits = table[table["assumption"] == what]
    assert len(hits) == 1, (what, list(table["assumption"]))
    return hits.iloc[0]


def tiny(text: str = TINY_RL, tmp=".") -> costsim.Scenario:
    return scenario_from_yaml(text, "s.yaml", tmp)[0]


def test_baseline_rows_are_the_catalog_values_with_source_and_date(catalog_file):
    table = assumptions(costsim.load_scenario(SCENARIO_DIR / "baseline.yaml"))
    assert tuple(table.columns) == COLUMNS
    version = f"catalog {catalog_file['catalog_version']}"
    for what, dotted in [("electricity price", "economics.electricity_usd_per_kwh"), ("PUE", "economics.pue"),
                         ("depreciation", "economics.depreciation_years"), ("cost of capital", "economics.cost_of_capital"),
                         ("staff cost", "economics.staff_usd_per_fte_year"), ("GPUs per engineer", "economics.gpus_per_fte"),
                         ("price, cloud-od (H100, neocloud, on-demand)", "gpus.H100.price.neocloud.on_demand"),
                         ("node failures, own-256", "reliability.node_failures_per_1000_node_days"),
                         ("fabric efficiency, infiniband", "fabrics.infiniband.efficiency"),
                         ("decode HBM efficiency", "rl.hbm_efficiency")]:
        r, want = row(table, what), leaf(catalog_file, dotted)
        assert (r["value"], r["source"], r["date"], r["from"]) == (want["value"], want["source"], want["date"], version)
    # Hand-checked: $300,000 per 8-GPU server × (1 + 0.12 InfiniBand + 0.05 storage + 0.03 install) = $45,000 per GPU.
    capex = row(table, "capex per GPU, own-384 (H100, infiniband)")
    assert capex["value"] == pytest.approx(45_000.0) and capex["from"] == version
    assert "$300,000 ÷ 8 GPUs" in capex["source"] and capex["date"] == leaf(catalog_file, "gpus.H100.server_price_usd")["date"]
    # The baseline states its lead time and targets itself.
    lead = row(table, "lead time, own-256")
    assert (lead["value"], lead["from"], lead["source"]) == (0.0, "scenario", "set in the scenario")
    assert row(table, "service-level targets")["value"] == "p95_delay_h<=24; completion>=0.99"


def test_an_override_reads_from_the_scenario(catalog_file):
    text = TINY_RL.replace("seed: 1", "seed: 1\neconomics: {electricity_usd_per_kwh: 0.2}")
    table = assumptions(tiny(text))
    r = row(table, "electricity price")
    assert (r["value"], r["from"], r["source"], r["date"]) == (0.2, "scenario", "set in the scenario", "")
    assert row(table, "PUE")["from"].startswith("catalog ")


def test_only_what_the_options_use():
    text = """\
name: a100
horizon_days: 3
workload: {job_classes: [{name: j, arrivals_per_day: 4, gpus: 8, duration: {law: lognormal, mean_h: 2, cv: 0.5}}]}
options:
  - {name: c, kind: cloud, gpu_type: A100, price_tier: hyperscaler, pricing: spot}
"""
    table = assumptions(tiny(text))
    names = " ".join(table["assumption"])
    assert "H100" not in names and "neocloud" not in names and "A100, hyperscaler, spot" in names
    # No owned option: no energy, facility, staff or capital; no RL class: no GPU specs or RL constants.
    assert not {"electricity price", "PUE", "staff cost", "depreciation", "decode HBM efficiency"} & set(table["assumption"])
    assert "discount rate (net present value)" in set(table["assumption"])  # every option's NPV
    assert row(table, "spot preemptions, c")["value"] == 0.12


def test_owned_only_lists_the_fallback_price_of_unfinished_work(catalog_file):
    text = TINY_RL.replace("  - {name: cloud, kind: cloud, gpu_type: H100}\n", "")
    table = assumptions(tiny(text))
    r = row(table, "on-demand price pricing unfinished work, H100 hyperscaler")
    assert r["value"] == leaf(catalog_file, "gpus.H100.price.hyperscaler.on_demand")["value"] == 6.88


def test_a_resolved_scenario_gives_the_same_values_and_keeps_the_catalog_sources():
    sc = tiny()
    before, after = assumptions(sc), assumptions(resolve_scenario(sc))
    common = before.merge(after, on="assumption", suffixes=("", "_resolved"))
    # Capex is pinned per GPU, so its shares are no longer inputs; every other row is kept.
    assert set(before["assumption"]) - set(after["assumption"]) == {"storage capex", "installation capex"}
    assert (common["value"] == common["value_resolved"]).all()
    assert (after["from"] == "scenario").sum() > (before["from"] == "scenario").sum()
    elec = row(after, "electricity price")
    assert elec["from"] == "scenario" and elec["source"] == row(before, "electricity price")["source"]


def test_shown_values_read_as_written():
    table = shown(assumptions(tiny()))
    assert row(table, "staff cost")["value"] == "225,000"
    assert row(table, "capex per GPU, own (H100, infiniband)")["value"] == "45,000"  # not 45,000.00000000001
    assert row(table, "decode step floor")["value"] == "0.01"  # the catalog's 0.010, vLLM's floor
    assert not table["value"].str.contains("e[+-]", regex=True).any()


def test_run_out_writes_assumptions_csv(tmp_path):
    sc = tiny(tmp=tmp_path)
    res = costsim.simulate(sc)
    write_results(res, tmp_path / "out")
    got = pd.read_csv(tmp_path / "out" / ASSUMPTIONS, keep_default_na=False)
    want = assumptions(res.scenario)
    assert list(got["assumption"]) == list(want["assumption"])
    assert list(got["value"].astype(str)) == [str(v) for v in want["value"]]


def test_dashboard_data_tab_shows_the_table():
    from streamlit.testing.v1 import AppTest

    def app():
        from helpers import TINY_RL

        from costsim.dashboard.tabs import assumptions_table
        from costsim.scenario import scenario_from_yaml

        assumptions_table(scenario_from_yaml(TINY_RL, "s.yaml", ".")[0])

    at = AppTest.from_function(app).run()
    assert not at.exception
    frame = at.dataframe[0].value
    assert "value (in unit)" in frame.columns and "unit" in frame.columns
    assert "electricity price" in set(frame["assumption"])


def test_an_explicit_zero_price_of_waiting_is_the_scenarios():
    unstated = row(assumptions(tiny()), "price of waiting")
    assert (unstated["value"], unstated["from"]) == (0.0, "costsim default")
    text = TINY_RL.replace("seed: 1", "seed: 1\ndecision: {waiting_usd_per_gpu_hour: 0}")
    stated = row(assumptions(tiny(text)), "price of waiting")
    assert (stated["value"], stated["from"]) == (0.0, "scenario")


def test_the_price_of_waiting_reads_the_same_from_a_file_and_from_a_run(tmp_path):
    (tmp_path / "s.yaml").write_text(TINY_RL)
    run = costsim.simulate(costsim.load_scenario(tmp_path / "s.yaml"), seed=1)  # a Scenario object, checked again
    assert row(assumptions(run.scenario), "price of waiting")["from"] == "costsim default"


def test_renting_says_what_capacity_it_assumed():
    table = assumptions(tiny())
    assert (row(table, "quota, cloud")["value"], row(table, "quota, cloud")["from"]) == ("unlimited", "costsim default")
    assert row(table, "stockouts, cloud")["value"] == "none"
    text = TINY_RL.replace("{name: cloud, kind: cloud, gpu_type: H100}",
                           "{name: cloud, kind: cloud, gpu_type: H100, max_gpus: 64, "
                           "stockout: {probability: 0.2, min_gpus: 32, retry_h: 2}}")
    table = assumptions(tiny(text))
    assert (row(table, "quota, cloud")["value"], row(table, "quota, cloud")["from"]) == (64, "scenario")
    assert row(table, "stockouts, cloud")["value"] == "20 % of requests of 32 GPUs or more, retried after 2 h"


def test_a_lease_rate_left_blank_is_the_cost_of_capital_with_its_source(catalog_file):
    text = TINY_RL.replace("gpus: 16, lead_time_days: 0}", "lead_time_days: 0, tranches: [{gpus: 8}, "
                           "{gpus: 8, order_day: 1, payment: lease, lease_term_months: 12}, "
                           "{gpus: 8, order_day: 2, payment: lease, lease_term_months: 12, lease_rate_per_year: 0.1}]}")
    table = assumptions(scenario_from_yaml(text, "t.yaml", ".")[0])
    blank, given = row(table, "lease rate, own tranche 1"), row(table, "lease rate, own tranche 2")
    entry = leaf(catalog_file, "economics.cost_of_capital")
    assert (blank["value"], blank["source"], blank["date"]) == (entry["value"], entry["source"], entry["date"])
    assert (given["value"], given["from"]) == (0.1, "scenario")
    assert "lease rate, own tranche 0" not in set(table["assumption"])  # bought, not leased
