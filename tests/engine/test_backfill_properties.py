"""Properties of the engine under serving, node failures and preemption.

1. EASY backfill never delays the head: at every backfill pass the cluster's backfill records (its
   test-only ``audit`` list) the head's reservation before the pass and recomputed right after it,
   with the backfilled jobs running. The jobs it started must not push the reservation later; and
   unless a node failure intervenes (failures are not foreseen, so they may break a reservation)
   the head does start by its reservation, which is checked from the allocation records.
2. A failure or preemption never shortens a job or makes it cheaper: one job alone on an option,
   with and without interruptions (so the schedule is held fixed).
"""

import math

import numpy as np
import pytest
import simpy
from helpers import checked_reservations, cloud, jobs_of, owned, scenario
from hypothesis import given, settings
from hypothesis import strategies as st

import costsim
from costsim.engine.events import ArrivalFeed
from costsim.engine.owned import OwnedCluster, PoolSpec, QueuedJobs
from costsim.engine.progress import Progress
from costsim.engine.records import Recorder
from costsim.models.serving import RangeMax, hourly_demand

EPS = 1e-9


def backfill_run(seed, nodes, gpn, n, base, amplitude, growth, fail_per_node_day, repair_h, every_h, restart_h):
    """Drive an owned backfill cluster directly, with its audit on; returns (cluster, recorder, submit)."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.uniform(0, 150, n)).tolist()
    gpus = rng.choice([1, 2, 3, 4, 8, 12, 16], n)
    gpus = np.minimum(gpus, nodes * gpn - math.ceil(base * (1 + amplitude))).clip(1).tolist()
    run_h = (rng.exponential(6.0, n) + 0.1).tolist()

    def boundaries(i):  # a checkpoint every every_h hours of the planned run, and its end
        return np.append(np.arange(every_h, run_h[i], every_h), run_h[i])

    env = simpy.Environment()
    rec = Recorder(n)
    progress = Progress(run_h, boundaries, [restart_h] * n, rec)
    demand = hourly_demand(base, amplitude, growth, 2000)
    spec = PoolSpec(nodes=nodes, gpus_per_node=gpn, scheduler="backfill", failures_per_node_h=fail_per_node_day / 24,
                    repair_h=repair_h)
    cluster = OwnedCluster(env, spec=spec, jobs=QueuedJobs(gpus=gpus, priority=[0] * n), progress=progress, rec=rec,
                           serving=RangeMax(demand), rng=np.random.default_rng(seed + 1))
    cluster.backfill.audit = []
    ArrivalFeed(env, submit, cluster.arrive)
    env.run(until=600)
    return cluster, rec, submit


@pytest.mark.slow
@settings(max_examples=25)
@given(seed=st.integers(0, 10_000), nodes=st.integers(2, 4), gpn=st.sampled_from([4, 8]),
       base=st.integers(1, 6), amplitude=st.sampled_from([0.0, 0.5]), growth=st.sampled_from([0.0, 5.0, -0.5]),
       fail=st.sampled_from([0.0, 20.0, 80.0]), restart_h=st.sampled_from([0.0, 0.5, 2.0]))
def test_backfill_never_delays_the_reserved_head(seed, nodes, gpn, base, amplitude, growth, fail, restart_h):
    cluster, rec, _ = backfill_run(seed, nodes, gpn, 60, base, amplitude, growth, fail, 3.0, 1.0, restart_h)
    checked_reservations([cluster], rec)


def test_the_backfill_property_is_not_vacuous():
    # Over a few fixed runs, passes backfill jobs with a finite reservation, under failures too.
    passes = finite = 0
    for seed in range(5):
        cluster, _rec, _ = backfill_run(seed, 3, 8, 60, 4, 0.5, 0.0, 40.0, 3.0, 1.0, 0.5)
        passes += len(cluster.backfill.audit)
        finite += sum(1 for _n, _h, before, _a in cluster.backfill.audit if math.isfinite(before))
    assert passes > 20 and finite > 10


# -- 2. interruptions never shorten a job -------------------------------------------------------

FAIL = {"node_failures_per_1000_node_days": 1000, "repair_hours": 1.5}  # the most the schema allows


@pytest.mark.slow
@settings(max_examples=20)
@given(seed=st.integers(0, 10_000), duration=st.floats(0.5, 20), every_h=st.floats(0.5, 6),
       restart_min=st.sampled_from([0, 15, 90]), startup_h=st.sampled_from([0.0, 1.0, 3.0]),
       provisioning_h=st.sampled_from([0.0, 0.3]), kind=st.sampled_from(["owned", "cloud", "spot"]))
def test_an_interruption_never_shortens_a_job_or_lowers_its_cost(tmp_path_factory, seed, duration, every_h,
                                                                 restart_min, startup_h, provisioning_h, kind):
    if kind == "owned":
        calm, rough = owned("o", gpus=64, gpus_per_node=8), owned("o", gpus=64, gpus_per_node=8, failures=FAIL)
    else:
        common = {"startup_h": startup_h, "provisioning_delay_h": provisioning_h, "price_per_gpu_hour": 2.0}
        if kind == "cloud":
            calm, rough = cloud("c", failures=None, **common), cloud("c", failures=FAIL, **common)
        else:
            calm = cloud("c", pricing="spot", failures=None, preemptions_per_instance_day=0, **common)
            rough = cloud("c", pricing="spot", failures=FAIL, preemptions_per_instance_day=1,
                          reacquire_delay_h=0.2, **common)
    ck = {"checkpoint": {"every_hours": every_h, "write_minutes": 1, "restart_minutes": restart_min}}
    folder = tmp_path_factory.mktemp("one")
    rows = [(0.0, 64, duration)]  # 8 nodes or instances: 8 × the failure rate
    a = jobs_of(costsim.simulate(scenario(folder, rows, [calm], horizon_days=60, workload=ck), seed=seed), calm["name"])
    b = jobs_of(costsim.simulate(scenario(folder, rows, [rough], horizon_days=60, workload=ck), seed=seed), calm["name"])
    assert a.completed[0] and b.completed[0]
    assert b.end_h[0] >= a.end_h[0] - EPS
    # Sharper, per interruption: from its first start the job still spends its whole startup and
    # planned run (the calm run's span) plus every hour of work it lost and did again.
    lost_h = b.lost_gpu_hours[0] / 64
    assert b.end_h[0] - b.start_h[0] >= (a.end_h[0] - a.start_h[0]) + lost_h - EPS
    assert b.gpu_hours[0] >= a.gpu_hours[0] - EPS
    if kind != "owned":  # rented: the job's bill (an owned job's cost is its share of the cluster's)
        assert b.cost_usd[0] >= a.cost_usd[0] - 1e-6
    if b.restarts[0] == 0:
        assert b.end_h[0] == pytest.approx(a.end_h[0])
