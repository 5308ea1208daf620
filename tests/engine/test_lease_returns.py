"""An owned cluster whose lease ends within the horizon, in a hybrid: a job that can never fit what
is left in service from now on bursts (``OwnedCluster.fits_ever`` against the tranches' in-service
step, ``on_stranded`` after a return), each time by hand."""

from __future__ import annotations

import math

import numpy as np
import simpy
from helpers import cloud, owned, scenario

import costsim
from costsim.engine.owned import OwnedCluster, PoolSpec, QueuedJobs
from costsim.engine.progress import Progress
from costsim.engine.records import Recorder
from costsim.plan.tranches import InService

# 8 GPUs bought at once and 8 leased from day 1 (24 h) for one 730-h month: 16 in service from 24 h
# to 754 h, 8 after.
LEASE_DAY_1 = {"gpus": 8, "order_day": 1, "payment": "lease", "lease_term_months": 1, "lease_rate_per_year": 0.0}
HYBRID = {"name": "hyb", "kind": "hybrid", "base": "own", "burst": "cloud", "max_wait_h": 2}


def hybrid_jobs(tmp_path, tranches, rows, **top):
    sc = scenario(tmp_path, rows, [owned("own", gpus=16, gpus_per_node=8, tranches=tranches), cloud(), HYBRID],
                  horizon_days=70, **top)
    jobs = costsim.simulate(sc).jobs
    return jobs[jobs.option == "hyb"].set_index("job_id")


def test_a_job_interrupted_by_a_return_that_no_longer_fits_bursts(tmp_path):
    # trace-0 (16 GPUs, 800 h) starts at 24 h on all 16; at 754 h the lease takes 8 back after 730 h
    # of work, checkpointed every 100 h: 700 h kept, 30 lost (480 GPU-hours). It can never fit the 8
    # left, so it bursts at once and runs its last 100 h there: ends at 854 h, 16 × (730 + 100) GPU-hours.
    jobs = hybrid_jobs(tmp_path, [{"gpus": 8}, LEASE_DAY_1], [(24.0, 16, 800.0)],
                       workload={"checkpoint": {"every_hours": 100, "write_minutes": 0}})
    j = jobs.loc["trace-0"]
    assert (j.start_h, j.end_h, j.ran_on, j.restarts) == (24.0, 854.0, "cloud", 1) and j.completed
    assert (j.gpu_hours, j.lost_gpu_hours) == (16 * 830, 16 * 30)


def test_fits_ever_reads_the_most_in_service_from_now_on():
    # 8 GPUs leased at once for a month (back at 730 h) and 8 bought on day 40 (960 h): never 16
    # together, so a 16-GPU job never fits (the scenario's check refuses one; a hybrid's router asks
    # this of every arrival), though both nodes are the cluster's and neither is gone at 0.
    env = simpy.Environment()
    rec = Recorder(1)
    spec = PoolSpec(nodes=2, gpus_per_node=8, scheduler="fifo", later=((960.0, 1),), returns=((730.0, 0, 1),),
                    in_service=InService.of([(0.0, 730.0, 8), (960.0, math.inf, 8)]))
    cluster = OwnedCluster(env, spec=spec, jobs=QueuedJobs(gpus=[16], priority=[0]),
                           progress=Progress([1.0], lambda i: np.array([1.0]), [0.0], rec), rec=rec)
    assert not cluster.fits_ever(16) and cluster.fits_ever(8)
    env.run(until=800)  # between the return and the delivery: 8 still to come
    assert cluster.in_service == 0 and cluster.fits_ever(8) and not cluster.fits_ever(9)
