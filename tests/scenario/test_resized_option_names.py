"""One rule for the name of a resized option (costsim.scenario.naming): a sweep's --set, the
optimiser's candidate, the dashboard's GPU knob and its grid sweep give the same resize the same
name; hybrids, rollout pools and scaling references follow; names stay unique."""

from __future__ import annotations

import copy

import pytest

import costsim
from costsim.dashboard.knobs import apply_knobs, current_knobs
from costsim.decisions.optimize import optimize
from costsim.runs import api
from costsim.runs.sweepfile import sweep_from_sets
from costsim.scenario.naming import apply_resize, option_size, rename_options, resize_renames, sized_name

# A tiny scenario (3 days, a few 8-GPU jobs) whose owned option is named after its size and is a
# hybrid's base; own-32 is there to take a name.
SIZED = """\
name: sized
horizon_days: 3
seed: 1
workload:
  classes:
    - {name: grpo, arrivals_per_day: 6, gpus: 8, iterations: {mean: 40, cv: 0.5}, model_params_b: 7}
options:
  - {name: own-16, kind: owned, gpu_type: H100, gpus: 16, lead_time_days: 0}
  - {name: own-32, kind: owned, gpu_type: H100, gpus: 32, lead_time_days: 0}
  - {name: cloud, kind: cloud, gpu_type: H100}
  - {name: own-16-burst, kind: hybrid, base: own-16, burst: cloud, max_wait_h: 1}
"""


@pytest.fixture()
def sized(tmp_path):
    path = tmp_path / "sized.yaml"
    path.write_text(SIZED)
    return path


def names(scenario) -> list[str]:
    return [o.name for o in scenario.options]


def test_sized_name_replaces_a_trailing_count_equal_to_the_size_only():
    assert sized_name("own-256", 256, 320) == "own-320"
    assert sized_name("h100x256", 256, 512) == "h100x512"
    assert sized_name("256", 256, 512) == "512"
    assert sized_name("own-256", 128, 320) == "own-256"  # the number is not its size
    assert sized_name("reserved-256-3y", 256, 384) == "reserved-256-3y"
    assert sized_name("lab", 256, 320) == "lab"
    assert sized_name("x" * 78 + "-8", 8, 16) == "x" * 78 + "-8"  # 81 characters: longer than a name may be


def test_the_size_of_each_kind():
    assert option_size({"kind": "owned", "gpus": 64}) == 64
    assert option_size({"kind": "cloud", "pricing": "reserved", "reserved_gpus": 128}) == 128
    assert option_size({"kind": "cloud", "pricing": "on_demand", "max_gpus": 256}) == 256
    assert option_size({"kind": "cloud", "pricing": "spot", "max_gpus": None}) is None  # unlimited
    assert option_size({"kind": "hybrid", "base": "a", "burst": "b"}) is None
    assert option_size({"kind": "owned", "gpus": -8}) is option_size({"kind": "owned", "gpus": 8.5}) is None


def test_a_refused_size_names_the_option_as_written(sized):
    with pytest.raises(costsim.ScenarioError, match=r"options\.own-16\.gpus: Input should be greater"):
        sweep_from_sets(sized, ["options.own-16.gpus=-8"])


def test_a_size_the_catalog_refuses_names_the_option_as_written_not_as_renamed(sized):
    """own-16 at 12 GPUs passes the schema but not the catalog (8-GPU nodes): the problem is about
    own-16, the option the user wrote, never an own-12 the rename would have made, in a --set
    sweep (alone or beside a size that renames) and in the dashboard's grid."""
    from costsim.dashboard.decision_runs import grid_sweep

    for sets in (["options.own-16.gpus=12"], ["options.own-16.gpus=24,12"]):
        with pytest.raises(costsim.ScenarioError) as err:
            sweep_from_sets(sized, sets)
        assert "options.own-16.gpus: 12 GPUs is not a whole number of 8-GPU H100 nodes" in str(err.value)
        assert "own-12" not in str(err.value)
    with pytest.raises(costsim.ScenarioError) as err:
        grid_sweep(api.load_scenario(sized), {"options.own-16.gpus": "12"})
    assert "options.own-16.gpus: 12 GPUs is not a whole number" in str(err.value) and "own-12" not in str(err.value)


def test_build_resized_raises_the_problems_as_written_and_the_renamed_one_only_if_that_builds():
    from costsim.scenario import Problem
    from costsim.scenario.naming import build_resized

    before = _data({"name": "own-16", "kind": "owned", "gpus": 16})
    after = _data({"name": "own-16", "kind": "owned", "gpus": 24})

    def refuse(names):  # refuses data holding an option of one of ``names``
        def build(data):
            bad = [o["name"] for o in data["options"] if o["name"] in names]
            if bad:
                raise costsim.ScenarioError("t", [Problem(("options", 0), f"refused {bad[0]}")])
            return [o["name"] for o in data["options"]]
        return build

    assert build_resized(before, after, refuse(set()))[0] == ["own-24"]
    with pytest.raises(costsim.ScenarioError, match="refused own-16"):  # both refused: as written
        build_resized(before, after, refuse({"own-16", "own-24"}))
    with pytest.raises(costsim.ScenarioError, match="refused own-24"):  # only the rename is: that one
        build_resized(before, after, refuse({"own-24"}))


def _data(*options, classes=()):
    return {"options": [dict(o) for o in options], "workload": {"classes": [dict(c) for c in classes]}}


def test_references_follow_and_taken_names_are_kept():
    before = _data({"name": "own-256", "kind": "owned", "gpus": 256},
                   {"name": "own-384", "kind": "owned", "gpus": 384},
                   {"name": "res-128", "kind": "cloud", "pricing": "reserved", "reserved_gpus": 128},
                   {"name": "spot", "kind": "cloud", "pricing": "spot"},
                   {"name": "burst", "kind": "hybrid", "base": "own-256", "burst": "spot", "rollout_pool": None},
                   {"name": "res-burst", "kind": "hybrid", "base": "res-128", "burst": "spot"},
                   classes=[{"name": "c", "scaling": {"reference_option": "own-256"}}])
    after = copy.deepcopy(before)
    after["options"][0]["gpus"] = 320
    after["options"][2]["reserved_gpus"] = 192
    out, renames = apply_resize(before, after)
    assert renames == {"own-256": "own-320", "res-128": "res-192"}
    assert [o["name"] for o in out["options"]] == ["own-320", "own-384", "res-192", "spot", "burst", "res-burst"]
    assert (out["options"][4]["base"], out["options"][5]["base"]) == ("own-320", "res-192")
    assert out["workload"]["classes"][0]["scaling"]["reference_option"] == "own-320"
    assert after["options"][0]["name"] == "own-256"  # pure: the input is not changed

    taken = copy.deepcopy(before)
    taken["options"][0]["gpus"] = 384  # own-384 exists: own-256 keeps its name
    assert resize_renames(before, taken) == {}
    swap = copy.deepcopy(before)
    swap["options"][0]["gpus"], swap["options"][1]["gpus"] = 384, 256  # each other's names: both kept
    assert resize_renames(before, swap) == {}
    renamed = copy.deepcopy(before)
    renamed["options"][0].update(name="big", gpus=320)  # the edit names it itself
    assert resize_renames(before, renamed) == {}
    pool = rename_options(_data({"name": "own-8", "kind": "owned", "rollout_pool": "spot-64"},
                                {"name": "spot-64", "kind": "cloud"}), {"spot-64": "spot-128"})
    assert [(o["name"], o.get("rollout_pool")) for o in pool["options"]] == [("own-8", "spot-128"), ("spot-128", None)]


def test_one_resize_one_name_on_every_surface(sized):
    """own-16 at 24 GPUs is own-24 in a --set sweep, in the optimiser's answer and table, after the
    dashboard's GPU knob and in the dashboard's grid sweep; the hybrid's base follows each time."""
    from costsim.dashboard.decision_runs import grid_sweep

    base = api.load_scenario(sized)
    expected = ["own-24", "own-32", "cloud", "own-16-burst"]

    swept = sweep_from_sets(sized, ["options.own-16.gpus=16,24"]).variants
    assert [names(v.scenario) for v in swept] == [names(base), expected]
    assert swept[1].scenario.options[3].base == "own-24" and swept[1].scenario.options[0].gpus == 24

    k = current_knobs(base)
    knobbed = apply_knobs(base, type(k)(**{**k.__dict__, "owned_gpus": {**k.owned_gpus, "own-16": 24}}))
    assert names(knobbed) == expected and knobbed.options[3].base == "own-24"

    grid = grid_sweep(base, {"options.own-16.gpus": "24"}).variants
    assert names(grid[0].scenario) == expected and grid[0].scenario.options[3].base == "own-24"

    best = optimize(sized, [], ["options.own-16.gpus=24"], replications=1, executor="local", max_runs=4)
    assert sorted(best.evaluated["option"]) == sorted(expected)
    assert best.option in expected


def test_a_taken_name_is_kept_on_every_surface(sized):
    """own-16 at 32 GPUs: own-32 exists, so it stays own-16 everywhere (names unique)."""
    base = api.load_scenario(sized)
    swept = sweep_from_sets(sized, ["options.own-16.gpus=32"]).variants[0].scenario
    k = current_knobs(base)
    knobbed = apply_knobs(base, type(k)(**{**k.__dict__, "owned_gpus": {**k.owned_gpus, "own-16": 32}}))
    assert names(swept) == names(knobbed) == names(base)
    assert swept.options[0].gpus == knobbed.options[0].gpus == 32


def test_the_optimiser_follows_a_renamed_option_across_its_grid(sized):
    """The search pairs own-16's runs across sizes by its place in the scenario, whatever name each
    size runs as: one row per (size, option), each size's own option under its own name."""
    best = optimize(sized, [], ["options.own-16.gpus=16,24,32"], replications=1, executor="local", max_runs=12)
    rows = best.evaluated
    assert len(rows) == 3 * 4
    resized = rows[rows["option"].isin(["own-16", "own-24"])]  # own-16 at 16, own-24 at 24, own-16 at 32 (taken)
    by_size = {int(g): sorted(set(rows[rows["options.own-16.gpus"] == g]["option"])) for g in (16, 24, 32)}
    assert by_size == {16: ["cloud", "own-16", "own-16-burst", "own-32"], 24: ["cloud", "own-16-burst", "own-24", "own-32"],
                       32: ["cloud", "own-16", "own-16-burst", "own-32"]}
    assert list(resized["options.own-16.gpus"]) == [16, 24, 32]
