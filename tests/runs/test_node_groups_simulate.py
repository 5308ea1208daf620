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


def test_jobs_that_never_start_are_timed_on_the_type_they_ask_for(tmp_path):
    # Four H100 nodes and one A100 node; six jobs pinned to A100, all arriving within the first hour
    # on a 12-hour horizon: they take turns on the one A100 node, and the later ones never start.
    # Every job, started or not, is timed on the A100 (the plain A100 option's run): the phases row,
    # the work left and the offered load, which is the A100 work against the A100 node alone (the
    # H100s cannot take it): Σ min(run, H − submit) × 8 ÷ (8 × H).
    cls = {**RL, "arrivals_per_day": 500, "count": 6, "iterations": 20, "gpu_type": "A100"}
    own = {**owned(), "node_groups": [{"gpu_type": "H100", "nodes": 4, "gpus_per_node": 8},
                                      {"gpu_type": "A100", "nodes": 1, "gpus_per_node": 8}]}
    del own["gpu_type"], own["gpus"]
    data = {"name": "t", "horizon_days": 0.5, "workload": {"classes": [cls]}, "options": [own]}
    res = costsim.simulate(scenario_from_data(data, "t", tmp_path))
    jobs = res.jobs
    started = jobs.start_h.notna().to_numpy()
    assert 0 < started.sum() < 6 and set(jobs.ran_on[started]) == {"own:A100x8"}
    single = {**data, "options": [owned("a", gpus=8, gpu_type="A100")]}
    sc = scenario_from_data(single, "t", tmp_path)
    on_a = plan_work(sc, generate(sc, 0), resolve(sc)[0])
    alone = costsim.simulate(sc)
    row, plain = res.phases.iloc[0], alone.phases.iloc[0]
    assert row.gpu_type == "A100"
    assert row.iteration_s == pytest.approx(plain.iteration_s, rel=1e-12)
    H, submit, run = 12.0, jobs.submit_h.to_numpy(), on_a.run_h
    load = float((np.minimum(run, H - submit) * 8).sum()) / (8 * H)
    assert load > 1
    summary = res.summary.iloc[0]
    assert summary.offered_load == pytest.approx(load, rel=1e-12)
    reached = np.where(started, np.minimum(H - jobs.start_h.fillna(H).to_numpy(), run), 0.0)
    left = float(((run - reached) * 8)[~jobs.completed.to_numpy()].sum())
    assert summary.work_unfinished_gpu_hours == pytest.approx(left, rel=1e-9)
    # With no option renting, unfinished work is priced at the cheapest on-demand price of the
    # pool's types (every tier), the A100's here, not its first group's (the H100's).
    cat = default_catalog()
    price = {t: min(p["on_demand"] for p in cat.gpus[t].price.values() if "on_demand" in p) for t in ("H100", "A100")}
    assert price["A100"] < price["H100"]
    assert summary.unfinished_rent_usd == pytest.approx(left * price["A100"], rel=1e-9)


def test_a_class_of_any_type_runs_only_on_the_groups_that_hold_its_model(tmp_path):
    # A 32B model trains on 8 GPUs of 80 GB (H100) but not of 48 GB (L40S). Without gpu_type its jobs
    # run on the H100 group only, though the L40S group is idle; the phases row says H100.
    cls = {**RL, "model_params_b": 32, "arrivals_per_day": 500, "count": 3, "iterations": 5}
    own = {**owned(), "node_groups": [{"gpu_type": "H100", "nodes": 1, "gpus_per_node": 8},
                                      {"gpu_type": "L40S", "nodes": 2, "gpus_per_node": 8}]}
    del own["gpu_type"], own["gpus"]
    data = {"name": "t", "horizon_days": 2, "workload": {"classes": [cls]}, "options": [own]}
    res = costsim.simulate(scenario_from_data(data, "t", tmp_path))
    assert res.jobs.ran_on.tolist() == ["own:H100x8"] * 3 and res.jobs.completed.all()
    assert res.phases.gpu_type.tolist() == ["H100"]


@pytest.mark.parametrize(("groups", "gpu_type", "says"), [
    ([("L40S", 2)], None, "give the option a node group of GPUs that hold it"),
    ([("H100", 1), ("L40S", 2)], "L40S", "ask for gpu_type H100, whose node groups hold it"),
])
def test_a_class_no_group_of_its_type_holds_is_refused_at_its_node_groups(tmp_path, groups, gpu_type, says):
    cls = {**RL, "model_params_b": 32, **({"gpu_type": gpu_type} if gpu_type else {})}
    own = {**owned(), "node_groups": [{"gpu_type": t, "nodes": n, "gpus_per_node": 8} for t, n in groups]}
    del own["gpu_type"], own["gpus"]
    data = {"name": "t", "horizon_days": 2, "workload": {"classes": [cls]}, "options": [own]}
    with pytest.raises(costsim.ScenarioError) as err:
        scenario_from_data(data, "t", tmp_path)
    text = str(err.value)
    of_type = " of L40S" if gpu_type else ""
    assert f"class 'grpo' cannot run on any node group{of_type} of option 'own': node group 'own:L40Sx8' (L40S): " \
           "training the 32B model needs" in text
    assert says in text and "option 'own:L40Sx8'" not in text
