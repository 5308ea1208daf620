"""A scenario with an owned option of node groups through ``costsim.simulate``: a pool of one group is
the plain owned option job for job, and each RL job is timed on the GPU type of the group it got."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers import owned

import costsim
from costsim.catalog.load import default_catalog
from costsim.plan.resolve import resolve
from costsim.plots.capacity_plan import purchases
from costsim.runs.api import scenario_from_data
from costsim.workload.jobs import generate
from costsim.workload.plan import PHASES, plan_work

RL = {"name": "grpo", "arrivals_per_day": 6, "gpus": 8, "iterations": {"mean": 30, "cv": 0.5}, "model_params_b": 7}


def test_a_pool_of_one_group_is_the_plain_owned_option_job_for_job(tmp_path):
    # Failures on (drawn from the option's stream, named as the option is), backfill, RL and trace jobs.
    rng = np.random.default_rng(5)
    rows = zip(np.sort(rng.uniform(0, 200, 60)), rng.choice([1, 2, 4, 8, 16], 60), rng.exponential(6.0, 60) + 0.1,
               strict=True)
    pd.DataFrame(list(rows), columns=["submit_h", "gpus", "duration_h"]).to_csv(tmp_path / "t.csv", index=False)
    fail = {"node_failures_per_1000_node_days": 100, "repair_hours": 6}
    plain = owned(gpus=32, gpus_per_node=8, scheduler="backfill", failures=fail)
    grouped = {k: v for k, v in plain.items() if k not in ("gpu_type", "gpus", "gpus_per_node")}
    grouped["node_groups"] = [{"gpu_type": "H100", "nodes": 4, "gpus_per_node": 8}]
    runs = []
    for option in (plain, grouped):
        data = {"name": "t", "horizon_days": 12, "workload": {"trace": "t.csv", "classes": [RL]}, "options": [option]}
        runs.append(costsim.simulate(scenario_from_data(data, "t", tmp_path)))
    a, b = runs
    pd.testing.assert_frame_equal(a.summary, b.summary)
    pd.testing.assert_frame_equal(a.jobs.drop(columns="ran_on"), b.jobs.drop(columns="ran_on"))
    assert set(b.jobs.ran_on) - {""} == {"own:H100x8"}  # the job's group
    pd.testing.assert_frame_equal(a.costs, b.costs)
    pd.testing.assert_frame_equal(a.cashflow, b.cashflow)
    pd.testing.assert_frame_equal(purchases(a), purchases(b))  # the capacity plan's bar: one purchase of 32
    assert a.summary.restarts.iloc[0] > 0  # failures did happen


def test_each_rl_job_is_timed_on_the_gpu_type_of_the_group_it_got(tmp_path):
    # An H100 node (group 0) and an A100 node (group 1); two jobs minutes apart: the first takes the
    # H100s, the second the A100s. Each holds its GPUs for the RL model's run on its group's type,
    # the plain option of that type's; the bandwidth-bound decode of the longest response (the
    # straggler phase) is slower on the A100 by the catalog's ratio of HBM bandwidths.
    cls = {**RL, "arrivals_per_day": 500, "count": 2, "iterations": 20}
    own = {**owned(), "node_groups": [{"gpu_type": "H100", "nodes": 1, "gpus_per_node": 8},
                                      {"gpu_type": "A100", "nodes": 1, "gpus_per_node": 8}]}
    del own["gpu_type"], own["gpus"]
    data = {"name": "t", "horizon_days": 30, "workload": {"classes": [cls]}, "options": [own]}
    jobs = costsim.simulate(scenario_from_data(data, "t", tmp_path)).jobs
    assert jobs.ran_on.tolist() == ["own:H100x8", "own:A100x8"] and jobs.completed.all()
    singles = {**data, "options": [owned("h", gpus=8), owned("a", gpus=8, gpu_type="A100")]}
    sc = scenario_from_data(singles, "t", tmp_path)
    drawn = generate(sc, 0)
    on_h, on_a = (plan_work(sc, drawn, p) for p in resolve(sc))
    held = (jobs.end_h - jobs.start_h).to_numpy()
    assert held[0] == pytest.approx(on_h.run_h[0], rel=1e-12) and held[1] == pytest.approx(on_a.run_h[1], rel=1e-12)
    assert on_a.run_h[0] > on_h.run_h[0]  # the same job would take longer on the A100s
    cat = default_catalog()
    straggler = PHASES.index("straggler")
    np.testing.assert_allclose(on_a.phase_s[:, straggler] / on_h.phase_s[:, straggler],
                               cat.gpus["H100"].hbm_tb_s / cat.gpus["A100"].hbm_tb_s, rtol=1e-9)
