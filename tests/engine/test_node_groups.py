"""An owned pool of node groups (costsim/plan/groups.py, costsim/engine/groups.py) against hand
calculations, the RL model called directly, the plain cluster and the backfill invariant.

Each group is one GPU type and node size; a job runs within one group, on the first (in group
order) that can start it, among those of the GPU type it asks for."""

from __future__ import annotations

import numpy as np
import pytest
import simpy
from helpers import checked_reservations, owned, scenario
from hypothesis import given, settings
from hypothesis import strategies as st

from costsim.catalog.load import default_catalog
from costsim.engine.events import ArrivalFeed
from costsim.engine.groups import GroupRouter
from costsim.engine.owned import OwnedCluster, PoolSpec, QueuedJobs
from costsim.engine.progress import Progress
from costsim.engine.records import Recorder
from costsim.engine.run import run_groups, run_option
from costsim.models import rl
from costsim.plan.groups import GroupedPlan, NodeGroup
from costsim.plan.hardware import hardware, shape
from costsim.plan.resolve import default_capex_per_gpu, economics_values, node_groups, resolve
from costsim.runs.api import scenario_from_data
from costsim.scenario.trace import gpu_type_code
from costsim.units import SECONDS_PER_HOUR
from costsim.workload.jobs import generate
from costsim.workload.plan import plan_work

EPS = 1e-9


def pool(sc, *groups: tuple[str, int, int], **changes) -> GroupedPlan:
    """The scenario's first option (owned) as node groups (gpu_type, nodes, gpus_per_node)."""
    opt = sc.options[0].model_copy(update=changes)
    return node_groups(opt, tuple(NodeGroup(gpu_type=t, nodes=n, gpus_per_node=g) for t, n, g in groups), sc)


def codes(wanted: list[str | None]) -> np.ndarray:
    """GPU type names (None: any) as the job table's one-byte codes."""
    return np.array([gpu_type_code(w) for w in wanted], dtype=np.int8)


def run(sc, plan: GroupedPlan, wanted=None, rngs=None):
    jobs = generate(sc, 0)
    works = [plan_work(sc, jobs, g.unpriced()) for g in plan.groups]
    may_use = plan.placeable(jobs.gpus, codes(wanted)) if wanted is not None else None
    return run_groups(plan, works, sc.horizon_h, may_use, rngs), works


def test_an_8_gpu_job_fits_only_the_8_gpu_nodes(tmp_path):
    # Group 0: 2 nodes × 2 GPUs; group 1: 1 node × 8. (submit h, GPUs, hours): job 0 (2 GPUs) takes
    # group 0 (first); job 1 (8 GPUs) can only be on group 1; job 2 (8 GPUs) waits for it until 3
    # though group 0 has 2 GPUs free; job 3 (2 GPUs) starts at 1 on group 0's free node (in group
    # 1's queue it is behind job 2, which blocks that group).
    rows = [(0.0, 2, 10.0), (0.0, 8, 3.0), (1.0, 8, 2.0), (1.0, 2, 1.0)]
    sc = scenario(tmp_path, rows, [owned(gpus=8, gpus_per_node=8)], horizon_days=1)
    rec, _ = run(sc, pool(sc, ("H100", 2, 2), ("H100", 1, 8)))
    np.testing.assert_allclose(rec.start_h, [0.0, 0.0, 3.0, 1.0])
    np.testing.assert_allclose(rec.end_h, [10.0, 3.0, 5.0, 2.0])
    assert rec.part.tolist() == [0, 1, 1, 0]
    assert rec.held_gpus.tolist() == [2, 8, 8, 2]
    # Capacity by group: 4 GPUs on group 0, 8 on group 1, from the start.
    assert rec.capacity_part.tolist() == [0, 1] and rec.capacity_gpus.tolist() == [4, 8]


def test_a_job_asking_for_a_type_waits_for_its_group_while_another_is_idle(tmp_path):
    # Group 0: one 8-GPU H100 node; group 1: one 8-GPU A100 node. Job 1 asks for H100 and waits for
    # job 0 to end at 4 though the A100 node is idle; job 2 (any type) starts at once on the A100s.
    rows = [(0.0, 8, 4.0), (1.0, 8, 1.0), (1.0, 8, 1.0)]
    sc = scenario(tmp_path, rows, [owned(gpus=8, gpus_per_node=8)], horizon_days=1)
    rec, _ = run(sc, pool(sc, ("H100", 1, 8), ("A100", 1, 8)), wanted=["H100", "H100", None])
    np.testing.assert_allclose(rec.start_h, [0.0, 4.0, 1.0])
    assert rec.part.tolist() == [0, 0, 1]


def test_a_job_asking_a_type_no_group_has_never_starts_and_fits_says_so(tmp_path):
    rows = [(0.0, 8, 1.0), (0.0, 16, 1.0), (0.0, 4, 1.0)]
    sc = scenario(tmp_path, rows, [owned(gpus=16, gpus_per_node=8)], horizon_days=1)
    plan = pool(sc, ("H100", 1, 8), ("A100", 1, 8))
    wanted = ["B200", None, "A100"]
    # 16 GPUs: no group holds them (a job never spans groups), though the pool has 16.
    assert plan.fits(np.array([8, 16, 4]), codes(wanted)).tolist() == [False, False, True]
    rec, _ = run(sc, plan, wanted=wanted)
    assert np.isnan(rec.start_h[:2]).all() and rec.start_h[2] == 0.0 and rec.part[2] == 1


def test_unknown_gpu_type_and_tranches_are_refused(tmp_path):
    sc = scenario(tmp_path, [(0.0, 8, 1.0)], [owned(gpus=8, gpus_per_node=8)], horizon_days=1)
    with pytest.raises(ValueError, match="Input should be 'H100'"):  # a group is the schema's NodeGroup
        pool(sc, ("H100", 1, 8), ("H1000", 1, 8))
    with pytest.raises(ValueError, match="without tranches"):
        pool(sc, ("H100", 1, 8), tranches=(sc.options[0],))  # any non-None tranches


def test_capex_is_each_groups_gpus_at_its_types_catalog_price(tmp_path):
    sc = scenario(tmp_path, [(0.0, 8, 1.0)], [owned(gpus=8, gpus_per_node=8)], horizon_days=1)
    plan = pool(sc, ("H100", 3, 8), ("A100", 5, 4), ("A100", 2, 8))
    cat, econ = default_catalog(), economics_values(sc)
    frac = cat.fabrics["infiniband"]["capex_frac"] + econ.storage_capex_frac + econ.install_capex_frac
    h100, a100 = cat.gpus["H100"], cat.gpus["A100"]
    # By hand: per GPU, the catalog server's price ÷ its GPUs × (1 + fabric + storage + install).
    by_hand = (24 * h100.server_price_usd / h100.gpus_per_node + 36 * a100.server_price_usd / a100.gpus_per_node) * (1 + frac)
    assert plan.capex_usd == pytest.approx(by_hand, rel=1e-12)
    assert plan.groups[0].capex_usd == pytest.approx(24 * default_capex_per_gpu(h100, frac - econ.storage_capex_frac
                                                                                - econ.install_capex_frac,
                                                                                econ.storage_capex_frac,
                                                                                econ.install_capex_frac))
    assert plan.gpus == 24 + 20 + 16 and plan.nodes == 10 and plan.job_limit.gpus == 24
    assert [g.name for g in plan.groups] == ["own:H100x8", "own:A100x4", "own:A100x8"]
    assert plan.gpu_types == ("H100", "A100")
    # A given capex per GPU prices every group alike.
    assert pool(sc, ("H100", 1, 8), ("A100", 1, 4), capex_usd_per_gpu=1000.0).capex_usd == pytest.approx(12_000.0)


RL_CLASS = {"name": "grpo", "arrivals_per_day": 1000, "count": 2, "gpus": 8, "iterations": 20, "model_params_b": 7,
            "placement": "colocated", "mode": "sync", "checkpoint": {"every_iterations": 5, "write_minutes": 6},
            "rollout": {"prompts": 32, "samples_per_prompt": 4, "prompt_tokens": 512,
                        "response_tokens": {"mean": 1500, "cv": 0.5, "max": 4096}}}


def test_each_rl_job_is_timed_on_the_gpu_type_of_the_group_it_got(tmp_path):
    # Two RL jobs arriving within minutes: the first takes the H100 node (group 0), the second the
    # A100 node. Each holds its GPUs for the RL model's run on its own group's hardware.
    data = {"name": "t", "horizon_days": 30, "workload": {"classes": [RL_CLASS]},
            "options": [owned("own-h", gpus=8, gpus_per_node=8), owned("own-a", gpus=8, gpus_per_node=8,
                                                                        gpu_type="A100")]}
    sc = scenario_from_data(data, "test", tmp_path)
    plan = pool(sc, ("H100", 1, 8), ("A100", 1, 8))
    rec, works = run(sc, plan)
    assert rec.part.tolist() == [0, 1]
    held = rec.end_h - rec.start_h
    assert held[0] == pytest.approx(works[0].run_h[0]) and held[1] == pytest.approx(works[1].run_h[1])
    # Each group's work plan is the plain option's of its type ...
    plain = {p.name: p for p in resolve(sc)}
    jobs = generate(sc, 0)
    np.testing.assert_allclose(works[0].run_h, plan_work(sc, jobs, plain["own-h"]).run_h, rtol=1e-12)
    np.testing.assert_allclose(works[1].run_h, plan_work(sc, jobs, plain["own-a"]).run_h, rtol=1e-12)
    # ... and the RL model called directly: Σ iteration times on the group's hardware, plus 3 writes.
    cls = sc.workload.classes[0]
    for k, i in ((0, 0), (1, 1)):
        its = slice(int(jobs.iter_start[i]), int(jobs.iter_start[i] + jobs.iterations[i]))
        pt = rl.phase_times(shape(cls), hardware(plan.groups[k]), jobs.length_sum[its], jobs.length_max[its],
                            jobs.length_sq_sum[its])
        writes = (int(jobs.iterations[i]) - 1) // 5
        assert held[i] == pytest.approx(pt.total.sum() / SECONDS_PER_HOUR + writes * 0.1, rel=1e-9)
    # The A100 is the slower GPU: the same draws take longer there.
    assert works[1].run_h[0] > works[0].run_h[0]


def random_rows(seed: int, n: int, sizes=(1, 2, 4, 8, 16)):
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.uniform(0, 100, n))
    return list(zip(submit.tolist(), rng.choice(sizes, n).tolist(), (rng.exponential(5.0, n) + 0.1).tolist(),
                    strict=True))


@pytest.mark.parametrize("scheduler", ["fifo", "backfill", "priority", "sjf", "lifo"])
@pytest.mark.parametrize("seed", [0, 1])
def test_one_group_is_the_plain_cluster_job_for_job(tmp_path, scheduler, seed):
    # Failures on: group 0 draws them from the option's own stream, as the plain cluster does.
    sc = scenario(tmp_path, random_rows(seed, 150), [owned(gpus=32, gpus_per_node=8, scheduler=scheduler,
                                                           failures={"node_failures_per_1000_node_days": 200,
                                                                     "repair_hours": 5})], horizon_days=10)
    plan = pool(sc, ("H100", 4, 8))
    jobs = generate(sc, 0)
    plain = resolve(sc)[0]
    work = plan_work(sc, jobs, plain.unpriced())
    a = run_option(plain, work, sc.horizon_h, rngs={"failures": np.random.default_rng(seed + 7)})
    b = run_groups(plan, [work], sc.horizon_h, rngs={"failures": np.random.default_rng(seed + 7)})
    for field in a.__dataclass_fields__:
        if field not in ("option",):
            x, y = getattr(a, field), getattr(b, field)
            if isinstance(x, np.ndarray):
                np.testing.assert_array_equal(x, y, err_msg=field)
            else:
                assert x == y, field
    assert a.restarts.sum() > 0  # failures did happen


def test_groups_fail_on_their_own_streams_and_equal_inputs_give_equal_runs(tmp_path):
    sc = scenario(tmp_path, random_rows(3, 120), [owned(gpus=32, gpus_per_node=8, scheduler="backfill",
                                                       failures={"node_failures_per_1000_node_days": 300,
                                                                 "repair_hours": 4})], horizon_days=10)
    plan = pool(sc, ("H100", 2, 8), ("A100", 4, 4))
    jobs = generate(sc, 0)
    works = [plan_work(sc, jobs, g.unpriced()) for g in plan.groups]
    runs = [run_groups(plan, works, sc.horizon_h, rngs={"failures": np.random.default_rng(11)}) for _ in range(2)]
    np.testing.assert_array_equal(runs[0].end_h, runs[1].end_h)
    np.testing.assert_array_equal(runs[0].capacity_gpus, runs[1].capacity_gpus)
    # Both groups lose nodes to failures, each on its own draws (the capacity changes differ).
    by_group = [runs[0].capacity_change_h[runs[0].capacity_part == k] for k in (0, 1)]
    assert all(len(t) > 2 for t in by_group) and not np.array_equal(by_group[0][1:4], by_group[1][1:4])
    # A stream the caller names for a group is the one it fails on.
    named = run_groups(plan, works, sc.horizon_h, rngs={"failures": np.random.default_rng(11),
                                                        "failures:own:A100x4": np.random.default_rng(5)})
    np.testing.assert_array_equal(named.capacity_change_h[named.capacity_part == 0], by_group[0])
    assert not np.array_equal(named.capacity_change_h[named.capacity_part == 1], by_group[1])


GROUPS = [("H100", 2, 8), ("A100", 4, 4), ("H100", 3, 2)]


def backfill_groups_run(seed: int, fail: float, n: int = 80):
    """Three backfill groups of different node sizes and two types driven directly, each with its
    audit on; jobs of any size asking for a type or any. Returns (clusters, recorder, gpus, wanted)."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.uniform(0, 120, n)).tolist()
    gpus = rng.choice([1, 2, 3, 4, 8, 12, 16], n).tolist()
    run_h = (rng.exponential(6.0, n) + 0.1).tolist()
    wanted = rng.choice(np.array(["H100", "A100", None], dtype=object), n).tolist()
    env = simpy.Environment()
    rec = Recorder(n)
    clusters = []
    for k, (_t, nodes, gpn) in enumerate(GROUPS):
        progress = Progress(run_h, lambda i: np.array([run_h[i]]), [0.5] * n, rec)
        spec = PoolSpec(nodes=nodes, gpus_per_node=gpn, scheduler="backfill", failures_per_node_h=fail / 1000 / 24,
                        repair_h=3.0)
        c = OwnedCluster(env, spec=spec, jobs=QueuedJobs(gpus=gpus, priority=[0] * n), progress=progress, rec=rec,
                         rng=np.random.default_rng(seed + k))
        c.backfill.audit = []
        clusters.append(c)
    may = [[w is None or w == t for w in wanted] for t, _n, _g in GROUPS]
    router = GroupRouter(env, clusters, [gpus] * len(GROUPS), may, rec)
    ArrivalFeed(env, submit, router.arrive)
    env.run(until=600)
    return clusters, rec, gpus, wanted


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), fail=st.sampled_from([0.0, 100.0]))
def test_backfill_across_groups_never_delays_a_reserved_head(seed, fail):
    # Each group's backfill records, for every pass that starts jobs, its head's reservation before
    # and recomputed after: backfilling never pushes it later, and without a failure in between the
    # head starts by it — on that group or on another that started it sooner.
    clusters, rec, gpus, wanted = backfill_groups_run(seed, fail)
    checked_reservations(clusters, rec)
    # Every job that started ran within one group of a type it asked for, on nodes that hold it,
    # every attempt (after a failure too) on that group.
    allocs = np.array(rec.allocs, dtype=float).reshape(-1, 6)  # job, start, end, held, instances, part
    for i in np.flatnonzero(~np.isnan(np.asarray(rec.start_h))):
        t, nodes, gpn = GROUPS[rec.part[i]]
        assert wanted[i] in (None, t) and gpus[i] <= nodes * gpn
        assert (allocs[allocs[:, 0] == i, 5] == rec.part[i]).all()
    # No group ever holds more GPUs than it has: at each allocation's start, those running on its group.
    for k, (_t, nodes, gpn) in enumerate(GROUPS):
        mine = allocs[allocs[:, 5] == k]
        for s in mine[:, 1]:
            running = (mine[:, 1] <= s) & (mine[:, 2] > s)
            assert mine[running, 3].sum() <= nodes * gpn


def test_the_backfill_property_across_groups_is_not_vacuous():
    # Over a few fixed runs, passes backfill jobs under a finite reservation in more than one group.
    checked, groups_backfilling = 0, set()
    for seed in range(4):
        clusters, rec, _g, _w = backfill_groups_run(seed, 0.0)
        checked += checked_reservations(clusters, rec)
        groups_backfilling |= {k for k, c in enumerate(clusters) if c.backfill.audit}
    assert checked >= 10 and len(groups_backfilling) >= 2
