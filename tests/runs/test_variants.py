"""The one variant builder (``costsim.runs.variants``): a variant made by a sweep's ``--set``, by
the tornado and by the dashboard's grid is, field for field, what each of them made before it
existed, written out here by hand on a shipped scenario; and the builder alone makes the same."""

from __future__ import annotations

from pathlib import Path

import pytest

import costsim
from costsim.dashboard.decision_runs import grid_sweep
from costsim.decisions import sensitivity
from costsim.runs.sweepfile import sweep_from_sets
from costsim.runs.variants import Variant, VariantBuilder
from costsim.scenario import ScenarioError

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
HYBRID = SCENARIOS / "hybrid-burst.yaml"  # own-256, own-384, on-demand, two hybrids on own-256


@pytest.fixture(scope="module")
def base() -> costsim.Scenario:
    return costsim.load_scenario(HYBRID)


def resized(base: costsim.Scenario) -> dict:
    """hybrid-burst with own-256 at 320 GPUs, as every surface named it: own-320, and both hybrids
    built on it following the new name; nothing else changed."""
    data = base.model_dump(mode="json")
    data["options"][0].update(name="own-320", gpus=320)
    data["options"][3]["base"] = "own-320"
    data["options"][4]["base"] = "own-320"
    return data


def lead_time(base: costsim.Scenario, days: float) -> dict:
    """hybrid-burst with both owned options' lead time set, names kept (no size changed)."""
    data = base.model_dump(mode="json")
    data["options"][0]["lead_time_days"] = days
    data["options"][1]["lead_time_days"] = days
    return data


def test_a_sweep_variant_is_what_set_made(base):
    spec = sweep_from_sets(HYBRID, ["options.own-256.gpus=320"])
    (variant,) = spec.variants
    assert (variant.id, variant.params) == ("v000", {"options.own-256.gpus": 320})
    assert variant.scenario.model_dump(mode="json") == resized(base)
    assert [o.name for o in variant.scenario.options] == ["own-320", "own-384", "on-demand", "burst-bridged",
                                                          "burst-no-bridge"]
    assert variant.scenario.base_dir == base.base_dir
    built = VariantBuilder(base, source="--set").build(vid="v000", params={"options.own-256.gpus": 320})
    assert built == variant


def test_a_dashboard_grid_variant_is_what_the_grid_made(base):
    spec = grid_sweep(base, {"options.own-256.gpus": "320"})
    (variant,) = spec.variants
    assert (variant.id, variant.params) == ("v000", {"options.own-256.gpus": 320})
    assert variant.scenario.model_dump(mode="json") == resized(base)
    assert (spec.source, spec.replications, spec.seed) == ("sweep grid", 1, base.seed)
    built = VariantBuilder(base, source="sweep grid").build(vid="v000", params={"options.own-256.gpus": 320},
                                                          note="options.own-256.gpus=320")
    assert built == variant


def test_the_tornado_variants_are_what_the_tornado_made(base, monkeypatch):
    class Planned(Exception):
        """Stops the tornado once its variants are built, before anything is simulated."""

    def planned(spec, *args, **kwargs):
        raise Planned(spec)

    monkeypatch.setattr(sensitivity, "tasks", planned)
    with pytest.raises(Planned) as caught:
        sensitivity.tornado(base, inputs={"lead_time_days": (30.0, 200.0)})
    spec = caught.value.args[0]
    assert [v.id for v in spec.variants] == ["base", "lead_time_days-low", "lead_time_days-high"]
    low, high = spec.variants[1:]
    assert low.params == {"options.own-256.lead_time_days": 30.0, "options.own-384.lead_time_days": 30.0}
    assert high.params == {"options.own-256.lead_time_days": 200.0, "options.own-384.lead_time_days": 200.0}
    assert low.scenario.model_dump(mode="json") == lead_time(base, 30.0)
    assert high.scenario.model_dump(mode="json") == lead_time(base, 200.0)
    builder = VariantBuilder(base, source="tornado")
    assert builder.build(vid="lead_time_days-low", params=low.params) == low
    assert builder.build(vid="lead_time_days-high", params=high.params) == high


def test_a_refused_variant_is_reported_as_written_under_its_name(base):
    builder = VariantBuilder(base, source="tornado")
    with pytest.raises(ScenarioError) as caught:
        builder.build(vid="x-low", params={"options.own-256.gpus": 8}, note="too small")
    err = caught.value
    assert err.source == "tornado variant x-low (too small)"
    # own-256 as written, not the own-8 the rename would have made of it
    assert [p.loc for p in err.problems] == [("options", 0, "gpus")] * len(err.problems)
    assert all("option 'own-256' has 8 GPUs" in p.message for p in err.problems)
    written = builder.edited(params={"options.own-256.gpus": 8})
    assert written["options"][0]["name"] == "own-256" and written["options"][0]["gpus"] == 8


def test_paths_located_once_give_the_same_variant(base):
    builder = VariantBuilder(base, source="sweep")
    params = {"options.own-384.lead_time_days": 90, "economics.electricity_usd_per_kwh": 0.2}
    locs = {p: builder.locate(p) for p in params}
    assert locs["options.own-384.lead_time_days"] == ("options", 1, "lead_time_days")
    one = builder.build(vid="v1", params=params, locs=locs)
    assert one == builder.build(vid="v1", params=params)
    assert isinstance(one, Variant) and one.scenario.options[1].lead_time_days == 90
    assert one.scenario.economics.electricity_usd_per_kwh == 0.2
    assert base.options[1].lead_time_days == 112  # the base is never edited
