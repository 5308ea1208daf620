"""Scheduler orders (sjf, lifo), node placement (first_fit vs best_fit) and hybrid waiting policies
(constant, zero, linear_runtime, linear_gpus) against hand-worked schedules of a few jobs."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from helpers import cloud, jobs_of, owned, scenario

import costsim
from costsim.engine.pool import NodePool
from costsim.engine.run import sjf_durations
from costsim.scenario import ScenarioError


def hybrid(name="hyb", **kw):
    return {"name": name, "kind": "hybrid", "base": "own", "burst": "cloud", **kw}


def starts(res, option):
    return jobs_of(res, option).start_h.tolist()


# -- queue orders ----------------------------------------------------------------------------------
# One 8-GPU node. J0 holds it 0-10 h; J1 (5 h), J2 (2 h), J3 (3 h) arrive at 1, 2, 3 h, all 8 GPUs.
QUEUE = [(0.0, 8, 10.0), (1.0, 8, 5.0), (2.0, 8, 2.0), (3.0, 8, 3.0)]


@pytest.mark.parametrize("sched, expected", [
    ("fifo", [0, 10, 15, 17]),  # J1 10-15, J2 15-17, J3 17-20
    ("sjf", [0, 15, 10, 12]),   # shortest first at 10 h: J2 10-12, J3 12-15, J1 15-20
    ("lifo", [0, 15, 13, 10]),  # latest first at 10 h: J3 10-13, J2 13-15, J1 15-20
])
def test_queue_orders_hand_worked(tmp_path, sched, expected):
    res = costsim.simulate(scenario(tmp_path, QUEUE, [owned(gpus=8, scheduler=sched)], horizon_days=2))
    assert starts(res, "own") == expected


def test_sjf_orders_trace_jobs_by_requested_duration_and_rl_jobs_by_planned_run():
    # A trace job's checkpoint writes lengthen its run (3.5 h) but not what it asked for (3 h).
    work = SimpleNamespace(jobs=SimpleNamespace(class_index=np.array([-1, 0, -1]),
                                                duration_h=np.array([3.0, np.nan, 1.0])),
                           run_h=np.array([3.5, 7.0, 1.2]))
    assert sjf_durations(work).tolist() == [3.0, 7.0, 1.0]


def test_lifo_same_instant_ties_take_the_last_in_table_order(tmp_path):
    rows = [(0.0, 8, 4.0), (1.0, 8, 1.0), (1.0, 8, 1.0)]
    res = costsim.simulate(scenario(tmp_path, rows, [owned(gpus=8, scheduler="lifo")], horizon_days=1))
    assert starts(res, "own") == [0, 5, 4]


# -- placement -------------------------------------------------------------------------------------
# Two 8-GPU nodes. J0 (8 GPUs, 0-2 h) takes node 0 and J1 (6 GPUs, 100 h) node 1, leaving 2 free.
# At 3 h J2 (2 GPUs) arrives: best fit puts it in node 1's gap, first fit on node 0 (lowest index
# with room), splitting the only whole node. J3 (8 GPUs, 5 h) at 4 h then starts at once under best
# fit, but under first fit waits for J1 to end at 100 h.
FRAGMENT = [(0.0, 8, 2.0), (0.0, 6, 100.0), (3.0, 2, 100.0), (4.0, 8, 5.0)]


@pytest.mark.parametrize("placement, j3_start", [("best_fit", 4.0), ("first_fit", 100.0)])
def test_first_fit_fragments_where_best_fit_does_not(tmp_path, placement, j3_start):
    res = costsim.simulate(scenario(tmp_path, FRAGMENT, [owned(gpus=16, placement=placement)], horizon_days=6))
    assert starts(res, "own") == [0.0, 0.0, 3.0, j3_start]


def test_placement_defaults_to_best_fit(tmp_path):
    res = costsim.simulate(scenario(tmp_path, FRAGMENT, [owned("a", gpus=16), owned("b", gpus=16, placement="best_fit")],
                                    horizon_days=6))
    assert starts(res, "a") == starts(res, "b")


def test_first_fit_pool_takes_lowest_node_with_room():
    pool = NodePool(3, 8, "first_fit")
    assert pool.allocate(5) == ((0, 5),)
    assert pool.allocate(4) == ((1, 4),)   # node 0 has 3 left: too few
    assert pool.allocate(2) == ((0, 2),)   # best fit would also take node 0 (3 free); first fit: lowest
    assert pool.allocate(3) == ((1, 3),)   # node 0 has 1 left: node 1 (4 free) is the lowest with room
    assert pool.allocate(16) is None and pool.allocate(8) == ((2, 8),)
    best = NodePool(3, 8)
    best.allocate(5), best.allocate(6)     # node 0: 3 free, node 1: 2 free
    assert best.allocate(2) == ((1, 2),)   # fullest node that fits
    first = NodePool(3, 8, "first_fit")
    first.allocate(5), first.allocate(6)
    assert first.allocate(2) == ((0, 2),)  # lowest index that fits


# -- hybrid waiting policies -----------------------------------------------------------------------
# The base is one 8-GPU node; the burst has no provisioning or startup. J0 holds the base 0-10 h.
# At 1 h arrive J1 (1 GPU, 2 h), J2 (4 GPUs, 6 h), J3 (8 GPUs, 30 h).
WAIT = [(0.0, 8, 10.0), (1.0, 1, 2.0), (1.0, 4, 6.0), (1.0, 8, 30.0)]


@pytest.mark.parametrize("policy, ran_on, start", [
    # constant 5 h: everyone waiting bursts at 6 h.
    ({"max_wait_h": 5}, ["own", "cloud", "cloud", "cloud"], [0, 6, 6, 6]),
    # zero: the base is busy at 1 h, so all three burst at once.
    ({"wait_policy": "zero"}, ["own", "cloud", "cloud", "cloud"], [0, 1, 1, 1]),
    # linear_runtime 0.5 h/h: waits 1, 3, 15 h; J3 is still waiting when the base frees at 10 h.
    ({"wait_policy": "linear_runtime", "wait_per_hour_h": 0.5}, ["own", "cloud", "cloud", "own"], [0, 2, 4, 10]),
    # linear_gpus 2 h/GPU: waits 2, 8, 16 h.
    ({"wait_policy": "linear_gpus", "wait_per_gpu_h": 2}, ["own", "cloud", "cloud", "own"], [0, 3, 9, 10]),
    # linear_cost 0.25 h per GPU-hour: J1 2 GPU-h waits 0.5 h, J2 24 GPU-h 6 h, J3 240 GPU-h 60 h.
    ({"wait_policy": "linear_cost", "wait_per_gpu_hour_h": 0.25}, ["own", "cloud", "cloud", "own"], [0, 1.5, 7, 10]),
])
def test_wait_policies_hand_worked(tmp_path, policy, ran_on, start):
    res = costsim.simulate(scenario(tmp_path, WAIT, [owned(gpus=8), cloud(), hybrid(**policy)], horizon_days=3))
    j = jobs_of(res, "hyb")
    assert j.ran_on.tolist() == ran_on and j.start_h.tolist() == start


def test_zero_wait_is_all_burst_when_the_base_is_busy(tmp_path):
    """With the base held throughout by J0, ``zero`` sends every other job to the burst at its
    submit: each costs exactly what it costs on a cloud-only run of the burst option."""
    rng = np.random.default_rng(3)
    rows = [(0.0, 8, 1000.0)] + [(float(t), int(g), float(d)) for t, g, d in
                                  zip(np.sort(rng.uniform(0.5, 40, 30)), rng.choice([1, 2, 4, 8], 30),
                                      rng.uniform(0.2, 9, 30), strict=True)]
    res = costsim.simulate(scenario(tmp_path, rows, [owned(gpus=8), cloud(), hybrid(wait_policy="zero")],
                                    horizon_days=3))
    h, c = jobs_of(res, "hyb").iloc[1:], jobs_of(res, "cloud").iloc[1:]
    assert (h.ran_on == "cloud").all()
    np.testing.assert_array_equal(h.start_h.to_numpy(), c.start_h.to_numpy())
    np.testing.assert_array_equal(h.cost_usd.to_numpy(), c.cost_usd.to_numpy())


def test_zero_is_a_constant_wait_of_zero(tmp_path):
    rng = np.random.default_rng(4)
    rows = [(float(t), int(g), float(d)) for t, g, d in zip(np.sort(rng.uniform(0, 60, 80)),
                                                            rng.choice([1, 2, 8], 80), rng.uniform(0.5, 12, 80),
                                                            strict=True)]
    res = costsim.simulate(scenario(tmp_path, rows, [owned(gpus=16), cloud(), hybrid("z", wait_policy="zero"),
                                                     hybrid("c", max_wait_h=0)], horizon_days=4))
    z, c = jobs_of(res, "z"), jobs_of(res, "c")
    assert set(z.ran_on) == {"own", "cloud"}  # some fit the base on arrival: the case is not trivial
    for col in ("ran_on", "start_h", "end_h", "cost_usd"):
        assert z[col].tolist() == c[col].tolist()


@pytest.mark.parametrize("sched", ["fifo", "sjf", "lifo"])
def test_infinite_wait_is_the_base_alone(tmp_path, sched):
    rng = np.random.default_rng(5)
    rows = [(float(t), int(g), float(d)) for t, g, d in zip(np.sort(rng.uniform(0, 60, 80)),
                                                            rng.choice([1, 2, 8], 80), rng.uniform(0.5, 12, 80),
                                                            strict=True)]
    res = costsim.simulate(scenario(tmp_path, rows, [owned(gpus=16, scheduler=sched), cloud(),
                                                     hybrid(max_wait_h=1e9)], horizon_days=8))
    a, h = jobs_of(res, "own"), jobs_of(res, "hyb")
    assert (h.ran_on == "own").all() and h.queue_delay_h.max() > 1  # jobs did queue
    for col in ("start_h", "end_h", "cost_usd"):
        np.testing.assert_array_equal(a[col].to_numpy(), h[col].to_numpy())
    s = res.summary.set_index("option")
    assert s.loc["hyb", "total_cost_usd"] == pytest.approx(s.loc["own", "total_cost_usd"], rel=1e-12)


@pytest.mark.parametrize("extra, message", [
    ({"wait_policy": "linear_runtime"}, "needs wait_per_hour_h"),
    ({"wait_policy": "linear_gpus"}, "needs wait_per_gpu_h"),
    ({"wait_policy": "linear_gpus", "wait_per_gpu_h": 1, "wait_per_hour_h": 1}, "wait_per_hour_h applies"),
    ({"wait_policy": "linear_cost"}, "needs wait_per_gpu_hour_h"),
    ({"wait_policy": "zero", "max_wait_h": 2}, "max_wait_h applies"),
    ({"wait_policy": "linear_gpus", "wait_per_gpu_h": 1, "max_wait_h": 4}, "max_wait_h applies"),  # the default, written
])
def test_wait_fields_are_checked(tmp_path, extra, message):
    with pytest.raises(ScenarioError, match=message):
        scenario(tmp_path, WAIT, [owned(gpus=8), cloud(), hybrid(**extra)], horizon_days=1)


def test_a_non_constant_policy_dumps_and_reads_back_without_max_wait(tmp_path):
    """max_wait_h written with another policy is refused (above), so a dump must leave it out: the
    YAML download and a variant's data (model_dump) both read back."""
    sc = scenario(tmp_path, WAIT, [owned(gpus=8), cloud(), hybrid(wait_policy="linear_gpus", wait_per_gpu_h=0.5)],
                  horizon_days=1)
    data = sc.model_dump(mode="json")
    assert "max_wait_h" not in data["options"][2]
    assert costsim.scenario_from_data(data, "variant", tmp_path) == sc
    assert costsim.load_scenario_text(costsim.dump_scenario(sc), "again", tmp_path) == sc
    constant = scenario(tmp_path, WAIT, [owned(gpus=8), cloud(), hybrid()], horizon_days=1)
    assert constant.model_dump(mode="json")["options"][2]["max_wait_h"] == 4.0  # kept where it applies
