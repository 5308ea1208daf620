"""Scenario schema: strictness, YAML 1.2, line numbers, round trips, JSON schema, catalog."""

import json
import typing

import pytest
from pydantic import ValidationError

import costsim
from costsim.catalog.load import default_catalog
from costsim.plan.resolve import resolve
from costsim.scenario import Scenario, dump_scenario, json_schema, scenario_from_yaml
from costsim.scenario.bounds import GPUType

BASE = """\
name: s
horizon_days: 10
workload: {trace: jobs.csv}
options:
  - {name: own, kind: owned, gpu_type: H100, gpus: 16}
"""


def test_models_are_frozen_and_strict():
    sc, _ = scenario_from_yaml(BASE, "s.yaml", ".")
    with pytest.raises(ValidationError):
        sc.horizon_days = 3  # type: ignore[misc]
    with pytest.raises(costsim.ScenarioError, match="unknown field"):
        scenario_from_yaml(BASE + "colour: blue\n", "s.yaml", ".")


def test_yaml_1_2_numbers_and_words():
    # PyYAML (YAML 1.1) would read 2.5e6 as a string and `no` as false.
    sc, _ = scenario_from_yaml(BASE.replace("name: s", "name: 'no'") + "economics: {setup_usd: 2.5e6}\n", "s.yaml", ".")
    assert sc.economics.setup_usd == 2.5e6
    sc, _ = scenario_from_yaml(BASE.replace("name: s", "name: no"), "s.yaml", ".")
    assert sc.name == "no"


def test_errors_carry_field_path_and_line():
    text = BASE.replace("gpus: 16", "gpus: -16")
    with pytest.raises(costsim.ScenarioError) as exc:
        scenario_from_yaml(text, "s.yaml", ".")
    assert str(exc.value).startswith("s.yaml:5:")
    assert "options.0.gpus" in str(exc.value)


def test_dump_loads_back_unchanged(tmp_path):
    from costsim.dashboard import SCENARIO_DIR
    sc = costsim.load_scenario(SCENARIO_DIR / "baseline.yaml")
    again, _ = scenario_from_yaml(dump_scenario(sc), "dumped.yaml", SCENARIO_DIR)
    assert again == sc


def test_json_schema_builds_and_documents_units():
    schema = json_schema()
    json.dumps(schema)
    owned = schema["$defs"]["OwnedOption"]["properties"]
    assert "lead_time_days" in owned and "Days" in owned["lead_time_days"]["description"]
    assert set(schema["required"]) == {"name", "horizon_days", "workload", "options"}


def test_catalog_every_value_has_source_and_date():
    cat = default_catalog()
    assert len(cat.entries) > 100
    for e in cat.entries:
        assert e.source.strip() and e.date.strip(), e.path
        assert isinstance(e.value, (int, float)) and e.value >= 0, e.path


def test_catalog_gpu_types_match_the_schema():
    assert set(default_catalog().gpus) == set(typing.get_args(GPUType))
    for gpu in default_catalog().gpus.values():
        for tier in ("hyperscaler", "neocloud"):
            p = gpu.price[tier]
            # Commitments and spot are discounts on on-demand (spot may undercut a 3-year term or not).
            assert p["reserved_3y"] <= p["reserved_1y"] <= p["on_demand"], (gpu.name, tier)
            assert p["spot"] < p["on_demand"], (gpu.name, tier)
        assert gpu.node_idle_kw < gpu.node_max_kw


def test_resolve_fills_catalog_defaults():
    sc = Scenario.model_validate({
        "name": "r", "horizon_days": 1, "workload": {"trace": "x.csv"},
        "options": [{"name": "o", "kind": "owned", "gpu_type": "H100", "gpus": 64, "network": "roce"},
                    {"name": "c", "kind": "cloud", "gpu_type": "A100", "price_tier": "hyperscaler"}],
    })
    own, cl = resolve(sc)
    # 64 H100s: 8 nodes × $300k × (1 + 0.08 RoCE + 0.05 storage + 0.03 install) = $2,784,000
    assert own.nodes == 8 and own.capex_usd == pytest.approx(2_784_000.0)
    assert own.lead_time_h == 112 * 24 and own.fabric_efficiency == 0.92
    assert (cl.price_per_gpu_hour, cl.billing_granularity_s, cl.minimum_billing_s) == (4.10, 1.0, 60.0)
