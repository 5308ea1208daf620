"""Operations staff in whole engineers: ⌈GPUs ÷ GPUs per engineer⌉ per owned cluster, at least the
catalog's (or the scenario's) ``staff_min_fte``; rented capacity carries none. Worked by hand."""

import pytest
from helpers import cloud, owned, scenario

import costsim
from costsim.catalog.load import default_catalog
from costsim.models import economics as eco
from costsim.scenario import ScenarioError

# Only staff costs money here; a year in service (lead time 0) at $200,000 per engineer, one per
# 500 GPUs; the minimum is the catalog's, 1.
ECON = {"electricity_usd_per_kwh": 0.0, "colo_usd_per_kw_month": 0.0, "maintenance_frac_per_year": 0.0,
        "setup_usd": 0.0, "staff_usd_per_fte_year": 200_000, "gpus_per_fte": 500}
JOB = [(0, 8, 1)]  # one small job: staff does not depend on use


def staff(tmp_path, options, **econ):
    res = costsim.simulate(scenario(tmp_path, JOB, options, horizon_days=365, economics={**ECON, **econ}))
    return res.summary.set_index("option")["cost_staff_usd"]


def test_whole_engineers_by_hand():
    # 256 / 500 = 0.512 -> 1 engineer (and the minimum is 1); 1,200 / 500 = 2.4 -> 3.
    assert eco.staff_fte(256, 500.0, 1) == 1
    assert eco.staff_fte(1200, 500.0, 1) == 3
    # A whole number stays whole: 1,500 / 750 = 2 (not 3 from float noise).
    assert eco.staff_fte(1500, 750.0, 1) == 2
    # The minimum bites only above the rounded-up ratio: 256 GPUs with at least 2 engineers -> 2.
    assert eco.staff_fte(256, 500.0, 2) == 2 and eco.staff_fte(1200, 500.0, 2) == 3
    # No minimum still rounds up: a cluster is never run by a fraction of an engineer.
    assert eco.staff_fte(256, 500.0, 0) == 1
    # Cost: 3 engineers × $225,000 × half a year (4,380 h) = $337,500.
    assert eco.staff_cost_usd(1200, 500.0, 225_000.0, 4380.0, min_fte=1) == pytest.approx(337_500.0, rel=1e-12)


def test_staff_of_owned_clusters_in_a_run(tmp_path):
    # 256 GPUs: 1 engineer × $200,000 = $200,000 (the old rule, 256/500 × 200,000, gave $102,400).
    # 1,200 GPUs: 3 engineers = $600,000 (old: 2.4 × 200,000 = $480,000).
    s = staff(tmp_path, [owned("small", gpus=256), owned("large", gpus=1200)])
    assert s["small"] == pytest.approx(200_000.0)
    assert s["large"] == pytest.approx(600_000.0)


def test_a_hybrids_base_is_staffed_and_rented_capacity_is_not(tmp_path):
    # The hybrid's owned base (256 GPUs) carries its 1 engineer; its burst and the plain on-demand
    # and reserved options carry none.
    reserved = {"name": "res", "kind": "cloud", "gpu_type": "H100", "pricing": "reserved", "reserved_gpus": 16}
    hybrid = {"name": "hyb", "kind": "hybrid", "base": "own", "burst": "cloud", "max_wait_h": 1}
    s = staff(tmp_path, [owned(gpus=256), cloud(), reserved, hybrid])
    assert s["own"] == pytest.approx(200_000.0) and s["hyb"] == pytest.approx(200_000.0)
    assert s["cloud"] == 0.0 and s["res"] == 0.0


def test_the_minimum_is_a_scenario_override(tmp_path):
    # At least 4 engineers: 256 GPUs (1 by the ratio) -> 4 × $200,000; 1,200 GPUs (3) -> 4 as well.
    s = staff(tmp_path, [owned("small", gpus=256), owned("large", gpus=1200)], staff_min_fte=4)
    assert s["small"] == pytest.approx(800_000.0) and s["large"] == pytest.approx(800_000.0)


@pytest.mark.parametrize("value", [-1, 1.5])
def test_a_bad_minimum_is_refused_naming_the_field(tmp_path, value):
    with pytest.raises(ScenarioError) as err:
        scenario(tmp_path, JOB, [owned()], economics={"staff_min_fte": value})
    assert [p.loc for p in err.value.problems] == [("economics", "staff_min_fte")]


def test_catalog_minimum_is_sourced():
    cat = default_catalog()
    assert cat.economics["staff_min_fte"] == 1
    entry = next(e for e in cat.entries if e.path == "economics.staff_min_fte")
    assert "500 GPUs" in entry.source and entry.date
