"""The fleet option's schema: each mistake is one message naming its field; what the plan and the
facts say a fleet is (its pricing label, its side, its parts)."""

from __future__ import annotations

import pytest

from costsim.plan import facts
from costsim.plan.fleet import FleetPlan, pools
from costsim.plan.resolve import resolve
from costsim.scenario import ScenarioError, dump_scenario, scenario_from_yaml

SCENARIO = """\
name: s
horizon_days: 30
workload:
  classes:
    - {name: a, arrivals_per_day: 4, gpus: 8, iterations: 50, model_params_b: 7}
options:
  - {name: own, kind: owned, gpu_type: H100, gpus: 16, lead_time_days: 0}
  - {name: res, kind: cloud, gpu_type: H100, pricing: reserved, reserved_gpus: 16}
  - {name: od, kind: cloud, gpu_type: H100, pricing: on_demand}
  - {name: mix, kind: hybrid, base: own, burst: od}
  - {name: fl, kind: fleet, parts: PARTS}
"""


def load(parts: str):
    return scenario_from_yaml(SCENARIO.replace("PARTS", parts), "s.yaml", ".")[0]


def problems(parts: str) -> list[str]:
    with pytest.raises(ScenarioError) as err:
        load(parts)
    return [f"{'.'.join(map(str, p.loc))}: {p.message}" for p in err.value.problems]


@pytest.mark.parametrize(("parts", "field", "words"), [
    ("[{option: own}, {option: nope}]", "options.4.parts.1.option", "'nope' is not an option of this scenario"),
    ("[{option: fl}, {option: od}]", "options.4", "parts.0.option: fleet 'fl' names itself"),
    ("[{option: mix}, {option: od}]", "options.4.parts.0.option", "'mix' is a hybrid"),
    ("[{option: own}, {option: res}]", "options.4.parts.1.option", "must be a cloud option, on_demand or spot"),
    ("[{option: own}, {option: od}, {option: res}]", "options.4.parts.1.option",
     "pool part 'res' comes after the burst part 'od'"),
    ("[{option: own}]", "options.4", "parts: a fleet needs at least two parts"),
    ("[{option: own}, {option: own}, {option: od}]", "options.4", "parts.1.option: option 'own' is part 0 already"),
    ("[{option: own, max_wait_h: 1}, {option: od}]", "options.4", "parts.0: wait_policy, max_wait_h and wait_per_*"),
    ("[{option: own}, {option: od, wait_policy: linear_gpus}]", "options.4", "wait_policy linear_gpus needs wait_per_gpu_h"),
    ("[{option: own}, {option: od, wait_policy: zero, max_wait_h: 2}]", "options.4",
     "max_wait_h applies to wait_policy constant only"),
])
def test_each_mistake_is_one_message_naming_its_field(parts, field, words):
    found = problems(parts)
    assert len(found) == 1, found
    assert found[0].startswith(f"{field}: ") and words in found[0], found


def test_another_fleet_as_a_part_is_refused():
    text = SCENARIO.replace("PARTS", "[{option: own}, {option: od}]") + \
        "  - {name: fl2, kind: fleet, parts: [{option: fl}, {option: od}]}\n"
    with pytest.raises(ScenarioError) as err:
        scenario_from_yaml(text, "s.yaml", ".")
    (p,) = err.value.problems
    assert ".".join(map(str, p.loc)) == "options.5.parts.0.option" and "'fl' is a fleet" in p.message


def test_a_fleet_resolves_to_its_parts_in_order_and_reads_back_as_written():
    sc = load("[{option: own}, {option: res}, {option: od, wait_policy: linear_gpus, wait_per_gpu_h: 0.5}]")
    plan = {p.name: p for p in resolve(sc)}["fl"]
    assert isinstance(plan, FleetPlan)
    assert [p.name for p in pools(plan)] == ["own", "res", "od"]
    assert (plan.wait_policy, plan.wait_per_gpu_h, plan.pricing) == ("linear_gpus", 0.5, "owned+reserved+on_demand")
    again = scenario_from_yaml(dump_scenario(sc), "s.yaml", ".")[0]
    assert again == sc  # a pool part's dump carries no waiting fields, so it validates again


@pytest.mark.parametrize(("parts", "side"), [
    ("[{option: own}, {option: res}, {option: od}]", "build"),  # owns a cluster: a decision to buy hardware
    ("[{option: res}, {option: own}, {option: od}]", "build"),  # wherever the owned part stands
    ("[{option: res}, {option: od}]", "rent"),  # rented parts only
])
def test_a_fleet_is_on_the_build_side_when_it_owns_any_part(parts, side):
    sc = load(parts)
    fl = sc.option("fl")
    assert facts.side(sc, fl) == side
    assert {p.name: p for p in resolve(sc)}["fl"].side == side
    assert facts.parts_of(fl) == tuple(p.option for p in fl.parts)
    assert facts.hybrid("fleet") and facts.holding("fleet", "owned+on_demand") == ("hybrid", "hybrid")


def test_renaming_an_option_renames_it_in_a_fleets_parts():
    from costsim.scenario.naming import rename_options
    data = load("[{option: own}, {option: od}]").model_dump(mode="json")
    out = rename_options(data, {"own": "own-16"})
    assert out["options"][4]["parts"][0]["option"] == "own-16"
