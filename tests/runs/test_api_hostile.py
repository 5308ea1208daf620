"""Hostile calls to the Python API, and runs too big to finish: every one is a ScenarioError
naming the problem (never a TypeError, AttributeError or a hang)."""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import cloud, owned, scenario
from typer.testing import CliRunner

import costsim
from costsim.cli.commands import app
from costsim.dashboard import SCENARIO_DIR
from costsim.engine import run as engine
from costsim.plan.resolve import resolve
from costsim.runs import budget
from costsim.scenario import scenario_from_data as schema_only
from costsim.workload import jobs as workload
from costsim.workload.plan import plan_work
from costsim.workload.rng import stream

ROWS = [(0.0, 8, 5.0), (1.0, 16, 3.0), (2.0, 8, 4.0)]


@pytest.fixture()
def small(tmp_path) -> costsim.Scenario:
    return scenario(tmp_path, ROWS, [owned(gpus=16), cloud()])


# -- arguments ----------------------------------------------------------------------------------

# (call, words the message must contain, the error it is: a bad argument, or a file or text that is
# not a scenario); ``sc`` is a valid scenario, ``d`` a folder.
BAD_CALLS = [
    (lambda sc, d: costsim.simulate(None), ["simulate()", "scenario", "NoneType"], costsim.ArgumentError),
    (lambda sc, d: costsim.simulate({}), ["simulate()", "dict", "scenario_from_data"], costsim.ArgumentError),
    (lambda sc, d: costsim.simulate(42), ["simulate()", "scenario", "int"], costsim.ArgumentError),
    (lambda sc, d: costsim.simulate(b"s.yaml"), ["simulate()", "scenario", "bytes"], costsim.ArgumentError),
    (lambda sc, d: costsim.simulate(sc, seed="x"), ["simulate()", "seed", "'x'"], costsim.ArgumentError),
    (lambda sc, d: costsim.simulate(sc, seed=True), ["seed", "True"], costsim.ArgumentError),
    (lambda sc, d: costsim.simulate(sc, seed=-1), ["seed", "-1"], costsim.ArgumentError),
    (lambda sc, d: costsim.simulate(sc, seed=1.5), ["seed", "1.5"], costsim.ArgumentError),
    (lambda sc, d: costsim.simulate(sc, seed=2**63), ["seed", "2^63 - 1"], costsim.ArgumentError),
    (lambda sc, d: costsim.simulate(sc, on_option=3), ["on_option", "function"], costsim.ArgumentError),
    (lambda sc, d: costsim.simulate(sc, max_events=0), ["max_events", ">= 1"], costsim.ArgumentError),
    (lambda sc, d: costsim.simulate(sc, max_events=True), ["max_events", "True"], costsim.ArgumentError),
    (lambda sc, d: costsim.simulate(sc, max_events="10"), ["max_events", "'10'"], costsim.ArgumentError),
    (lambda sc, d: costsim.load_scenario(None), ["load_scenario()", "path", "NoneType"], costsim.ArgumentError),
    (lambda sc, d: costsim.load_scenario(""), ["load_scenario()", "path", "empty"], costsim.ArgumentError),
    (lambda sc, d: costsim.load_scenario("a\0b.yaml"), ["path", "NUL"], costsim.ArgumentError),
    (lambda sc, d: costsim.load_scenario(3.5), ["path", "float"], costsim.ArgumentError),
    (lambda sc, d: costsim.load_scenario(d / "missing.yaml"), ["missing.yaml", "not found"], costsim.ScenarioError),
    (lambda sc, d: costsim.load_scenario_text(None, "u.yaml", d), ["load_scenario_text()", "text", "NoneType"], costsim.ArgumentError),
    (lambda sc, d: costsim.load_scenario_text(b"name: x", "u.yaml", d), ["text", "decode"], costsim.ArgumentError),
    (lambda sc, d: costsim.load_scenario_text("name: x", None, d), ["source", "NoneType"], costsim.ArgumentError),
    (lambda sc, d: costsim.load_scenario_text("name: x", "u.yaml", None), ["base_dir", "NoneType"], costsim.ArgumentError),
    (lambda sc, d: costsim.load_scenario_text("- 1\n- 2", "u.yaml", d), ["u.yaml", "mapping"], costsim.ScenarioError),
    (lambda sc, d: costsim.scenario_from_data([1, 2], "v", d), ["v", "mapping"], costsim.ScenarioError),
    (lambda sc, d: costsim.scenario_from_data(None, "v", d), ["v", "mapping"], costsim.ScenarioError),
    (lambda sc, d: costsim.scenario_from_data({}, 7, d), ["scenario_from_data()", "source", "int"], costsim.ArgumentError),
    (lambda sc, d: costsim.scenario_from_data({}, "v", None), ["scenario_from_data()", "base_dir"], costsim.ArgumentError),
    (lambda sc, d: costsim.dump_scenario(None), ["dump_scenario()", "scenario", "NoneType"], costsim.ArgumentError),
    (lambda sc, d: costsim.dump_scenario({"name": "x"}), ["dump_scenario()", "dict"], costsim.ArgumentError),
]


@pytest.mark.parametrize("call, words, error", BAD_CALLS, ids=[f"call{i}" for i in range(len(BAD_CALLS))])
def test_a_bad_argument_is_an_error_of_its_kind_naming_it(small, tmp_path, call, words, error):
    with pytest.raises(error) as err:  # a TypeError or AttributeError fails the test
        call(small, tmp_path)
    assert type(err.value) is error  # an ArgumentError is not a ScenarioError, nor the other way round
    for word in words:
        assert word in str(err.value), (word, str(err.value))


def test_whole_number_types_are_accepted_as_seeds(small):
    assert costsim.simulate(small, seed=np.int64(4)).seed == 4
    pd.testing.assert_frame_equal(costsim.simulate(small, seed=np.uint8(4)).jobs, costsim.simulate(small, seed=4).jobs)


def test_every_exported_name_is_documented_and_checked():
    # What costsim exports is what these tests cover: a new export needs its hostile cases.
    assert set(costsim.__all__) == {"ArgumentError", "CostsimError", "DEFAULT_MAX_EVENTS", "ExecutorError", "OutputError",
                                    "Results", "RunMemo", "Scenario", "ScenarioError", "__version__",
                                    "capacity_plan", "decide", "dump_scenario", "load_scenario", "load_scenario_text", "optimize",
                                    "prepare", "scenario_from_data", "simulate", "sweep"}
    # Their hostile cases: sweep in tests/runs/test_sweep_run.py, decide in tests/decisions/test_decide.py, optimize
    # in tests/decisions/test_optimize.py, capacity_plan in tests/decisions/test_capacity_plan.py, RunMemo (and
    # simulate's memo) in tests/runs/test_run_memo.py, prepare (and simulate on a Prepared) in tests/runs/test_prepared.py.


# -- a Scenario object is checked again, however it was built -------------------------------------

def test_the_readme_variant_recipe_cannot_skip_the_never_fits_check():
    base = costsim.load_scenario(SCENARIO_DIR / "baseline.yaml")
    data = base.model_dump(mode="json")
    data["options"][0]["gpus"] = 8  # 256-GPU flagship jobs can never run on 8 GPUs
    variant = schema_only(data, "variant", base.base_dir)  # schema only: no catalog, trace or fit check
    with pytest.raises(costsim.ScenarioError, match=r"options\.0\.gpus: .*needs 256 GPUs.*'own-256' has 8 GPUs"):
        costsim.simulate(variant)
    with pytest.raises(costsim.ScenarioError, match=r"variant: options\.0\.gpus: .*could never run"):
        costsim.scenario_from_data(data, "variant", base.base_dir)


def test_values_smuggled_past_validation_are_caught(small):
    # model_copy(update=...) does not validate: simulate validates again.
    with pytest.raises(costsim.ScenarioError, match="horizon_days"):
        costsim.simulate(small.model_copy(update={"horizon_days": -5.0}))
    with pytest.raises(costsim.ScenarioError, match="horizon_days"):
        costsim.simulate(small.model_copy(update={"horizon_days": 1e30}))
    with pytest.raises(costsim.ScenarioError, match=r"options\.0\.gpus"):
        costsim.simulate(small.model_copy(update={"options": [small.options[0].model_copy(update={"gpus": 8})]}))


def test_a_checked_scenario_simulates_the_same_after_the_recheck(small):
    # The recheck validates a copy of the same data: same tables as the scenario itself gives.
    again = costsim.scenario_from_data(small.model_dump(mode="json"), "copy", small.base_dir)
    pd.testing.assert_frame_equal(costsim.simulate(small).jobs, costsim.simulate(again).jobs)


# -- runs too big to finish: refused before they start, quickly ----------------------------------

TIME_BOUND_S = 5.0  # a refusal validates and estimates; it draws and simulates nothing


def refused(sc_or_path, max_events=budget.DEFAULT_MAX_EVENTS) -> str:
    t = time.perf_counter()
    with pytest.raises(costsim.ScenarioError) as err:
        costsim.simulate(sc_or_path, max_events=max_events)
    assert time.perf_counter() - t < TIME_BOUND_S
    msg = str(err.value)
    assert "max_events" in msg and "--max-events" in msg and "Traceback" not in msg
    return msg


def test_thirty_years_of_ten_thousand_jobs_a_day_is_refused_before_drawing(tmp_path):
    # Hand count: 10,000 jobs/day × 10,950 days ≈ 1.1e8 jobs, 4 events each ≫ 5e7.
    cls = {"name": "tiny", "arrivals_per_day": 10_000, "gpus": 8, "iterations": 1, "model_params_b": 1}
    data = {"name": "flood", "horizon_days": 10_950, "workload": {"classes": [cls]}, "options": [cloud()]}
    msg = refused(costsim.scenario_from_data(data, "flood.yaml", tmp_path))
    # The estimate shown: 4 events and 1 iteration per expected job, plus one row per hour.
    assert f"about {10_000 * 10_950 * (4 + 1) + 10_950 * 24:,} simulation events" in msg


def test_a_huge_cluster_failing_daily_for_thirty_years_is_refused(tmp_path):
    # 1.25e6 nodes × 1 failure per node-day × 10,950 days × 3 events ≈ 4e10 ≫ 5e7.
    fail = {"node_failures_per_1000_node_days": 1000, "repair_hours": 1}
    sc = scenario(tmp_path, ROWS, [owned(gpus=10_000_000, failures=fail)], horizon_days=10_950)
    refused(sc)


def test_one_minute_checkpoints_on_long_jobs_with_failures_are_refused(tmp_path):
    # 5 jobs of 200,000 h checkpointed every minute: 1.2e7 segments each, all interrupted (a
    # failure a day per instance): 6e7 checkpoint boundaries to build ≫ 5e7.
    rows = [(float(i), 8, 200_000.0) for i in range(5)]
    fail = {"node_failures_per_1000_node_days": 1000}
    sc = scenario(tmp_path, rows, [cloud(failures=fail)], horizon_days=10_950,
                  workload={"checkpoint": {"every_hours": 1 / 60, "write_minutes": 0.1, "restart_minutes": 1}})
    refused(sc)


def test_the_limit_can_be_raised_and_lowered(small):
    refused(small, max_events=10)
    assert costsim.simulate(small, max_events=10_000).summary.jobs_completed.sum() > 0
    assert costsim.simulate(small, max_events=None).summary.jobs_completed.sum() > 0


def test_the_estimate_is_unbounded_for_absurd_values_outside_the_schema(tmp_path):
    # The pure functions themselves, given what the schema would refuse: a 1e30-day horizon,
    # an infinite failure rate, a 1e-9 h checkpoint.
    sc = scenario(tmp_path, ROWS, [owned(gpus=16, failures={"node_failures_per_1000_node_days": 5}), cloud()],
                  workload={"checkpoint": {"every_hours": 1.0}})
    plans = resolve(sc)
    huge = sc.model_copy(update={"horizon_days": 1e30})
    assert budget.estimate_events(huge, plans, *budget.expected_workload(huge, len(ROWS))) > 1e30
    inf_plans = [dataclasses.replace(plans[0], failures_per_node_h=math.inf), plans[1]]
    assert budget.estimate_events(sc, inf_plans, 3, 0) == math.inf
    with pytest.raises(costsim.ScenarioError, match="unbounded"):
        budget.refuse_above(math.inf, 10**12, "s.yaml")
    jobs = workload.generate(sc)
    work = dataclasses.replace(plan_work(sc, jobs, plans[0]), every=np.full(len(jobs), 1e-9))
    fast = dataclasses.replace(plans[0], failures_per_node_h=10.0)  # every job is interrupted
    # Hand count: Σ duration / 1e-9 = (5 + 3 + 4) h / 1e-9 h = 1.2e10 boundaries.
    assert budget.interruption_events(fast, work, sc.horizon_h) >= 1.2e10


@pytest.mark.slow
@pytest.mark.parametrize("name", ["lab-trace", "spot-rollouts", "train-and-serve"])
def test_the_estimate_is_not_below_the_events_a_run_takes(monkeypatch, name):
    # The engine's own counter is the truth; the backstop stops runs at ENGINE_MARGIN × the limit.
    estimates, events = [], []
    real_estimate, real_run = budget.estimate_events, engine.run_option

    def estimate(*args, **kw):
        estimates.append(real_estimate(*args, **kw))
        return estimates[-1]

    def run(*args, **kw):
        rec = real_run(*args, **kw)
        events.append(rec.events)
        return rec

    monkeypatch.setattr(budget, "estimate_events", estimate)
    monkeypatch.setattr(engine, "run_option", run)
    costsim.simulate(SCENARIO_DIR / f"{name}.yaml")
    assert len(estimates) == 2 and sum(events) <= 2 * estimates[1]


# -- the engine's backstop ------------------------------------------------------------------------

def test_the_engine_stops_a_run_far_beyond_its_estimate(monkeypatch, small):
    monkeypatch.setattr(budget, "estimate_events", lambda *a, **k: 0.0)  # an estimate badly wrong
    with pytest.raises(costsim.ScenarioError, match=r"options\.0: option 'own' was stopped after"):
        costsim.simulate(small, max_events=1)


def test_running_in_chunks_changes_nothing(tmp_path):
    fail = {"node_failures_per_1000_node_days": 300, "repair_hours": 6}
    rows = [(float(i) * 3, 8 * (1 + i % 3), 20.0 + i % 7) for i in range(60)]
    sc = scenario(tmp_path, rows, [owned(gpus=32, failures=fail)], horizon_days=30,
                  workload={"checkpoint": {"every_hours": 2.0, "write_minutes": 3, "restart_minutes": 10}})
    plan = resolve(sc)[0]
    work = plan_work(sc, workload.generate(sc), plan)

    def record(limit):
        rngs = {k: stream(1, k, "own") for k in ("failures", "preemptions", "provisioning")}
        return engine.run_option(plan, work, sc.horizon_h, rngs=rngs, max_events=limit)

    whole = record(None)
    assert whole.restarts.sum() > 0  # failures did strike
    chunked = record(3 * whole.events)  # several chunks: the first is 1/1024 of the horizon
    assert chunked.events > whole.events  # each chunk's stop is one more event
    for field in dataclasses.fields(whole):
        if field.name != "events":
            a, b = getattr(whole, field.name), getattr(chunked, field.name)
            assert np.array_equal(a, b, equal_nan=True) if isinstance(a, np.ndarray) else a == b, field.name
    with pytest.raises(engine.EventLimitExceeded):
        record(whole.events // 2)


# -- the command line ----------------------------------------------------------------------------

def test_cli_refuses_a_run_above_max_events_with_exit_2(tmp_path, monkeypatch):
    scenario(tmp_path, ROWS, [owned(gpus=16)])  # writes trace.csv
    (tmp_path / "s.yaml").write_text("name: s\nhorizon_days: 10\nworkload: {trace: trace.csv}\n"
                                     "options: [{name: own, kind: owned, gpu_type: H100, gpus: 16, failures: null}]\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["run", "s.yaml", "--max-events", "10", "--out", "out"])
    assert result.exit_code == 2, result.output
    assert "--max-events" in result.output and "Traceback" not in result.output
    assert not Path("out").exists()
    assert CliRunner().invoke(app, ["run", "s.yaml", "--max-events", "-1", "--out", "out"]).exit_code == 2
    ok = CliRunner().invoke(app, ["run", "s.yaml", "--max-events", "0", "--out", "out"])  # 0: no limit
    assert ok.exit_code == 0, ok.output
