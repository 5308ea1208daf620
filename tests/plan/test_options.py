"""The plan types' behaviour, each against a hand calculation: GPUs a job holds, the most GPUs a
pool gives one job, when capacity is there, the pricing label, the build-or-rent side, pools."""

from __future__ import annotations

import math

import numpy as np
import pytest

import costsim
from costsim.catalog.load import default_catalog
from costsim.decisions.fair import fair_rows
from costsim.decisions.sensitivity import tornado
from costsim.engine import cloud as engine_cloud
from costsim.engine import owned as engine_owned
from costsim.engine import pool as engine_pool
from costsim.plan.fleet import HybridPlan
from costsim.plan.options import CloudPlan, JobLimit, OwnedPlan, held_gpus, nodes_needed, side_of
from costsim.plan.resolve import resolve
from costsim.scenario import scenario_from_data

H100 = default_catalog().gpus["H100"]


def owned(gpus: int = 64, per_node: int = 8, lead_time_h: float = 0.0, rollout: CloudPlan | None = None) -> OwnedPlan:
    return OwnedPlan(name="own", gpu=H100, gpus=gpus, gpus_per_node=per_node, nodes=gpus // per_node,
                     network="infiniband", fabric_efficiency=0.9, lead_time_h=lead_time_h, scheduler="fifo",
                     capex_usd=1e6, rollout=rollout)


def cloud(pricing: str = "on_demand", per_instance: int = 8, max_gpus: int | None = None,
          reserved_gpus: int | None = None, name: str | None = None) -> CloudPlan:
    return CloudPlan(name=name or pricing, gpu=H100, pricing=pricing, price_per_gpu_hour=2.5,
                     gpus_per_instance=per_instance, billing_granularity_s=60.0, minimum_billing_s=60.0,
                     max_gpus=max_gpus, provisioning_delay_h=0.25, startup_h=0.1, network="infiniband",
                     fabric_efficiency=0.9, reserved_gpus=reserved_gpus)


def hybrid(base: OwnedPlan | CloudPlan, burst: CloudPlan) -> HybridPlan:
    return HybridPlan("mix", base, burst, max_wait_h=2.0, bridge_until_ready=True)


RESERVED = cloud("reserved", reserved_gpus=256)


# --- GPUs a job holds ----------------------------------------------------------------------------

def test_owned_nodes_hold_the_job_within_one_node_and_whole_nodes_beyond():
    # 5 on one 8-GPU node: 5; 8: 8; 12: ⌈12/8⌉ = 2 nodes = 16; 17: 3 nodes = 24.
    assert owned().held_gpus(np.array([1, 5, 8, 12, 16, 17])).tolist() == [1, 5, 8, 16, 16, 24]


def test_on_demand_and_spot_rent_whole_instances():
    # 5 GPUs rent one 8-GPU instance (8); 12 rent two (16); 8 exactly one.
    for pricing in ("on_demand", "spot"):
        assert cloud(pricing).held_gpus(np.array([1, 5, 8, 12])).tolist() == [8, 8, 8, 16]
    assert cloud(per_instance=4).held_gpus(np.array([5])).tolist() == [8]


def test_a_reserved_pool_holds_like_an_owned_cluster_of_its_instances():
    # The engine runs a reservation as a cluster of instances: a 5-GPU job holds 5 of one, 12 hold 2 whole.
    assert RESERVED.held_gpus(np.array([5, 8, 12])).tolist() == [5, 8, 16]


def test_held_gpus_are_int64_arrays():
    for part in (owned(), cloud(), RESERVED):
        assert part.held_gpus(np.array([3, 20], dtype=np.int32)).dtype == np.int64


def test_the_engines_scalar_is_the_plans_and_agrees_with_the_arrays():
    # The event loop calls the plan's own functions: one rule for the checks, the tables and the engine.
    assert engine_owned.held_gpus is held_gpus and engine_pool.nodes_needed is nodes_needed
    assert engine_cloud.nodes_needed is nodes_needed
    sizes = np.arange(1, 41)
    for per_node in (4, 8):
        assert owned(per_node=per_node).held_gpus(sizes).tolist() == [held_gpus(int(g), per_node) for g in sizes]
    assert nodes_needed(12, 8) == 2 and nodes_needed(np.array([8, 9]), 8).tolist() == [1, 2]


# --- the most GPUs a pool gives one job ----------------------------------------------------------

def test_job_limits_and_the_field_that_sets_them():
    assert owned(gpus=64).job_limit == JobLimit(64, "gpus")
    assert RESERVED.job_limit == JobLimit(256, "reserved_gpus")
    assert cloud(max_gpus=32).job_limit == JobLimit(32, "max_gpus")
    assert cloud("spot", max_gpus=16).job_limit == JobLimit(16, "max_gpus")
    assert cloud().job_limit is None and cloud("spot").job_limit is None  # unlimited rented capacity


# --- pools, delivery, home ------------------------------------------------------------------------

def test_pools_are_owned_and_reserved_capacity():
    assert owned().is_pool and RESERVED.is_pool
    assert not cloud().is_pool and not cloud("spot").is_pool
    assert [p.pay_as_you_go for p in (owned(), RESERVED, cloud(), cloud("spot"), hybrid(owned(), cloud()))] == [
        False, False, True, True, False]


def test_delivery_is_the_owned_lead_time_and_at_once_for_rented_capacity():
    lead = owned(lead_time_h=120 * 24.0)
    assert lead.delivery_h == 2880.0
    assert cloud().delivery_h == 0.0 and RESERVED.delivery_h == 0.0
    assert hybrid(lead, cloud()).delivery_h == 2880.0 and hybrid(RESERVED, cloud()).delivery_h == 0.0


def test_home_is_the_pool_jobs_run_on_first():
    base = owned()
    assert base.home is base and RESERVED.home is RESERVED and hybrid(base, cloud()).home is base


def test_node_gpus_is_the_node_or_the_instance():
    assert owned(per_node=4).node_gpus == 4 and cloud(per_instance=2).node_gpus == 2


# --- pricing label and side ------------------------------------------------------------------------

@pytest.mark.parametrize(("plan", "label", "side"), [
    (owned(), "owned", "build"),
    (cloud(), "on_demand", "rent"),
    (cloud("spot"), "spot", "rent"),
    (RESERVED, "reserved", "rent"),
    (hybrid(owned(), cloud()), "owned+on_demand", "build"),
    (hybrid(owned(), cloud("spot")), "owned+spot", "build"),
    (hybrid(RESERVED, cloud()), "reserved+on_demand", "rent"),
    (hybrid(RESERVED, cloud("spot")), "reserved+spot", "rent"),
])
def test_pricing_labels_and_sides(plan, label, side):
    assert plan.pricing == label
    assert plan.side == side == side_of(label)  # one rule, whether read from the plan or its label


# --- prices out -------------------------------------------------------------------------------------

def test_unpriced_sets_every_price_to_nan_and_keeps_the_rest():
    rollout = cloud("spot", name="spot")
    home = owned(rollout=rollout).unpriced()
    assert math.isnan(home.capex_usd) and math.isnan(home.rollout.price_per_gpu_hour)
    assert home.gpus == 64 and home.rollout.gpus_per_instance == 8
    bare = hybrid(owned(), cloud()).unpriced()
    assert math.isnan(bare.base.capex_usd)
    assert all(math.isnan(x) for x in (bare.burst.price_per_gpu_hour, bare.burst.billing_granularity_s,
                                       bare.burst.minimum_billing_s))
    assert bare.burst.provisioning_delay_h == 0.25 and bare.max_wait_h == 2.0


# --- resolved from a scenario ----------------------------------------------------------------------

EVERY_KIND = {"name": "kinds", "horizon_days": 3, "seed": 2, "workload": {"job_classes": [
    {"name": "j", "arrivals_per_day": 6, "gpus": 8, "duration": {"law": "lognormal", "mean_h": 2, "cv": 0.5}}]},
    "options": [
        {"name": "own", "kind": "owned", "gpu_type": "H100", "gpus": 64, "lead_time_days": 10},
        {"name": "od", "kind": "cloud", "gpu_type": "H100", "pricing": "on_demand", "max_gpus": 32},
        {"name": "res", "kind": "cloud", "gpu_type": "H100", "pricing": "reserved", "reserved_gpus": 128},
        {"name": "spot", "kind": "cloud", "gpu_type": "H100", "pricing": "spot"},
        {"name": "own-burst", "kind": "hybrid", "base": "own", "burst": "od"},
        {"name": "res-burst", "kind": "hybrid", "base": "res", "burst": "spot"}]}


def test_resolved_options_of_every_kind():
    plans = resolve(scenario_from_data(EVERY_KIND, "t", "."))
    assert [p.pricing for p in plans] == ["owned", "on_demand", "reserved", "spot", "owned+on_demand", "reserved+spot"]
    assert [p.side for p in plans] == ["build", "rent", "rent", "rent", "build", "rent"]
    assert [p.delivery_h for p in plans] == [240.0, 0.0, 0.0, 0.0, 240.0, 0.0]  # 10 days
    assert [p.job_limit for p in plans[:4]] == [JobLimit(64, "gpus"), JobLimit(32, "max_gpus"),
                                               JobLimit(128, "reserved_gpus"), None]


def test_the_decisions_side_column_is_the_plans_side():
    sc = scenario_from_data(EVERY_KIND, "t", ".")
    res = costsim.simulate(sc)
    table = fair_rows(res.summary)
    assert table["pricing"].tolist() == [p.pricing for p in resolve(sc)]
    assert table["side"].tolist() == [p.side for p in resolve(sc)]


def test_a_tornado_finds_no_build_side_in_reservations_and_rentals():
    # Reserved capacity and a hybrid on a reserved base are rented (side_of): nothing to build.
    options = [{"name": "res", "kind": "cloud", "gpu_type": "H100", "pricing": "reserved", "reserved_gpus": 64},
               {"name": "od", "kind": "cloud", "gpu_type": "H100", "pricing": "on_demand"},
               {"name": "mix", "kind": "hybrid", "base": "res", "burst": "od"}]
    sc = scenario_from_data({**EVERY_KIND, "options": options}, "t", ".")
    with pytest.raises(costsim.ScenarioError, match="a tornado compares building with renting: the scenario has no "
                                                    "owned option"):
        tornado(sc)
