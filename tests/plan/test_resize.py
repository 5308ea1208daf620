"""Resizing an owned option bought in tranches (costsim.plan.resize): a sweep's options.X.gpus,
the optimiser's candidates and the dashboard's GPU knob scale every tranche in proportion, in whole
nodes, keeping order days and payments; sizes by hand."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from costsim import load_scenario
from costsim.dashboard.knobs import apply_knobs, current_knobs
from costsim.plan.resize import scale_tranches, scaled_nodes
from costsim.runs.sweepfile import sweep_from_sets
from costsim.scenario import ScenarioError

# Two 8-GPU-node tranches of 16 and 32 GPUs (2 and 4 nodes), the second paid on delivery.
PHASED = """\
name: phased
horizon_days: 3
seed: 1
workload:
  classes:
    - {name: grpo, arrivals_per_day: 6, gpus: 8, iterations: {mean: 40, cv: 0.5}, model_params_b: 7}
options:
  - name: phased
    kind: owned
    gpu_type: H100
    lead_time_days: 0
    tranches:
      - {gpus: 16, order_day: 0}
      - {gpus: 32, order_day: 1, payment: delivery}
  - {name: cloud, kind: cloud, gpu_type: H100}
"""


@pytest.fixture()
def phased(tmp_path):
    path = tmp_path / "phased.yaml"
    path.write_text(PHASED)
    return path


def tranches(scenario):
    opt = scenario.options[0]
    return opt.gpus, [(t.gpus, t.order_day, t.payment) for t in opt.tranches]


def test_scaled_nodes_by_hand():
    assert scaled_nodes([2, 4], 12) == [4, 8]  # × 2, exact
    assert scaled_nodes([32, 32], 65) == [33, 32]  # 32.5 each: the leftover node to the earlier
    assert scaled_nodes([2, 4], 9) == [3, 6]  # 3 and 6: exact again
    assert scaled_nodes([2, 4], 4) == [1, 3]  # 1.33 and 2.67: floors 1 + 2, the node left to the larger remainder
    assert scaled_nodes([1, 9], 2) == [1, 1]  # 0.2 floored to the one-node floor, 1.8 floored to 1
    assert scaled_nodes([1, 1, 8], 3) == [1, 1, 1]  # the floors (1 + 1 + 2) give one back from the largest


@given(st.lists(st.integers(1, 50), min_size=1, max_size=6), st.integers(1, 400))
def test_scaled_nodes_add_up_and_keep_a_node_each(nodes, new_total):
    if new_total < len(nodes):
        return
    out = scaled_nodes(nodes, new_total)
    assert sum(out) == new_total and min(out) >= 1 and len(out) == len(nodes)


def test_a_sweep_scales_every_tranche(phased):
    variants = sweep_from_sets(phased, ["options.phased.gpus=96,40"]).variants
    # 96 GPUs = 12 nodes: 2 and 4 nodes × 2 = 4 and 8 nodes. 40 GPUs = 5 nodes: 1.67 and 3.33, floors
    # 1 and 3, the node left to the larger remainder (0.67): 2 and 3 nodes.
    assert tranches(variants[0].scenario) == (96, [(32, 0, "order"), (64, 1, "delivery")])
    assert tranches(variants[1].scenario) == (40, [(16, 0, "order"), (24, 1, "delivery")])


def test_a_sweep_that_sets_the_tranches_keeps_them(phased):
    v = sweep_from_sets(phased, ["options.phased.tranches.1.gpus=48"]).variants[0]
    assert tranches(v.scenario) == (64, [(16, 0, "order"), (48, 1, "delivery")])


def test_the_gpu_knob_scales_every_tranche(phased):
    sc = load_scenario(phased)
    knobs = current_knobs(sc)
    assert knobs.owned_gpus["phased"] == 48
    edited = apply_knobs(sc, dataclasses.replace(knobs, owned_gpus={"phased": 24}))
    assert tranches(edited) == (24, [(8, 0, "order"), (16, 1, "delivery")])


def test_too_few_nodes_for_the_tranches_is_named(phased):
    # 8 GPUs is one node for two tranches: left as written, the scenario's check names it.
    with pytest.raises(ScenarioError, match=r"gpus \(8\) is not the tranches' total \(48\)"):
        sweep_from_sets(phased, ["options.phased.gpus=8"])


def test_an_untouched_or_bought_at_once_option_is_left_alone():
    before = {"options": [{"name": "a", "kind": "owned", "gpu_type": "H100", "gpus": 16}]}
    after = {"options": [{"name": "a", "kind": "owned", "gpu_type": "H100", "gpus": 32}]}
    assert scale_tranches(before, after) == after


@pytest.mark.parametrize("other", ["options.phased.tranches.1.order_day=2",
                                   "options.phased.tranches.0.payment=lease"])
def test_a_sweep_that_varies_other_tranche_fields_still_scales(phased, other):
    # As costsim plan varies them: 96 GPUs scale 2 and 4 nodes to 4 and 8, the other edit kept.
    sets = ["options.phased.gpus=96", other]
    if other.endswith("lease"):
        sets.append("options.phased.tranches.0.lease_term_months=12")
    v = sweep_from_sets(phased, sets).variants[0]
    gpus, got = tranches(v.scenario)
    assert gpus == 96 and [g for g, _, _ in got] == [32, 64]
    if other.endswith("order_day=2"):
        assert got[1][1] == 2
    else:
        assert got[0][2] == "lease" and v.scenario.options[0].tranches[0].lease_term_months == 12


def test_a_resize_with_a_new_node_size_counts_the_old_nodes_in_the_old_size():
    # 8 and 24 GPUs on 8-GPU nodes are 1 and 3 nodes; 64 GPUs on 16-GPU nodes are 4 nodes: 1 and 3
    # of 16 GPUs, 16 and 48 (counted in the new size the first tranche would be 0 nodes, left unscaled).
    was = {"name": "a", "kind": "owned", "gpu_type": "H100", "gpus_per_node": 8, "gpus": 32,
           "tranches": [{"gpus": 8}, {"gpus": 24, "order_day": 1}]}
    now = {**was, "gpus_per_node": 16, "gpus": 64}
    out = scale_tranches({"options": [was]}, {"options": [now]})
    assert out["options"][0]["tranches"] == [{"gpus": 16}, {"gpus": 48, "order_day": 1}]
