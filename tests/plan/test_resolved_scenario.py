"""scenario.resolved.yaml writes every value the run took from the catalog: rerun under a catalog
whose defaults all moved, it gives the original tables to the bit, while the scenario as written
(blanks left blank) does not."""

from __future__ import annotations

import warnings
from importlib import resources

import pandas as pd
import pytest
from helpers import TINY_RL
from ruamel.yaml import YAML

import costsim
import costsim.catalog.load as catalog_module
from costsim.catalog.pins import CatalogVersionWarning
from costsim.plan.resolved import resolve_scenario
from costsim.runs.export import RESOLVED_SCENARIO, write_results
from costsim.scenario import dump_scenario, scenario_from_yaml

# TINY_RL with every kind of option (and a class on SGLang in FP8 with a checkpoint engine): failures and capex from the catalog, on-demand, spot, a
# reservation and a hybrid, a rollout pool (its link), and no lead time, PUE or price of its own.
MIXED = """\
name: mixed
horizon_days: 3
seed: 4
workload:
  classes:
    - name: grpo
      arrivals_per_day: 6
      gpus: 8
      iterations: {mean: 40, cv: 0.5}
      model_params_b: 7
    - name: split
      arrivals_per_day: 2
      gpus: 16
      placement: disaggregated
      rollout_gpu_fraction: 0.5
      iterations: {mean: 20, cv: 0.5}
      model_params_b: 7
      rollout: {engine: sglang, precision: fp8}
      sync: {method: checkpoint_engine}
options:
  - {name: own, kind: owned, gpu_type: H100, gpus: 32, rollout_pool: spot}
  - {name: cloud, kind: cloud, gpu_type: H100}
  - {name: spot, kind: cloud, gpu_type: H100, pricing: spot, price_tier: hyperscaler}
  - {name: res, kind: cloud, gpu_type: H100, pricing: reserved, reserved_gpus: 16}
  - {name: burst, kind: hybrid, base: own, burst: cloud}
"""
OWNED_ONLY = """\
name: owned-only
horizon_days: 3
seed: 2
workload:
  classes:
    - {name: grpo, arrivals_per_day: 12, gpus: 8, iterations: {mean: 200, cv: 0.5}, model_params_b: 7}
options:
  - {name: own, kind: owned, gpu_type: H100, gpus: 8, lead_time_days: 0, network: roce}
"""
# Catalog leaves moved for the rerun: (path, new value). Economics, a price, capex (the server's
# price), depreciation, power, fabric, RL constants, failures, billing and the fallback price.
CHANGES = [
    (("economics", "electricity_usd_per_kwh"), 0.19), (("economics", "pue"), 1.7), (("economics", "depreciation_years"), 3.0),
    (("economics", "staff_usd_per_fte_year"), 300000.0), (("economics", "lead_time_days"), 1.0),
    (("economics", "discount_rate"), 0.15), (("economics", "cost_of_capital"), 0.02),
    (("gpus", "H100", "server_price_usd"), 400000.0), (("gpus", "H100", "node_max_kw"), 13.0),
    (("gpus", "H100", "price", "neocloud", "on_demand"), 4.5), (("gpus", "H100", "price", "hyperscaler", "spot"), 1.0),
    (("gpus", "H100", "price", "hyperscaler", "on_demand"), 1.5), (("gpus", "H100", "price", "hyperscaler", "reserved_1y"), 1.0),
    (("gpus", "H100", "price", "neocloud", "reserved_1y"), 1.1),
    (("gpus", "H100", "hbm_tb_s"), 2.0), (("gpus", "H100", "nic_busbw_gb_s"), 10.0),
    (("gpus", "H100", "nic_gb_s_per_gpu"), 10.0),
    (("fabrics", "infiniband", "efficiency"), 0.5), (("fabrics", "roce", "efficiency"), 0.4),
    (("rl", "hbm_efficiency"), 0.3), (("rl", "rollout_link_gb_s"), 1.0), (("gpus", "H100", "fp8_dense_tflops"), 1500.0),
    (("rl", "prefill_mfu"), 0.3), (("rl", "optimizer_step_s"), 4.0), (("rl", "microbatch_s"), 0.2),
    (("rl", "microbatch_tokens"), 4096), (("rl", "sync_nccl_latency_s"), 0.01), (("rl", "sync_nccl_efficiency"), 0.2),
    (("rl", "sync_bucket_gb"), 0.25), (("rl", "reload_gb_s"), 50.0), (("rl", "sglang_hbm_efficiency"), 0.3),
    (("rl", "sglang_decode_step_floor_s"), 0.02), (("rl", "sync_checkpoint_engine_latency_s"), 0.01),
    (("rl", "sync_checkpoint_engine_efficiency"), 0.2), (("rl", "sync_nixl_latency_s"), 0.01),
    (("rl", "sync_nixl_efficiency"), 0.2),
    (("reliability", "node_failures_per_1000_node_days"), 40.0), (("reliability", "spot_preemptions_per_instance_day"), 3.0),
    (("billing", "neocloud", "granularity_s"), 3600), (("billing", "neocloud", "minimum_s"), 3600),
]
NEW_VERSION = "2099-01-01"


@pytest.fixture
def moved_catalog(tmp_path, monkeypatch):
    """Point costsim at a copy of the shipped catalog with every leaf of CHANGES moved and a new
    version (``load_catalog``'s default path patched, the cached default cleared both ways)."""
    yaml = YAML()
    data = yaml.load(resources.files("costsim.catalog").joinpath("catalog.yaml").read_text(encoding="utf-8"))
    for path, value in CHANGES:
        node = data
        for key in path:
            node = node[key]
        assert node["value"] != value, path  # a change, or the test proves nothing
        node["value"] = value
    data["catalog_version"] = NEW_VERSION
    path = tmp_path / "moved-catalog.yaml"
    with path.open("w", encoding="utf-8") as f:
        yaml.dump(data, f)
    shipped = catalog_module.load_catalog

    def install():
        monkeypatch.setattr(catalog_module, "load_catalog", lambda p=None: shipped(path if p is None else p))
        catalog_module.default_catalog.cache_clear()
        assert catalog_module.default_catalog().version == NEW_VERSION

    yield install
    monkeypatch.undo()
    catalog_module.default_catalog.cache_clear()


TABLES = ("summary", "costs", "cashflow", "jobs", "phases")


def _same(a: costsim.Results, b: costsim.Results) -> None:
    for name in TABLES:
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), check_exact=True, obj=name)


@pytest.mark.slow
@pytest.mark.parametrize("text", [TINY_RL, MIXED, OWNED_ONLY], ids=["tiny", "mixed", "owned-only"])
def test_resolved_scenario_reruns_identically_under_a_moved_catalog(text, tmp_path, moved_catalog):
    sc, _ = scenario_from_yaml(text, "s.yaml", tmp_path)
    before = costsim.simulate(sc)
    write_results(before, tmp_path / "out")
    resolved = tmp_path / "out" / RESOLVED_SCENARIO
    assert costsim.load_scenario(resolved).catalog_version == catalog_module.default_catalog().version
    moved_catalog()
    with pytest.warns(CatalogVersionWarning, match=NEW_VERSION):
        again = costsim.simulate(resolved)
    _same(before, again)
    # The scenario as written takes the moved defaults: its numbers change (so the test can fail).
    with warnings.catch_warnings():
        warnings.simplefilter("error", CatalogVersionWarning)  # it records no version: no warning
        moved = costsim.simulate(sc)
    changed = moved.summary.set_index("option")["total_cost_usd"] != before.summary.set_index("option")["total_cost_usd"]
    assert changed.all(), changed


def test_owned_only_scenario_pins_the_fallback_price(tmp_path, moved_catalog):
    """Unfinished work on an owned-only scenario is priced at the catalog's cheapest on-demand
    price: the resolved scenario pins it (catalog.gpus.H100.on_demand), so the priced backlog stays."""
    sc, _ = scenario_from_yaml(OWNED_ONLY, "s.yaml", tmp_path)
    pins = resolve_scenario(sc).catalog.gpus.H100
    assert pins.on_demand.model_dump() == {"hyperscaler": 6.88, "neocloud": 2.99}  # the shipped catalog's
    assert pins.node_max_kw == 10.2 and pins.node_idle_kw == 2.8 and pins.hbm_tb_s == 3.35


def test_resolve_fills_every_blank_with_the_catalog_value(tmp_path):
    sc, _ = scenario_from_yaml(MIXED, "s.yaml", tmp_path)
    r = resolve_scenario(sc)
    # Hand-checked against costsim/catalog/catalog.yaml (2026-12-08).
    assert r.catalog_version == "2026-12-08"
    assert r.economics.electricity_usd_per_kwh == 0.085 and r.economics.pue == 1.3
    assert r.economics.depreciation_years == 5.0 and r.economics.staff_min_fte == 1
    own, cloud, spot, res, burst = r.options
    assert own.capex_usd_per_gpu == pytest.approx(300000 / 8 * (1 + 0.12 + 0.05 + 0.03))  # $45,000
    assert own.lead_time_days == 112.0 and own.gpus_per_node == 8
    assert own.failures.node_failures_per_1000_node_days == 3.8 and own.failures.repair_hours == 24.0
    assert own.rollout_link_gb_s == 12.5
    assert cloud.price_per_gpu_hour == 2.99 and cloud.billing_granularity_s == 60 and cloud.minimum_billing_s == 60
    assert cloud.provisioning_delay_h == 0.25 and cloud.startup_h == 0.1
    assert spot.price_per_gpu_hour == 2.50 and spot.billing_granularity_s == 1 and spot.minimum_billing_s == 60
    assert spot.preemptions_per_instance_day == 0.12 and spot.reacquire_delay_h == 1.0
    assert res.price_per_gpu_hour == 2.20 and res.term_years == 1 and res.scheduler == "fifo"
    assert burst == sc.options[4]  # a hybrid has nothing of its own to fill
    pins = r.catalog
    assert pins.rl.hbm_efficiency == 0.35 and pins.rl.decode_step_floor_s == 0.010  # vLLM's
    assert pins.rl.sglang_hbm_efficiency == 0.5 and pins.rl.sglang_decode_step_floor_s == 0.008
    assert pins.rl.prefill_mfu == 0.5 and pins.rl.optimizer_step_s == 0.1 and pins.rl.microbatch_s == 0.05
    assert pins.rl.microbatch_tokens == 16384 and pins.rl.sync_bucket_gb == 1.0 and pins.rl.reload_gb_s == 400.0
    assert (pins.rl.sync_nccl_latency_s, pins.rl.sync_nccl_efficiency) == (0.0007, 0.4)
    assert (pins.rl.sync_checkpoint_engine_latency_s, pins.rl.sync_checkpoint_engine_efficiency) == (0.0001, 0.5)
    assert (pins.rl.sync_nixl_latency_s, pins.rl.sync_nixl_efficiency) == (0.0001, 0.5)
    assert pins.gpus.H100.fp8_dense_tflops == 1979.0
    assert pins.gpus.H100.nic_gb_s_per_gpu == 47.0 and pins.gpus.H100.nvlink_domain_gpus == 8
    assert pins.fabrics.infiniband.efficiency == 1.0 and pins.fabrics.roce is None  # no option on RoCE
    assert pins.gpus.H100.bf16_dense_tflops == 989.0 and pins.gpus.A100 is None  # only the types in use
    assert pins.gpus.H100.on_demand is None  # options rent: unfinished work is priced at their price


def test_resolving_is_idempotent_and_the_result_validates(tmp_path):
    for text in (TINY_RL, MIXED, OWNED_ONLY):
        sc, _ = scenario_from_yaml(text, "s.yaml", tmp_path)
        once = resolve_scenario(sc)
        assert resolve_scenario(once) == once
        again, _ = scenario_from_yaml(dump_scenario(once), "resolved.yaml", tmp_path)  # validates as written
        assert again == once


def test_values_the_scenario_sets_are_kept(tmp_path):
    text = TINY_RL.replace("seed: 1", "seed: 1\neconomics: {pue: 1.5}\ncatalog: {rl: {hbm_efficiency: 0.6}}")
    text = text.replace("{name: cloud, kind: cloud, gpu_type: H100}",
                        "{name: cloud, kind: cloud, gpu_type: H100, price_per_gpu_hour: 9.0}")
    sc, _ = scenario_from_yaml(text, "s.yaml", tmp_path)
    r = resolve_scenario(sc)
    assert r.economics.pue == 1.5 and r.options[1].price_per_gpu_hour == 9.0
    assert r.catalog.rl.hbm_efficiency == 0.6 and r.catalog.rl.kv_memory_fraction == 0.8


def test_a_pinned_spec_changes_the_run(tmp_path):
    """The catalog: section is read: a slower HBM pinned for H100 slows the RL iterations."""
    sc, _ = scenario_from_yaml(TINY_RL, "s.yaml", tmp_path)
    slow, _ = scenario_from_yaml(TINY_RL.replace("seed: 1", "seed: 1\ncatalog: {gpus: {H100: {hbm_tb_s: 1.0}}}"),
                                 "s.yaml", tmp_path)
    a, b = costsim.simulate(sc).phases, costsim.simulate(slow).phases
    assert (b["rollout_s"] > a["rollout_s"]).all() and (b["iteration_s"] > a["iteration_s"]).all()


def test_another_catalog_version_warns_but_runs(tmp_path):
    sc, _ = scenario_from_yaml(TINY_RL.replace("seed: 1", "seed: 1\ncatalog_version: '2020-01-01'"), "s.yaml", tmp_path)
    with pytest.warns(CatalogVersionWarning, match="2020-01-01.*2026-12-08"):
        costsim.simulate(sc)
