"""The cross-field checks on the resolved plans (``costsim.plan.checks``) and ``prepare``, each
against a hand calculation: jobs too big for a pool, jobs serving never leaves room for, hybrids,
trace jobs, rollout quotas, RL layouts."""

from __future__ import annotations

import numpy as np
import pytest

import costsim
from costsim.plan.checks import JobsToFit, layout_problems, never_fit, offload_problems, pool_verdict, serving_demand
from costsim.plan.fleet import HybridPlan
from costsim.plan.prepare import prepare
from costsim.plan.resolve import economics_values, resolve
from costsim.runs import api
from costsim.scenario import Problem, ScenarioError, scenario_from_data

OD_NOW = {"name": "od", "kind": "cloud", "gpu_type": "H100", "pricing": "on_demand", "provisioning_delay_h": 0,
          "startup_h": 0}
FLAT_SERVING = {"gpus": {"base": 10, "diurnal_amplitude": 0, "growth_per_year": 0}}  # 10 GPUs every hour


def sc(options, job_gpus=4, **top):
    """A schema-valid (unchecked) scenario of one job class of ``job_gpus`` GPUs over two days."""
    data = {"name": "t", "horizon_days": 2, "seed": 1, "workload": {"job_classes": [
        {"name": "j", "arrivals_per_day": 4, "gpus": job_gpus, "duration": {"law": "lognormal", "mean_h": 1, "cv": 0.5}}]},
        "options": options, **top}
    return scenario_from_data(data, "t", ".")


def plans_of(*options):
    return resolve(sc(list(options)))


def jobs(*gpus, hold_h=1.0):
    n = len(gpus)
    return JobsToFit(np.array(gpus), np.zeros(n), np.full(n, hold_h))


# --- one pool -------------------------------------------------------------------------------------

def test_too_big_for_an_owned_cluster_counts_whole_nodes():
    own = plans_of({"name": "own", "kind": "owned", "gpu_type": "H100", "gpus": 16})[0]
    # 16 fit; 17 take ⌈17/8⌉ = 3 nodes = 24 > 16.
    v = pool_verdict(own, jobs(8, 16, 17), None)
    assert v.too_big.tolist() == [False, False, True] and not v.crowded.any() and v.has == "16 GPUs"


def test_a_quota_counts_whole_instances_and_unlimited_capacity_takes_anything():
    od, unlimited = plans_of({**OD_NOW, "max_gpus": 32}, {**OD_NOW, "name": "od2"})
    # 30 GPUs rent 4 instances = 32 ≤ 32; 33 rent 5 = 40 > 32.
    v = pool_verdict(od, jobs(30, 33), None)
    assert v.too_big.tolist() == [False, True] and v.has == "a quota of 32 GPUs"
    assert pool_verdict(unlimited, jobs(10_000), None) is None


def test_serving_crowds_out_what_the_owned_pool_never_has_room_for():
    own = plans_of({"name": "own", "kind": "owned", "gpu_type": "H100", "gpus": 16, "lead_time_days": 0})[0]
    demand = np.full(24 * 400, 10)
    # 16 GPUs less 10 serving leave 6: a 4-GPU job fits beside it, an 8-GPU one never does.
    v = pool_verdict(own, jobs(4, 8), demand)
    assert v.crowded.tolist() == [False, True] and not v.too_big.any()


def test_a_reserved_pool_leaves_a_job_within_one_instance_its_own_gpus():
    # 16 reserved GPUs (two 8-GPU instances), serving 10 every hour: 6 free. A 4-GPU job holds 4 of
    # one instance there (the engine runs a reservation as a cluster of instances), so it fits; one
    # of 7 does not. Counting whole instances (8) for the 4-GPU job would refuse it.
    res = plans_of({"name": "res", "kind": "cloud", "gpu_type": "H100", "pricing": "reserved",
                    "reserved_gpus": 16})[0]
    v = pool_verdict(res, jobs(4, 7), np.full(24 * 400, 10))
    assert v.crowded.tolist() == [False, True] and v.has == "16 reserved GPUs"


def test_the_engine_runs_what_the_reserved_check_lets_through():
    res = {"name": "res", "kind": "cloud", "gpu_type": "H100", "pricing": "reserved", "reserved_gpus": 16,
           "scheduler": "fifo"}
    scenario = api.check(sc([res], job_gpus=4, serving=FLAT_SERVING), "t")
    out = costsim.simulate(scenario)
    assert out.summary["jobs_completed"].iloc[0] > 0
    assert (out.timeseries["serving_gpus"] == 10).all()  # served in full beside the RL jobs
    with pytest.raises(ScenarioError, match="serving never leaves that many free"):
        api.check(sc([res], job_gpus=7, serving=FLAT_SERVING), "t")


# --- options --------------------------------------------------------------------------------------

def test_a_hybrid_refuses_only_what_neither_part_can_hold():
    own = {"name": "own", "kind": "owned", "gpu_type": "H100", "gpus": 16}
    capped = {**OD_NOW, "max_gpus": 8}
    plans = plans_of(own, capped, {"name": "mix", "kind": "hybrid", "base": "own", "burst": "od"})
    mix = plans[2]
    assert isinstance(mix, HybridPlan)
    verdict = never_fit(mix, jobs(8, 16, 24), None)
    assert verdict.bad.tolist() == [False, False, True] and verdict.field == ""
    assert verdict.why == "neither base 'own' (16 GPUs) nor burst 'od' (a quota of 8 GPUs)"
    assert never_fit(plans[0], jobs(24), None).field == "gpus"
    unlimited = plans_of(own, OD_NOW, {"name": "mix", "kind": "hybrid", "base": "own", "burst": "od"})[2]
    assert never_fit(unlimited, jobs(24), None) is None


def test_a_job_class_too_big_is_named_at_its_gpus():
    with pytest.raises(ScenarioError) as err:
        prepare(sc([{"name": "own", "kind": "owned", "gpu_type": "H100", "gpus": 16}], job_gpus=24), source="t")
    problem, = err.value.problems
    assert problem.loc == ("workload", "job_classes", 0, "gpus")
    assert problem.message == ("job class 'j' needs up to 24 GPUs per job but option 'own' has 16 GPUs: its largest "
                           "jobs could never run")


def test_trace_jobs_are_checked_one_by_one(tmp_path):
    (tmp_path / "trace.csv").write_text("job_id,submit_h,gpus,duration_h\na,1,8,1\nb,2,24,1\nc,3,32,1\n")
    data = {"name": "t", "horizon_days": 2, "workload": {"trace": "trace.csv"},
            "options": [{"name": "own", "kind": "owned", "gpu_type": "H100", "gpus": 16}]}
    with pytest.raises(ScenarioError) as err:
        prepare(scenario_from_data(data, "t", tmp_path), source="t")
    problem, = err.value.problems
    assert problem.loc == ("options", 0, "gpus")
    assert problem.message == "job 'b' needs 24 GPUs but option 'own' has 16 GPUs: it could never run (1 more such jobs)"


def test_rollouts_over_the_quota_of_their_pool_in_whole_instances():
    # 32-GPU jobs, 3/4 of them sampling: 24 rollout GPUs, 3 instances; a quota of 16 cannot hold them.
    data = {"name": "t", "horizon_days": 2, "workload": {"classes": [
        {"name": "flagship", "arrivals_per_day": 1, "gpus": 32, "rollout_gpu_fraction": 0.75, "iterations": 10,
         "model_params_b": 7, "placement": "disaggregated"}]},
        "options": [{"name": "home", "kind": "owned", "gpu_type": "H100", "gpus": 64, "rollout_pool": "od"},
                    {**OD_NOW, "max_gpus": 16}]}
    scenario = scenario_from_data(data, "t", ".")
    problem, = offload_problems(scenario, resolve(scenario))
    assert problem.loc == ("options", 0, "rollout_pool")
    assert problem.message.startswith("class 'flagship' samples on 24 GPUs (24 in whole instances) but option 'od' "
                                  "has a quota of 16 GPUs")


def test_a_model_too_big_for_the_gpus_is_a_layout_problem_once_per_pool():
    data = {"name": "t", "horizon_days": 2, "workload": {"classes": [
        {"name": "huge", "arrivals_per_day": 1, "gpus": 8, "iterations": 10, "model_params_b": 405}]},
        "options": [{"name": "own", "kind": "owned", "gpu_type": "H100", "gpus": 64}, OD_NOW,
                    {"name": "mix", "kind": "hybrid", "base": "own", "burst": "od"}]}
    scenario = scenario_from_data(data, "t", ".")
    problems = layout_problems(scenario, resolve(scenario))
    assert [p.loc for p in problems] == [("workload", "classes", 0)] * 2  # own and od; the hybrid's parts again: once
    assert problems[0].message.startswith("class 'huge' cannot run on option 'own' (H100): ")


def test_a_memory_fraction_too_small_for_the_weights_is_a_layout_problem():
    # 7B bf16 on one H100 a replica: 14 GB of weights; the engine takes 0.15 × 80 = 12 GB: no room
    # for a KV cache (the catalog's 0.8 would leave 50 GB), so the class is refused, not run.
    data = {"name": "t", "horizon_days": 2, "workload": {"classes": [
        {"name": "tight", "arrivals_per_day": 1, "gpus": 8, "iterations": 10, "model_params_b": 7,
         "rollout": {"tensor_parallel": 1, "memory_fraction": 0.15}}]},
        "options": [{"name": "own", "kind": "owned", "gpu_type": "H100", "gpus": 64}]}
    scenario = scenario_from_data(data, "t", ".")
    problem, = layout_problems(scenario, resolve(scenario))
    assert problem.message == (
        "class 'tight' cannot run on option 'own' (H100): the 7B model's 14 GB of weights leave no room for a KV "
        "cache in the 12 GB its rollout engine takes per replica (memory fraction 0.15 of 1 GPU(s) of 80 GB): raise "
        "rollout.memory_fraction or rollout.tensor_parallel")
    data["workload"]["classes"][0]["rollout"]["memory_fraction"] = 0.3  # 24 GB: 10 GB of KV cache
    assert layout_problems(scenario_from_data(data, "t", "."), resolve(scenario)) == []


# --- prepare --------------------------------------------------------------------------------------

def test_serving_demand_covers_the_horizon_and_a_year():
    assert serving_demand(sc([OD_NOW])) is None
    demand = serving_demand(sc([OD_NOW], serving=FLAT_SERVING))
    assert len(demand) == 48 + 8760 and (demand == 10).all()


def test_prepare_holds_the_plans_economics_and_demand():
    scenario = sc([{"name": "own", "kind": "owned", "gpu_type": "H100", "gpus": 16}, OD_NOW], serving=FLAT_SERVING)
    ready = prepare(scenario, source="t")
    assert ready.scenario is scenario and ready.trace is None
    assert list(ready.plans) == resolve(scenario) and ready.economics == economics_values(scenario)
    assert (ready.serving_demand == serving_demand(scenario)).all()


def test_prepare_reports_trace_rows_the_workload_refuses(tmp_path):
    (tmp_path / "trace.csv").write_text("job_id,submit_h,gpus,duration_h\na,1,8,1\n")
    data = {"name": "t", "horizon_days": 2, "workload": {"trace": "trace.csv"}, "options": [OD_NOW]}
    scenario = scenario_from_data(data, "t", tmp_path)
    assert prepare(scenario, source="t").trace.job_id.tolist() == ["a"]

    def refuse(_scenario, ids):
        return [Problem(("job_id",), f"{ids[0]} is taken", 2)]

    with pytest.raises(ScenarioError, match="a is taken") as err:
        prepare(scenario, source="t", trace_check=refuse)
    assert err.value.source == str(tmp_path / "trace.csv")


# --- leases given back within the horizon -----------------------------------------------------------

# 8 GPUs bought at once and 8 leased on day 1 (delivered at 24 h) for one 730-h month: back at 754 h.
LEASED_SECOND = {"name": "own", "kind": "owned", "gpu_type": "H100", "gpus": 16, "gpus_per_node": 8,
                 "lead_time_days": 0, "tranches": [{"gpus": 8}, {"gpus": 8, "order_day": 1, "payment": "lease",
                                                                  "lease_term_months": 1}]}
# 8 GPUs leased at once for one month (back at 730 h) and 8 bought on day 40 (960 h): never 16 together.
LEASED_FIRST = {**LEASED_SECOND, "tranches": [{"gpus": 8, "payment": "lease", "lease_term_months": 1},
                                               {"gpus": 8, "order_day": 40}]}


def test_in_service_is_a_step_of_deliveries_and_returns():
    own, = resolve(sc([LEASED_SECOND], horizon_days=60))
    s = own.in_service  # 8 from 0, 16 from 24 h, 8 from 754 h
    assert [s.at(h) for h in (0, 23, 24, 753, 754, 2000)] == [8, 8, 16, 16, 8, 8]
    assert [s.most_from(h) for h in (0, 753, 754)] == [16, 16, 8]
    first, = resolve(sc([LEASED_FIRST], horizon_days=60))
    f = first.in_service  # 8 from 0, none from 730 h, 8 from 960 h
    assert [f.at(h) for h in (0, 730, 959, 960)] == [8, 0, 0, 8] and f.most_from(0) == 8


def test_a_job_submitted_after_a_lease_went_back_never_fits_what_is_left():
    own, = resolve(sc([LEASED_SECOND], horizon_days=60))
    # Submitted at 0 or 700 h, 16 GPUs are in service together from 24 h to 754 h; at 800 h only 8 are left.
    v = pool_verdict(own, JobsToFit(np.array([16, 16, 16, 8]), np.array([0.0, 700.0, 800.0, 800.0]), np.ones(4)), None)
    assert v.too_big.tolist() == [False, False, True, False]
    assert v.says(2) == ("16 GPUs, at most 8 of them in service together from its submission on (a lease gives "
                         "its nodes back within the horizon)") and v.says(0) == "16 GPUs"


def test_a_lease_returned_before_the_next_tranche_never_holds_the_whole_cluster(tmp_path):
    (tmp_path / "trace.csv").write_text("job_id,submit_h,gpus,duration_h\na,0,16,10\nb,1,8,5\n")
    data = {"name": "t", "horizon_days": 60, "workload": {"trace": "trace.csv"}, "options": [LEASED_FIRST]}
    with pytest.raises(ScenarioError) as err:
        prepare(scenario_from_data(data, "t", tmp_path), source="t")
    problem, = err.value.problems
    assert problem.loc == ("options", 0, "gpus")
    assert problem.message == ("job 'a' needs 16 GPUs but option 'own' has 16 GPUs, at most 8 of them in service "
                               "together from its submission on (a lease gives its nodes back within the horizon): "
                               "it could never run")
