"""What an option is, said by its plan (``plan/options.py``) and of the option as written
(``plan/facts.py``): the two agree on every option of every shipped scenario, and each pool is
exactly one of owned, a reservation or a rental."""

from __future__ import annotations

import math

import pytest
from paths import SHIPPED

import costsim
from costsim.plan import facts
from costsim.plan.fleet import pools
from costsim.plan.options import Interruption
from costsim.plan.resolve import resolve

SCENARIOS = sorted(SHIPPED.glob("*.yaml"))


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_the_facts_of_an_option_as_written_are_its_plans(path):
    sc = costsim.load_scenario(path)
    plans = {p.name: p for p in resolve(sc)}
    for opt in sc.options:
        plan = plans[opt.name]
        data = opt.model_dump(mode="json")
        for o in (opt, data):  # a model and its data (as the editor holds it) alike
            assert facts.pricing_label(sc, opt) == plan.pricing
            assert facts.side(sc, opt) == plan.side
            assert facts.is_owned(o) == (plan.owned is plan)
            assert facts.is_reserved(o) == (plan.reservation is plan)
            assert facts.pay_as_you_go(o) == (plan.rental is plan) == plan.pay_as_you_go
            assert facts.is_cloud(o) == (facts.is_reserved(o) or facts.pay_as_you_go(o))
            assert facts.parts_of(o) == tuple(p.name for p in pools(plan) if p is not plan)
        if facts.parts_of(opt):  # a hybrid: built of two options, never part of another
            assert not facts.can_be_base(opt) and facts.committed_gpus(opt) is None
        else:
            assert facts.can_be_base(opt) == plan.is_pool
            assert facts.committed_gpus(opt) == (plan.job_limit.gpus if plan.is_pool else None)
    assert [o.name for o in facts.pool_options(sc)] == [n for n, p in plans.items() if len(pools(p)) == 1]
    assert list(facts.owned_plans(plans.values())) == [o.name for o in facts.owned_options(sc)]
    assert list(facts.cloud_plans(plans.values())) == [o.name for o in facts.cloud_options(sc)]
    assert facts.pay_as_you_go_names(sc) == [n for n, p in plans.items() if p.pay_as_you_go]


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_each_pool_is_one_of_owned_reserved_and_rented(path):
    for plan in resolve(costsim.load_scenario(path)):
        for pool in pools(plan):
            what = [pool.owned, pool.reservation, pool.rental]
            assert [w is pool for w in what].count(True) == 1 and what.count(None) == 2
            assert pool.is_pool == (pool.rental is None)
        assert plan.owned is plan.home.owned and plan.reservation is plan.home.reservation


def test_how_a_pool_interrupts_jobs():
    sc = costsim.load_scenario(SHIPPED / "spot-rollouts.yaml")
    plans = resolve(sc)
    for plan in plans:
        for pool in pools(plan):
            causes = pool.interruptions(0.5)
            if pool.owned is not None:
                assert causes == [Interruption(pool.failures_per_node_h, 0.5)]
            elif pool.reservation is not None:
                assert causes == []
            else:
                swap, reacquire = causes
                assert swap == (pool.failures_per_node_h, pool.provisioning_delay_h + 0.5)
                assert reacquire.per_node_h == pool.preemptions_per_instance_h
                assert math.isclose(reacquire.resume_h, pool.reacquire_delay_h + pool.provisioning_delay_h
                                    + pool.startup_h + 0.5)


def test_a_hybrid_bridges_its_bases_lead_time_only_when_it_says_so():
    sc = costsim.load_scenario(SHIPPED / "hybrid-burst.yaml")
    hybrid = next(p for p in resolve(sc) if len(pools(p)) > 1)
    assert hybrid.bridged_h == (hybrid.base.delivery_h if hybrid.bridge_until_ready else 0.0)
    assert all(p.bridged_h == 0.0 for p in pools(hybrid))


def test_the_editors_data_and_words():
    assert [facts.shape_of(c) for c in facts.CHOICES] == [
        {"kind": "owned"}, {"kind": "cloud", "pricing": "on_demand"}, {"kind": "cloud", "pricing": "reserved"},
        {"kind": "cloud", "pricing": "spot"}, {"kind": "hybrid"}, {"kind": "fleet"}]
    with pytest.raises(ValueError, match="unknown option kind 'gpu'"):
        facts.shape_of("gpu")
    assert facts.parts_of({"kind": "hybrid", "base": "a"}) == ("a", None)  # half-edited data
    assert facts.parts_of({"kind": "fleet", "parts": [{"option": "a"}, {}]}) == ("a", None)
    assert facts.parts_of({"kind": "fleet", "parts": "a"}) == ()  # not a list yet: no parts
    assert facts.part_fields({"kind": "owned"}) == () and not facts.is_spot({"pricing": "spot"})  # no kind: no option
    assert facts.unit_field({"kind": "owned"}, "gpus") == "gpus_per_node"
    assert facts.unit_field({"kind": "cloud"}, "max_gpus") == "gpus_per_instance"
    assert facts.unit_field({"kind": "cloud"}, "gpus") is None and facts.unit_field({"kind": "hybrid"}, "gpus") is None
    assert (facts.catalog_price_key("reserved", 3), facts.catalog_price_key("spot", 3)) == ("reserved_3y", "spot")


def test_a_summary_rows_look():
    assert facts.holding("owned", "owned") == ("owned", "owned")
    assert facts.holding("cloud", "spot") == ("rented", "spot")
    assert facts.holding("cloud", math.nan) == ("rented", "on_demand")
    assert facts.holding("hybrid", "owned+on_demand") == ("hybrid", "hybrid")
    assert facts.holding(None, None) == ("other", "other")
    assert facts.hybrid(["owned", "hybrid", math.nan]).tolist() == [False, True, False]
