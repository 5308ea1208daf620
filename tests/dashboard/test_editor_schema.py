"""The scenario editor's view of the trend fields (``costsim.dashboard.editor_schema``): read from
the schema, so the form gets each field's range and what its null stands for."""

from __future__ import annotations

from costsim.dashboard import editor_schema


def field(model: str, name: str) -> editor_schema.Field:
    return next(f for f in editor_schema.fields(model) if f.name == name)


def test_growth_is_a_bounded_number_defaulting_to_none():
    for model in ("RLClass", "JobClass"):
        f = field(model, "growth_per_year")
        assert f.default == 0.0 and not f.nullable and not f.required
        assert editor_schema.bounds(f.spec) == (-0.9, 10)
        assert "fraction per year" in f.help and "day 0" in f.help


def test_a_price_trend_applies_to_every_pricing_and_null_means_zero():
    f = field("CloudOption", "price_change_per_year")
    assert f.nullable and f.null_means == "0" and editor_schema.bounds(f.variants[0]) == (-0.9, 1)
    for pricing in ("on_demand", "reserved", "spot"):
        assert editor_schema.applies(f, {"kind": "cloud", "pricing": pricing})
    data = {"options": [{"name": "c", "kind": "cloud", "gpu_type": "H100", "pricing": "spot"}]}
    assert editor_schema.catalog_default(data, ("options", 0, "price_change_per_year")) == 0.0
