"""The catalog's sensitivity ranges (``ranges:`` in costsim/catalog/catalog.yaml, ``Catalog.ranges``):
every tornado input has one, sourced and dated, that contains today's default."""

from __future__ import annotations

from importlib import resources

import pytest

from costsim.catalog.load import default_catalog, load_catalog
from costsim.decisions.tornado_inputs import INPUTS
from costsim.scenario import ScenarioError

# Inputs whose range is the value itself, against the catalog default it must contain.
DEFAULTS = {
    "electricity_usd_per_kwh": lambda c: c.economics["electricity_usd_per_kwh"],
    "pue": lambda c: c.economics["pue"],
    "depreciation_years": lambda c: c.economics["depreciation_years"],
    "cost_of_capital": lambda c: c.economics["cost_of_capital"],
    "lead_time_days": lambda c: c.economics["lead_time_days"],
    "node_failures_per_1000_node_days": lambda c: c.reliability["node_failures_per_1000_node_days"],
}


def test_every_tornado_input_has_a_sourced_dated_range():
    ranges = default_catalog().ranges
    assert set(ranges) == set(INPUTS)
    for name, r in ranges.items():
        assert r.low < r.high, name
        assert r.source[:3] in ("[V]", "[S]", "[R]", "[A]"), (name, r.source)  # the catalog's confidence tags
        assert r.date.strip() and r.applies_to.strip(), name
        assert r.scale == r.unit.startswith("×"), name


def test_each_range_contains_todays_value():
    cat = default_catalog()
    for name, r in cat.ranges.items():
        if r.scale:
            assert r.low < 1 < r.high, name  # a multiplier of the scenario's own value
    for name, default in DEFAULTS.items():
        r = cat.ranges[name]
        assert not r.scale and r.low <= default(cat) <= r.high, name
    r = cat.ranges["spot_discount"]
    for gpu in cat.gpus.values():  # every catalog spot price is within the range of discounts
        for tier, p in gpu.price.items():
            assert r.low <= 1 - p["spot"] / p["on_demand"] <= r.high, (gpu.name, tier)


def test_ranges_are_not_default_values():
    # `costsim catalog` lists defaults; ranges are not {value, source, date} leaves.
    assert not [e.path for e in default_catalog().entries if e.path.startswith("ranges")]


def test_a_reversed_range_is_refused_naming_it(tmp_path):
    text = resources.files("costsim.catalog").joinpath("catalog.yaml").read_text(encoding="utf-8")
    bad = text.replace("pue:\n    {low: 1.10, high: 1.80", "pue:\n    {low: 1.80, high: 1.10")
    assert bad != text
    path = tmp_path / "catalog.yaml"
    path.write_text(bad, encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"ranges\.pue.*low \(1\.8\) must be less than high"):
        load_catalog(path)
    path.write_text(text.split("\nranges:")[0], encoding="utf-8")  # an older catalog without ranges
    assert load_catalog(path).ranges == {}
