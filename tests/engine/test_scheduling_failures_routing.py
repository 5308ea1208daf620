"""Regression tests of scheduling, failures and hybrid routing in the engine.

Each expected value is worked out by hand in the comments. Failures are made deterministic with a
scripted stand-in for numpy's Generator, passed to ``engine.run_option`` as the option's stream.
"""

import numpy as np
import pandas as pd
import pytest
from helpers import cloud, jobs_of, owned, scenario

import costsim
from costsim.engine import run as engine
from costsim.engine.pool import NodePool
from costsim.models.serving import RangeMax
from costsim.plan.resolve import resolve
from costsim.scenario import ScenarioError, scenario_from_data
from costsim.workload import jobs as workload
from costsim.workload.plan import plan_work

NEVER = 1e12  # a scripted failure time that never comes


class Scripted:
    """numpy Generator stand-in: exponential draws and node picks come from scripts, in order."""

    def __init__(self, exponential=(), integers=()):
        self.exp, self.ints = list(exponential), list(integers)

    def exponential(self, scale=1.0):
        return self.exp.pop(0) if self.exp else NEVER

    def integers(self, n):
        return self.ints.pop(0)


def unchecked(folder, rows, options, horizon_days=10.0, **top):
    """A scenario that skips the fit checks (to drive the engine on cases they would reject)."""
    pd.DataFrame(list(rows), columns=["submit_h", "gpus", "duration_h"]).to_csv(folder / "trace.csv", index=False)
    workload_ = {"trace": "trace.csv", **top.pop("workload", {})}
    data = {"name": "t", "horizon_days": horizon_days, "workload": workload_, "options": options, **top}
    return scenario_from_data(data, "test", folder)


def run(sc, option=0, failures=None, demand=None):
    """Run one option of ``sc`` through the engine with scripted failures and an hourly serving demand."""
    plans = resolve(sc)
    plan = plans[option]
    jobs = workload.generate(sc)
    if getattr(plan, "base", None) is not None:
        work, burst = plan_work(sc, jobs, plan.base), plan_work(sc, jobs, plan.burst)
    else:
        work, burst = plan_work(sc, jobs, plan), None
    rngs = {"failures": failures or Scripted(), "preemptions": Scripted(), "provisioning": Scripted()}
    serving = RangeMax(np.asarray(demand)) if demand is not None else None
    return engine.run_option(plan, work, sc.horizon_h, burst, serving=serving, rngs=rngs)


CONSTANT = {"diurnal_amplitude": 0, "growth_per_year": 0}


# -- item 3: backfill must leave the head the GPUs serving needs at its reserved start --------------

def test_backfill_with_serving_does_not_delay_the_head(tmp_path):
    # 2 nodes × 8 GPUs, serving 4 GPUs always. J0 (6 GPUs, 3 h) starts at 0 on node 0.
    # Head J1 (8 GPUs, 5 h) at 0.1: 6 + 8 + 4 = 18 > 16, it waits; when J0 ends at 3: 8 + 4 = 12 fits.
    # FIFO: J1 at 3; J2 (2 GPUs, 10 h) behind it also at 3 (8 + 2 + 4 = 14). Backfill may start J2 at
    # 0.2 (6 + 2 + 4 = 12) only because 8 + 2 + 4 = 14 <= 16 leaves the head its start at 3.
    rows = [(0, 6, 3), (0.1, 8, 5), (0.2, 2, 10)]
    serving = {"gpus": {"base": 4, **CONSTANT}}
    res = costsim.simulate(scenario(tmp_path, rows, [owned("fifo", gpus=16, scheduler="fifo"),
                                                     owned("bf", gpus=16, scheduler="backfill")], serving=serving))
    assert jobs_of(res, "fifo").start_h.tolist() == [0, 3, 3]
    assert jobs_of(res, "bf").start_h.tolist() == [0, 3, 0.2]
    # Serving at 7: the head still starts at 3 (8 + 7 = 15). J2 fits at 0.2 (6 + 2 + 7 = 15), but held
    # past 3 it would leave the head 8 + 2 + 7 = 17 > 16: it must wait for the head's end at 8.
    res = costsim.simulate(scenario(tmp_path, rows, [owned("bf", gpus=16, scheduler="backfill")],
                                    serving={"gpus": {"base": 7, **CONSTANT}}))
    assert jobs_of(res, "bf").start_h.tolist() == [0, 3, 8]


# -- item 4: the head that fits only after a repair gets a reservation at the repair's end ---------

@pytest.mark.parametrize("sched", ["fifo", "backfill"])
def test_backfill_reserves_at_the_repair_end(tmp_path, sched):
    # 2 nodes × 8 GPUs. Node 1 fails at 0.5 h, repaired 10 h later (10.5 h). At 1 h: head H (16 GPUs,
    # 5 h), J1 (8 GPUs, 100 h), J2 (8 GPUs, 9 h). H needs both nodes: reserved at 10.5 h. J1 would hold
    # node 0 until 101 h: not backfilled. J2 ends at 10 h <= 10.5 h: backfilled at 1 h (not under FIFO).
    # H runs 10.5–15.5 h; then J1 (and, under FIFO, J2) at 15.5 h.
    sc = unchecked(tmp_path, [(1, 16, 5), (1, 8, 100), (1, 8, 9)],
                   [owned(gpus=16, gpus_per_node=8, scheduler=sched,
                          failures={"node_failures_per_1000_node_days": 1, "repair_hours": 10})], horizon_days=20)
    rec = run(sc, failures=Scripted(exponential=[0.5], integers=[1]))
    want = [10.5, 15.5, 1.0] if sched == "backfill" else [10.5, 15.5, 15.5]
    assert rec.start_h.tolist() == want
    assert rec.restarts.sum() == 0  # the failure hit an idle node


# -- item 5: a failure during cloud startup does not erase the startup still owed -----------------

def test_failure_during_startup_keeps_the_startup_owed(tmp_path):
    # Provisioning 0.25 h, startup 2 h, 10 h of work, restart 15 min. Without failures it ends at
    # 0.25 + 2 + 10 = 12.25 h. A failure 0.1 h after delivery (0.35 h): the swap takes 0.25 h, the
    # 1.9 h of startup still owed follow, then the restart: 0.35 + 0.25 + 1.9 + 0.25 + 10 = 12.75 h.
    opts = [cloud(provisioning_delay_h=0.25, startup_h=2.0,
                  failures={"node_failures_per_1000_node_days": 1, "repair_hours": 1})]
    ck = {"checkpoint": {"every_hours": 100, "write_minutes": 0, "restart_minutes": 15}}
    sc = unchecked(tmp_path, [(0, 8, 10)], opts, workload=ck)
    failed = run(sc, failures=Scripted(exponential=[0.1]))
    alone = run(sc)  # scripted: no failure
    assert alone.end_h[0] == pytest.approx(12.25)
    assert failed.restarts[0] == 1
    assert failed.end_h[0] == pytest.approx(12.75)
    assert failed.end_h[0] >= alone.end_h[0]
    # Held (and billed) from delivery to the end: 12.5 h, never less than without the failure (12 h).
    assert failed.alloc_end[0] - failed.alloc_start[0] == pytest.approx(12.5)


def test_failure_during_a_restart_pays_the_restart_again(tmp_path):
    # No startup. First failure at 4.5 h: back to the checkpoint at 4 h, swap 0 h, restart 1 h (to 5.5 h).
    # Second failure 0.5 h later (5.0 h), mid-restart: the restart is paid again in full, 5 + 1 = 6 h,
    # then 6 h of work left: ends at 12 h. (Resuming the half-done restart would end at 11.5 h.)
    opts = [cloud(failures={"node_failures_per_1000_node_days": 1, "repair_hours": 1})]
    ck = {"checkpoint": {"every_hours": 2, "write_minutes": 0, "restart_minutes": 60}}
    sc = unchecked(tmp_path, [(0, 8, 10)], opts, workload=ck)
    rec = run(sc, failures=Scripted(exponential=[4.5, 0.5]))
    assert rec.restarts[0] == 2 and rec.end_h[0] == pytest.approx(12.0)
    assert rec.overhead_h[0] == pytest.approx(1.5)  # 0.5 h of the first restart, then the whole second


# -- item 6: a restarted job holds its GPUs restart_h longer: admission under serving counts it ---

def test_serving_admission_counts_the_restart(tmp_path):
    # 1 node × 8 GPUs; serving needs all 8 GPUs in hour 12 only. J0 (8 GPUs, 10 h, checkpoint every
    # hour, restart 2 h) starts at 0 (its run [0, 10) misses hour 12). The node fails at 5.5 h (J0 falls
    # back to 5 h) and is back at 6 h. Resuming at 6 h would hold it 2 + 5 = 7 h, into hour 12: serving
    # would go short. The first start whose 7 h miss hour 12 is 13 h: it ends at 20 h.
    sc = unchecked(tmp_path, [(0, 8, 10)],
                   [owned(gpus=8, gpus_per_node=8, failures={"node_failures_per_1000_node_days": 1, "repair_hours": 0.5})],
                   workload={"checkpoint": {"every_hours": 1, "write_minutes": 0, "restart_minutes": 120}})
    demand = np.zeros(200, dtype=np.int64)
    demand[12] = 8
    rec = run(sc, failures=Scripted(exponential=[5.5], integers=[0]), demand=demand)
    assert rec.alloc_start.tolist() == [0.0, 13.0]
    assert rec.end_h[0] == pytest.approx(20.0)
    # Serving is never short while RL runs: no allocation overlaps hour 12.
    assert all(e <= 12 or s >= 13 for s, e in zip(rec.alloc_start, rec.alloc_end, strict=True))


def test_backfill_counts_the_restart_of_jobs_behind_the_head(tmp_path):
    # 2 nodes × 8 GPUs, backfill; serving needs 7 GPUs in hour 12 only. At 0: J2 (8 GPUs, 20 h) on
    # node 0; J0 (2 GPUs, 10 h) and J1 (6 GPUs, 10 h) on node 1 (restart 3 h, hourly checkpoints). Node 1
    # fails at 0.5 h (both back to 0) and returns at 1 h; J1 rejoins at the head, J0 right behind it.
    # Held 3 + 10 = 13 h from any start before 13 h, either would be running in hour 12 beside J2's 8
    # GPUs: J1 8 + 6 + 7 = 21 > 16, and J0, a backfill candidate, 8 + 2 + 7 = 17 > 16. Both start at
    # 13 h (8 + 6 + 2 = 16 once hour 12 is past) and end at 13 + 13 = 26 h.
    sc = unchecked(tmp_path, [(0, 8, 20), (0, 2, 10), (0, 6, 10)],
                   [owned(gpus=16, gpus_per_node=8, scheduler="backfill",
                          failures={"node_failures_per_1000_node_days": 1, "repair_hours": 0.5})],
                   workload={"checkpoint": {"every_hours": 1, "write_minutes": 0, "restart_minutes": 180}})
    demand = np.zeros(200, dtype=np.int64)
    demand[12] = 7
    rec = run(sc, failures=Scripted(exponential=[0.5], integers=[1]), demand=demand)
    assert rec.start_h.tolist() == [0, 0, 0] and rec.end_h.tolist() == pytest.approx([20, 26, 26])
    assert sorted(rec.alloc_start.tolist()) == [0, 0, 0, 13, 13]
    in_hour_12 = (rec.alloc_start < 13) & (rec.alloc_end > 12)
    assert rec.alloc_held[in_hour_12].sum() + 7 <= 16  # serving is never short


# -- item 7: jobs serving always leaves too little room for are a validation error ----------------

def test_jobs_that_serving_always_crowds_out_are_an_error(tmp_path):
    serving = {"gpus": {"base": 8, **CONSTANT}}
    with pytest.raises(ScenarioError, match="serving") as err:
        scenario(tmp_path, [(0, 16, 1)], [owned(gpus=16)], serving=serving)
    assert "options" in str(err.value)
    # 8 GPUs beside serving's 8: fine.
    scenario(tmp_path, [(0, 8, 1)], [owned(gpus=16)], serving=serving)
    # Reserved pools serve first too.
    with pytest.raises(ScenarioError, match="serving"):
        scenario(tmp_path, [(0, 16, 1)], [{"name": "r", "kind": "cloud", "gpu_type": "H100", "pricing": "reserved",
                                           "reserved_gpus": 16}], serving=serving)
    # A dip in serving's demand below 8 GPUs (±50 % around 8: 4 at the trough) gives the job a chance.
    scenario(tmp_path, [(0, 16, 1)], [owned(gpus=24)], serving={"gpus": {"base": 8, "diurnal_amplitude": 0.5}})


def test_hybrid_sends_what_serving_crowds_out_of_the_base_to_the_burst(tmp_path):
    serving = {"gpus": {"base": 8, **CONSTANT}}
    hyb = {"name": "hyb", "kind": "hybrid", "base": "own", "burst": "cloud", "max_wait_h": 4}
    sc = unchecked(tmp_path, [(1, 16, 2), (2, 8, 2)], [owned(gpus=16), cloud(failures=None), hyb], serving=serving)
    rec = run(sc, option=2, demand=np.full(1000, 8))
    # 16 GPUs never fit beside serving's 8 on the 16-GPU base: burst at submit; the 8-GPU job runs on the base.
    assert rec.part.tolist() == [engine.BURST, engine.BASE]
    assert rec.start_h.tolist() == [1.0, 2.0]
    # The hybrid is not an error (its burst takes the job); the base alone is. Only when the burst
    # cannot hold it either (a quota of 8 GPUs) is the hybrid an error too, naming serving.
    for quota, hybrid_fails in ((None, False), (8, True)):
        with pytest.raises(ScenarioError) as err:
            scenario(tmp_path, [(1, 16, 2)], [owned(gpus=16), cloud(max_gpus=quota), hyb], serving=serving)
        where = {p.loc[:2]: p.message for p in err.value.problems}
        assert "serving" in where[("options", 0)]
        assert (("options", 2) in where) == hybrid_fails
        if hybrid_fails:
            assert "serving" in where[("options", 2)] and "quota of 8" in where[("options", 2)]


# -- item 8: a job that started on the base stays with the base ----------------------------------

def test_a_job_interrupted_on_the_base_is_not_burst(tmp_path):
    # Base: 1 node × 8 GPUs; wait limit 3 h. J0 (8 GPUs, 10 h, hourly checkpoints, restart 15 min)
    # starts on the base at 0; the node fails at 2.5 h (back to 2 h), repaired at 7.5 h. Its timer at 3 h
    # finds it queued but it has started here: it stays, resumes at 7.5 h and ends 7.5 + 0.25 + 8 = 15.75 h.
    opts = [owned(gpus=8, gpus_per_node=8, failures={"node_failures_per_1000_node_days": 1, "repair_hours": 5}),
            cloud(failures=None), {"name": "hyb", "kind": "hybrid", "base": "own", "burst": "cloud", "max_wait_h": 3}]
    sc = unchecked(tmp_path, [(0, 8, 10)], opts,
                   workload={"checkpoint": {"every_hours": 1, "write_minutes": 0, "restart_minutes": 15}})
    rec = run(sc, option=2, failures=Scripted(exponential=[2.5], integers=[0]))
    assert rec.part[0] == engine.BASE and (rec.alloc_part == engine.BASE).all()
    assert rec.alloc_start.tolist() == [0.0, 7.5] and rec.alloc_end.tolist() == [2.5, 15.75]
    assert rec.end_h[0] == pytest.approx(15.75)


# -- item 9: taking a job back from the base reschedules the base ---------------------------------

def test_withdrawing_the_head_starts_the_jobs_behind_it(tmp_path):
    # Base 2 nodes × 8, FIFO, wait limit 2 h. J0 (8 GPUs, 10 h) starts at 0 on node 0. J1 (16 GPUs) at
    # 0.5 h cannot fit; J2 (8 GPUs, 3 h) at 1 h waits behind it though node 1 is free. At 2.5 h J1 bursts:
    # J2 must start on the base at that instant (before its own limit at 3 h).
    hyb = {"name": "hyb", "kind": "hybrid", "base": "own", "burst": "cloud", "max_wait_h": 2}
    res = costsim.simulate(scenario(tmp_path, [(0, 8, 10), (0.5, 16, 5), (1, 8, 3)],
                                    [owned(gpus=16), cloud(failures=None), hyb]))
    j = jobs_of(res, "hyb")
    assert j.ran_on.tolist() == ["own", "cloud", "own"]
    assert j.start_h.tolist() == [0, 2.5, 2.5]


def test_equally_free_nodes_are_taken_lowest_index_first():
    pool = NodePool(6, 8)
    assert [pool.allocate(8) for _ in range(6)] == [((n, 8),) for n in range(6)]
    for node in (5, 3, 1, 4):
        pool.release(((node, 8),))
    assert pool.allocate(16) == ((1, 8), (3, 8))  # the two lowest of the free nodes 1, 3, 4, 5
    assert pool.allocate(8) == ((4, 8),)


def test_best_fit_then_lowest_index():
    pool = NodePool(4, 8)
    assert [pool.allocate(8) for _ in range(4)] == [((0, 8),), ((1, 8),), ((2, 8),), ((3, 8),)]
    pool.release(((3, 8),))
    pool.release(((1, 8),))
    pool.release(((2, 8),))
    assert pool.allocate(4) == ((1, 4),)  # nodes 1, 2, 3 all free: the lowest
    assert pool.allocate(16) == ((2, 8), (3, 8))  # whole nodes: the two lowest fully free
    pool.release(((0, 8),))
    pool.release(((2, 8),))
    assert pool.allocate(4) == ((1, 4),)  # best fit first: node 1 has exactly 4 left
    assert pool.allocate(2) == ((0, 2),)  # then the lowest of the equally free nodes 0 and 2


def test_pool_matches_a_brute_force_reference():
    # Random allocations, releases, failures and repairs against a direct reading of the rules:
    # best fit (fewest free GPUs that fit), ties to the lowest index; whole nodes beyond one node.
    rng = np.random.default_rng(5)
    nodes, gpn = 70, 8
    pool, free, down, held = NodePool(nodes, gpn), [gpn] * nodes, set(), []
    for _ in range(4000):
        op = rng.uniform()
        if op < 0.5:
            g = int(rng.choice([1, 2, 3, 5, 8, 16, 24]))
            if g <= gpn:
                fits = [(free[n], n) for n in range(nodes) if free[n] >= g]
                want = ((min(fits)[1], g),) if fits else None
            else:
                whole = [n for n in range(nodes) if free[n] == gpn][:g // gpn]
                want = tuple((n, gpn) for n in whole) if len(whole) == g // gpn else None
            got = pool.allocate(g)
            assert got == want
            if got:
                for n, k in got:
                    free[n] -= k
                held.append(got)
        elif op < 0.9 and held:
            alloc = held.pop(int(rng.integers(len(held))))
            pool.release(alloc)
            for n, k in alloc:
                if n not in down:
                    free[n] += k
        elif op < 0.95:
            n = int(rng.integers(nodes))
            if n not in down:
                pool.down_node(n)
                down.add(n)
                free[n] = 0
        elif down:
            n = min(down)
            pool.up(n)
            down.discard(n)
            free[n] = gpn
            held = [a for a in held if all(m != n for m, _k in a)]  # its jobs were killed at the failure
        assert pool.free == free and pool.free_gpus == sum(free)


def test_serving_crowding_is_checked_from_submission_and_for_the_whole_hold(tmp_path):
    # Growing serving: 6 GPUs × (1 + t/8760), no daily swing: ⌈6·(1 + 7200.5/8760)⌉ = 11 GPUs in
    # hour 7,200 (day 300) and more after. An 8-GPU job submitted at day 300 on 16 GPUs needs
    # 8 + 11 > 16: it can never run, although serving left room (⌈6.0003⌉ = 7 ≤ 8) at the start.
    growing = {"gpus": {"base": 6, "diurnal_amplitude": 0, "growth_per_year": 1.0}}
    with pytest.raises(ScenarioError, match="serving never leaves"):
        scenario(tmp_path, [(7200, 8, 1)], [owned(gpus=16)], serving=growing, horizon_days=365)
    scenario(tmp_path, [(0, 8, 1)], [owned(gpus=16)], serving=growing, horizon_days=365)  # early: fine
    # Daily dips: 8 GPUs ± 50 % leave 16 free on 24 GPUs only while demand ≤ 8, about half of each
    # day (demand ⌈8·(1 + 0.5·sin)⌉ ≤ 8 for hours 12–23): a 16-GPU job of 30 h never has room for its
    # whole run; one of 10 h does.
    dips = {"gpus": {"base": 8, "diurnal_amplitude": 0.5, "growth_per_year": 0}}
    with pytest.raises(ScenarioError, match="30.0 h"):
        scenario(tmp_path, [(0, 16, 30)], [owned(gpus=24)], serving=dips)
    scenario(tmp_path, [(0, 16, 10)], [owned(gpus=24)], serving=dips)
